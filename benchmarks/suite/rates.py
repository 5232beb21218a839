"""This machine's arithmetic and memory rates, the denominators of every floor in ``docs/performance.md``.

``gemm_rate(dtype)`` is the rate numpy's BLAS reaches on a square matmul (``2 n^3`` operations, best of
``repeats``); ``copy_bandwidth()`` the rate of a large ``np.copyto`` between two arrays far larger than any
cache (bytes read plus bytes written, best of ``repeats``), the STREAM "copy" kernel. Both are timed in CPU
seconds of the process (``time.process_time``), as the paper-scale cases are: on one thread
(``OMP_NUM_THREADS=1``, the floors' setting) that is the time the work took on its core, whatever else the
machine runs; with several BLAS threads it sums them and the rate reads per core. ``machine_rates()`` gives
all three with ``machine_description()``: the CPU model, its flags, the core count and the BLAS they were
measured with, so that a floor can be tied to the hardware it was measured on.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np


def gemm_rate(dtype: str = "float64", n: int = 1024, repeats: int = 5) -> float:
    """Best-of-``repeats`` GFLOP/s of ``A @ B`` for ``(n, n)`` matrices of ``dtype`` (``2 n^3`` operations)."""
    rng = np.random.default_rng(0)
    A = rng.standard_normal((n, n)).astype(dtype)
    B = rng.standard_normal((n, n)).astype(dtype)
    out = np.empty((n, n), dtype=dtype)
    np.matmul(A, B, out=out)                       # first call: pages touched, BLAS pool started
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        np.matmul(A, B, out=out)
        best = min(best, time.process_time() - t0)
    return 2.0 * n**3 / best / 1e9


def copy_bandwidth(nbytes: int = 256 * 2**20, repeats: int = 5) -> float:
    """Best-of-``repeats`` GB/s of copying ``nbytes`` (counted twice: read and written) between two arrays."""
    src = np.ones(nbytes // 8)
    dst = np.empty_like(src)
    np.copyto(dst, src)                            # first call: pages touched
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        np.copyto(dst, src)
        best = min(best, time.process_time() - t0)
    return 2.0 * src.nbytes / best / 1e9


def machine_description() -> dict[str, Any]:
    """The hardware and BLAS the rates are measured on: CPU model, every ``/proc/cpuinfo`` flag, NumPy's SIMD
    dispatch features, logical cores (and those this process may use), and each BLAS / OpenMP pool
    (threadpoolctl: library, version, kernel architecture, threads)."""
    import os
    import platform

    from lfabench.provenance import cpu_features, threadpools

    return {**cpu_features(), "cpu_count": os.cpu_count(),
            "affinity_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            "numpy": np.__version__, "os": platform.platform(),
            "blas": [pool for pool in threadpools() if pool.get("user_api") == "blas"],
            "threadpools": threadpools()}


def machine_rates(repeats: int = 5) -> dict[str, Any]:
    """``{"gemm_float32", "gemm_float64"`` (GFLOP/s), ``"copy"`` (GB/s), ``"machine"``: machine_description()}``,
    measured now in this process (set one BLAS thread for the floors' setting)."""
    return {"gemm_float32": gemm_rate("float32", repeats=repeats), "gemm_float64": gemm_rate("float64", repeats=repeats),
            "copy": copy_bandwidth(repeats=repeats), "machine": machine_description()}
