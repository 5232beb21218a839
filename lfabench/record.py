"""Run records: ``result.json``, written atomically for every run, successful or not.

Schema (``schema_version`` 1)::

    {
      "schema_version": 1,
      "status": "ok" | "failed",
      "error": null | {"type": str, "message": str, "stage": str, "traceback": str},
      "plugins": {kind: {"name", "version", "distribution"}},
      "config": {... resolved Hydra config of the run ...},
      "setting": {kind: {"name", "params"}},  # the config before interpolation, seed-free

      "seed": int,
      "metrics": {name: float},
      "timings_s": {"descriptors", "fit", "transform", "evaluate", "total"},
      "peak_rss_mb": float,         # peak resident memory of the process (ru_maxrss, MiB)
      "peak_rss_mb_by_stage": {stage: float},
      "fit_cache": [{"entry", "hit"}],  # fitted arrays the fit took from / stored in the cache  # peak RSS sampled every 20 ms during each stage
      "dataset": {"name", "task", "n_samples", "fingerprint", ...},
      "split": {...},               # protocol's split information
      "started_at", "finished_at": ISO-8601 UTC,
      "lfabench_version": str, "git_revision": str | null,
      "host": {"python", "platform", "cpu_count"},
      "run_dir": str
    }
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import resource
import subprocess
import sys
import threading
import time
import traceback
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from .storage import write_json_atomic

SCHEMA_VERSION = 1
RESULT_FILE = "result.json"


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, float) and not np.isfinite(obj):
        return None if np.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    return repr(obj)


def peak_rss_mb() -> float:
    """Peak resident set size of this process, in MiB (``ru_maxrss`` is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def current_rss_mb() -> float | None:
    """Resident memory of this process now, in MiB (Linux ``/proc``; None elsewhere)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / (1024 * 1024)
    except (OSError, ValueError, IndexError):
        return None


class _RssSampler(threading.Thread):
    """Samples the resident memory every ``interval`` seconds while a stage runs (peak per stage)."""

    def __init__(self, interval: float = 0.02):
        super().__init__(daemon=True)
        self.interval = interval
        self.peak = current_rss_mb() or 0.0
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            rss = current_rss_mb()
            if rss is not None and rss > self.peak:
                self.peak = rss

    def stop(self) -> float:
        self._stop_event.set()
        self.join()
        rss = current_rss_mb()
        return max(self.peak, rss or 0.0)


def git_revision() -> str | None:
    """The git commit of the lfabench source tree (``+dirty`` when modified), or None outside a checkout."""
    here = Path(__file__).resolve().parent
    try:
        rev = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5)
        if rev.returncode != 0:
            return None
        top = subprocess.run(["git", "-C", str(here), "rev-parse", "--show-toplevel"], capture_output=True,
                             text=True, timeout=5).stdout.strip()
        if not (Path(top) / "lfabench" / "record.py").exists():  # some unrelated enclosing repository
            return None
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return rev.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


class RunRecorder:
    """Collects a run's record and writes ``result.json`` on every outcome.

    >>> rec = RunRecorder(run_dir, config, seed)
    >>> with rec.stage("fit"):
    ...     agg.fit(bags, y)
    >>> rec.finish_ok(metrics)          # or rec.finish_failed(exc), done by ``rec.guard()``
    """

    def __init__(self, run_dir: Path, config: dict, seed: int):
        from . import __version__

        self.run_dir = Path(run_dir)
        self.path = self.run_dir / RESULT_FILE
        self._t0 = time.perf_counter()
        self.current_stage = "setup"
        self.data: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION, "status": "running", "error": None, "plugins": {},
            "config": config, "seed": seed, "metrics": {}, "timings_s": {}, "peak_rss_mb": None,
            "peak_rss_mb_by_stage": {},
            "dataset": None, "split": None, "started_at": now_iso(), "finished_at": None,
            "lfabench_version": __version__, "git_revision": git_revision(),
            "host": {"python": platform.python_version(), "platform": platform.platform(),
                     "cpu_count": os.cpu_count()},
            "run_dir": str(self.run_dir.resolve()),
        }
        self._keep_previous()

    def _keep_previous(self) -> None:
        """A run directory reused by hand keeps its earlier record as ``result.previous-<time>.json``."""
        if self.path.exists():
            stamp = _dt.datetime.now().strftime("%Y%m%dT%H%M%S%f")
            os.replace(self.path, self.run_dir / f"result.previous-{stamp}.json")

    @contextmanager
    def stage(self, name: str):
        """Time a stage and sample its peak memory; recorded in ``timings_s`` / ``peak_rss_mb_by_stage``
        even when it raises."""
        self.current_stage = name
        sampler = _RssSampler()
        sampler.start()
        t = time.perf_counter()
        try:
            yield
        finally:
            self.data["timings_s"][name] = round(time.perf_counter() - t, 6)
            self.data["peak_rss_mb_by_stage"][name] = round(sampler.stop(), 1)

    def _close(self, status: str) -> None:
        self.data["status"] = status
        self.data["timings_s"]["total"] = round(time.perf_counter() - self._t0, 6)
        self.data["peak_rss_mb"] = round(peak_rss_mb(), 1)
        self.data["finished_at"] = now_iso()
        write_json_atomic(self.path, _jsonable(self.data))

    def finish_ok(self, metrics: dict[str, float]) -> None:
        self.data["metrics"] = {k: float(v) for k, v in metrics.items()}
        self._close("ok")

    def finish_failed(self, exc: BaseException) -> None:
        self.data["error"] = {"type": type(exc).__name__, "message": str(exc), "stage": self.current_stage,
                              "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))}
        self._close("failed")


def read_record(path: Path) -> dict[str, Any]:
    """Load one ``result.json``; a malformed file is a ValueError naming it."""
    path = Path(path)
    try:
        with open(path) as fh:
            data = json.load(fh)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not a valid run record ({exc})") from exc
    if not isinstance(data, dict) or "schema_version" not in data:
        raise ValueError(f"{path}: not an lfabench run record (no schema_version)")
    if data["schema_version"] > SCHEMA_VERSION:
        raise ValueError(f"{path}: record schema {data['schema_version']} is newer than this lfabench "
                         f"understands ({SCHEMA_VERSION}); upgrade lfabench")
    return data
