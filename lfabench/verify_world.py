"""What ``lfabench verify`` checks of a board against the world outside its files.

A board's files can be made consistent by whoever writes them (digests, manifest and page rebuilt after a
change): those checks prove integrity, not authenticity. This module checks what the board cannot forge by
itself:

* **revisions**: each record's ``git_revision`` is a commit of the lfabench checkout verify runs from and an
  ancestor of its HEAD (skipped, with a note, outside a checkout; a note in a shallow clone that lacks it);
* **seeds**: within each task (dataset, descriptor and evaluator settings) every setting holds every seed the
  task's records hold, ok or failed (a row that lost a seed fails); a task whose seeds are not ``0..N-1``
  gets a note;
* **data**: the stored split (k-NN: ``train_indices``, ``test_indices``), the true labels (``true``) and the
  retrieval ground truth (``query_indices``, each query's positives and junk) equal what the dataset and the
  evaluator give for the record's seed, after the dataset's fingerprint matched the record's. Always for the
  embedded datasets (:data:`EMBEDDED_DATASETS`, which read no file); for data on disk when asked
  (``lfabench verify --check-data``).

Whether a method really predicted what its record says is not among them: only a rerun
(``lfabench reproduce``) shows that.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import numpy as np

from .provenance import checkout_root, run_git
from .recordset import row_setting
from .registry import get_plugin, get_registry

__all__ = ["EMBEDDED_DATASETS", "WorldCheck"]

#: Datasets lfabench ships (built in memory, no file read): their splits and labels are always checked.
EMBEDDED_DATASETS = ("digits", "synthetic")

_REVISION = re.compile(r"[0-9a-f]{40}")


def _key(value) -> str:
    return json.dumps(value, sort_keys=True, default=str)


class WorldCheck:
    """The checks of the module docstring for one board (datasets and splits are built once each)."""

    def __init__(self, check_data: bool = False):
        self.check_data = check_data
        self._datasets: dict[str, object] = {}
        self._splits: dict[str, object] = {}

    # ------------------------------------------------------------------ data
    def _dataset(self, cfg: dict):
        key = _key(cfg)
        if key not in self._datasets:
            spec = get_registry().get_spec("dataset", cfg.get("name"))
            try:
                self._datasets[key] = spec.factory(**dict(cfg.get("params") or {}))
            except FileNotFoundError as exc:  # DatasetNotFoundError included
                self._datasets[key] = exc
        return self._datasets[key]

    def _split(self, dataset, ecfg: dict, seed: int, dkey: str):
        key = _key([dkey, ecfg, seed])
        if key not in self._splits:
            evaluator = get_plugin("evaluator", ecfg.get("name"))(**dict(ecfg.get("params") or {}))
            self._splits[key] = (evaluator.split(dataset, seed), evaluator)
        return self._splits[key]

    def predictions(self, path: Path, ppath: Path, rec: dict, arrays: dict, report) -> None:
        """Compare the stored split, labels and ground truth with the dataset's (module docstring)."""
        config = rec.get("config") or {}
        dcfg, ecfg = config.get("dataset") or {}, config.get("evaluator") or {}
        name = dcfg.get("name")
        if name not in EMBEDDED_DATASETS and not self.check_data:
            return
        try:
            dataset = self._dataset(dcfg)
        except Exception as exc:  # noqa: BLE001 -- an unknown plugin or bad params: a finding
            report.add(path, "dataset", f"could not be built here to check the split: {type(exc).__name__}: {exc}")
            return
        if isinstance(dataset, Exception):
            report.add(path, "dataset", f"not available here ({dataset}): split and labels not checked", note=True)
            return
        expected = (rec.get("dataset") or {}).get("fingerprint")
        if dataset.fingerprint() != expected:
            report.add(path, "dataset.fingerprint", f"dataset {name!r} here ({dataset.fingerprint()[:12]}) is not "
                       f"the record's ({str(expected)[:12]}): split and labels not compared")
            return
        try:
            split, _ = self._split(dataset, ecfg, rec.get("seed"), _key(dcfg))
        except Exception as exc:  # noqa: BLE001
            report.add(path, "split", f"the evaluator's split could not be drawn here: {type(exc).__name__}: {exc}")
            return
        kind = str(np.asarray(arrays.get("kind")))
        problems = (_knn_problems if kind in ("labels", "knn") else _retrieval_problems)(dataset, split, arrays)
        for field, problem in problems:
            report.add(ppath, field, problem)

    # ------------------------------------------------------------------ records
    def records(self, records: dict[Path, dict], report) -> None:
        """Revision ancestry and seed completeness over a board's readable records."""
        self._revisions(records, report)
        self._seeds(records, report)

    @staticmethod
    def _revisions(records: dict[Path, dict], report) -> None:
        by_revision = defaultdict(list)
        for path, rec in records.items():
            rev = (rec.get("provenance") or {}).get("git_revision")
            if rec.get("schema_version", 0) >= 2 and rev is not None:
                by_revision[rev].append(path)
        if not by_revision:
            return
        root = checkout_root()
        if root is None:
            report.add(min(p for ps in by_revision.values() for p in ps).parent, "provenance.git_revision",
                       "lfabench runs outside a git checkout: the records' revisions are not checked", note=True)
            return
        shallow = (run_git(root, "rev-parse", "--is-shallow-repository") or None)
        shallow = shallow is not None and shallow.stdout.strip() == b"true"
        for rev, paths in sorted(by_revision.items()):
            problem = None
            if not isinstance(rev, str) or not _REVISION.fullmatch(rev):
                problem = f"{rev!r} is not a full commit hash"
            else:
                found = run_git(root, "cat-file", "-e", f"{rev}^{{commit}}")
                if found is None or found.returncode != 0:
                    problem = f"{rev} is no commit of the lfabench checkout here ({root})"
                else:
                    ancestor = run_git(root, "merge-base", "--is-ancestor", rev, "HEAD")
                    if ancestor is None or ancestor.returncode != 0:
                        problem = f"{rev} is not an ancestor of HEAD of the lfabench checkout here ({root})"
            if problem:
                missing = problem.startswith(f"{rev} is no commit")
                for path in sorted(paths):
                    report.add(path, "provenance.git_revision",
                               problem + ("; a shallow clone: fetch its history to check" if shallow and missing
                                          else ""), note=shallow and missing)

    @staticmethod
    def _seeds(records: dict[Path, dict], report) -> None:
        tasks = defaultdict(lambda: defaultdict(dict))  # task -> row -> seed -> path
        for path, rec in records.items():
            try:
                setting = row_setting(rec)
            except Exception:  # noqa: BLE001 -- a record without a setting is reported by the other checks
                continue
            task = _key({k: v for k, v in setting.items() if k != "aggregator"})
            tasks[task][_key(setting)][rec.get("seed")] = path
        for rows in tasks.values():
            seeds = set().union(*(set(r) for r in rows.values()))
            for row in rows.values():
                lost = sorted(seeds - set(row), key=str)
                if lost:
                    report.add(min(row.values()), "seed",
                               f"this setting lacks seed(s) {', '.join(map(str, lost))} that the other settings of "
                               f"its table hold ({len(row)} of {len(seeds)} seeds)")
            ints = sorted(s for s in seeds if isinstance(s, int))
            if ints and ints != list(range(len(ints))):
                report.add(min(min(r.values()) for r in rows.values()), "seed",
                           f"the table's seeds are {ints}, not 0..{len(ints) - 1}", note=True)


