"""Triangulation embedding with democratic aggregation and rotation + normalisation: phi_Delta + psi_d + RN.

Jégou & Zisserman, "Triangulation embedding and democratic aggregation for image
search", CVPR 2014.

* **phi_Delta** (Sec. 3). Anchors ``c_1..c_A`` are k-means centres (faiss) of a
  seeded sample of the fitted descriptors. A descriptor is embedded as its
  normalised residuals ``R(x) = [(x - c_j) / ||x - c_j||]_{j=1..A}`` (``A*d``-D),
  then centred and whitened, ``phi(x) = diag(lambda)^{-1/2} U^T (R(x) - R_0)``,
  with ``R_0`` the mean and ``(lambda, U)`` the eigen-decomposition of the
  covariance of ``R`` over a seeded sample of training descriptors. Following
  the paper, the first ``d`` components (largest eigenvalues) are dropped, so
  phi has ``(A - 1) * d`` dimensions (1920 for A = 16 with SIFT).
* **psi_d** (Sec. 4). Democratic aggregation: ``psi(X) = sum_i a_i phi(x_i)``
  with weights solving ``a_i sum_j k(x_i, x_j) a_j = 1`` for
  ``k(x, y) = max(phi(x)^T phi(y), 0)`` (negative similarities clipped, as the
  Sinkhorn solver needs a non-negative kernel), by :mod:`lfabench_plugins.aggregators.democratic`
  (10 iterations, symmetric step).
* **RN** (Sec. 5). The aggregated vectors are rotated onto the principal axes
  of the aggregated training vectors (a pure rotation, learned at fit time),
  then power-law normalised (``alpha = 0.5``) and L2-normalised.

Output dimension: ``(A - 1) * d`` for ``A = n_anchors`` (``n_components``
when given, at most that). An empty sample aggregates to the zero vector.
The first ``transform`` of the bags ``fit`` saw (same descriptors and offsets,
as a retrieval run's database) reuses the sums RN's rotation was learned from.
"""

from __future__ import annotations

import numpy as np

from lfabench.sdk import (Aggregator, Bags, PluginSpec, array_fingerprint, bags_fingerprint, cacheable_seed, cached_fit,
                          hookimpl)

from .codebooks import cached_kmeans, training_sample
from .democratic import democratic_weights
from .normalization import l2_normalize, signed_power
from .padding import padded_batches


def triangulation_residuals(X: np.ndarray, anchors: np.ndarray) -> np.ndarray:
    """``(N, A*d)`` normalised residuals ``[(x - c_j)/||x - c_j||]_j`` (a zero residual stays zero)."""
    X = np.asarray(X, dtype=np.float32)
    R = X[:, None, :] - anchors[None, :, :].astype(np.float32)              # (N, A, d)
    R /= np.maximum(np.linalg.norm(R, axis=2, keepdims=True), 1e-12)
    return R.reshape(X.shape[0], anchors.shape[0] * anchors.shape[1])


