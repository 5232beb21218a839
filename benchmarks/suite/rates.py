"""This machine's arithmetic and memory rates, the denominators of every floor in ``docs/performance.md``.

``gemm_rate(dtype)`` is the rate numpy's BLAS reaches on a square matmul (``2 n^3`` operations, best of
``repeats``); ``copy_bandwidth()`` the rate of a large ``np.copyto`` between two arrays far larger than any
cache (bytes read plus bytes written, best of ``repeats``), the STREAM "copy" kernel. Both are timed in CPU
seconds of the process (``time.process_time``), as the paper-scale cases are: on one thread
(``OMP_NUM_THREADS=1``, the floors' setting) that is the time the work took on its core, whatever else the
machine runs; with several BLAS threads it sums them and the rate reads per core.
"""

from __future__ import annotations

import time

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
