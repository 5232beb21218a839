"""Run records: ``result.json``, written atomically for every run, successful or not.

The schema is :class:`RunRecord` below, as code: :class:`RunRecorder` writes it, :func:`read_record`
checks it, and the leaderboard reads it. A field added to a record is added there first (and the
test of the schema fails until it is).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
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
from typing import Any, Literal, TypedDict

import numpy as np

from ._version import __version__
from .plugin import KINDS
from .storage import write_json_atomic

SCHEMA_VERSION = 1
RESULT_FILE = "result.json"


class RecordError(TypedDict):
    """Why a run failed."""

    type: str           # the exception's class name
    message: str
    stage: str          # setup, config, dataset, descriptors, split, fit, transform or evaluate
    traceback: str


class PluginOrigin(TypedDict):
    """Which plugin ran, and where it came from."""

    name: str
    version: str
    distribution: str
    module: str


class RunRecord(TypedDict, total=False):
    """One run's ``result.json`` (``schema_version`` 1). Times in seconds, memory in MiB, dates ISO-8601 UTC."""

    schema_version: int
    status: Literal["running", "ok", "failed", "interrupted"]  # interrupted: SIGINT/SIGTERM from outside
    error: RecordError | None
    plugins: dict[str, PluginOrigin]         # kind -> origin
    config: dict[str, Any]                   # the resolved config (Hydra), seeds included
    setting: dict[str, Any]                  # kind -> {name, params} before interpolation: seed-free
    ignored_params: list[str]                # "<kind>.<param>" of the setting that could not change this run
    seed: int | None                         # None only when the config's seed was not an integer (failed at config)
    time_limit_s: float | None               # the run's time limit (config `time_limit`), None for none
    isolate: str                             # where the run ran (config `isolate`): "none" in-process, "process"
    metrics: dict[str, float]
    timings_s: dict[str, float]              # per stage, and "total"
    peak_rss_mb: float | None                # this run's peak resident memory (see RunRecorder; not the process's
                                             # lifetime peak: an earlier run of a sweep never shows here)
    peak_rss_mb_by_stage: dict[str, float]   # sampled every 20 ms during each stage
    rss_at_start_mb: float | None            # resident memory of the process when the run began (in a sweep:
                                             # what earlier runs left allocated); peak - start: the run's own
    dataset: dict[str, Any] | None           # name, task, n_samples, fingerprint, ...
    descriptors: dict[str, Any]              # n_descriptors, dim, empty_samples, extractor, cap rule, cache
    split: dict[str, Any] | None             # the protocol's split (and per-query results)
    fit_cache: list[dict[str, Any]]          # fitted arrays taken from / stored in the cache: {entry, hit, fit_seconds}
    fit_info: dict[str, Any]                 # Aggregator.record_info(): e.g. training_curve
    prototypes: dict[str, Any]               # prototype aggregators only: file (prototypes.npz), n_prototypes, weight
    output_dim: int
    started_at: str
    finished_at: str | None
    lfabench_version: str
    git_revision: str | None
    host: dict[str, Any]                     # python, platform, cpu_count, cpu_model, cpu_simd, blas (host_info)
    run_dir: str


#: Fields every readable record has.
REQUIRED_FIELDS = ("schema_version", "status", "config", "seed", "metrics", "timings_s")
_FIELD_TYPES = {"schema_version": int, "status": str, "error": (dict, type(None)), "plugins": dict, "config": dict,
                "setting": dict, "ignored_params": list, "seed": (int, type(None)),
                "time_limit_s": (float, int, type(None)), "isolate": str, "metrics": dict, "timings_s": dict,
                "peak_rss_mb": (float, int, type(None)),
                "peak_rss_mb_by_stage": dict, "rss_at_start_mb": (float, int, type(None)), "dataset": (dict, type(None)), "descriptors": dict,
                "split": (dict, type(None)), "fit_cache": list, "fit_info": dict, "prototypes": dict, "output_dim": int, "started_at": str,
                "finished_at": (str, type(None)), "lfabench_version": str, "git_revision": (str, type(None)),
                "host": dict, "run_dir": str}
assert set(_FIELD_TYPES) == set(RunRecord.__annotations__), "every RunRecord field needs its type check"


