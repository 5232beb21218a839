"""The exact candidate search both solvers share: per prototype, the descriptors of most negative gradient.

For every column ``h_j`` of a ``(d, d̄)`` factor ``H``, the ``k`` rows ``x_i`` of largest ``-x_i . h_j``, by one
exact flat maximum-inner-product search (FAISS on its blocked-BLAS route; one dense NumPy product on tiny
problems). cBCD's working sets (:func:`~.cbcd_cstep.working_set`) and pairwise Frank-Wolfe's search with its
exact gap (:func:`~.pairwise_fw.search_gap`) are built on it.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext

import numpy as np

from lfabench.sdk import serial_blas

from .threads import one_thread

__all__ = ["BLAS_MIN_QUERIES", "DENSE_SEARCH_LIMIT", "SMALL_SEARCH_MACS", "blas_route", "top_candidates"]

#: Below this many entries (N * d̄) the candidate search is one dense numpy product.
DENSE_SEARCH_LIMIT = 4_000_000
#: FAISS's exact search takes its blocked-BLAS route (one float32 GEMM per block, then a heap per query) from this
#: many queries. FAISS 1.15 raises its own threshold to 128,000 queries; below it each query is a separate SIMD
#: scan, which at the solver's d̄ queries is 1.2-6x slower for d <= 128 and as fast at d = 1,024 and at paper scale
#: (``docs/prolfa-performance.md``, "Tiny problems"; asv case ``CandidateSearch``).
BLAS_MIN_QUERIES = 20
#: A FAISS search of fewer multiply-adds than this (N x d x d̄) runs on one thread: threads cost more than they
#: share there (on 2 cores, at the embedded digits fit's 52M multiply-adds one thread is faster; both threads win
#: from about 400M). The rows found do not depend on the threads.
SMALL_SEARCH_MACS = 1 << 28


def top_candidates(X32: np.ndarray, H: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per column ``j`` of ``H``: the ``k`` rows ``i`` of largest ``-x_i . h_j`` and those values.

    Returns ``(values (d̄, k) float, rows (d̄, k) int64)``, best first. Exact (flat search).
    """
    N, k = X32.shape[0], int(min(k, X32.shape[0]))
    if N * H.shape[1] <= DENSE_SEARCH_LIMIT:
        V = -(np.asarray(X32, dtype=np.float64) @ H).T                 # (d̄, N)
        part = np.argpartition(-V, k - 1, axis=1)[:, :k] if k < N else np.tile(np.arange(N), (V.shape[0], 1))
        vals = np.take_along_axis(V, part, axis=1)
        order = np.argsort(-vals, axis=1, kind="stable")
        return np.take_along_axis(vals, order, axis=1), np.take_along_axis(part, order, axis=1).astype(np.int64)
    import faiss

    queries = np.ascontiguousarray(-H.T, dtype=np.float32)
    small = N * X32.shape[1] * H.shape[1] < SMALL_SEARCH_MACS
    with blas_route(faiss), (one_thread() if small else nullcontext()), serial_blas():
        values, rows = faiss.knn(queries, X32, k, metric=faiss.METRIC_INNER_PRODUCT)
    return values.astype(np.float64), rows.astype(np.int64)


@contextmanager
def blas_route(faiss):
    """Within the block, FAISS's flat searches of at least :data:`BLAS_MIN_QUERIES` queries take the BLAS route.

    FAISS keeps the threshold in a process-wide variable; it is restored on exit, so the evaluators' searches
    keep FAISS's own choice.
    """
    previous = faiss.cvar.distance_compute_blas_threshold
    faiss.cvar.distance_compute_blas_threshold = BLAS_MIN_QUERIES
    try:
        yield
    finally:
        faiss.cvar.distance_compute_blas_threshold = previous
