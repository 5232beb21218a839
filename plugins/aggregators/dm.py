"""DM: diffusion-on-manifold aggregation (Furuya & Ohbuchi, "Diffusion-on-Manifold Aggregation of Local
Features for Shape-based 3D Model Retrieval", ACM ICMR 2015).

DM accounts for the non-linear manifold the local features form by diffusing a
sample's codeword histogram over a graph of codewords, so that a descriptor
votes for its codeword *and* the codewords near it along the manifold:

1. codebook: ``K`` faiss k-means centres of a seeded sample of the fitted descriptors;
2. manifold graph: each codeword joined to its ``n_neighbors`` nearest codewords,
   ``W_ij = exp(-||c_i - c_j||^2 / sigma^2)`` with ``sigma^2`` the mean squared
   distance of those neighbour pairs, symmetrised (max), ``S = D^{-1/2} W D^{-1/2}``;
3. source: the sample's hard-assignment histogram ``h`` (L1-normalised; BoW);
4. diffusion (manifold ranking, Zhou et al. NIPS 2004): the fixed point of
   ``f <- alpha S f + (1 - alpha) h``, i.e. ``f = (1 - alpha) (I - alpha S)^{-1} h``,
   applied to all samples as one product with the precomputed ``K x K`` matrix;
5. signed power law (``power``) and L2.

The ICMR paper gives the scheme (graph of codewords, diffusion of the encoded
features, then aggregation); the graph and diffusion constants here
(``n_neighbors=10``, ``alpha=0.9``) are the usual manifold-ranking choices.

Output dimension: ``K`` (``n_clusters``). An empty sample aggregates to the zero vector.
"""

from __future__ import annotations

import numpy as np

from lfabench.sdk import Aggregator, Bags, PluginSpec, hookimpl

from .codebooks import cached_kmeans, word_counts
from .normalization import l2_normalize, signed_power


def codeword_graph(centres: np.ndarray, n_neighbors: int) -> np.ndarray:
    """``(K, K)`` symmetric normalised affinity ``S = D^{-1/2} W D^{-1/2}`` of the k-NN graph of codewords."""
    K = centres.shape[0]
    k = min(int(n_neighbors), K - 1)
    C = centres.astype(np.float64)
    sq = np.sum(C * C, axis=1)
    dist2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * C @ C.T, 0.0)
    np.fill_diagonal(dist2, np.inf)
    W = np.zeros((K, K))
    if k >= 1:
        nn = np.argsort(dist2, axis=1)[:, :k]
        rows = np.repeat(np.arange(K), k)
        d2 = dist2[rows, nn.ravel()]
        sigma2 = max(float(d2.mean()), 1e-12)
        W[rows, nn.ravel()] = np.exp(-d2 / sigma2)
        W = np.maximum(W, W.T)
    deg = W.sum(axis=1)
    inv_sqrt = np.where(deg > 0, 1.0 / np.sqrt(np.maximum(deg, 1e-300)), 0.0)
    return inv_sqrt[:, None] * W * inv_sqrt[None, :]


class DiffusionOnManifold(Aggregator):
    """BoW histogram diffused over a k-NN graph of codewords.

    Parameters
    ----------
    n_clusters : int
        Codebook size K (output dimension).
    n_neighbors : int
        Neighbours per codeword in the manifold graph.
    alpha : float in [0, 1)
        Diffusion strength (0 = plain BoW).
    power : float
        Signed power-law exponent before L2 (1 = none).
    max_training_descriptors, kmeans_iter, cache, random_state
        As for :class:`~lfabench_plugins.aggregators.bow.BoW` (the codebook's seeded sample and cache).
    """

    fit_size_params = ("n_clusters",)  # more clusters than training descriptors: refused before fitting

    def __init__(self, n_clusters: int = 1024, n_neighbors: int = 10, alpha: float = 0.9, power: float = 0.5,
                 max_training_descriptors: int = 100_000, kmeans_iter: int = 20,
                 cache: bool | str = False, random_state=None):
        self.n_clusters = n_clusters
        self.n_neighbors = n_neighbors
        self.alpha = alpha
        self.power = power
        self.max_training_descriptors = max_training_descriptors
        self.kmeans_iter = kmeans_iter
        self.cache = cache
        self.random_state = random_state

    def _fit(self, bags: Bags, y):
        if not 0.0 <= self.alpha < 1.0:
            raise ValueError(f"DM: alpha must be in [0, 1), got {self.alpha}")
        self.codebook_ = cached_kmeans(bags.descriptors, self.n_clusters, self.max_training_descriptors,
                                       self.kmeans_iter, self.random_state, self.cache)
        K = self.codebook_.shape[0]
        self.affinity_ = codeword_graph(self.codebook_, self.n_neighbors)
        # (1 - alpha) (I - alpha S)^{-1}: S is symmetric with spectral radius <= 1, so this is well posed
        self.diffusion_ = (1.0 - self.alpha) * np.linalg.inv(np.eye(K) - self.alpha * self.affinity_)

    def histograms(self, bags: Bags) -> np.ndarray:
        """(m, K) L1-normalised hard-assignment histograms."""
        H = word_counts(self.codebook_, bags)
        return H / np.maximum(H.sum(axis=1, keepdims=True), 1)

    def _transform(self, bags: Bags) -> np.ndarray:
        F = self.histograms(bags) @ self.diffusion_               # diffusion_ is symmetric
        return l2_normalize(signed_power(F, self.power)).astype(np.float32)


@hookimpl
def lfabench_aggregators():
    return [PluginSpec("dm", DiffusionOnManifold, "Diffusion-on-manifold: BoW histogram diffused over a "
                                                  "codeword k-NN graph (Furuya & Ohbuchi 2015)")]