def plugin_setting(config: dict[str, Any]) -> dict[str, Any]:
    """The plugin part of a config, ``{kind: {name, params}}`` for the four kinds: what a record's ``setting`` holds.

    Given the config before interpolation (``random_state: ${seed}`` literal), runs that share it
    differ only by their seed, so the leaderboard pools them.
    """
    return {k: v for k, v in config.items() if k in KINDS}


def _canonical(value: Any) -> Any:
    """Tuples as lists, keys as strings: the same setting hashes the same from YAML, Python or a record."""
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    return value


def setting_key(setting: dict[str, Any], seed: Any) -> str:
    """12 hex digits identifying (plugin setting before interpolation, seed): a run's folder name (``lfabench.resume``)."""
    payload = json.dumps({"setting": _canonical(plugin_setting(setting)), "seed": seed}, sort_keys=True,
                         default=str)
    return hashlib.sha1(payload.encode()).hexdigest()[:12]


def check_record(data: Any, source: str = "record") -> RunRecord:
    """``data`` if it is a :class:`RunRecord` this lfabench reads; else a ValueError naming ``source`` and the field."""
    if not isinstance(data, dict) or "schema_version" not in data:
        raise ValueError(f"{source}: not an lfabench run record (no schema_version)")
    if not isinstance(data["schema_version"], int) or data["schema_version"] > SCHEMA_VERSION:
        raise ValueError(f"{source}: record schema {data['schema_version']!r} is newer than this lfabench "
                         f"understands ({SCHEMA_VERSION}); upgrade lfabench")
    for field in REQUIRED_FIELDS:
        if field not in data:
            raise ValueError(f"{source}: run record has no {field!r} field")
    for field, value in data.items():
        expected = _FIELD_TYPES.get(field)
        if expected is not None and (not isinstance(value, expected) or (expected is int and isinstance(value, bool))):
            raise ValueError(f"{source}: run record field {field!r} is a {type(value).__name__}, "
                             f"not what the schema says ({RunRecord.__annotations__[field]})")
    if data["status"] not in ("running", "ok", "failed", "interrupted"):
        raise ValueError(f"{source}: run record status {data['status']!r} is not running, ok, failed or interrupted")
    return data


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


