"""``lfabench data``: ``fetch NAME``, ``add NAME PATH [--as PLUGIN]``, ``verify NAME``, ``list``, ``remove NAME``
(see :mod:`lfabench.dataroot`)."""

from __future__ import annotations

import argparse
import inspect
import re
import sys
import textwrap
from pathlib import Path

from ..dataroot import data_root, dataset_root, register, registered, registered_as, unregister
from ..dataset import DatasetNotFoundError


def _load(name: str, root: Path, as_plugin: str | None = None):
    """``(dataset or None, what is wrong or None, partial dataset or None)``: a full load, else ground truth only; with
    ``as_plugin``, the folder read by that plugin as the dataset ``name``.

    What is wrong is one line: ``missing: ...`` (absent files) or ``malformed: ...`` (a ground truth or list the
    plugin refuses, its message naming the file and the query)."""
    from ..registry import get_plugin

    factory = get_plugin("dataset", as_plugin or name)
    named = {"name": name} if as_plugin else {}
    try:
        return factory(root=str(root), **named), None, None
    except (ValueError, TypeError) as exc:
        return None, f"malformed: {exc}", None
    except DatasetNotFoundError as exc:
        partial, problem = None, f"missing: {exc}"
        if "require_images" in inspect.signature(factory).parameters:
            try:
                partial = factory(root=str(root), require_images=False, **named)
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


def verify_report(name: str, root: Path, as_plugin: str | None = None) -> tuple[bool, list[str]]:
    """``(complete, lines)``: what ``lfabench data verify`` prints (``as_plugin``: the folder read by that plugin)."""
    from ..download import verify_checksums

    lines = [f"dataset {name} at {root}" + (f" (read as {as_plugin})" if as_plugin else "")]
    ds, err, partial = _load(name, root, as_plugin)
    if ds is not None:
        lines.append(f"  found: {_counts(ds)}")
        lines.append(f"  fingerprint: {ds.fingerprint()[:16]}")
    else:
        if partial is not None:
            lines.append(f"  found (ground truth / lists only): {_counts(partial)}")
        lines.append(f"  {err}")
    for path, status in verify_checksums(_spec(as_plugin or name).sources, root):
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


#: A name given with ``--as``: a dataset plugin's name (``dataset=NAME`` in ``lfabench run``).
ALIAS_PATTERN = re.compile(r"[a-z][a-z0-9_]*")


def _check_alias(name: str, as_plugin: str) -> str | None:
    """Why ``name`` cannot be registered ``--as as_plugin``, or None."""
    from ..registry import get_registry

    reg = get_registry()
    if not ALIAS_PATTERN.fullmatch(name):
        return (f"{name!r} cannot name a dataset: use lower-case letters, digits and underscores, starting with a "
                f"letter (it is `dataset={name}` in `lfabench run`)")
    if as_plugin not in reg.names("dataset"):
        return f"--as {as_plugin}: no dataset plugin has that name (`lfabench plugins` lists them)"
    params = inspect.signature(reg.get_spec("dataset", as_plugin).factory).parameters
    if as_plugin in registered_as() or not {"root", "name"} <= set(params):
        return (f"--as {as_plugin}: that plugin reads no folder under another name; folders are read --as "
                f"imagefolder (one subfolder of images per class) or --as retrieval_folder (images and ground truth)")
    if name in reg.names("dataset") and name not in registered_as():
        return (f"{name!r} is the name of a dataset plugin already; register your folder under another name "
                f"(`lfabench data add my_{name} PATH --as {as_plugin}`)")
    return None


def _cmd_add(args) -> int:
    root = Path(args.path).expanduser()
    if not root.exists():
        print(f"lfabench data add: {root} does not exist", file=sys.stderr)
        return 2
    if args.as_plugin:
        problem = _check_alias(args.name, args.as_plugin)
        if problem:
            print(f"lfabench data add: {problem}", file=sys.stderr)
            return 2
    ok, lines = verify_report(args.name, root, args.as_plugin)
    print("\n".join(lines))
    if not ok and not args.force:
        print("not registered: the copy is incomplete (use --force to register it anyway)", file=sys.stderr)
        return 1
    path = register(args.name, root, args.as_plugin)
    print(f"registered {args.name} -> {path} (in {data_root() / 'registry.json'})")
    if args.as_plugin:
        print(f"run it: lfabench run dataset={args.name}   (read as {args.as_plugin}; `lfabench run --cfg job "
              f"dataset={args.name}` shows its protocol)")
    return 0


