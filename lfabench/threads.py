"""A run's thread count, fixed: results that do not depend on how many threads the machine offers, nor on
the count the run asks for.

Multi-threaded BLAS does not sum in one order whatever its thread count: OpenBLAS splits a GEMM's output
among its threads, and the block each thread gets decides which kernel (and which order of additions) makes
each element, so 1 and 2 threads give other last bits (numpy's ``float32`` ``A @ B.T`` on 500 x 3000 DAISY rows
differs). FAISS's k-means and exact search sit on such GEMMs (FAISS's own OpenBLAS): one last bit moves a
tie between two neighbours or two centres. BoW on Fifteen Scene SIFT-90 (256 words, seed 0) predicted 4 of 897
test images otherwise with 2 threads than with 1, from bit-identical features.

:func:`fixed_threads` therefore sets, for the duration of a block, every **BLAS** pool loaded in this process
to one thread (each GEMM, dot product and factorisation sums in one order, whatever the run's count) and
every **OpenMP** pool to the run's count. FAISS's OpenBLAS is built on OpenMP: its GEMMs run as many
threads as OpenMP's count, whatever its own setting says. The FAISS calls that sum through it (k-means
training, flat and IVF searches, ``faiss.knn``, ``faiss.pairwise_distances``) therefore run inside
:func:`serial_blas`, every pool at one thread for the call. With ``threads=1`` every pool runs one thread,
as it always did. A pool loaded inside the block would escape it, so the libraries whose pools a run uses
(:data:`PRELOAD`) are imported first. The conductor runs a run's split, fit, transform and evaluate stages
under the config's ``threads`` (default 1) and records what it fixed (:func:`pinned_pools`).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["BLAS_THREADS", "PRELOAD", "fixed_threads", "pinned_pools", "check_threads", "serial_blas"]

#: Libraries with thread pools of their own, imported before pinning so that threadpoolctl sees them
#: (FAISS ships its own OpenBLAS and libgomp, which scikit-learn's OpenMP code shares; scipy, numpy and
#: OpenCV each ship an OpenBLAS).
PRELOAD = ("numpy", "scipy.linalg", "faiss", "cv2")


#: The thread count of every BLAS pool inside :func:`fixed_threads`, whatever the run's ``threads``.
BLAS_THREADS = 1


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
    """Inside the block, every OpenMP pool of this process at ``threads`` threads and every BLAS pool at one
    (module docstring: BLAS sums depend on its thread count); None leaves every pool unchanged.

    OpenMP's thread count is a setting of the calling thread: code that the block runs in other
    threads keeps their own (the conductor computes in the main thread).
    """
    from threadpoolctl import ThreadpoolController

    threads = check_threads(threads)
    if threads is None:  # the libraries' own counts: faster on many cores, last bits by thread count
        yield
        return
    _preload()
    controller = ThreadpoolController()
    with controller.limit(limits={"openmp": threads, "blas": BLAS_THREADS}):
        _FIXED.append(controller)
        try:
            yield
        finally:
            _FIXED.pop()


#: The controllers of the :func:`fixed_threads` blocks this process is inside (innermost last).
_FIXED: list[Any] = []


@contextmanager
def serial_blas() -> Iterator[None]:
    """Inside a :func:`fixed_threads` block, every pool (BLAS and OpenMP) at one thread for the block: the calls
    whose sums run through a BLAS that follows OpenMP's count (FAISS's) wrap themselves in it, so that their
    results do not depend on the run's ``threads``. Outside such a block (library use, ``threads=null``) it
    changes nothing."""
    if not _FIXED:
        yield
        return
    with _FIXED[-1].limit(limits=1):
        yield
