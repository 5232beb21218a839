"""Top-k search over large databases (to 10^6 vectors and beyond): exact where it fits, IVF-PQ past it.

* :func:`exact_topk` streams the database in chunks through flat FAISS indexes and keeps each query's
  ``k`` best under the lower-index tie rule of :mod:`lfabench.evaluation.search`: exact, with memory
  ``O(chunk * D + t * k)`` beside the chunks themselves.
* :func:`plan_search` chooses: **exact** when the ``(n, D)`` float32 database fits ``memory_budget_bytes``
  (it is then held whole, or already is), else **IVF-PQ** (Jégou, Douze & Schmid, TPAMI 2011):
  ``nlist`` inverted lists (a power of two near ``sqrt(n) / 4``: few, long lists keep training and adding
  cheap on a small machine), product codes of ``m`` bytes per vector
  (``m``: the largest divisor of ``D`` up to 64, 8 bits per sub-quantizer), ``nprobe`` lists visited.
* :func:`large_search` runs the plan on a database given as an array or as a :class:`ChunkedDatabase`
  (a function that makes chunk ``i``: synthetic distractors, memory maps), and for an approximate
  index reports its recall@k against :func:`exact_topk` on a sample of the queries.

Metrics: ``euclidean`` (squared L2) and ``cosine`` (inner product of L2-normalised vectors).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..threads import serial_blas

__all__ = ["ChunkedDatabase", "SearchPlan", "exact_topk", "plan_search", "large_search", "recall_at_k"]

LARGE_METRICS = ("euclidean", "cosine")
#: The fewest rows per IVF-PQ ``add`` call (a chunk is split into parts of ``ADD_ROWS`` to ``2 ADD_ROWS - 1``
#: rows, or added whole when smaller): bounds FAISS's work space of an add (about 70 KB per 2,048-D row).
ADD_ROWS = 4096


@dataclass
class ChunkedDatabase:
    """``n`` vectors of dimension ``dim`` made chunk by chunk: ``make(i)`` -> rows ``[i*chunk, (i+1)*chunk)``."""

    n: int
    dim: int
    chunk: int
    make: Callable[[int], np.ndarray]

    @classmethod
    def from_array(cls, X: np.ndarray, chunk: int = 65536) -> "ChunkedDatabase":
        return cls(int(X.shape[0]), int(X.shape[1]), int(chunk), lambda i: X[i * chunk:(i + 1) * chunk])

    def chunks(self):
        """``(first row, float32 C-contiguous chunk)`` for each chunk, in order."""
        for i in range(-(-self.n // self.chunk)):
            block = np.ascontiguousarray(self.make(i), dtype=np.float32)
            expected = min(self.chunk, self.n - i * self.chunk)
            if block.shape != (expected, self.dim):
                raise ValueError(f"chunk {i} has shape {block.shape}, expected {(expected, self.dim)}")
            yield i * self.chunk, block


@dataclass
class SearchPlan:
    """How :func:`large_search` searches: ``method`` (``exact`` or ``ivfpq``), the index's parameters, why."""

    method: str
    reason: str
    nlist: int | None = None
    m: int | None = None
    nprobe: int | None = None
    info: dict = field(default_factory=dict)

    @property
    def index_string(self) -> str:
        return "Flat (exact)" if self.method == "exact" else f"IVF{self.nlist},PQ{self.m}"


def _normalise(X: np.ndarray, metric: str) -> np.ndarray:
    X = np.ascontiguousarray(X, dtype=np.float32)
    if metric == "cosine":
        norms = np.linalg.norm(X, axis=1, keepdims=True)
        X = X / np.where(norms > 0, norms, 1.0)
    return np.ascontiguousarray(X, dtype=np.float32)


def _faiss_metric(metric: str):
    import faiss

    if metric not in LARGE_METRICS:
        raise ValueError(f"large-scale search supports metrics {LARGE_METRICS}, got {metric!r}")
    return faiss.METRIC_INNER_PRODUCT if metric == "cosine" else faiss.METRIC_L2