def _cmd_remove(args) -> int:
    if not unregister(args.name):
        print(f"lfabench data remove: {args.name!r} is not registered (`lfabench data list` shows what is)",
              file=sys.stderr)
        return 2
    print(f"forgot {args.name} (its files are untouched)")
    return 0


def _cmd_verify(args) -> int:
    root = Path(args.root).expanduser() if args.root else dataset_root(args.name)
    ok, lines = verify_report(args.name, root, registered_as().get(args.name))
    print("\n".join(lines))
    return 0 if ok else 1


def _cmd_list(args) -> int:
    from ..registry import get_registry

    entries, aliases = registered(), registered_as()
    print(f"data root: {data_root()}")
    downloadable = {s.name for s in get_registry().specs("dataset")
                    if (s.sources or s.manual) and s.name not in aliases}
    for name in sorted(downloadable | set(entries)):
        where = entries.get(name) or f"{dataset_root(name)} (default{'' if dataset_root(name).exists() else ', absent'})"
        print(f"  {name:10s} {where}" + (f"  (as {aliases[name]})" if name in aliases else ""))
    return 0


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("data", help="get, register and verify datasets",
                              description="Get, register and check datasets. Each dataset plugin reads its files "
                                          "from its folder: the one registered with `data add`, else <data "
                                          "root>/NAME (the data root: $LFABENCH_DATA, else "
                                          "~/.local/share/lfabench).")
    sub = p.add_subparsers(dest="data_command", required=True)
    f = sub.add_parser("fetch", help="download a dataset from its official source into the data root",
                       description="Download a dataset plugin's files from the sources it declares, check their "
                                   "checksums, unpack them safely and report what was found.")
    f.add_argument("name", help="the dataset plugin (`lfabench data list` shows those with sources)")
    f.add_argument("--dest", default=None, help="folder to download into (registered); default <data root>/NAME")
    f.add_argument("--timeout", type=float, default=15.0, help="connect timeout in seconds (default 15)")
    f.set_defaults(func=_cmd_fetch)
    a = sub.add_parser("add", help="register a local copy of a dataset, or your own folder under a name of its own",
                       description=textwrap.fill(
                           "Register a folder: the copy of dataset plugin NAME, or (with --as) a folder of your own "
                           "that becomes the dataset NAME, read by a folder plugin. The folder is loaded first and "
                           "what was found is printed (counts, fingerprint); an incomplete one is not registered. "
                           "Several folders can be registered --as imagefolder, each under its own name, each a "
                           "dataset of its own.", width=100),
                       epilog="examples:\n  lfabench data add scene15 ~/data/15-Scene\n"
                              "  lfabench data add birds ~/photos/birds --as imagefolder\n"
                              "  lfabench data add trips ~/photos/trips --as retrieval_folder\n"
                              "  lfabench run dataset=birds",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("name", help="the dataset plugin whose copy this is; with --as, the new dataset's name "
                                "(lower case, digits, underscores)")
    a.add_argument("path", help="the folder")
    a.add_argument("--as", dest="as_plugin", metavar="PLUGIN", default=None,
                   help="read the folder with this folder plugin, as the dataset NAME: imagefolder (one subfolder "
                        "of images per class) or retrieval_folder (images and a ground-truth file)")
    a.add_argument("--force", action="store_true", help="register even if the copy is incomplete")
    a.set_defaults(func=_cmd_add)
    v = sub.add_parser("verify", help="check a dataset's files: counts found, checksums, what is missing",
                       description="Load a dataset from its folder and report what was found (counts, fingerprint), "
                                   "each declared file's checksum and what is missing. Exit status 1 when incomplete.")
    v.add_argument("name", help="the dataset (a plugin, or a name registered with `data add --as`)")
    v.add_argument("--root", default=None, help="check this folder instead of the registered/default one")
    v.set_defaults(func=_cmd_verify)
    ls = sub.add_parser("list", help="show the data root and where each dataset is",
                        description="The data root, and where each dataset with downloads or a registered folder "
                                    "is (folders registered --as say which plugin reads them).")
    ls.set_defaults(func=_cmd_list)
    r = sub.add_parser("remove", help="forget a registered folder (its files are untouched)",
                       description="Remove NAME from the data registry; the folder and its files stay as they are.")
    r.add_argument("name", help="the registered name (`lfabench data list` shows them)")
    r.set_defaults(func=_cmd_remove)
