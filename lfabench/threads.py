"""A run's thread count, fixed: results that do not depend on how many threads the machine offers.

Multi-threaded BLAS does not sum in one order whatever its thread count: OpenBLAS's GEMM gives other
last bits with 1 and 2 threads (numpy's ``float32`` ``A @ B.T`` on 500 x 3000 DAISY rows differs), and
FAISS's k-means and exact search sit on such GEMMs (FAISS's own OpenBLAS, under its OpenMP pool). One
flipped nearest centre in one k-means iteration then moves every later centre: DAISY BoW on Fifteen
Scene classified 3 test images more with ``OMP_NUM_THREADS=2`` than with 1. With a fixed count the
work is split the same way on every run (OpenBLAS and FAISS partition statically by thread count), so
the sums, and everything after them, are bit-identical whatever ``OMP_NUM_THREADS`` or the number of
cores says.

:func:`fixed_threads` sets every BLAS and OpenMP pool loaded in this process (threadpoolctl) to one
count for the duration of a block, the same count up or down, and gives them back after. A pool
loaded inside the block would escape it, so the libraries whose pools a run uses
(:data:`PRELOAD`) are imported first. The conductor runs a run's split, fit, transform and evaluate
stages under the config's ``threads`` (default 1) and records what it fixed (:func:`pinned_pools`).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["PRELOAD", "fixed_threads", "pinned_pools", "check_threads"]

#: Libraries with thread pools of their own, imported before pinning so that threadpoolctl sees them
#: (FAISS ships its own OpenBLAS and libgomp, which scikit-learn's OpenMP code shares; scipy, numpy and
#: OpenCV each ship an OpenBLAS).
PRELOAD = ("numpy", "scipy.linalg", "faiss", "cv2")


def check_threads(threads: Any) -> int | None:
    """``threads`` as a positive int, or None (pools left as they are); else a ValueError naming the parameter."""
    if threads is None:
        return None
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads={threads!r} must be a positive integer (the thread count of every BLAS "
                         f"and OpenMP pool while the run computes) or null (the libraries' own counts)")
    return threads


def _preload() -> None:
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:  # an optional library that is not installed has no pool to pin
            pass


def pinned_pools() -> list[dict[str, Any]]:
    """The pools :func:`fixed_threads` sets: user API, implementation and library file name (for the record)."""
    from threadpoolctl import threadpool_info

    _preload()
    return [{"user_api": p.get("user_api"), "internal_api": p.get("internal_api"),
             "library": str(p.get("filepath", "")).rsplit("/", 1)[-1]} for p in threadpool_info()]


@contextmanager
def fixed_threads(threads: int | None) -> Iterator[None]:
    """Every BLAS and OpenMP pool of this process at ``threads`` threads inside the block (None: unchanged).

    OpenMP's thread count is a setting of the calling thread: code that the block runs in other
    threads keeps their own (the conductor computes in the main thread).
    """
    from threadpoolctl import ThreadpoolController

    threads = check_threads(threads)
    if threads is None:  # the libraries' own counts: faster on many cores, last bits by thread count
        yield
        return
    _preload()
    with ThreadpoolController().limit(limits=threads):
        yield
