"""``lfabench reproduce BOARD``: rerun records drawn at random from a board and say where each first differs.

Each drawn record is run again from the current code with its stored config, setting, seed, time limit
and isolation (:func:`lfabench.run.run_benchmark`, into a temporary folder), then compared stage by stage
with the fingerprints the record stores (:mod:`lfabench.fingerprint`, pipeline order: descriptors,
fitted arrays, features, predictions) and finally the metrics. Verdicts:

* ``identical``: every fingerprint and every metric bit for bit;
* ``differs at <stage>``: the first stage whose fingerprint differs (later stages then differ as a rule),
  with the metrics of both runs;
* ``metrics only``: a record of the older format (no fingerprints): the metrics compared alone;
* ``failed``: the rerun raised (its message).

A rerun says whether it ran on another CPU kind than the record (:func:`cpu_kind`: the SIMD flags and
the BLAS kernels differ, :func:`lfabench.provenance.recorded_machine` of either record layout), where fitted arrays are expected to differ in their last bits
(``docs/reproducibility.md``): :attr:`Outcome.same_metrics_on_another_cpu` is such a rerun whose metrics
are those of the record, which ``lfabench reproduce --across-cpus`` accepts.

By default the rerun reads descriptors and fitted arrays from the array cache where it holds them (fast; a
cache entry of another machine is not there); ``use_cache=False`` recomputes everything.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .boardfiles import confined
from .fingerprint import SPARSE_SCHEMES, STAGES
from .provenance import recorded_machine
from .record import read_record
from .recordset import find_records, finished
from .run import run_benchmark


@dataclass
class Outcome:
    """What rerunning one record gave."""

    path: str
    verdict: str                       # identical, differs at <stage>, metrics only, failed
    first_difference: str | None = None
    metrics_before: dict = field(default_factory=dict)
    metrics_after: dict = field(default_factory=dict)
    detail: str = ""
    other_cpu: bool = False            # the rerun ran on another CPU kind than the record (cpu_kind)

    @property
    def identical(self) -> bool:
        return self.verdict == "identical"

    @property
    def same_metrics_on_another_cpu(self) -> bool:
        """Differs at a stage, on another CPU kind than the record's, with the record's metrics exactly."""
        return (self.other_cpu and self.verdict.startswith("differs at") and self.verdict != "differs at metrics"
                and bool(self.metrics_before) and self.metrics_before == self.metrics_after)

    def __str__(self) -> str:
        changed = {k: (v, self.metrics_after.get(k)) for k, v in self.metrics_before.items()
                   if self.metrics_after.get(k) != v}
        metrics = "; ".join(f"{k} {a!r} -> {b!r}" for k, (a, b) in changed.items()) or "metrics identical"
        cpu = "; on another CPU kind than the record's" if self.other_cpu else ""
        return f"{self.verdict}: {self.path}" + ("" if self.identical else f" ({metrics}{self.detail}{cpu})")


def draw(records: list[Path], n: int, seed: int) -> list[Path]:
    """``n`` records drawn without replacement by ``numpy.random.default_rng(seed)`` from the sorted list."""
    records = sorted(records)
    if n >= len(records):
        return records
    picked = np.random.default_rng(seed).choice(len(records), size=n, replace=False)
    return [records[i] for i in sorted(picked)]


def compare(before: dict, after: dict, path: str) -> Outcome:
    """The verdict for a record (``before``) and its rerun's record (``after``)."""
    m0, m1 = before.get("metrics") or {}, after.get("metrics") or {}
    f0, f1 = before.get("fingerprints"), after.get("fingerprints") or {}
    if not f0:
        return Outcome(path, "metrics only" if m0 == m1 else "differs at metrics", None if m0 == m1 else "metrics",
                       m0, m1, "; an old-format record: no fingerprints to compare stages")
    for stage in STAGES:
        if f0.get(stage) is not None and f0.get(stage) != f1.get(stage):
            return Outcome(path, f"differs at {stage}", stage, m0, m1)
    if m0 != m1:
        return Outcome(path, "differs at metrics", "metrics", m0, m1)
    return Outcome(path, "identical", None, m0, m1)


