"""Cache fitted arrays (codebooks, GMMs, dictionaries, projections) keyed on their training sample.

An aggregator that trains a model on a seeded sample of descriptors calls::

    state = cached_fit("kmeans", f"K={K}", sample, {"K": K, "seed": seed, ...},
                       lambda: {"centres": kmeans(sample, ...)}, cache=self.cache)

The entry name is :func:`lfabench.cache.cache_key` over the parts ``params`` plus
the sha256 of the training sample (its dtype, shape and bytes), so the same
sample, parameters and seed reuse the stored arrays, and anything else trains
anew. Arrays are stored with :class:`lfabench.cache.ArrayCache` (``.npz`` without
pickle, atomic writes).

``cache`` follows the aggregators' ``cache`` hyper-parameter: ``False``/``None``
= no caching (the default for library use, no side effects), ``True`` = the
default cache root (``$LFABENCH_CACHE`` ...), a string/path = that folder.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .cache import ArrayCache, cache_key

__all__ = ["array_fingerprint", "cached_fit", "resolve_cache", "drain_cache_events"]

# Hits and misses since the last drain: the runner records them, so a fit time that came from the
# cache is never mistaken for a training time.
_events: list[dict[str, Any]] = []


def drain_cache_events() -> list[dict[str, Any]]:
    """The ``{"entry", "hit"}`` cache look-ups made since the previous call (then forgotten)."""
    events = list(_events)
    _events.clear()
    return events


def array_fingerprint(*arrays: np.ndarray) -> str:
    """sha256 over the dtype, shape and bytes of each array, in order."""
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def resolve_cache(cache) -> ArrayCache | None:
    """``False``/``None`` -> None; ``True`` -> the default root; a str/Path -> that folder."""
    if cache is None or cache is False:
        return None
    if cache is True:
        return ArrayCache()
    if isinstance(cache, (str, Path)):
        return ArrayCache(cache)
    if isinstance(cache, ArrayCache):
        return cache
    raise TypeError(f"cache must be a bool, a folder path or None, got {type(cache).__name__}")


def cached_fit(kind: str, tag: str, sample: np.ndarray, params: dict[str, Any],
               fit: Callable[[], dict[str, np.ndarray]], cache=False) -> dict[str, np.ndarray]:
    """The arrays ``fit()`` returns for this training ``sample`` and ``params``, from the cache when stored.

    ``params`` must hold every hyper-parameter that changes the result (including
    the seed); the sample enters the key through its fingerprint.
    """
    store = resolve_cache(cache)
    if store is None:
        return fit()
    parts = dict(params, kind=kind, training_sample_sha256=array_fingerprint(sample),
                 training_sample_shape=list(np.shape(sample)))
    name = cache_key(kind, tag, parts)
    hit = store.load(name)
    _events.append({"entry": name, "hit": hit is not None})
    if hit is not None:
        return hit
    arrays = {k: np.asarray(v) for k, v in fit().items()}
    store.save(name, arrays, meta={"parts": parts})
    return arrays


def cacheable_seed(random_state) -> int | None:
    """The int seed when ``random_state`` is an int (a reproducible fit), else None (do not cache)."""
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return int(random_state)
    return None


def cached_kmeans(X: np.ndarray, n_clusters: int, max_training_descriptors: int, n_iter: int, random_state,
                  cache=False) -> np.ndarray:
    """``(K, d)`` seeded faiss k-means centres (:func:`lfabench.codebooks.kmeans_codebook`), cached on the sample.

    The training sample is :func:`lfabench.codebooks.training_sample` of ``X``:
    at most ``max_training_descriptors`` rows drawn uniformly without replacement
    with ``random_state``. Caching only applies when ``random_state`` is an int.
    """
    from .codebooks import kmeans_codebook, seed_of, training_sample

    seed = cacheable_seed(random_state)
    # same draws as kmeans_codebook(X, ..., random_state): identical centres with or without the cache
    sample = training_sample(X, max_training_descriptors, random_state)
    faiss_seed = seed_of(random_state)

    def fit():
        return {"centres": kmeans_codebook(sample, n_clusters, sample.shape[0], n_iter, faiss_seed)}

    params = {"n_clusters": int(n_clusters), "n_iter": int(n_iter), "seed": seed}
    return cached_fit("kmeans", f"K={n_clusters}", sample, params, fit, cache if seed is not None else False)["centres"]
