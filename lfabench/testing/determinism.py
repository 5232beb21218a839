"""Bit-for-bit reproducibility across thread counts: a run's stage digests, computed in a fresh process.

Thread pools (OpenBLAS, FAISS's OpenMP, OpenCV) size themselves when their library loads, so a run
under another thread count needs another process. :func:`digests_with_threads` starts one with every
thread count of :data:`THREAD_ENV` set to ``threads`` (descriptor extraction workers included) and
returns :func:`stage_digests` of one run there: the conductor's own run (:func:`lfabench.run.run_benchmark`),
its record's fingerprints (the fitted aggregator, the features, the predictions) and metrics, and sha256 of
what the record does not fingerprint (the descriptors with their keypoints, the split). Two thread counts
reproduce each other when every digest agrees; the first stage that differs is where the numbers diverged.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

#: Environment variables that set thread-pool sizes (and lfabench's descriptor workers) at process start.
THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
              "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "OPENCV_FOR_THREADS_NUM", "LFABENCH_N_JOBS")

#: The digests of :func:`stage_digests`, in pipeline order.
STAGES = ("descriptors", "split", "fitted", "features", "predictions", "metrics")


def _digest(*arrays: Any) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.empty(0) if a is None else np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape};".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _json_digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=repr).encode()).hexdigest()


def stage_digests(config: dict[str, Any], cache_descriptors: bool = False) -> dict[str, str]:
    """sha256 of each stage's output for one run of ``config`` (resolved, as ``run_benchmark`` takes it).

    The run is the conductor's (:func:`lfabench.run.run_benchmark`, into a temporary folder, under the
    config's ``threads``, default 1). Stages, in order (:data:`STAGES`): ``descriptors`` (descriptors,
    keypoints, offsets), ``split`` (fit, train and test indices, fit labels), ``fitted``, ``features`` and
    ``predictions`` (the record's fingerprints) and ``metrics``; ``metric_values`` holds the metrics
    themselves. Descriptors come from the array cache when ``cache_descriptors``, else are extracted by
    :func:`lfabench.describe.default_n_jobs` workers (:func:`many_stage_digests` extracts once per dataset
    and descriptor).
    """
    from ..run import run_benchmark

    out: dict[str, str] = {}

    def observe(stage: str, value) -> None:
        if stage == "descriptors":
            out["descriptors"] = _digest(value.descriptors, value.keypoints, value.offsets)
        elif stage == "split":
            out["split"] = _digest(value.fit_indices, value.fit_labels, value.train_indices, value.test_indices)

    with tempfile.TemporaryDirectory(prefix="lfabench-determinism-") as tmp:
        record = run_benchmark(dict(config, cache_descriptors=bool(cache_descriptors)), Path(tmp) / "run",
                               observe=observe)
    fingerprints = record["fingerprints"]
    metrics = {k: float(v) for k, v in record["metrics"].items()}
    out.update({stage: fingerprints.get(stage) for stage in ("fitted", "features", "predictions")})
    out["metrics"] = _json_digest(metrics)
    out["metric_values"] = json.dumps(metrics, sort_keys=True)
    return out


def many_stage_digests(configs: list[dict[str, Any]], cache_descriptors: bool = False) -> list[dict[str, str]]:
    """:func:`stage_digests` of each config; configs with the same dataset and descriptor extract once.

    Without ``cache_descriptors`` the runs read and write an array cache of their own (a temporary
    ``LFABENCH_CACHE``), so every descriptor is extracted here, under this process's thread counts."""
    with contextlib.ExitStack() as stack:
        if not cache_descriptors:
            stack.enter_context(_environ("LFABENCH_CACHE", stack.enter_context(tempfile.TemporaryDirectory())))
        return [stage_digests(c, cache_descriptors=True) for c in configs]


@contextlib.contextmanager
def _environ(name: str, value: str):
    saved = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = saved


def thread_env(threads: int) -> dict[str, str]:
    """The environment that sizes every thread pool (and the descriptor workers) to ``threads``."""
    return {name: str(int(threads)) for name in THREAD_ENV}


def digests_with_threads(configs: list[dict[str, Any]], threads: int, env: dict[str, str] | None = None,
                         timeout: float = 1800, cache_descriptors: bool = False) -> list[dict[str, str]]:
    """:func:`many_stage_digests` of ``configs`` in a fresh Python process whose pools start with ``threads``."""
    code = ("import json, sys\nfrom lfabench.testing.determinism import many_stage_digests\n"
            f"print(json.dumps(many_stage_digests(json.loads(sys.stdin.read()), {bool(cache_descriptors)})))\n")
    full_env = dict(os.environ, **(env or {}), **thread_env(threads))
    proc = subprocess.run([sys.executable, "-c", code], input=json.dumps(configs), capture_output=True, text=True,
                          env=full_env, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"the runs with {threads} thread(s) failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def first_difference(a: dict[str, str], b: dict[str, str]) -> str | None:
    """The first stage whose digests differ between two :func:`stage_digests` (None: bit-identical)."""
    for stage in STAGES:
        if a.get(stage) != b.get(stage):
            return stage
    return None
