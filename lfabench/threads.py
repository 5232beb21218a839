"""A run's thread count, fixed: results that do not depend on how many threads the machine offers, nor on
the count the run asks for.

A BLAS or OpenMP pool does not sum in one order whatever its thread count. Measured with this project's wheels
(``benchmarks/thread_sums.py``: each pool at 1, then at 2 threads, same inputs): numpy's OpenBLAS ``float64`` GEMM
gives other last bits in a few elements on some shapes (3000 x 500 x 200 and 3000 x 500 x 192: about 90 of 1.5M
elements), its SVD differs (LAPACK over threaded BLAS: nearly every element of ``Vt``), FAISS's k-means ends on
other centres (FAISS's own OpenBLAS, which follows OpenMP's count), and its flat search returned other distances
on Gaussian rows. One
last bit moves a tie between two neighbours or two centres: BoW on Fifteen Scene SIFT-90 (256 words, seed 0)
predicted 4 of 897 test images otherwise with 2 BLAS threads than with 1, from bit-identical features.

:func:`fixed_threads` therefore sets, for the duration of a block, every **BLAS** pool loaded in this process
to one thread (each GEMM, dot product and factorisation sums in one order, whatever the run's count) and
every **OpenMP** pool to the run's count. The FAISS calls that sum through FAISS's OpenBLAS (k-means training,
flat and IVF searches, ``faiss.knn``, ``faiss.pairwise_distances``) run inside :func:`serial_blas`, every pool at
one thread for the call. With ``threads=1`` every pool runs one thread. A pool loaded inside the block would
escape it, so the libraries whose pools a run uses (:data:`PRELOAD`) are imported first. The conductor runs a
run's split, fit, transform and evaluate stages under the config's ``threads`` (default 1) and records what it
fixed (:func:`pinned_pools`).

What ``threads`` parallelises instead is work cut into pieces that never depend on the thread count:
:func:`imap_in_order` runs fixed pieces (batches of samples, blocks of rows) on ``threads`` worker threads, each
at one thread, so every piece is the same one-thread computation whatever the count, and the caller sums over
the pieces in their order; :func:`map_row_blocks` does so for row-independent calls (a search per query) on
ranges aligned to the library's own blocks. Code that uses neither runs on one core at any ``threads``.
"""

from __future__ import annotations

import importlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

__all__ = ["BLAS_THREADS", "GENERIC_KERNELS", "PRELOAD", "BlasKernelWarning", "fixed_threads",
           "generic_kernel_problems", "pinned_pools", "check_threads", "serial_blas", "run_threads", "row_blocks",
           "imap_in_order", "map_row_blocks"]

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
    """The pools :func:`fixed_threads` sets: user API, implementation, library file name, version and kernel
    architecture (OpenBLAS's ``SkylakeX``, ``Haswell``...; None for OpenMP), for the record."""
    from threadpoolctl import threadpool_info

    _preload()
    return [{"user_api": p.get("user_api"), "internal_api": p.get("internal_api"),
             "library": str(p.get("filepath", "")).rsplit("/", 1)[-1], "version": p.get("version"),
             "architecture": p.get("architecture")} for p in threadpool_info()]


class BlasKernelWarning(UserWarning):
    """An OpenBLAS of this process runs generic kernels on a CPU it does not know (:func:`generic_kernel_problems`)."""


#: OpenBLAS kernels without AVX: what an OpenBLAS that does not know the CPU falls back to (``Prescott``: SSE3).
GENERIC_KERNELS = frozenset({"prescott", "core2", "penryn", "dunnington", "nehalem", "atom", "katmai", "coppermine",
                             "northwood", "banias", "opteron", "opteron_sse3", "barcelona", "bobcat"})


