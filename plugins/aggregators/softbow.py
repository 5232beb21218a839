"""Differentiable soft-assignment bag of words: forward pass and hand-derived gradient (T1, EO-BoW, DBoWs).

Notation (shapes in brackets). Descriptors ``X`` [N, d] of ``m`` samples; ``P`` [m, N] is the
mean-pooling matrix (``Bags.pooling_matrix(mean=True)``: row ``i`` holds ``1/N_i`` on sample
``i``'s descriptors, an empty sample is a zero row). Logits ``Z`` [N, K], memberships

    u_jk = exp(z_jk) / sum_l exp(z_jl)                    (softmax over the K words)
    s_ik = (1/N_i) sum_{j in sample i} u_jk,   S = P U    [m, K], each non-empty row sums to 1.

Two logit families:

* linear (T1): ``z_jk = w_k . x_j + b_k``;
* distance (EO-BoW, DBoWs): ``z_jk = -dist(x_j, v_k) / sigma`` with ``dist`` the squared
  Euclidean distance (a Gaussian kernel) or the Euclidean distance (EO-BoW's choice).

Backward: given ``dL/dS`` [m, K], ``dL/dU = P^T dL/dS`` and the softmax Jacobian gives
``dL/dz_jk = u_jk (g_jk - sum_l u_jl g_jl)`` with ``g = dL/dU``. The chain to the parameters:

* linear: ``dL/dW = (dL/dZ)^T X``, ``dL/db = sum_j dL/dZ_j``;
* distance: ``dL/dD = -dL/dZ / sigma`` and ``dD_jk/dv_k = 2 (v_k - x_j)`` (squared) or
  ``(v_k - x_j) / D_jk`` (Euclidean), so with ``A = dL/dD`` (squared) or ``dL/dD / D`` (Euclidean)
  ``dL/dV = c * (diag(sum_j A_jk) V - A^T X)``, ``c = 2`` or ``1``.
"""

from __future__ import annotations

import numpy as np

DISTANCES = ("sqeuclidean", "euclidean")
_EPS = 1e-12


def check_distance(distance: str, owner: str) -> str:
    if distance not in DISTANCES:
        raise ValueError(f"{owner}: distance must be one of {DISTANCES}, got {distance!r}")
    return distance


def softmax_rows(Z: np.ndarray) -> np.ndarray:
    """Row-wise softmax of ``Z`` [n, K] (shifted by the row maximum for stability)."""
    E = np.exp(Z - Z.max(axis=1, keepdims=True))
    return E / E.sum(axis=1, keepdims=True)


def softmax_backward(U: np.ndarray, dU: np.ndarray) -> np.ndarray:
    """``dL/dZ`` [n, K] from ``U = softmax_rows(Z)`` and ``dL/dU``."""
    return U * (dU - np.sum(U * dU, axis=1, keepdims=True))


def distances(X: np.ndarray, V: np.ndarray, distance: str) -> np.ndarray:
    """[N, K] squared Euclidean or Euclidean distances between rows of ``X`` [N, d] and ``V`` [K, d]."""
    D2 = np.maximum((X * X).sum(1)[:, None] - 2.0 * X @ V.T + (V * V).sum(1)[None, :], 0.0)
    return D2 if distance == "sqeuclidean" else np.sqrt(D2 + _EPS)


def distance_backward(X: np.ndarray, V: np.ndarray, D: np.ndarray, dD: np.ndarray, distance: str) -> np.ndarray:
    """``dL/dV`` [K, d] from ``dL/dD`` [N, K] (see the module docstring)."""
    if distance == "sqeuclidean":
        A, c = dD, 2.0
    else:
        A, c = dD / D, 1.0
    return c * (A.sum(axis=0)[:, None] * V - A.T @ X)


def distance_memberships(X: np.ndarray, V: np.ndarray, sigma: float, distance: str):
    """``(U, D)``: memberships ``softmax(-D / sigma)`` [N, K] and the distances ``D`` [N, K]."""
    D = distances(X, V, distance)
    return softmax_rows(-D / sigma), D


def distance_histograms_grad(X: np.ndarray, V: np.ndarray, P, U: np.ndarray, D: np.ndarray, sigma: float,
                             distance: str, dS: np.ndarray) -> np.ndarray:
    """``dL/dV`` [K, d] of a loss of the histograms ``S = P softmax(-D/sigma)``, given ``dL/dS`` [m, K]."""
    dU = np.asarray(P.T @ dS)
    dZ = softmax_backward(U, dU)
    return distance_backward(X, V, D, -dZ / sigma, distance)


def nearest_distance_scale(X: np.ndarray, V: np.ndarray, distance: str) -> float:
    """Mean over the rows of ``X`` of the distance to the nearest row of ``V`` (the softness unit)."""
    d = distances(X, V, distance).min(axis=1)
    return float(max(d.mean(), _EPS))


class LearnedSoftCodebook:
    """``transform`` and ``initial_transform`` of a soft BoW whose codebook a supervised criterion learned.

    Mixed into DBoWs and EO-BoW, whose fits set ``standardizer_``, ``initial_codebook_`` (the k-means
    start) and ``codebook_`` (the learned one). An image's vector is the mean of its descriptors'
    memberships (:func:`distance_memberships`), ``[m, K]`` float32.
    """

    #: ``"sqeuclidean"`` or ``"euclidean"``: the distance inside the memberships.
    membership_distance = "sqeuclidean"

    def membership_scale(self) -> float:
        """The softness of the memberships learned at fit time."""
        raise NotImplementedError

    def initial_transform(self, bags) -> np.ndarray:
        """[m, K] the unsupervised starting point: the same soft BoW on the initial k-means codebook."""
        return self._encode(bags, self.initial_codebook_)

    def _transform(self, bags) -> np.ndarray:
        return self._encode(bags, self.codebook_)

    def _encode(self, bags, V: np.ndarray) -> np.ndarray:
        X = self.standardizer_.transform(bags.descriptors)
        U, _ = distance_memberships(X, V, self.membership_scale(), self.membership_distance)
        return np.asarray(bags.pooling_matrix(mean=True, dtype=np.float64) @ U).astype(np.float32)
