"""Exact nearest-neighbour search on FAISS flat indexes, with a deterministic tie rule.

Each distance becomes a flat FAISS index over (possibly transformed) vectors:

==============  ===============================================  ==========================
metric          vectors indexed                                  FAISS index
==============  ===============================================  ==========================
euclidean       as given                                         ``IndexFlatL2`` (squared L2)
cosine          L2-normalised (zero vectors stay zero)           ``IndexFlatIP``
mahalanobis     whitened (:mod:`lfabench.evaluation.whitening`)  ``IndexFlatL2``
minkowski       as given                                         ``IndexFlat(METRIC_Lp)``, ``metric_arg = p``
                                                                 (``METRIC_Linf`` for ``p = inf``)
==============  ===============================================  ==========================

Squared L2 and ``sum |x - y|^p`` (FAISS omits the root) rank exactly as the
distances themselves; ``1 - cos`` ranks as the inner product of unit vectors.
FAISS computes in float32.

**Tie rule.** Among vectors at equal distance (as FAISS computes it), the one
with the lower index comes first; at the k-th place this decides which of
several equidistant vectors are neighbours. FAISS's heaps do not guarantee it
(inner products keep higher indices), so :func:`knn_search` asks FAISS for more
candidates until the tie group at the k-th place is complete and orders them by
``(distance, index)``; :func:`rank_database` sorts whole distance rows stably
(:func:`stable_argsort_rows`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..threads import serial_blas
from .whitening import Whitening, fit_whitening

__all__ = ["METRICS", "MetricSpace", "fit_metric_space", "knn_search", "rank_database", "rank_database_blocks",
           "ranking_key_blocks", "stable_argsort_rows"]

METRICS = ("euclidean", "cosine", "mahalanobis", "minkowski")


def _as_float_matrix(X, name: str, dtype=None) -> np.ndarray:
    """``X`` as a checked 2-D float array: float64 stays float64, the rest becomes float32 (or ``dtype``)."""
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"{name} must be a 2-D (n, D) array, got shape {X.shape}")
    if X.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {X.dtype}")
    X = X.astype(dtype or (np.float64 if X.dtype == np.float64 else np.float32), copy=False)
    if not np.isfinite(X).all():
        row = int(np.flatnonzero(~np.isfinite(X).all(axis=1))[0])
        raise ValueError(f"{name} row {row} is not finite (NaN or inf)")
    return X


@dataclass
class MetricSpace:
    """Maps vectors so that a flat FAISS index ranks by the chosen distance.

    ``transform(X)`` gives float32 C-contiguous vectors to index or query;
    ``faiss_metric``/``metric_arg`` configure the index; ``larger_is_closer`` is
    True for inner products. ``info`` is what a run records (metric, p, the
    covariance estimator used for Mahalanobis...).
    """

    metric: str
    p: float | None = None
    whitening: Whitening | None = None
    info: dict = field(default_factory=dict)

    @property
    def larger_is_closer(self) -> bool:
        return self.metric == "cosine"

    @property
    def faiss_metric(self) -> int:
        import faiss

        if self.metric == "cosine":
            return faiss.METRIC_INNER_PRODUCT
        if self.metric == "minkowski":
            return faiss.METRIC_Linf if np.isinf(self.p) else faiss.METRIC_Lp
        return faiss.METRIC_L2

    @property
    def metric_arg(self) -> float:
        return float(self.p) if self.metric == "minkowski" and not np.isinf(self.p) else 0.0

    def transform(self, X, name: str = "X") -> np.ndarray:
        X = _as_float_matrix(X, name, np.float64 if self.metric == "mahalanobis" else None)
        if self.metric == "cosine":
            norms = np.linalg.norm(X, axis=1, keepdims=True)
            X = X / np.where(norms > 0, norms, 1.0)          # zero vectors stay zero, as scikit-learn's normalize
        elif self.metric == "mahalanobis":
            X = self.whitening.transform(X)
        return np.ascontiguousarray(X, dtype=np.float32)

    def index(self, base: np.ndarray):
        """A flat FAISS index holding ``base`` (already transformed, ``(n, D)`` float32)."""
        import faiss

        index = faiss.IndexFlat(base.shape[1], self.faiss_metric)
        index.metric_arg = self.metric_arg
        index.add(base)
        return index


def fit_metric_space(train_X, metric: str = "euclidean", p: float | None = None,
                     covariance: str = "auto") -> MetricSpace:
    """The :class:`MetricSpace` of ``metric``, fitted on ``train_X`` (``(n, D)``) where it needs data.

    ``p`` is Minkowski's exponent (required for ``minkowski``, ``p >= 1``, ``inf``
    allowed; ignored otherwise). ``covariance`` chooses Mahalanobis' covariance
    estimator (see :func:`lfabench.evaluation.whitening.fit_whitening`).
    """
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    info: dict = {"metric": metric}
    if metric == "minkowski":
        if p is None:
            raise ValueError("metric='minkowski' needs the exponent p (p >= 1, e.g. p=3)")
        p = float(p)
        if not p >= 1.0:
            raise ValueError(f"Minkowski exponent p must be >= 1 (a distance), got {p}")
        info["p"] = p
        return MetricSpace(metric, p=p, info=info)
    if metric == "mahalanobis":
        whitening = fit_whitening(_as_float_matrix(train_X, "train_X"), covariance)
        info.update(whitening.info)
        return MetricSpace(metric, whitening=whitening, info=info)
    return MetricSpace(metric, info=info)


def _ordered(D: np.ndarray, I: np.ndarray, larger_is_closer: bool) -> tuple[np.ndarray, np.ndarray]:
    """Rows sorted by (distance, index): the tie rule."""
    key = -D if larger_is_closer else D
    order = np.lexsort((I, key), axis=-1)
    return np.take_along_axis(D, order, axis=1), np.take_along_axis(I, order, axis=1)


def knn_search(index, queries: np.ndarray, k: int, larger_is_closer: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` nearest indexed vectors of each query under the tie rule.

    ``queries``: ``(t, D)`` float32. Returns ``(D, I)``, both ``(t, k)``, nearest
    first (``D`` as FAISS reports it: squared L2, inner product, ``sum |.|^p``).
    A query whose k-th and (k+1)-th candidates tie is searched again with twice
    as many candidates until the tie group is complete.
    """
    n = int(index.ntotal)
    if not 1 <= k <= n:
        raise ValueError(f"k must be in 1..{n} (the number of indexed vectors), got {k}")
    t = queries.shape[0]
    out_D = np.empty((t, k), dtype=np.float32)
    out_I = np.empty((t, k), dtype=np.int64)
    pending = np.arange(t)
    width = min(n, k + 1)
    while pending.size:
        with serial_blas():  # FAISS's GEMMs follow OpenMP's count: one thread, the same sums at any `threads`
            D, I = index.search(np.ascontiguousarray(queries[pending]), width)
        done = np.ones(pending.size, bool) if width == n else D[:, width - 1] != D[:, k - 1]
        D_done, I_done = _ordered(D[done], I[done], larger_is_closer)
        out_D[pending[done]], out_I[pending[done]] = D_done[:, :k], I_done[:, :k]
        pending = pending[~done]
        width = min(n, 2 * width)
    return out_D, out_I


