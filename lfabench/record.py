"""Run records: ``result.json``, written atomically for every run, successful or not.

The schema is :class:`RunRecord` below, as code: :class:`RunRecorder` writes it, :func:`read_record`
checks it (:func:`validate_record`: schema, types, finite metrics in range), and the leaderboard and
``compare`` read records only through it. A field added to a record is added there first (and the test
of the schema fails until it is). ``docs/records.md`` describes the format.

Beside ``result.json`` a run may leave ``predictions.npz`` (the protocol's predictions, compressed:
:mod:`lfabench.evaluation.predictions`) and ``source.diff.gz`` (the diff of a dirty source tree). The
record's ``digest`` is the sha256 of its canonical JSON without that field (:func:`content_digest`);
the files beside it are named, with their sha256, inside the record, so the digest covers them too.
"""

from __future__ import annotations

import datetime as _dt
import gzip
import hashlib
import math
import re
import json
import os
import resource
import sys
import threading
import time
import traceback
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, TypedDict

import numpy as np

from . import provenance as _provenance
from .plugin import KINDS
from .storage import atomic_write, write_json_atomic

#: The record format written now. 1: before provenance, predictions, fingerprints and digests; 2: the machine and
#: code facts also at the top level (``lfabench_version``, ``git_revision``, ``host``); 3: under ``provenance`` only.
SCHEMA_VERSION = 3
#: The record formats this lfabench reads.
READABLE_SCHEMAS = (1, 2, 3)
#: The first format with a digest, predictions and provenance: an older record is checked by its metrics alone.
VERIFIABLE_SCHEMA = 2
#: Top-level fields of schemas 1 and 2 whose facts ``provenance`` holds (:mod:`lfabench.provenance` reads both
#: layouts); a record of schema 3 has none of them.
LEGACY_FIELDS = ("lfabench_version", "git_revision", "host")
RESULT_FILE = "result.json"
PREDICTIONS_FILE = "predictions.npz"
DIFF_FILE = "source.diff.gz"
#: What a run writes into its folder beside ``result.json`` (``prototypes.npz``: lfabench.prototypes). A run in a
#: folder that holds any of them already keeps each as ``<name>.previous-<time>.<ext>`` before writing its own.
RUN_FILES = (PREDICTIONS_FILE, "prototypes.npz", DIFF_FILE)


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
    """One run's ``result.json`` (``schema_version`` 3). Times in seconds, memory in MiB, dates ISO-8601 UTC."""

    schema_version: int
    status: Literal["running", "ok", "failed", "interrupted"]  # interrupted: SIGINT/SIGTERM from outside
    error: RecordError | None
    plugins: dict[str, PluginOrigin]         # kind -> origin
    config: dict[str, Any]                   # the resolved config (Hydra), seeds included
    setting: dict[str, Any]                  # kind -> {name, params} resolved but for ${seed}, ${cache}: seed-free
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
    lfabench_version: str                    # schemas 1-2 only (LEGACY_FIELDS): provenance.lfabench_version
    git_revision: str | None                 # schemas 1-2 only: provenance.git_revision (+ provenance.dirty)
    host: dict[str, Any]                     # schemas 1-2 only: python, platform, cpu_count, cpu_model, cpu_simd
    #                                          (SIMD flags), blas; provenance.environment holds each
    run_dir: str
    provenance: dict[str, Any]               # version, revision, dirty + diff, environment (the machine), package
    #                                          lock: the one home of the machine and code facts
    predictions: dict[str, Any] | None       # file, kind, sha256 of predictions.npz; None: the evaluator gave none
    fingerprints: dict[str, str | None]      # sha256 of descriptors, fitted arrays, features, predictions
    digest: str                              # sha256 of the canonical JSON of every other field (content_digest)
    publication: dict[str, Any]              # set by publishing only: {"unclean": [reasons]} when allowed unclean
    determinism: dict[str, Any]              # threads: every OpenMP pool's size during the run; blas_threads: every
    #                                          BLAS pool's (one, lfabench.threads); pinned: those pools


#: Fields every readable record has.
REQUIRED_FIELDS = ("schema_version", "status", "config", "seed", "metrics", "timings_s")
_FIELD_TYPES = {"schema_version": int, "status": str, "error": (dict, type(None)), "plugins": dict, "config": dict,
                "setting": dict, "ignored_params": list, "seed": (int, type(None)),
                "time_limit_s": (float, int, type(None)), "isolate": str, "metrics": dict, "timings_s": dict,
                "peak_rss_mb": (float, int, type(None)),
                "peak_rss_mb_by_stage": dict, "rss_at_start_mb": (float, int, type(None)), "dataset": (dict, type(None)), "descriptors": dict,
                "split": (dict, type(None)), "fit_cache": list, "fit_info": dict, "prototypes": dict, "output_dim": int, "started_at": str,
                "finished_at": (str, type(None)), "lfabench_version": str, "git_revision": (str, type(None)),
                "host": dict, "run_dir": str, "provenance": dict, "predictions": (dict, type(None)),
                "fingerprints": dict, "digest": str, "publication": dict,
                "determinism": dict}