class TriangulationEmbedding(Aggregator):
    """phi_Delta + psi_d + RN (Jégou & Zisserman 2014).

    Parameters
    ----------
    n_anchors : int
        Number of anchors A (k-means centres); output dimension ``(A - 1) * d``.
    n_components : int or None
        Keep at most this many whitened components after dropping the first ``d``.
    democratic : bool
        psi_d (True) or plain sum aggregation psi_s (False).
    sinkhorn_iter : int
        Iterations of the democratic solver.
    power : float
        Power-law exponent of RN (0.5); 1 disables it.
    rotate : bool
        Apply the RN rotation before the power law.
    max_training_descriptors : int
        Anchors are trained on at most this many descriptors (seeded draw).
    max_whitening_descriptors : int
        The centring/whitening statistics use at most this many descriptors (seeded draw).
    kmeans_iter : int
    cache : bool or str
        Cache anchors and the whitening projection (False/True/folder).
    random_state : int or None
    """

    fit_size_params = ("n_anchors",)  # more anchors than training descriptors: refused before fitting

    def __init__(self, n_anchors: int = 16, n_components: int | None = None, democratic: bool = True,
                 sinkhorn_iter: int = 10, power: float = 0.5, rotate: bool = True,
                 max_training_descriptors: int = 100_000, max_whitening_descriptors: int = 50_000,
                 kmeans_iter: int = 20, cache: bool | str = False, random_state=None):
        self.n_anchors = n_anchors
        self.n_components = n_components
        self.democratic = democratic
        self.sinkhorn_iter = sinkhorn_iter
        self.power = power
        self.rotate = rotate
        self.max_training_descriptors = max_training_descriptors
        self.max_whitening_descriptors = max_whitening_descriptors
        self.kmeans_iter = kmeans_iter
        self.cache = cache
        self.random_state = random_state

    # ------------------------------------------------------------------ fit
    def _fit(self, bags: Bags, y):
        d = bags.dim
        A = int(self.n_anchors)
        if A < 2:
            raise ValueError(f"TriangulationEmbedding: n_anchors must be >= 2 (the first d components are "
                             f"dropped), got {A}")
        self.anchors_ = cached_kmeans(bags.descriptors, A, self.max_training_descriptors, self.kmeans_iter,
                                      self.random_state, self.cache)
        sample = training_sample(bags.descriptors, self.max_whitening_descriptors, self.random_state)
        n_out = (A - 1) * d if self.n_components is None else min(int(self.n_components), (A - 1) * d)

        def fit():
            R = triangulation_residuals(sample, self.anchors_).astype(np.float64)
            mean = R.mean(axis=0)
            R -= mean
            eigval, eigvec = np.linalg.eigh(R.T @ R / max(R.shape[0] - 1, 1))
            order = np.argsort(eigval)[::-1][d:d + n_out]                 # drop the first d components
            floor = 1e-9 * max(float(eigval.max()), 1e-30)
            P = eigvec[:, order] / np.sqrt(np.maximum(eigval[order], floor))
            return {"mean": mean.astype(np.float32), "projection": P.astype(np.float32)}

        params = {"anchors_sha256": array_fingerprint(self.anchors_), "n_out": n_out,
                  "seed": cacheable_seed(self.random_state)}
        state = cached_fit("temb-whitening", f"A={A}_D={n_out}", sample, params, fit,
                           self.cache if params["seed"] is not None else False)
        self.mean_ = state["mean"]
        self.projection_ = state["projection"]                             # (A*d, D)
        self.rotation_ = None
        self._fit_aggregate = None
        if self.rotate:
            Psi = self._aggregate(bags)
            # the embedding is the cost of a run (a (A*d, D) product per descriptor): a transform of the
            # same bags, as a retrieval run's database is its training set, takes these sums instead of
            # embedding every descriptor again (same arithmetic, so the same bits)
            self._fit_aggregate = (bags_fingerprint(bags), Psi)
            Psi = Psi.astype(np.float64)
            Psi -= Psi.mean(axis=0)
            _, _, Vt = np.linalg.svd(Psi, full_matrices=True)              # principal axes of the training set
            self.rotation_ = Vt.T.astype(np.float32)                       # (D, D) orthogonal

    # ------------------------------------------------------------ transform
    def embed(self, X: np.ndarray) -> np.ndarray:
        """phi: ``(N, D)`` centred, whitened triangulation embedding of descriptors ``X`` (``(N, d)``)."""
        return (triangulation_residuals(X, self.anchors_) - self.mean_) @ self.projection_

    def _aggregate(self, bags: Bags) -> np.ndarray:
        """psi_d (or psi_s): ``(m, D)`` weighted sums of embedded descriptors, batched over padded bags."""
        D = self.projection_.shape[1]
        out = np.zeros((bags.n_samples, D), dtype=np.float32)
        for idx, Xp, mask in padded_batches(bags, max_cells=4096):
            B, n, _ = Xp.shape
            Phi = self.embed(Xp.reshape(B * n, -1)).reshape(B, n, D)
            Phi *= mask[:, :, None]
            if self.democratic:
                K = np.maximum(np.matmul(Phi, Phi.transpose(0, 2, 1)), 0.0).astype(np.float64)
                w = democratic_weights(K, gamma=0.0, n_iter=self.sinkhorn_iter, mask=mask).astype(np.float32)
            else:
                w = mask.astype(np.float32)
            out[idx] = np.matmul(w[:, None, :], Phi)[:, 0]
        return out

    def _transform(self, bags: Bags) -> np.ndarray:
        reuse, self._fit_aggregate = getattr(self, "_fit_aggregate", None), None   # once: frees (m, D)
        if reuse is not None and reuse[0] == bags_fingerprint(bags):
            Psi = reuse[1]
        else:
            Psi = self._aggregate(bags)
        if self.rotation_ is not None:
            Psi = Psi @ self.rotation_
        return l2_normalize(signed_power(Psi, self.power)).astype(np.float32)


@hookimpl
def lfabench_aggregators():
    return [PluginSpec("temb", TriangulationEmbedding, "Triangulation embedding + democratic aggregation + "
                                                      "rotation/power-law (Jegou & Zisserman 2014)")]
