"""VLAD: vector of locally aggregated descriptors (Jégou, Douze, Schmid & Pérez, CVPR 2010; TPAMI 2012).

For a k-means codebook ``c_1..c_K`` (faiss, trained on a seeded sample of the
fitted descriptors) and a sample's descriptors ``x_i`` hard-assigned to their
nearest centre ``NN(x_i)``, the raw encoding is the per-centre residual sum

    v_k = sum_{i : NN(x_i) = k} (x_i - c_k),        VLAD = [v_1; ...; v_K].

Post-processing, in VLFeat's order (``vl/vlad.c``, ``vl_vlad_encode``):
signed power law per entry (``power=0.5``: signed square root, Jégou et al.
2012), then optional intra-normalisation (each ``v_k`` L2-normalised,
Arandjelović & Zisserman, "All about VLAD", CVPR 2013), then global L2.
``power=1, intra_norm=False, l2=True`` is VLFeat's default flags; ``power=0.5,
intra_norm=True`` is ``VL_VLAD_FLAG_SQUARE_ROOT | VL_VLAD_FLAG_NORMALIZE_COMPONENTS``.

Output dimension: ``K * d`` (``n_clusters`` times the descriptor dimension).
An empty sample aggregates to the zero vector.
"""

from __future__ import annotations

import numpy as np

from lfabench.sdk import Aggregator, Bags, LazyModule, PluginSpec, hookimpl

from .codebooks import assign_nearest, cached_kmeans
from .normalization import intra_normalize, l2_normalize, signed_power

sp = LazyModule("scipy.sparse")  # imported at first use: a third of a second at start-up


def vlad_encode(bags: Bags, centres: np.ndarray, assignments: np.ndarray | None = None) -> np.ndarray:
    """Raw (un-normalised) VLAD ``(m, K*d)`` float64 of every sample, for hard ``assignments`` (``(N,)``).

    One sparse product over (sample, centre) cells: no per-sample loop.
    """
    K, d = centres.shape
    m = bags.n_samples
    words = assign_nearest(centres, bags.descriptors) if assignments is None else np.asarray(assignments)
    cell = bags.sample_index() * K + words
    A = sp.csr_matrix((np.ones(cell.size), (cell, np.arange(cell.size))), shape=(m * K, bags.n_descriptors))
    sums = np.asarray(A @ bags.descriptors.astype(np.float64))              # (m*K, d) sum of x over the cell
    mass = np.bincount(cell, minlength=m * K).astype(np.float64)             # (m*K,) descriptors in the cell
    sums = sums.reshape(m, K, d)
    sums -= mass.reshape(m, K, 1) * centres.astype(np.float64)[None]
    return sums.reshape(m, K * d)


class VLAD(Aggregator):
    """VLAD with signed-power, intra and L2 normalisation options.

    Parameters
    ----------
    n_clusters : int
        Codebook size K; output dimension ``K * d``.
    power : float
        Signed power-law exponent applied entrywise (0.5 = signed square root, 1 = none).
    intra_norm : bool
        L2-normalise each centre's residual block (after the power law).
    l2 : bool
        Final global L2 normalisation.
    max_training_descriptors : int
        The codebook is trained on at most this many descriptors drawn uniformly
        (seeded by ``random_state``) from the fitted bags.
    kmeans_iter : int
        faiss k-means iterations.
    cache : bool or str
        Cache the codebook (keyed on the training sample, K, iterations and seed):
        False = off, True = default cache root, str = folder.
    random_state : int or None
    """

    fit_size_params = ("n_clusters",)  # more clusters than training descriptors: refused before fitting

    def __init__(self, n_clusters: int = 64, power: float = 0.5, intra_norm: bool = True, l2: bool = True,
                 max_training_descriptors: int = 100_000, kmeans_iter: int = 20,
                 cache: bool | str = False, random_state=None):
        self.n_clusters = n_clusters
        self.power = power
        self.intra_norm = intra_norm
        self.l2 = l2
        self.max_training_descriptors = max_training_descriptors
        self.kmeans_iter = kmeans_iter
        self.cache = cache
        self.random_state = random_state

    def _fit(self, bags: Bags, y):
        if not self.power > 0:
            raise ValueError(f"VLAD: power must be > 0, got {self.power}")
        self.codebook_ = cached_kmeans(bags.descriptors, self.n_clusters, self.max_training_descriptors,
                                       self.kmeans_iter, self.random_state, self.cache)

    def _transform(self, bags: Bags) -> np.ndarray:
        V = vlad_encode(bags, self.codebook_)
        V = signed_power(V, self.power)
        if self.intra_norm:
            V = intra_normalize(V, self.codebook_.shape[0])
        if self.l2:
            V = l2_normalize(V)
        return V.astype(np.float32)


@hookimpl
def lfabench_aggregators():
    return [PluginSpec("vlad", VLAD, "VLAD: k-means residual sums, signed sqrt + intra + L2 (Jegou 2010/2012)")]
