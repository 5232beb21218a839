"""Nearest-neighbour search: ProLFA's exact candidate search on FAISS's two routes, and search at a million.

``CandidateSearch`` times the solver's flat maximum-inner-product search (``prolfa.search.top_candidates``'s
FAISS call, top 16) on random Gaussian data of its shapes: the embedded digits fit (45,000 x 9, 128
queries), SIFT at 128 queries, and paper scale (316,000 x 128, d̄ = 4,096 queries), on FAISS's per-query SIMD
scan (``scan``: FAISS's own choice below 128,000 queries) and on its blocked-BLAS route (``blas``: what the
solver asks for from ``BLAS_MIN_QUERIES`` queries).

``MillionSearch`` is the 1,000,000 x 2,048 float32 retrieval at a 4 GiB memory budget
(:func:`lfabench.evaluation.large_search` chooses IVF-PQ, nprobe 16): the database is never held whole,
chunk ``i`` is made from ``default_rng([0, i])`` each time it is read. The rows are clustered as a copies
database is: groups of 4 rows (an image and its copies) around a Gaussian centre, each row the centre plus
noise of half its scale, so that each row's exact nearest neighbours are its group and the recall of the
approximate search against exact search measures something (on unclustered Gaussian rows every neighbour
is about as far as any other, and recall@k says nothing of a retrieval). 100 queries are database rows plus
noise of the same scale: each has a known source row and group. It is a paper-scale case: one search with its
index build is about half an hour on one core; ``clustered_search(n, dim)`` runs the same at any size.
"""

from __future__ import annotations

import numpy as np

SHAPES = {"digits": (45_000, 9, 128), "sift128": (45_000, 128, 128), "paper": (316_000, 128, 4096)}


class CandidateSearch:
    """Exact top-16 inner-product search of ProLFA's shapes on FAISS's SIMD-scan and BLAS routes."""

    params = [list(SHAPES), ["scan", "blas"]]
    param_names = ["shape", "route"]
    timeout = 600

    def setup(self, shape, route):
        import faiss

        n, d, q = SHAPES[shape]
        rng = np.random.default_rng(0)
        self.X = rng.standard_normal((n, d), dtype=np.float32)
        self.Q = rng.standard_normal((q, d), dtype=np.float32)
        self.previous = faiss.cvar.distance_compute_blas_threshold
        faiss.cvar.distance_compute_blas_threshold = 20 if route == "blas" else 1 << 30

    def teardown(self, shape, route):
        import faiss

        faiss.cvar.distance_compute_blas_threshold = self.previous

    def time_search(self, shape, route):
        import faiss

        faiss.knn(self.Q, self.X, 16, metric=faiss.METRIC_INNER_PRODUCT)


GROUP = 4


def clustered_search(n: int, dim: int, chunk: int = 25_000, n_queries: int = 100, k: int = 100,
                     noise: float = 0.5, seed: int = 0, memory_budget_bytes: float = 4 * 2**30,
                     nprobe: int = 16) -> dict:
    """:func:`lfabench.evaluation.large_search` of ``n_queries`` queries in ``n`` clustered rows (module
    docstring; ``chunk`` a multiple of 4): its ``info`` (plan, timings, ``recall_at_k_vs_exact``) with
    ``total_s`` (wall seconds of the search and its index build), ``source_in_topk`` and ``group_in_topk``
    (percent of the queries' source rows, and of their groups' rows, among their top ``k``)."""
    import time

    from lfabench.evaluation.largescale import ChunkedDatabase, large_search

    def make(i: int) -> np.ndarray:
        rows = min(chunk, n - i * chunk)
        rng = np.random.default_rng([seed, i])
        centres = rng.standard_normal((-(-rows // GROUP), dim), dtype=np.float32)
        return np.repeat(centres, GROUP, axis=0)[:rows] + np.float32(noise) * rng.standard_normal((rows, dim),
                                                                                                 dtype=np.float32)

    db = ChunkedDatabase(n, dim, chunk, make)
    rng = np.random.default_rng([seed, 1 << 30])
    sources = np.sort(rng.choice(n, n_queries, replace=False))
    # each query row copied out of its chunk: a view would keep the whole regenerated chunk alive (at 1,000,000 x
    # 2,048, 100 queries held 100 chunks of 200 MB: a 19.5 GiB peak against the 4 GiB budget)
    queries = np.stack([make(int(s) // chunk)[int(s) % chunk].copy() for s in sources])
    queries = queries + np.float32(noise) * rng.standard_normal(queries.shape, dtype=np.float32)
    t0 = time.perf_counter()
    _, idx, info = large_search(db, queries, k, memory_budget_bytes=memory_budget_bytes, nprobe=nprobe,
                                recall_queries=n_queries, seed=seed)
    groups = [np.arange(s - s % GROUP, min(s - s % GROUP + GROUP, n)) for s in sources]
    return dict(info, total_s=time.perf_counter() - t0,
                source_in_topk=100.0 * float(np.mean([s in row for s, row in zip(sources, idx)])),
                group_in_topk=100.0 * float(np.mean([np.isin(g, row).mean() for g, row in zip(groups, idx)])))


class MillionSearch:
    """IVF-PQ search of 100 queries in 1,000,000 x 2,048 clustered synthetic float32 rows at a 4 GiB budget."""

    n, dim, chunk, queries, k, noise, seed = 1_000_000, 2048, 25_000, 100, 100, 0.5, 0
    timeout = 7200
    number, repeat, rounds = 1, 1, 1

    def setup_cache(self):
        return clustered_search(self.n, self.dim, self.chunk, self.queries, self.k, self.noise, self.seed)

    def track_total_seconds(self, info):
        return info["total_s"]

    track_total_seconds.unit = "s"

    def track_ms_per_query(self, info):
        return 1000.0 * info["search_s"] / self.queries

    track_ms_per_query.unit = "ms"

    def track_recall_at_k(self, info):
        return 100.0 * info["recall_at_k_vs_exact"]

    track_recall_at_k.unit = "%"

    def track_source_in_topk(self, info):
        return info["source_in_topk"]

    track_source_in_topk.unit = "%"

    def track_group_in_topk(self, info):
        return info["group_in_topk"]

    track_group_in_topk.unit = "%"
