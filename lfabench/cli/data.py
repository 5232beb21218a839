"""``lfabench data``: ``fetch NAME``, ``add NAME PATH``, ``verify NAME``, ``list`` (see :mod:`lfabench.dataroot`)."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

from ..dataroot import data_root, dataset_root, register, registered
from ..dataset import DatasetNotFoundError


def _load(name: str, root: Path):
    """``(dataset or None, what is wrong or None, partial dataset or None)``: a full load, else ground truth only.

    What is wrong is one line: ``missing: ...`` (absent files) or ``malformed: ...`` (a ground truth or list the
    plugin refuses, its message naming the file and the query)."""
    from ..registry import get_plugin

    factory = get_plugin("dataset", name)
    try:
        return factory(root=str(root)), None, None
    except (ValueError, TypeError) as exc:
        return None, f"malformed: {exc}", None
    except DatasetNotFoundError as exc:
        partial, problem = None, f"missing: {exc}"
        if "require_images" in inspect.signature(factory).parameters:
            try:
                partial = factory(root=str(root), require_images=False)
            except DatasetNotFoundError:
                partial = None
            except (ValueError, TypeError) as malformed:
                problem += f"; malformed: {malformed}"
        return None, problem, partial


def _counts(ds) -> str:
    parts = [f"{ds.n_samples} images"]
    if ds.labels is not None and ds.task == "classification":
        parts.append(f"{len(ds.class_names)} classes")
    if ds.ground_truth is not None:
        gt = ds.ground_truth
        parts.append(f"{gt.queries.size} queries, {sum(p.size for p in gt.positives)} positives")
    if ds.official_split is not None:
        parts.append(f"official split {ds.official_split[0].size} train / {ds.official_split[1].size} test")
    return ", ".join(parts)


def verify_report(name: str, root: Path) -> tuple[bool, list[str]]:
    """``(complete, lines)``: what ``lfabench data verify`` prints."""
    from ..download import verify_checksums

    lines = [f"dataset {name} at {root}"]
    ds, err, partial = _load(name, root)
    if ds is not None:
        lines.append(f"  found: {_counts(ds)}")
    else:
        if partial is not None:
            lines.append(f"  found (ground truth / lists only): {_counts(partial)}")
        lines.append(f"  {err}")
    for path, status in verify_checksums(_spec(name).sources, root):
        lines.append(f"  checksum {Path(path).name}: {status}")
    ok = ds is not None and not any("MISMATCH" in ln for ln in lines)
    lines.append("  status: complete" if ok else "  status: INCOMPLETE")
    return ok, lines


def _spec(name: str):
    from ..registry import get_registry

    return get_registry().get_spec("dataset", name)


def _cmd_fetch(args) -> int:
    from ..download import FetchError, UnsafeArchiveError, fetch
    from ..registry import UnknownPluginError

    try:
        spec = _spec(args.name)
        path = fetch(args.name, spec.sources, spec.manual, dest=args.dest, timeout=args.timeout)
    except (FetchError, UnknownPluginError, UnsafeArchiveError) as exc:
        print(f"lfabench data fetch: {exc}", file=sys.stderr)
        return 2
    if args.dest:
        register(args.name, path)
    ok, lines = verify_report(args.name, path)
    print("\n".join(lines))
    return 0 if ok else 1


def _cmd_add(args) -> int:
    root = Path(args.path).expanduser()
    if not root.exists():
        print(f"lfabench data add: {root} does not exist", file=sys.stderr)
        return 2
    ok, lines = verify_report(args.name, root)
    print("\n".join(lines))
    if not ok and not args.force:
        print("not registered: the copy is incomplete (use --force to register it anyway)", file=sys.stderr)
        return 1
    path = register(args.name, root)
    print(f"registered {args.name} -> {path} (in {data_root() / 'registry.json'})")
    return 0


def _cmd_verify(args) -> int:
    root = Path(args.root).expanduser() if args.root else dataset_root(args.name)
    ok, lines = verify_report(args.name, root)
    print("\n".join(lines))
    return 0 if ok else 1


def _cmd_list(args) -> int:
    from ..registry import get_registry

    entries = registered()
    print(f"data root: {data_root()}")
    downloadable = {s.name for s in get_registry().specs("dataset") if s.sources or s.manual}
    for name in sorted(downloadable | set(entries)):
        where = entries.get(name) or f"{dataset_root(name)} (default{'' if dataset_root(name).exists() else ', absent'})"
        print(f"  {name:10s} {where}")
    return 0


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("data", help="get, register and verify datasets")
    sub = p.add_subparsers(dest="data_command", required=True)
    f = sub.add_parser("fetch", help="download a dataset from its official source into the data root")
    f.add_argument("name")
    f.add_argument("--dest", default=None, help="folder to download into (registered); default <data root>/NAME")
    f.add_argument("--timeout", type=float, default=15.0, help="connect timeout in seconds (default 15)")
    f.set_defaults(func=_cmd_fetch)
    a = sub.add_parser("add", help="register an existing local copy of a dataset")
    a.add_argument("name")
    a.add_argument("path")
    a.add_argument("--force", action="store_true", help="register even if the copy is incomplete")
    a.set_defaults(func=_cmd_add)
    v = sub.add_parser("verify", help="check a dataset's files: counts found, checksums, what is missing")
    v.add_argument("name")
    v.add_argument("--root", default=None, help="check this folder instead of the registered/default one")
    v.set_defaults(func=_cmd_verify)
    ls = sub.add_parser("list", help="show the data root and where each dataset is")
    ls.set_defaults(func=_cmd_list)
