"""Descriptor normalisation applied before fitting and, identically, at transform time.

Aggregated vectors ``xbar_i = mu_i^T X^T C`` scale with the *square* of the
descriptor scale (notes, pitfall 3), so ``lambda1``/``lambda2`` only mean
something for a fixed normalisation:

* ``"l2"``: every descriptor divided by its Euclidean norm (zero rows stay zero);
* ``"rootsift"``: L1-normalise then square root (Arandjelović & Zisserman 2012);
  needs non-negative descriptors (SIFT); the result has unit L2 norm;
* ``"l2_centered"`` / ``"rootsift_centered"``: the same, then the mean of the
  *training* descriptors (after that normalisation) is subtracted, at fit and
  at transform. Prototypes are then convex combinations of centred descriptors,
  and ``xbar`` no longer carries the large component shared by every image
  (SIFT is non-negative, so uncentred ``mu_i . p_j`` is large and nearly
  constant). Why it matters, measured on Scene-15 (``docs/prolfa-bound.md``):
  uncentred, the fit drives the prototypes towards directions where every image
  looks alike, and 1-NN falls *below* that of the random starting prototypes;
* ``"none"``: the descriptors exactly as given (same values, same dtype).
"""

from __future__ import annotations

import numpy as np

from .sparsecols import block_rows

__all__ = ["NORMALIZATIONS", "normalize_descriptors", "parse_normalization", "center_descriptors"]

NORMALIZATIONS = ("l2", "rootsift", "l2_centered", "rootsift_centered", "none")

_CENTERED = "_centered"


def parse_normalization(method: str) -> tuple[str, bool]:
    """``"rootsift_centered"`` -> ``("rootsift", True)``; raises on an unknown name."""
    if method not in NORMALIZATIONS:
        raise ValueError(f"normalize must be one of {NORMALIZATIONS}, got {method!r}")
    if method.endswith(_CENTERED):
        return method[: -len(_CENTERED)], True
    return method, False


def center_descriptors(X: np.ndarray, mean: np.ndarray | None) -> np.ndarray:
    """``X - mean`` in ``X``'s dtype (``mean`` ``(d,)``, from the training descriptors); ``X`` itself if None."""
    if mean is None:
        return X
    if X.shape[1] != mean.shape[0]:
        raise ValueError(f"descriptors have dimension {X.shape[1]}, the fitted descriptor mean has "
                         f"{mean.shape[0]}")
    if X.dtype == mean.dtype:
        return X - mean
    # in row blocks: X - mean is computed in the wider dtype of the two (float64 for float32 descriptors) and
    # would exist whole beside X and the result (5.2 GB for 316k lifted descriptors of dimension 1,024)
    out = np.empty(X.shape, dtype=X.dtype)
    step = block_rows(X.shape[1])        # elementwise: any block size gives the same floats
    for s in range(0, X.shape[0], step):
        out[s:s + step] = X[s:s + step] - mean
    return out


def normalize_descriptors(X: np.ndarray, method: str) -> np.ndarray:
    """Return ``X`` (``(N, d)``) normalised per descriptor by ``method`` (a new array unless ``"none"``).

    For the ``*_centered`` methods this is only the per-descriptor part; the
    caller subtracts the training mean (:func:`center_descriptors`).
    """
    base, _ = parse_normalization(method)
    if base == "none":
        return X
    if base == "l2":
        norms = np.linalg.norm(X, axis=1, keepdims=True)
        return (X / np.where(norms > 0, norms, 1)).astype(X.dtype, copy=False)
    if X.size and float(X.min()) < 0:
        row = int(np.flatnonzero((X < 0).any(axis=1))[0])
        raise ValueError(f"normalize={method!r} needs non-negative descriptors; descriptor row {row} has a "
                         f"negative entry (use 'l2' or 'none')")
    l1 = X.sum(axis=1, keepdims=True)
    return np.sqrt(X / np.where(l1 > 0, l1, 1)).astype(X.dtype, copy=False)