def _merge(D: np.ndarray, I: np.ndarray, k: int, larger_is_closer: bool) -> tuple[np.ndarray, np.ndarray]:
    """Each row's ``k`` best of ``(D, I)`` by (distance, index); missing entries (``I < 0``) last."""
    key = np.where(I < 0, np.inf, -D if larger_is_closer else D)
    order = np.lexsort((np.where(I < 0, np.iinfo(np.int64).max, I), key), axis=-1)[:, :k]
    return np.take_along_axis(D, order, axis=1), np.take_along_axis(I, order, axis=1)


def exact_topk(database: ChunkedDatabase | np.ndarray, queries: np.ndarray, k: int,
               metric: str = "euclidean") -> tuple[np.ndarray, np.ndarray]:
    """The exact ``k`` nearest database rows of each query, ``(D, I)`` of shape ``(t, k)``, best first.

    Ties go to the lower database index (each chunk's candidates are widened past its k-th place until
    its tie group is complete, as :func:`lfabench.evaluation.knn_search`). ``D``: squared L2 or inner product.
    """
    import faiss

    from .search import knn_search

    db = database if isinstance(database, ChunkedDatabase) else ChunkedDatabase.from_array(np.asarray(database))
    if not 1 <= k <= db.n:
        raise ValueError(f"k must be in 1..{db.n} (the database size), got {k}")
    q = _normalise(queries, metric)
    if q.ndim != 2 or q.shape[1] != db.dim:
        raise ValueError(f"queries must be (t, {db.dim}), got {q.shape}")
    fm, closer = _faiss_metric(metric), metric == "cosine"
    best_D = np.full((q.shape[0], 0), np.nan, np.float32)
    best_I = np.full((q.shape[0], 0), -1, np.int64)
    for start, block in db.chunks():
        index = faiss.IndexFlat(db.dim, fm)
        index.add(_normalise(block, metric))
        D, I = knn_search(index, q, min(k, block.shape[0]), larger_is_closer=closer)
        best_D, best_I = _merge(np.hstack([best_D, D]), np.hstack([best_I, I + start]), k, closer)
    return best_D, best_I


#: The fewest database vectors an IVF-PQ index trains on: its product quantiser has 2**8 centroids per sub-vector.
IVFPQ_MIN_DATABASE = 256


def plan_search(n: int, dim: int, memory_budget_bytes: float, method: str = "auto", nprobe: int = 16) -> SearchPlan:
    """The search of ``n`` vectors of dimension ``dim``: exact if ``4 n dim <= memory_budget_bytes`` (module doc).

    IVF-PQ on fewer than :data:`IVFPQ_MIN_DATABASE` vectors (or fewer than its lists) is a ValueError saying so."""
    need = 4.0 * n * dim
    if method not in ("auto", "exact", "ivfpq"):
        raise ValueError(f"search method must be auto, exact or ivfpq, got {method!r}")
    if method == "exact" or (method == "auto" and need <= memory_budget_bytes):
        why = "asked for" if method == "exact" else f"{need / 2**30:.2f} GiB of float32 fits the budget of " \
                                                    f"{memory_budget_bytes / 2**30:.2f} GiB"
        return SearchPlan("exact", why, info={"database_gib": need / 2**30})
    nlist = int(2 ** max(4, round(np.log2(np.sqrt(n) / 4))))   # 1M vectors: 256 lists of ~3,900
    if n < max(IVFPQ_MIN_DATABASE, nlist):
        raise ValueError(f"IVF-PQ search needs a database of at least {max(IVFPQ_MIN_DATABASE, nlist)} vectors to "
                         f"train its {nlist} lists and 256 codes per sub-vector, got {n}: search it exactly")
    m = max(d for d in range(1, min(64, dim) + 1) if dim % d == 0)
    why = "asked for" if method == "ivfpq" else (f"{need / 2**30:.2f} GiB of float32 exceeds the budget of "
                                                 f"{memory_budget_bytes / 2**30:.2f} GiB")
    return SearchPlan("ivfpq", why, nlist=nlist, m=m, nprobe=int(min(nprobe, nlist)),
                      info={"database_gib": need / 2**30, "code_bytes_per_vector": m})


