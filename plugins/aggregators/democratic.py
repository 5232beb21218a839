"""Democratic and gamma-democratic weights by (dampened) Sinkhorn iterations, batched over bags.

Given a bag of ``n`` embedded descriptors with a non-negative similarity matrix
``K`` (``n x n``, ``K_ij = k(x_i, x_j)``), the weights ``a`` solve

    a_i * sum_j K_ij a_j = (sum_j K_ij) ** gamma        for every i.

* ``gamma = 0`` is *democratic aggregation* (Jégou & Zisserman, "Triangulation
  embedding and democratic aggregation for image search", CVPR 2014, Sec. 4):
  every weighted descriptor has the same total similarity (1) to the weighted set.
* ``gamma = 1`` gives ``a = 1``: sum pooling.
* ``0 < gamma < 1`` is *gamma-democratic* aggregation (Lin, Maji & Koniusz,
  "Second-order democratic aggregation", ECCV 2018; reference code
  ``tsungyu/o2dp`` uses ``gamma = 0.5``, 10 iterations and dampening 0.5).

The fixed point is reached by the symmetric Sinkhorn-style update

    s = a * (K a);      a <- a * (t / s) ** damping,     t_i = (sum_j K_ij) ** gamma,

where ``damping = 0.5`` is the plain symmetric Sinkhorn step and smaller values
damp it. ``K`` must be non-negative with a positive diagonal: Jégou & Zisserman
clip negative similarities to zero before solving (done by the callers).

Bags of different sizes are handled as zero-padded batches ``(B, n_max, n_max)``
with a validity mask; padded entries get weight 0.
"""

from __future__ import annotations

import numpy as np

__all__ = ["democratic_weights", "democratic_residual"]

_TINY = 1e-30


def democratic_weights(K: np.ndarray, gamma: float = 0.0, n_iter: int = 10, damping: float = 0.5,
                       mask: np.ndarray | None = None) -> np.ndarray:
    """Weights ``a`` of shape ``(B, n)`` solving ``a_i (K a)_i = (K 1)_i ** gamma`` per batch item.

    Parameters
    ----------
    K : (B, n, n) or (n, n) array, non-negative
        Per-bag similarity matrices (padded rows/columns may hold anything;
        they are zeroed through ``mask``).
    gamma : float in [0, 1]
        0 = democratic, 1 = sum pooling.
    n_iter : int
        Sinkhorn iterations (10 in both reference implementations).
    damping : float in (0, 1]
        Exponent of the multiplicative update; 0.5 = symmetric Sinkhorn.
    mask : (B, n) bool, optional
        Valid (non-padded) descriptors.
    """
    K = np.asarray(K)
    single = K.ndim == 2
    if single:
        K = K[None]
    if K.ndim != 3 or K.shape[1] != K.shape[2]:
        raise ValueError(f"K must be (B, n, n) or (n, n), got shape {K.shape}")
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    if not 0.0 < damping <= 1.0:
        raise ValueError(f"damping must be in (0, 1], got {damping}")
    B, n, _ = K.shape
    valid = np.ones((B, n), dtype=bool) if mask is None else np.asarray(mask, dtype=bool).reshape(B, n)
    if mask is not None:
        K = K * (valid[:, :, None] & valid[:, None, :])
    if np.any(K < 0):
        raise ValueError("democratic_weights needs non-negative similarities (clip negative values first)")
    target = np.where(valid, np.maximum(K.sum(axis=2), _TINY) ** gamma, 0.0)
    a = valid.astype(K.dtype)
    for _ in range(int(n_iter)):
        s = a * np.matmul(K, a[:, :, None])[:, :, 0]
        a = np.where(valid, a * (target / np.maximum(s, _TINY)) ** damping, 0.0)
    return a[0] if single else a


def democratic_residual(K: np.ndarray, a: np.ndarray, gamma: float = 0.0) -> np.ndarray:
    """Relative violation ``a_i (K a)_i / (K 1)_i**gamma - 1`` of the defining equation, per descriptor."""
    K = np.asarray(K, dtype=np.float64)
    a = np.asarray(a, dtype=np.float64)
    return a * (K @ a) / K.sum(axis=-1) ** gamma - 1.0