def rank_database(database_X, query_X, metric: str = "euclidean", p: float | None = None,
                  covariance: str = "auto", chunk: int = 256) -> np.ndarray:
    """Full ranking of the database for each query: ``(t, n)`` int64 database row indices, best first.

    The metric space is fitted on the database (``(n, D)``). A full ranking needs
    every distance, so FAISS computes the ``(chunk, n)`` distance blocks
    (``faiss.pairwise_distances``, the flat indexes' kernels) and a stable sort
    orders each row (:func:`stable_argsort_rows`): ties go to the lower database index.
    :func:`rank_database_blocks` gives the same rows a block at a time.
    """
    blocks = rank_database_blocks(database_X, query_X, metric, p, covariance, chunk)
    first = next(blocks)                                            # checks the input before allocating
    order = np.empty((blocks.n_queries, first.shape[1]), dtype=np.int64)
    order[:first.shape[0]] = first
    start = first.shape[0]
    for block in blocks:
        order[start:start + block.shape[0]] = block
        start += block.shape[0]
    return order


class _Blocks:
    """An iterator over ``(chunk, n)`` ranking blocks that knows the number of queries."""

    def __init__(self, n_queries: int, blocks):
        self.n_queries, self._blocks = n_queries, blocks

    def __iter__(self):
        return self

    def __next__(self) -> np.ndarray:
        return next(self._blocks)


