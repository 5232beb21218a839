"""Second-order gamma-democratic aggregation (Lin, Maji & Koniusz, "Second-order democratic aggregation", ECCV 2018).

Each descriptor ``x_i`` (``d``-D) is lifted to its outer product ``x_i x_i^T``;
the similarity of two lifted descriptors is ``k_ij = <x_i x_i^T, x_j x_j^T> =
(x_i^T x_j)^2`` (non-negative). The weights solve the gamma-democratic equation

    a_i * sum_j k_ij a_j = (sum_j k_ij) ** gamma          (gamma = 0: democratic; 1: sum pooling)

by the dampened Sinkhorn iteration of :mod:`lfabench_plugins.aggregators.democratic` (the reference
code ``tsungyu/o2dp`` runs 10 iterations with dampening 0.5, gamma = 0.5 by
default), and the sample is ``A = sum_i a_i x_i x_i^T``, followed by elementwise
signed square root and L2 (the B-CNN normalisation the reference code uses).

Output: the upper triangle of ``A`` (off-diagonal entries times sqrt(2), so
inner products equal the Frobenius ones), dimension ``d (d + 1) / 2``
(8,256 for SIFT). The compact option (``sketch_dim = D``) replaces ``x x^T`` by its
Tensor Sketch (Pham & Pagh 2013; compact bilinear pooling, Gao et al. CVPR 2016,
as in o2dp's sketch variant), dimension ``D``, whose inner products approximate
``(x^T y)^2``; the weights are still solved with the exact kernel.
An empty sample aggregates to the zero vector.
"""

from __future__ import annotations

import numpy as np

from lfabench.sdk import Aggregator, Bags, PluginSpec, hookimpl

from .codebooks import check_random_state
from .democratic import democratic_weights
from .normalization import l2_normalize, signed_power
from .padding import padded_batches


def tensor_sketch(X: np.ndarray, h1, s1, h2, s2, D: int) -> np.ndarray:
    """``(N, D)`` Tensor Sketch of ``x x^T`` for each row: ``IFFT(FFT(C1 x) * FFT(C2 x))`` with count sketches ``C``."""
    # count sketch: coordinate i goes to bucket h[i] with sign s[i]; summed with one matrix product each
    M1 = np.zeros((X.shape[1], D))
    M1[np.arange(X.shape[1]), h1] = s1
    M2 = np.zeros((X.shape[1], D))
    M2[np.arange(X.shape[1]), h2] = s2
    c1 = X @ M1
    c2 = X @ M2
    return np.fft.irfft(np.fft.rfft(c1, axis=1) * np.fft.rfft(c2, axis=1), n=D, axis=1)


class GammaDemocratic(Aggregator):
    """Second-order pooling with gamma-democratic weights.

    Parameters
    ----------
    gamma : float in [0, 1]
        0 = democratic, 1 = sum pooling; 0.5 is the paper's default.
    sinkhorn_iter : int
        Iterations of the dampened Sinkhorn solver (10 in the reference code).
    damping : float
        Exponent of the multiplicative Sinkhorn update (0.5 in the reference code).
    power : float
        Elementwise signed power (0.5 = signed square root) before the final L2.
    sketch_dim : int or None
        None: exact ``d (d + 1) / 2`` upper-triangle output. An int ``D``:
        Tensor-Sketch compact output of dimension ``D`` (for large ``d``).
    random_state : int or None
        Seeds the sketch hashes (unused without a sketch).
    """

    def __init__(self, gamma: float = 0.5, sinkhorn_iter: int = 10, damping: float = 0.5, power: float = 0.5,
                 sketch_dim: int | None = None, random_state=None):
        self.gamma = gamma
        self.sinkhorn_iter = sinkhorn_iter
        self.damping = damping
        self.power = power
        self.sketch_dim = sketch_dim
        self.random_state = random_state

    def _fit(self, bags: Bags, y):
        d = bags.dim
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"GammaDemocratic: gamma must be in [0, 1], got {self.gamma}")
        if self.sketch_dim is None:
            self.output_dim_ = d * (d + 1) // 2
            self.sketch_ = None
        else:
            D = int(self.sketch_dim)
            if D < 1:
                raise ValueError(f"GammaDemocratic: sketch_dim must be >= 1, got {self.sketch_dim}")
            rng = check_random_state(self.random_state)
            self.sketch_ = {"h1": rng.randint(0, D, d), "s1": rng.choice([-1.0, 1.0], d),
                            "h2": rng.randint(0, D, d), "s2": rng.choice([-1.0, 1.0], d)}
            self.output_dim_ = D

    def weights(self, Xp: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """``(B, n)`` gamma-democratic weights of padded bags ``Xp`` (``(B, n, d)``) under kernel ``(x^T y)^2``."""
        G = np.matmul(Xp, Xp.transpose(0, 2, 1))
        return democratic_weights(G * G, gamma=self.gamma, n_iter=self.sinkhorn_iter, damping=self.damping,
                                  mask=mask)

    def _transform(self, bags: Bags) -> np.ndarray:
        d = bags.dim
        out = np.zeros((bags.n_samples, self.output_dim_))
        iu = np.triu_indices(d)
        scale = np.where(iu[0] == iu[1], 1.0, np.sqrt(2.0))
        for idx, Xp, mask in padded_batches(bags, max_cells=8192):
            Xp = Xp.astype(np.float64)
            w = self.weights(Xp, mask)
            if self.sketch_ is None:
                A = np.matmul((Xp * w[:, :, None]).transpose(0, 2, 1), Xp)          # (B, d, d)
                out[idx] = A[:, iu[0], iu[1]] * scale
            else:
                B, n, _ = Xp.shape
                S = tensor_sketch(Xp.reshape(B * n, d), D=self.output_dim_, **self.sketch_).reshape(B, n, -1)
                out[idx] = np.matmul(w[:, None, :], S)[:, 0]
        return l2_normalize(signed_power(out, self.power)).astype(np.float32)


@hookimpl
def lfabench_aggregators():
    return [PluginSpec("gamma_democratic", GammaDemocratic, "Second-order pooling with gamma-democratic "
                                                            "(dampened Sinkhorn) weights (Lin, Maji & Koniusz 2018)")]
