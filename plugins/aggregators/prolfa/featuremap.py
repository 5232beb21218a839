"""An explicit kernel feature map ``phi`` for ProLFA (a model option; ``"linear"`` is the paper's model).

The paper writes ``xbar_i = G_i X^T X Z`` and calls ``X^T X`` "essentially a
linear kernel matrix". With the linear kernel, ``xbar_i = mu_i^T P`` is a
linear map of sample i's mean descriptor, so 1-NN on it can do no better than
the best linear map of the means (docs/prolfa-bound.md). Replacing ``X`` by
``phi(X)`` (an explicit, finite-dimensional feature map whose inner products
approximate a kernel ``k(x, x')``) gives the kernel ``Phi^T Phi`` in the same
formula, and every kernel-free identity of the solver holds unchanged in the
lifted space: the solver simply sees the lifted descriptors. Prototypes stay
convex combinations of real descriptors (``C`` selects descriptors; ``P =
phi(X)^T C``), so they are as interpretable as before.

Maps (scikit-learn):

* ``"linear"``: none (the paper's model, exactly);
* ``"nystroem_rbf"``: :class:`~sklearn.kernel_approximation.Nystroem` with the RBF
  kernel ``exp(-gamma ||x - x'||^2)``, ``n_components`` landmarks drawn from at
  most ``fit_size`` training descriptors;
* ``"rff_rbf"``: random Fourier features (:class:`~sklearn.kernel_approximation.RBFSampler`);
* ``"additive_chi2"``: :class:`~sklearn.kernel_approximation.AdditiveChi2Sampler`
  (non-negative descriptors, e.g. rootsift; output dimension ``3 d``).

The map is fitted on training descriptors only (after the per-descriptor
normalisation, before any centring), stored, and applied identically at
transform time.
"""

from __future__ import annotations

import numpy as np

__all__ = ["FEATURE_MAPS", "check_feature_map", "fit_feature_map", "apply_feature_map"]

FEATURE_MAPS = ("linear", "nystroem_rbf", "rff_rbf", "additive_chi2")

#: Rows transformed at once: bounds the float64 temporaries of scikit-learn's transforms (at D = 1,024, 16 MiB
#: each, under glibc's 32 MiB mmap threshold, so freed memory is reused rather than mapped afresh per chunk).
CHUNK = 2048


def check_feature_map(name: str, n_components: int, gamma: float, fit_size: int) -> None:
    if name not in FEATURE_MAPS:
        raise ValueError(f"feature_map must be one of {FEATURE_MAPS}, got {name!r}")
    if name in ("nystroem_rbf", "rff_rbf"):
        if int(n_components) < 1:
            raise ValueError(f"n_components must be >= 1, got {n_components}")
        if not float(gamma) > 0:
            raise ValueError(f"gamma must be > 0, got {gamma}")
        if int(fit_size) < 1:
            raise ValueError(f"feature_map_fit_size must be >= 1, got {fit_size}")


def fit_feature_map(X: np.ndarray, name: str, n_components: int, gamma: float, fit_size: int,
                    rng: np.random.Generator):
    """The fitted map for training descriptors ``X`` ``(N, d)`` (None for ``"linear"``).

    Nystroem landmarks come from at most ``fit_size`` descriptors drawn by ``rng``
    (``n_components`` is capped at that sample's size, as scikit-learn does).
    """
    check_feature_map(name, n_components, gamma, fit_size)
    if name == "linear":
        return None
    from sklearn.kernel_approximation import AdditiveChi2Sampler, Nystroem, RBFSampler

    seed = int(rng.integers(2**31 - 1))
    if name == "additive_chi2":
        if X.size and float(X.min()) < 0:
            raise ValueError("feature_map='additive_chi2' needs non-negative descriptors (use normalize "
                             "'l2' or 'rootsift' on SIFT-like descriptors)")
        return AdditiveChi2Sampler(sample_steps=2).fit(X[:1])
    sample = X if X.shape[0] <= fit_size else X[np.sort(rng.choice(X.shape[0], int(fit_size), replace=False))]
    if name == "rff_rbf":
        return RBFSampler(gamma=float(gamma), n_components=int(n_components), random_state=seed).fit(sample)
    k = int(min(n_components, sample.shape[0]))
    return Nystroem(kernel="rbf", gamma=float(gamma), n_components=k, random_state=seed).fit(
        np.asarray(sample, dtype=np.float64))


def apply_feature_map(fmap, X: np.ndarray) -> np.ndarray:
    """``phi(X)`` ``(N, D)`` in ``X``'s float dtype (float32 stays float32: half the memory), in chunks."""
    if fmap is None:
        return X
    dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.float64
    first = fmap.transform(np.asarray(X[:1], dtype=np.float64))
    out = np.empty((X.shape[0], first.shape[1]), dtype=dtype)
    for s in range(0, X.shape[0], CHUNK):
        out[s:s + CHUNK] = fmap.transform(np.asarray(X[s:s + CHUNK], dtype=np.float64))
    return out