def rank_database_blocks(database_X, query_X, metric: str = "euclidean", p: float | None = None,
                         covariance: str = "auto", chunk: int = 256):
    """:func:`rank_database`'s rows, ``chunk`` queries at a time: an iterator of ``(<= chunk, n)`` int64 blocks
    in query order (``.n_queries``: their total), so that a caller scoring each query holds one block of
    rankings, never the whole ``(t, n)`` matrix. The input is checked here, before the first block."""
    keys = ranking_key_blocks(database_X, query_X, metric, p, covariance, chunk)
    return _Blocks(keys.n_queries, (stable_argsort_rows(block) for block in keys))


def ranking_key_blocks(database_X, query_X, metric: str = "euclidean", p: float | None = None,
                       covariance: str = "auto", chunk: int = 256):
    """The keys :func:`rank_database_blocks` sorts: an iterator of ``(<= chunk, n)`` float32 blocks in query order
    (``.n_queries``: their total), smaller first (the distance as FAISS computes it, negated for inner
    products); a row's stable order is its ranking, ties to the lower database index. The metric space is fitted
    on the database; the input is checked here, before the first block."""
    import faiss

    space = fit_metric_space(database_X, metric, p, covariance)
    base = space.transform(database_X, "database_X")
    queries = space.transform(query_X, "query_X")
    if queries.shape[1] != base.shape[1]:
        raise ValueError(f"query_X has {queries.shape[1]} columns but database_X has {base.shape[1]}")

    def blocks():
        for start in range(0, max(queries.shape[0], 1), chunk):
            with serial_blas():
                D = faiss.pairwise_distances(queries[start:start + chunk], base, space.faiss_metric, space.metric_arg)
            yield -D if space.larger_is_closer else D

    return _Blocks(int(queries.shape[0]), blocks())


def stable_argsort_rows(keys: np.ndarray) -> np.ndarray:
    """``np.argsort(keys, axis=1, kind="stable")`` of a 2-D float32 array, the same ``(t, n)`` int64 result, by
    sorting values instead of indices (NumPy's value sort of 64-bit integers is SIMD; its stable argsort is a
    merge sort, several times slower).

    Each entry becomes one uint64: the float's bits mapped to an unsigned integer of the same order (sign bit
    flipped for positives, all bits for negatives; ``-0.0`` is first made ``+0.0`` and NaN one positive NaN, so
    that they compare as the float comparison and NumPy's NaN-last rule do) in the high 32 bits, the column
    in the low 32. Keys are distinct, so any sort gives the one order, ties going to the lower column: the
    stable argsort's. Columns must fit 32 bits.
    """
    keys = np.asarray(keys)
    if keys.ndim != 2 or keys.dtype != np.float32:
        raise TypeError(f"stable_argsort_rows sorts a 2-D float32 array, got {keys.dtype} of shape {keys.shape}")
    if keys.shape[1] >= 2**32:
        raise ValueError(f"stable_argsort_rows: {keys.shape[1]} columns do not fit 32 bits")
    keys = keys + np.float32(0.0)                                   # -0.0 + 0.0 = +0.0: a tie, as in the compare
    nan = np.isnan(keys)
    if nan.any():
        keys[nan] = np.float32(np.nan)                               # one NaN (sign bit clear): after +inf
    bits = keys.view(np.uint32)
    packed = (bits ^ np.where(bits >> np.uint32(31), np.uint32(0xFFFFFFFF), np.uint32(0x80000000))).astype(np.uint64)
    packed <<= np.uint64(32)
    packed |= np.arange(keys.shape[1], dtype=np.uint64)
    packed.sort(axis=1)
    packed &= np.uint64(0xFFFFFFFF)
    return packed.view(np.int64)                                    # columns < 2**32: the same bits as int64
