"""Descriptor normalisation applied before fitting and, identically, at transform time.

Aggregated vectors ``xbar_i = mu_i^T X^T C`` scale with the *square* of the
descriptor scale (notes, pitfall 3), so ``lambda1``/``lambda2`` only mean
something for a fixed normalisation:

* ``"l2"`` (default): every descriptor divided by its Euclidean norm (zero rows stay zero);
* ``"rootsift"``: L1-normalise then square root (Arandjelović & Zisserman 2012);
  needs non-negative descriptors (SIFT); the result has unit L2 norm;
* ``"none"``: the descriptors exactly as given (same values, same dtype).
"""

from __future__ import annotations

import numpy as np

__all__ = ["NORMALIZATIONS", "normalize_descriptors"]

NORMALIZATIONS = ("l2", "rootsift", "none")


def normalize_descriptors(X: np.ndarray, method: str) -> np.ndarray:
    """Return ``X`` (``(N, d)``) normalised by ``method`` (a new array unless ``"none"``)."""
    if method == "none":
        return X
    if method == "l2":
        norms = np.linalg.norm(X, axis=1, keepdims=True)
        return (X / np.where(norms > 0, norms, 1)).astype(X.dtype, copy=False)
    if method == "rootsift":
        if X.size and float(X.min()) < 0:
            row = int(np.flatnonzero((X < 0).any(axis=1))[0])
            raise ValueError(f"normalize='rootsift' needs non-negative descriptors; descriptor row {row} has a "
                             f"negative entry (use 'l2' or 'none')")
        l1 = X.sum(axis=1, keepdims=True)
        return np.sqrt(X / np.where(l1 > 0, l1, 1)).astype(X.dtype, copy=False)
    raise ValueError(f"normalize must be one of {NORMALIZATIONS}, got {method!r}")