def sparse_scheme(record: dict) -> str:
    """How the record's ``fitted`` fingerprint digested sparse fitted matrices
    (:data:`~lfabench.fingerprint.SPARSE_SCHEMES`): its ``fingerprints.fitted_sparse``, ``"dense"`` for a record
    without it; ValueError for another value (before any rerun)."""
    scheme = (record.get("fingerprints") or {}).get("fitted_sparse", "dense")
    if scheme not in SPARSE_SCHEMES:
        raise ValueError(f"fingerprints.fitted_sparse={scheme!r} is none of {', '.join(SPARSE_SCHEMES)}")
    return scheme


def cpu_kind(record: dict) -> tuple:
    """What makes a record's floating-point results CPU-specific: its machine's SIMD flags and each BLAS kernel
    (:func:`~lfabench.provenance.recorded_machine`)."""
    machine = recorded_machine(record)
    return tuple(machine["simd_flags"] or ()), tuple(machine["blas_kernels"])


def with_introduced_params(config: dict) -> dict:
    """``config`` (a record's) with every parameter its plugins gained after it was written set to the value that
    reproduces it (a plugin class's ``introduced_params``, ``{name: value}``: FV's ``em="sklearn"``, the EM its
    records ran before the float32 EM became the default; ProLFA's ``{"solver": {"admm_patience": None}}``, an
    option inside a group); parameters the record names are kept."""
    from .registry import fill_plugin_params

    return fill_plugin_params(config, lambda plugin: getattr(plugin.factory, "introduced_params", None) or {})


def rerun(path: Path, use_cache: bool = True, quiet: bool = True) -> Outcome:
    """Rerun one record's config with the current code into a temporary folder and compare (:func:`compare`);
    parameters added to its plugins since take the value that reproduces it (:func:`with_introduced_params`), and the
    rerun digests sparse fitted matrices as the record did (:func:`sparse_scheme`)."""
    rec = read_record(path)
    cfg = with_introduced_params(dict(rec["config"]))
    if not use_cache:
        cfg["cache"] = False
        cfg["cache_descriptors"] = False
    with tempfile.TemporaryDirectory(prefix="lfabench-reproduce-") as tmp:
        sink = io.StringIO()
        try:
            with contextlib.redirect_stdout(sink) if quiet else contextlib.nullcontext():
                after = run_benchmark(cfg, Path(tmp) / "run", setting=rec.get("setting") or None,
                                      time_limit_s=rec.get("time_limit_s"), isolate=rec.get("isolate") or "none",
                                      sparse_fingerprint=sparse_scheme(rec))
        except Exception as exc:  # the rerun's failure is the finding, reported per record
            return Outcome(str(path), "failed", None, rec.get("metrics") or {}, {},
                           f"; {type(exc).__name__}: {exc}")
        outcome = compare(rec, after, str(path))
        outcome.other_cpu = cpu_kind(rec) != cpu_kind(after)
        return outcome


def reproduce_board(board_dir: Path | str, sample: int = 5, seed: int = 0, use_cache: bool = True,
                    progress=None) -> list[Outcome]:
    """Rerun ``sample`` successful records drawn (``seed``) from ``board_dir`` (its ``records/`` when present)."""
    board_dir = Path(board_dir)
    root = board_dir / "records" if (board_dir / "records").is_dir() else board_dir
    ok = []
    for p in find_records([root]):
        try:
            confined(board_dir, p, "run record")
            if finished(read_record(p)):
                ok.append(p)
        except ValueError as exc:  # BoardFileError included: a record a rerun cannot start from
            raise ValueError(f"{exc}; reproduce reruns only records of the board's own folder") from None
    if not ok:
        raise ValueError(f"{root}: no successful run records to reproduce")
    outcomes = []
    for path in draw(ok, sample, seed):
        outcome = rerun(path, use_cache=use_cache)
        outcomes.append(outcome)
        if progress is not None:
            progress(outcome)
    return outcomes
