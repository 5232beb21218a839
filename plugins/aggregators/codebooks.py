"""Helpers shared by the aggregators: seeded training samples, seeded faiss k-means and nearest-centre assignment."""

from __future__ import annotations

import numbers

import numpy as np

from lfabench.sdk import FitDataError, cacheable_seed, cached_fit, map_row_blocks, serial_blas


def check_random_state(random_state) -> np.random.RandomState:
    """The generator scikit-learn's ``check_random_state`` returns for ``random_state`` (None: NumPy's global one;
    an int: a new ``RandomState`` seeded with it; a ``RandomState``: itself), without importing scikit-learn:
    about a second of CPU in a run whose method needs nothing else of it (ten of the Fifteen Scene board's fifteen,
    and gamma-democratic's sketch)."""
    if random_state is None or random_state is np.random:
        return np.random.mtrand._rand
    if isinstance(random_state, (numbers.Integral, np.integer)):
        return np.random.RandomState(random_state)
    if isinstance(random_state, np.random.RandomState):
        return random_state
    raise ValueError(f"{random_state!r} cannot be used to seed a numpy.random.RandomState instance")


def training_sample(X: np.ndarray, max_rows: int, random_state) -> np.ndarray:
    """At most ``max_rows`` rows of ``X`` (``(N, d)``), drawn uniformly without replacement (seeded)."""
    if X.shape[0] <= max_rows:
        return X
    rows = np.sort(check_random_state(random_state).choice(X.shape[0], size=max_rows, replace=False))
    return X[rows]


def seed_of(random_state) -> int:
    """An int seed for faiss from a scikit-learn style ``random_state``."""
    if isinstance(random_state, (int, np.integer)):
        return int(random_state) % (2**31)
    return int(check_random_state(random_state).randint(0, 2**31 - 1))


def kmeans_codebook(X: np.ndarray, n_clusters: int, max_training_descriptors: int, n_iter: int,
                    random_state) -> np.ndarray:
    """``(K, d)`` float32 k-means centres of a seeded sample of ``X`` (``(N, d)``), via faiss.

    Raises :class:`lfabench.aggregate.FitDataError` when there are fewer training descriptors than clusters.
    """
    import faiss

    n_clusters = int(n_clusters)
    if n_clusters < 1:
        raise ValueError(f"n_clusters must be >= 1, got {n_clusters}")
    sample = np.ascontiguousarray(training_sample(X, max_training_descriptors, random_state), dtype=np.float32)
    if sample.shape[0] < n_clusters:
        raise FitDataError(f"k-means needs at least n_clusters={n_clusters} training descriptors, got "
                           f"{sample.shape[0]} (of {X.shape[0]}, max_training_descriptors={max_training_descriptors}): "
                           f"lower n_clusters or give it more descriptors")
    km = faiss.Kmeans(sample.shape[1], n_clusters, niter=int(n_iter), seed=seed_of(random_state),
                      max_points_per_centroid=max(256, sample.shape[0] // n_clusters + 1),
                      min_points_per_centroid=1, verbose=False)
    with serial_blas():  # FAISS's GEMMs follow OpenMP's count: one thread, the same sums at any `threads`
        km.train(sample)
    return np.ascontiguousarray(km.centroids, dtype=np.float32)


def assign_nearest(centres: np.ndarray, X: np.ndarray, k: int = 1) -> np.ndarray:
    """Index of the nearest centre (squared L2) for each row of ``X``: ``(N,)`` int64 (or ``(N, k)``).

    FAISS's exact search, one thread per call. With a run's ``threads`` above one, ranges of rows are searched
    side by side (:func:`lfabench.threads.map_row_blocks`): each starts at a multiple of FAISS's query block and
    holds at least the queries from which FAISS takes its BLAS route, so every row meets the same GEMM block and
    route as in one call, and the result is the one-thread result bit for bit.
    """
    import faiss

    index = faiss.IndexFlatL2(centres.shape[1])
    index.add(np.ascontiguousarray(centres, dtype=np.float32))
    X = np.ascontiguousarray(X, dtype=np.float32)

    def search(start: int, stop: int) -> np.ndarray:
        with serial_blas():  # FAISS's GEMMs follow OpenMP's count: one thread, the same sums at any `threads`
            return index.search(X[start:stop], k)[1]

    idx = np.concatenate(map_row_blocks(search, X.shape[0], faiss.cvar.distance_compute_blas_query_bs,
                                        min_rows=faiss.cvar.distance_compute_blas_threshold))
    return idx[:, 0].astype(np.int64) if k == 1 else idx.astype(np.int64)


def word_counts(centres: np.ndarray, bags) -> np.ndarray:
    """``(m, K)`` hard-assignment counts of each sample's descriptors over ``centres`` (``(K, d)``).

    One nearest-centre search and one bincount over (sample, word) pairs: no per-sample loop.
    """
    K = centres.shape[0]
    flat = bags.sample_index() * K + assign_nearest(centres, bags.descriptors)
    return np.bincount(flat, minlength=bags.n_samples * K).reshape(bags.n_samples, K)


def cached_kmeans(X: np.ndarray, n_clusters: int, max_training_descriptors: int, n_iter: int, random_state,
                  cache=False) -> np.ndarray:
    """``(K, d)`` seeded faiss k-means centres (:func:`lfabench_plugins.aggregators.codebooks.kmeans_codebook`), cached on the sample.

    The training sample is :func:`lfabench_plugins.aggregators.codebooks.training_sample` of ``X``:
    at most ``max_training_descriptors`` rows drawn uniformly without replacement
    with ``random_state``. Caching only applies when ``random_state`` is an int.
    """
    seed = cacheable_seed(random_state)
    # same draws as kmeans_codebook(X, ..., random_state): identical centres with or without the cache
    sample = training_sample(X, max_training_descriptors, random_state)
    faiss_seed = seed_of(random_state)

    def fit():
        return {"centres": kmeans_codebook(sample, n_clusters, sample.shape[0], n_iter, faiss_seed)}

    params = {"n_clusters": int(n_clusters), "n_iter": int(n_iter), "seed": seed}
    return cached_fit("kmeans", f"K={n_clusters}", sample, params, fit, cache if seed is not None else False)["centres"]
