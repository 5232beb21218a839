"""Vector normalisations shared by aggregators: signed power law, L2, intra (per-block) L2.

All functions take an ``(m, D)`` float array and return a new array of the same
shape and dtype (nothing is modified in place). A zero row stays zero: norms are
floored at ``eps`` (VLFeat's ``VL_MAX(n, 1e-12)`` convention), so empty samples
aggregate to finite rows.
"""

from __future__ import annotations

import numpy as np

__all__ = ["signed_power", "l2_normalize", "intra_normalize", "power_l2"]


def signed_power(X: np.ndarray, alpha: float = 0.5) -> np.ndarray:
    """``sign(x) * |x|**alpha`` elementwise (Perronnin et al. 2010; ``alpha=0.5`` is the signed square root).

    ``alpha == 1`` returns a copy unchanged.
    """
    X = np.asarray(X)
    if alpha <= 0:
        raise ValueError(f"power-law exponent alpha must be > 0, got {alpha}")
    if alpha == 1:
        return X.copy()
    if alpha == 0.5:
        return np.sign(X) * np.sqrt(np.abs(X))
    return np.sign(X) * np.abs(X) ** alpha


def l2_normalize(X: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    """Each row divided by ``max(||row||_2, eps)``."""
    X = np.asarray(X)
    norms = np.linalg.norm(X, axis=-1, keepdims=True)
    return X / np.maximum(norms, eps).astype(X.dtype, copy=False)


def intra_normalize(X: np.ndarray, n_blocks: int, eps: float = 1e-12) -> np.ndarray:
    """L2-normalise each of the ``n_blocks`` equal consecutive blocks of every row (Arandjelović & Zisserman 2013).

    ``X`` is ``(m, n_blocks * b)``; block ``k`` of a row is ``row[k*b:(k+1)*b]``.
    """
    X = np.asarray(X)
    m, D = X.shape
    if D % n_blocks:
        raise ValueError(f"intra_normalize: dimension {D} is not a multiple of n_blocks={n_blocks}")
    blocks = X.reshape(m, n_blocks, D // n_blocks)
    return l2_normalize(blocks, eps).reshape(m, D)


def power_l2(X: np.ndarray, alpha: float = 0.5) -> np.ndarray:
    """Power-law normalisation followed by L2 (the "improved" FV / VLAD post-processing)."""
    return l2_normalize(signed_power(X, alpha))