def recall_at_k(approx_I: np.ndarray, exact_I: np.ndarray) -> float:
    """Mean over queries of ``|approx top-k ∩ exact top-k| / k``."""
    k = exact_I.shape[1]
    return float(np.mean([np.intersect1d(a[a >= 0], e).size / k for a, e in zip(approx_I, exact_I)]))


def large_search(database: ChunkedDatabase | np.ndarray, queries: np.ndarray, k: int, metric: str = "euclidean",
                 method: str = "auto", memory_budget_bytes: float = 4 * 2**30, nprobe: int = 16,
                 recall_queries: int = 100, train_size: int | None = None, seed: int = 0):
    """``(D, I, info)``: the top-``k`` of each query under :func:`plan_search`'s choice.

    ``info`` (what a record stores): the plan (method, index string, why), timings, and for IVF-PQ the
    recall@k against exact search measured on ``recall_queries`` queries drawn from ``seed``. The IVF-PQ
    index is trained on ``train_size`` database rows (default ``max(40 nlist, 256 * 39)``, at most ``n``)
    drawn from ``seed`` within the first chunks.
    """
    import faiss

    db = database if isinstance(database, ChunkedDatabase) else ChunkedDatabase.from_array(np.asarray(database))
    plan = plan_search(db.n, db.dim, memory_budget_bytes, method, nprobe)
    info = {"method": plan.method, "index": plan.index_string, "reason": plan.reason, "n_database": db.n,
            "k": int(k), **plan.info}
    q = _normalise(queries, metric)
    if plan.method == "exact":
        t0 = time.perf_counter()
        D, I = exact_topk(db, q, k, metric)
        info["search_s"] = time.perf_counter() - t0
        return D, I, info
    rng = np.random.default_rng(seed)
    n_train = int(min(db.n, train_size or max(40 * plan.nlist, 256 * 39)))
    t0 = time.perf_counter()
    train, have = [], 0
    for _, block in db.chunks():  # the training rows: a seeded sample of the first chunks that hold enough
        take = min(block.shape[0], n_train - have)
        train.append(_normalise(block[np.sort(rng.choice(block.shape[0], take, replace=False))], metric))
        have += take
        if have >= n_train:
            break
    fm = _faiss_metric(metric)
    quantizer = faiss.IndexFlat(db.dim, fm)
    index = faiss.IndexIVFPQ(quantizer, db.dim, plan.nlist, plan.m, 8, fm)
    index.cp.seed = int(seed)
    index.pq.cp.seed = int(seed)
    with serial_blas():  # FAISS's GEMMs follow OpenMP's count: one thread, the same sums at any `threads`
        index.train(np.vstack(train))
    del train
    info["train_s"], info["n_train"] = time.perf_counter() - t0, n_train
    t0 = time.perf_counter()
    for _, block in db.chunks():
        block = _normalise(block, metric)
        with serial_blas():
            # FAISS's IVF-PQ add holds about 70 KB of work space per 2,048-D row it is given (measured: 1.8 GB
            # for 25,000 rows); near-equal parts of at least ADD_ROWS rows keep every part on FAISS's BLAS
            # route (20 rows and more), and the codes and their order equal one add of the chunk (tested)
            for part in np.array_split(block, max(1, block.shape[0] // ADD_ROWS)):
                index.add(part)
    info["add_s"] = time.perf_counter() - t0
    index.nprobe = plan.nprobe
    t0 = time.perf_counter()
    with serial_blas():
        D, I = index.search(q, k)
    info["search_s"] = time.perf_counter() - t0
    D, I = _merge(D, I.astype(np.int64), k, metric == "cosine")
    sample = np.sort(rng.choice(q.shape[0], min(recall_queries, q.shape[0]), replace=False))
    _, exact_I = exact_topk(db, q[sample], k, metric)
    info.update(nprobe=plan.nprobe, recall_queries=int(sample.size),
                recall_at_k_vs_exact=recall_at_k(I[sample], exact_I))
    return D, I, info