def _differs(stored, expected) -> bool:
    stored, expected = np.asarray(stored), np.asarray(expected)
    return stored.shape != expected.shape or not np.array_equal(stored, expected)


def _knn_problems(dataset, split, arrays) -> list[tuple[str, str]]:
    out = []
    for name, expected in (("train_indices", split.train_indices), ("test_indices", split.test_indices)):
        if _differs(arrays[name], expected):
            out.append((name, f"not the split the evaluator draws from dataset {dataset.name!r} for this seed"))
    test = np.asarray(arrays["test_indices"])
    if test.dtype.kind in "iu" and test.size and (test.min() < 0 or test.max() >= dataset.n_samples):
        out.append(("test_indices", f"indices outside dataset {dataset.name!r}'s {dataset.n_samples} samples"))
        return out
    labels = np.asarray(dataset.labels)[test] if test.dtype.kind in "iu" else None
    if labels is not None and labels.dtype == object:
        labels = labels.astype(str)  # stored without pickle (lfabench.evaluation.predictions)
    if labels is None or _differs(arrays["true"], labels):
        out.append(("true", f"not the labels dataset {dataset.name!r} gives its test samples"))
    return out


def _retrieval_problems(dataset, split, arrays) -> list[tuple[str, str]]:
    gt = dataset.ground_truth
    if gt is None:
        return [("query_indices", f"dataset {dataset.name!r} has no retrieval ground truth")]
    if _differs(arrays["query_indices"], gt.queries):
        return [("query_indices", f"not the queries of dataset {dataset.name!r}")]
    out = []
    for stored, offsets, lists in (("positives", "positive_offsets", gt.positives), ("junk", "junk_offsets", gt.junk)):
        flat, off = np.asarray(arrays[stored]), np.asarray(arrays[offsets])
        if off.shape != (len(lists) + 1,):
            out.append((offsets, "does not partition the stored lists by query"))
            continue
        for q, truth in enumerate(lists):
            if _differs(np.sort(flat[off[q]:off[q + 1]]), np.sort(np.asarray(truth, dtype=np.int64))):
                out.append((stored, f"query {q}: not the ground truth of dataset {dataset.name!r}"))
                break
    return out