def _round_or_none(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


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


def _cpuinfo_value(key: str) -> str | None:
    """The value of the first ``key`` line of Linux's ``/proc/cpuinfo`` (None where there is none)."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith(key):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def cpu_model() -> str | None:
    """The processor's name (Linux: ``/proc/cpuinfo``'s first "model name"; elsewhere ``platform.processor()``)."""
    return _cpuinfo_value("model name") or platform.processor() or None


#: CPU features that select SIMD code paths (OpenCV dispatches SIFT's kernels on them, OpenBLAS its GEMM kernel).
SIMD_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl")


def cpu_simd() -> list[str] | None:
    """Which of :data:`SIMD_FLAGS` the CPU has (Linux ``/proc/cpuinfo``; None elsewhere)."""
    flags = _cpuinfo_value("flags")
    if flags is None:
        return None
    have = set(flags.split())
    return [f for f in SIMD_FLAGS if f in have]


def blas_info() -> list[dict[str, Any]]:
    """The BLAS libraries loaded in this process (threadpoolctl): API, library, version, kernel architecture."""
    from threadpoolctl import threadpool_info

    return [{k: lib.get(k) for k in ("internal_api", "version", "architecture")}
            for lib in threadpool_info() if lib.get("user_api") == "blas"]


def host_info() -> dict[str, Any]:
    """The machine a run ran on. Besides the Python and OS versions it names the CPU, its SIMD features and the
    BLAS kernel (e.g. OpenBLAS ``Haswell`` against ``SkylakeX``): with the same packages, another CPU can
    change the floats (OpenCV's SIFT takes AVX2 or AVX-512 code paths by CPU; another GEMM kernel sums in
    another order), and an iterative fit can then end elsewhere."""
    return {"python": platform.python_version(), "platform": platform.platform(), "cpu_count": os.cpu_count(),
            "cpu_model": cpu_model(), "cpu_simd": cpu_simd(), "blas": blas_info()}


class RunRecorder:
    """Collects a run's record and writes ``result.json`` on every outcome.

    >>> rec = RunRecorder(run_dir, config, seed)
    >>> with rec.stage("fit"):
    ...     agg.fit(bags, y)
    >>> rec.finish_ok(metrics)          # or rec.finish_failed(exc) when a stage raised

    Memory: ``peak_rss_mb`` is the highest resident memory of the process sampled (every 20 ms) while
    this run's stages ran, or, for a run in a child process (``isolate=process``), that child's peak.
    ``ru_maxrss`` is not used in-process: it is the process's peak since it started, so in a sweep a
    run would inherit the peak of any earlier run. Memory an earlier run left allocated is still
    resident and counts; ``rss_at_start_mb`` says how much the process held when this run began.
    """

    def __init__(self, run_dir: Path, config: dict, seed: int):
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / RESULT_FILE
        self._t0 = time.perf_counter()
        self.current_stage = "setup"
        #: called as ``listener(stage, snapshot)`` when a stage starts (an isolated run reports to its parent)
        self.listener = None
        self._peak_elsewhere: tuple[float | None] | None = None  # (peak,) when the run ran in another process
        self.data: RunRecord = {
            "schema_version": SCHEMA_VERSION, "status": "running", "error": None, "plugins": {},
            "config": config, "seed": seed, "metrics": {}, "timings_s": {}, "peak_rss_mb": None,
            "peak_rss_mb_by_stage": {}, "rss_at_start_mb": _round_or_none(current_rss_mb()),
            "dataset": None, "split": None, "started_at": now_iso(), "finished_at": None,
            "lfabench_version": __version__, "git_revision": git_revision(),
            "host": host_info(),
            "run_dir": str(self.run_dir.resolve()),
        }
        self._keep_previous()

    @classmethod
    def adopt(cls, snapshot: dict, stage: str, elapsed_s: float, stage_elapsed_s: float,
              peak_rss_mb: float | None = None) -> RunRecorder:
        """The recorder of a run that another process started and could not finish (it was killed).

        ``snapshot`` is that run's last report (:meth:`snapshot`, sent when ``stage`` started
        ``stage_elapsed_s`` ago; the run started ``elapsed_s`` ago); ``peak_rss_mb`` that process's
        peak memory (None: unknown). The child already kept any earlier record aside.
        """
        rec = cls.__new__(cls)
        rec.data = snapshot
        rec.run_dir = Path(snapshot["run_dir"])
        rec.path = rec.run_dir / RESULT_FILE
        rec._t0 = time.perf_counter() - elapsed_s
        rec.current_stage = stage
        rec.listener = None
        rec._peak_elsewhere = (peak_rss_mb,)
        if stage != "setup":
            rec.data["timings_s"][stage] = round(stage_elapsed_s, 6)
        return rec

    def snapshot(self) -> dict:
        """The record so far, as JSON-ready data."""
        return _jsonable(self.data)

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
        if self.listener is not None:
            self.listener(name, self.snapshot())
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
        self.data["peak_rss_mb"] = self._run_peak_mb() if self._peak_elsewhere is None else self._peak_elsewhere[0]
        self.data["finished_at"] = now_iso()
        write_json_atomic(self.path, _jsonable(self.data))

    def _run_peak_mb(self) -> float:
        """The highest memory sampled during this run's stages (and now); ``ru_maxrss`` where nothing can be
        sampled (no ``/proc``)."""
        now = current_rss_mb()
        if now is None:
            return round(peak_rss_mb(), 1)
        return round(max([now, *self.data["peak_rss_mb_by_stage"].values()]), 1)

    def finish_ok(self, metrics: dict[str, float]) -> None:
        self.data["metrics"] = {k: float(v) for k, v in metrics.items()}
        self._close("ok")

    def finish_failed(self, exc: BaseException, traceback_text: str | None = None, status: str = "failed") -> None:
        """Record ``exc`` as the failure of the current stage (``traceback_text``: where the run really was,
        when ``exc`` was raised elsewhere, e.g. by the parent of a killed isolated run); ``status``
        ``"interrupted"`` when a signal from outside stopped it (:class:`lfabench.isolation.RunInterrupted`)."""
        if traceback_text is None:
            traceback_text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        self.data["error"] = {"type": type(exc).__name__, "message": str(exc), "stage": self.current_stage,
                              "traceback": traceback_text}
        self._close(status)


def read_record(path: Path) -> RunRecord:
    """Load one ``result.json`` and check it against :class:`RunRecord`; a malformed file is a ValueError naming it."""
    path = Path(path)
    try:
        with open(path) as fh:
            data = json.load(fh)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not a valid run record ({exc})") from exc
    return check_record(data, str(path))
