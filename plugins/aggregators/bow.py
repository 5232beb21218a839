"""Bag of visual words (Csurka et al., ECCV workshop 2004): k-means codebook, hard assignment, histogram.

Output dimension: ``n_clusters``. Normalisation: ``"l1"`` (term frequencies, the
usual choice for classification), ``"tfidf"`` (tf-idf weighting learned on the
fitted bags, then L2: the retrieval choice of Sivic & Zisserman 2003), ``"l2"``
or ``"none"`` (raw counts).
"""

from __future__ import annotations

import numpy as np

from lfabench.sdk import Aggregator, Bags, PluginSpec, hookimpl

from .codebooks import cached_kmeans, word_counts


class BoW(Aggregator):
    """Hard-assignment bag of words.

    Parameters
    ----------
    n_clusters : int
        Codebook size K (output dimension).
    normalize : {"l1", "tfidf", "l2", "none"}
    max_training_descriptors : int
        The codebook is trained on at most this many descriptors, drawn uniformly
        (seeded by ``random_state``) from the fitted bags.
    kmeans_iter : int
        Lloyd iterations of the faiss k-means.
    cache : bool or str
        Cache the codebook keyed on its training sample, K, iterations and seed
        (:mod:`lfabench.storage`): False = off, True = default cache root, str = folder.
    random_state : int or None
    """

    fit_size_params = ("n_clusters",)  # more clusters than training descriptors: refused before fitting

    def __init__(self, n_clusters: int = 256, normalize: str = "l1", max_training_descriptors: int = 100_000,
                 kmeans_iter: int = 20, cache: bool | str = False, random_state=None):
        self.n_clusters = n_clusters
        self.normalize = normalize
        self.max_training_descriptors = max_training_descriptors
        self.kmeans_iter = kmeans_iter
        self.cache = cache
        self.random_state = random_state

    def _fit(self, bags: Bags, y):
        if self.normalize not in ("l1", "tfidf", "l2", "none"):
            raise ValueError(f"BoW: normalize must be 'l1', 'tfidf', 'l2' or 'none', got {self.normalize!r}")
        self.codebook_ = cached_kmeans(bags.descriptors, self.n_clusters, self.max_training_descriptors,
                                       self.kmeans_iter, self.random_state, self.cache)
        if self.normalize == "tfidf":
            counts = self._counts(bags)
            document_frequency = (counts > 0).sum(axis=0)
            self.idf_ = np.log(bags.n_samples / np.maximum(document_frequency, 1)).astype(np.float32)

    def _counts(self, bags: Bags) -> np.ndarray:
        """(m, K) word counts."""
        return word_counts(self.codebook_, bags).astype(np.float32)

    def _transform(self, bags: Bags) -> np.ndarray:
        H = self._counts(bags)
        if self.normalize == "l1":
            H /= np.maximum(H.sum(axis=1, keepdims=True), 1e-12)
        elif self.normalize in ("tfidf", "l2"):
            if self.normalize == "tfidf":
                H *= self.idf_
            H /= np.maximum(np.linalg.norm(H, axis=1, keepdims=True), 1e-12)
        return H


@hookimpl
def lfabench_aggregators():
    return [PluginSpec("bow", BoW, "Bag of words: faiss k-means codebook, hard-assignment histogram (Csurka 2004)")]