assert set(_FIELD_TYPES) == set(RunRecord.__annotations__), "every RunRecord field needs its type check"


def plugin_setting(config: dict[str, Any]) -> dict[str, Any]:
    """The plugin part of a config, ``{kind: {name, params}}`` for the four kinds: what a record's ``setting`` holds.

    Given the config before interpolation (``random_state: ${seed}`` literal), runs that share it
    differ only by their seed, so the leaderboard pools them.
    """
    return {k: v for k, v in config.items() if k in KINDS}


def canonical_value(value: Any) -> Any:
    """Tuples as lists, keys as strings: the same setting hashes the same from YAML, Python or a record."""
    if isinstance(value, dict):
        return {str(k): canonical_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [canonical_value(v) for v in value]
    return value


def setting_key(setting: dict[str, Any], seed: Any) -> str:
    """12 hex digits identifying (plugin setting, seed): a run's folder name (``lfabench.resume.run_setting``)."""
    payload = json.dumps({"setting": canonical_value(plugin_setting(setting)), "seed": seed}, sort_keys=True,
                         default=str)
    return hashlib.sha1(payload.encode()).hexdigest()[:12]


def check_record(data: Any, source: str = "record") -> RunRecord:
    """``data`` if it is a :class:`RunRecord` this lfabench reads; else a ValueError naming ``source`` and the field."""
    if not isinstance(data, dict) or "schema_version" not in data:
        raise ValueError(f"{source}: not an lfabench run record (no schema_version)")
    schema = data["schema_version"]
    if not isinstance(schema, int) or isinstance(schema, bool) or schema not in READABLE_SCHEMAS:
        newer = isinstance(schema, int) and not isinstance(schema, bool) and schema > SCHEMA_VERSION
        raise ValueError(f"{source}: unknown record format (schema_version {schema!r}; this lfabench reads "
                         f"{', '.join(map(str, READABLE_SCHEMAS))})" + ("; upgrade lfabench" if newer else ""))
    for field in REQUIRED_FIELDS:
        if field not in data:
            raise ValueError(f"{source}: run record has no {field!r} field")
    for field, value in data.items():
        expected = _FIELD_TYPES.get(field)
        if expected is not None and (not isinstance(value, expected) or (expected is int and isinstance(value, bool))):
            raise ValueError(f"{source}: run record field {field!r} is a {type(value).__name__}, "
                             f"not what the schema says ({RunRecord.__annotations__[field]})")
    legacy = [f for f in LEGACY_FIELDS if f in data]
    if schema >= 3 and legacy:
        raise ValueError(f"{source}: run record of schema_version {schema} has {', '.join(map(repr, legacy))} at the "
                         "top level; that format keeps them under 'provenance' only")
    if data["status"] not in ("running", "ok", "failed", "interrupted"):
        raise ValueError(f"{source}: run record status {data['status']!r} is not running, ok, failed or interrupted")
    return data


#: Metrics in percent: their values must lie in [0, 100] (``precision@<k>`` for every k; the Revisited
#: ``mAP_<setup>`` and ``mP@<k>_<setup>``).
PERCENT_METRICS = re.compile(r"^(accuracy|mAP|precision@\d+|mAP_(easy|medium|hard)|mP@\d+_(easy|medium|hard))$")


def _release(version: str) -> tuple[int, ...] | None:
    """The release numbers of a PEP 440 version (None when it is not one)."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(version).release
    except InvalidVersion:
        return None


def validate_record(data: Any, source: str = "record") -> RunRecord:
    """``data`` if it is a record the leaderboard may count; else one ValueError naming ``source`` and the field.

    Beyond :func:`check_record` (a known record format, required fields, field types, status): each
    metric is a real number (not a bool, string, list or null) and finite, percent metrics
    (:data:`PERCENT_METRICS`) lie in [0, 100], and the version that wrote it (:func:`~lfabench.provenance.recorded_version`)
    is a PEP 440 version of a release series this lfabench knows (not newer: such a record may mean things this code
    does not read).
    The single check the leaderboard and ``compare`` apply where they load records.
    """
    check_record(data, source)
    for name, value in data["metrics"].items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{source}: metric {name!r} is a {type(value).__name__} ({value!r}), not a number")
        if not math.isfinite(value):
            raise ValueError(f"{source}: metric {name!r} is {value!r}, not a finite number")
        if PERCENT_METRICS.match(name) and not 0.0 <= value <= 100.0:
            raise ValueError(f"{source}: metric {name!r} = {value!r} lies outside [0, 100] (a percentage)")
    version = _provenance.recorded_version(data)
    if version is not None:
        if not isinstance(version, str):
            raise ValueError(f"{source}: lfabench_version {version!r} is not a version (PEP 440)")
        release = _release(version)
        if release is None:
            raise ValueError(f"{source}: lfabench_version {version!r} is not a version (PEP 440)")
        ours = _release(_provenance.source_version()) or ()
        if release[:2] > tuple(ours[:2]):
            raise ValueError(f"{source}: written by lfabench {version}, a release newer than this one "
                             f"({_provenance.source_version()}); upgrade lfabench to read it")
    return data


def canonical_json(data: Any) -> bytes:
    """The bytes a digest is taken of: sorted keys, no whitespace, UTF-8, no NaN (JSON has none)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def content_digest(data: dict) -> str:
    """sha256 of a record's canonical JSON without its ``digest`` field."""
    return hashlib.sha256(canonical_json({k: v for k, v in data.items() if k != "digest"})).hexdigest()


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def save_predictions(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write predictions compressed (``np.savez_compressed``), atomically; never pickled."""
    for name, a in arrays.items():
        if np.asarray(a).dtype == object:
            raise ValueError(f"predictions array {name!r} holds Python objects; store numbers or strings")
    with atomic_write(path, "wb") as fh:
        np.savez_compressed(fh, **arrays)


def load_predictions(path: Path) -> dict[str, np.ndarray]:
    """The arrays of a ``predictions.npz`` (a ValueError naming the file when it cannot be read)."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            return {k: npz[k] for k in npz.files}
    except (OSError, ValueError, EOFError) as exc:
        raise ValueError(f"{path}: unreadable predictions ({exc})") from exc


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):  # np.float64(nan) too: JSON (and the digest) has no NaN
        return _jsonable(obj.item())
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
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


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


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
            "run_dir": str(self.run_dir.resolve()),
            "predictions": None, "fingerprints": {},
        }
        self._source = _provenance.source_state()
        self.data["provenance"] = _provenance.collect(self._source)
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
        rec._source = _provenance.source_state()  # the child ran this checkout's code: the same diff
        if stage != "setup":
            rec.data["timings_s"][stage] = round(stage_elapsed_s, 6)
        return rec

    def snapshot(self) -> dict:
        """The record so far, as JSON-ready data."""
        return _jsonable(self.data)

    def _keep_previous(self) -> None:
        """A run directory reused by hand (``force=true``, ``hydra.run.dir``) keeps its earlier record as
        ``result.previous-<time>.json``, and every other file this run would replace (:data:`RUN_FILES`, the
        earlier record's predictions among them, or a user's own file of that name) as
        ``<name>.previous-<time>.<ext>`` with the same time: nothing a rerun replaces is lost."""
        stamp = _dt.datetime.now().strftime("%Y%m%dT%H%M%S%f")
        for name in (RESULT_FILE, *RUN_FILES):
            path = self.run_dir / name
            if path.exists() or path.is_symlink():
                stem, _, ext = name.partition(".")
                os.replace(path, self.run_dir / f"{stem}.previous-{stamp}.{ext}")

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

    def store_predictions(self, arrays: dict[str, np.ndarray] | None) -> None:
        """Keep the evaluator's predictions beside the record (``predictions.npz``) and name them in it;
        None: the evaluator gave none, and the record says so (``predictions: null``)."""
        from .evaluation.predictions import predictions_fingerprint

        self.data["fingerprints"]["predictions"] = None
        if arrays is None:
            self.data["predictions"] = None
            return
        path = self.run_dir / PREDICTIONS_FILE
        save_predictions(path, arrays)
        self.data["predictions"] = {"file": PREDICTIONS_FILE, "kind": str(np.asarray(arrays.get("kind", ""))),
                                    "sha256": file_sha256(path)}
        self.data["fingerprints"]["predictions"] = predictions_fingerprint(arrays)

    def _write_diff(self) -> None:
        """A dirty tree's diff beside the record, gzip-compressed (its sha256, of the plain diff, is in the record).
        The gzip header carries no name and no time, so the same diff gives the same file."""
        source = getattr(self, "_source", None)
        prov = self.data.get("provenance")
        if source is None or not source.dirty or not isinstance(prov, dict):
            return
        with atomic_write(self.run_dir / DIFF_FILE, "wb") as fh:
            with gzip.GzipFile(filename="", mode="wb", fileobj=fh, mtime=0) as gz:
                gz.write(source.diff)
        prov["diff_file"] = DIFF_FILE

    def _close(self, status: str) -> None:
        self.data["status"] = status
        self.data["timings_s"]["total"] = round(time.perf_counter() - self._t0, 6)
        self.data["peak_rss_mb"] = self._run_peak_mb() if self._peak_elsewhere is None else self._peak_elsewhere[0]
        self.data["finished_at"] = now_iso()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._write_diff()
        payload = _jsonable({k: v for k, v in self.data.items() if k != "digest"})
        payload["digest"] = content_digest(payload)
        self.data["digest"] = payload["digest"]
        write_json_atomic(self.path, payload)

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
    """Load one ``result.json`` and check it (:func:`validate_record`); a malformed or invalid file is a ValueError
    naming it and the field. Every reader of records (leaderboard, ``compare``, publishing, ``verify``) loads
    them here."""
    path = Path(path)
    try:
        with open(path) as fh:
            data = json.load(fh)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not a valid run record ({exc})") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: unreadable run record ({exc})") from exc
    return validate_record(data, str(path))