def generic_kernel_problems(pools: list[dict[str, Any]], cpu_flags: Iterable[str] | None) -> list[str]:
    """What is wrong when an OpenBLAS of ``pools`` (:func:`pinned_pools`' entries) runs kernels without AVX
    (:data:`GENERIC_KERNELS`) on a CPU whose ``cpu_flags`` (``/proc/cpuinfo``'s) include AVX2 and FMA: one message
    naming those libraries, or none.

    An OpenBLAS older than the CPU does not recognise it and falls back to such kernels, whose GEMMs are several
    times slower: FAISS 1.15's OpenBLAS 0.3.15 runs ``Prescott`` on Sapphire Rapids Xeons, and with it every FAISS
    distance and k-means GEMM. The message names the ``OPENBLAS_CORETYPE`` that selects the kernels the other
    OpenBLAS libraries of this process chose for the CPU (else ``SkylakeX`` with AVX-512, ``Haswell`` with AVX2).
    """
    flags = set(cpu_flags or ())
    if not {"avx2", "fma"} <= flags:
        return []
    blas = [p for p in pools if p.get("internal_api") == "openblas"]
    generic = [p for p in blas if str(p.get("architecture") or "").lower() in GENERIC_KERNELS]
    if not generic:
        return []
    known = sorted({str(p["architecture"]) for p in blas if p.get("architecture") and p not in generic})
    suggest = known[0] if len(known) == 1 else "SkylakeX" if "avx512f" in flags else "Haswell"
    libraries = ", ".join(f"{p.get('library')} (OpenBLAS {p.get('version')}: {p.get('architecture')!r})"
                          for p in generic)
    has = "AVX2 and AVX-512" if "avx512f" in flags else "AVX2"
    return [f"{libraries} run generic kernels on this CPU, which has {has}: "
            f"an OpenBLAS that does not know the CPU, whose GEMMs run several times slower. Start lfabench with "
            f"OPENBLAS_CORETYPE={suggest} to select faster kernels (each record's determinism.pinned names every "
            f"library's kernel; a kernel changes the last bits of what it sums: docs/reproducibility.md)"]


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
        _FIXED.append((controller, threads))
        try:
            yield
        finally:
            _FIXED.pop()


#: The controllers and thread counts of the :func:`fixed_threads` blocks this process is inside (innermost last).
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
    with _FIXED[-1][0].limit(limits=1):
        yield


def run_threads() -> int:
    """The ``threads`` of the innermost :func:`fixed_threads` block; 1 outside one (library use, ``threads=null``)."""
    return _FIXED[-1][1] if _FIXED else 1


def row_blocks(n_rows: int, block: int, parts: int, min_rows: int = 1) -> list[tuple[int, int]]:
    """``[0, n_rows)`` cut into at most ``parts`` consecutive ranges of about equal size, each starting at a multiple
    of ``block`` and, unless ``n_rows`` is smaller, holding at least ``min_rows`` rows."""
    if n_rows <= 0:
        return []
    size = max(-(-n_rows // max(parts, 1)), min_rows, 1)
    step = -(-size // block) * block
    starts = list(range(0, n_rows, step))
    if len(starts) > 1 and n_rows - starts[-1] < min_rows:  # a short last range joins the one before
        starts.pop()
    return [(a, b) for a, b in zip(starts, starts[1:] + [n_rows])]


def imap_in_order(fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
    """``fn(item)`` for each of ``items``, yielded in their order; computed by :func:`run_threads` worker threads
    (at most twice that many items in flight), each call with its thread's OpenMP count at one (BLAS pools are
    at one inside :func:`fixed_threads`). With one thread it is ``map(fn, items)`` in this thread.

    When the items are fixed (never sized by the thread count) and ``fn``'s result depends on its item only, the
    results are the same bits at every thread count: each is the same one-thread computation. A sum over the
    results, taken by the caller in this order, is the one-thread sum. ``fn`` gains only while it releases the
    GIL (numpy's and FAISS's kernels do).
    """
    threads = run_threads()
    if threads <= 1:
        yield from map(fn, items)
        return
    controller = _FIXED[-1][0]

    def one_thread(item: Any) -> Any:
        with controller.limit(limits={"openmp": 1}):   # OpenMP's count is per thread: a worker has its own
            return fn(item)

    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="lfabench-rows") as pool:
        pending: deque[Future] = deque()
        try:
            for item in items:
                pending.append(pool.submit(one_thread, item))
                if len(pending) >= 2 * threads:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:  # an error, an interrupt or a time limit: the pieces not started are dropped, not computed
            for future in pending:
                future.cancel()


def map_row_blocks(fn: Callable[[int, int], Any], n_rows: int, block: int, min_rows: int = 1) -> list[Any]:
    """``[fn(start, stop) for each range of row_blocks(n_rows, block, run_threads(), min_rows)]`` in row order, by
    :func:`imap_in_order`; one call ``fn(0, n_rows)`` in this thread when :func:`run_threads` is 1.

    For ``fn`` whose rows do not depend on the other rows of its range (a search per query in FAISS's blocks of
    ``block`` queries), the concatenated results equal the single call's bit for bit at every thread count.
    """
    threads = run_threads()
    ranges = row_blocks(n_rows, block, threads, min_rows) if threads > 1 else [(0, n_rows)]
    if len(ranges) <= 1:
        return [fn(0, n_rows)]
    return list(imap_in_order(lambda bounds: fn(*bounds), ranges))
