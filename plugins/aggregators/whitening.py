"""PCA-whitening of a few thousand wide vectors (FV+NN's Fisher vectors) from their Gram matrix.

For ``F`` [m, n] with ``m < n`` (3,588 training Fisher vectors of 8,192 dimensions on Fifteen Scene),
the top ``k`` principal axes come from the eigendecomposition of the centred Gram matrix
``G = F_c F_c^T`` [m, m]: ``G u_i = s_i^2 u_i`` gives the axis ``v_i = F_c^T u_i / s_i`` and the variance
``s_i^2 / (m - 1)``. This is what scikit-learn's ``PCA(whiten=True, svd_solver="full")`` computes from the
full SVD of ``F_c`` (the same axes, variances and sign convention: each axis's largest-magnitude entry
positive, ``svd_flip(..., u_based_decision=False)``), at ``m^2 n`` operations for ``G`` plus a partial
symmetric eigendecomposition of ``G`` (LAPACK through ``scipy.linalg.eigh``, only the ``k`` largest
pairs), instead of the full SVD's ``~4 m^2 n + 8 m^3``. Wider-than-tall data only: with ``m >= n`` the
covariance route of scikit-learn is the cheap one, and is used.
"""

from __future__ import annotations

import numpy as np


class PCAWhitening:
    """``f -> diag(lambda)^{-1/2} V^T (f - mean)``: the top ``n_components`` principal axes, whitened.

    Attributes after :meth:`fit` (scikit-learn's names): ``mean_`` [n], ``components_`` [k, n] (rows:
    axes), ``explained_variance_`` [k] (descending).
    """

    def __init__(self, n_components: int):
        self.n_components = n_components

    def fit(self, F: np.ndarray) -> PCAWhitening:
        from scipy.linalg import eigh
        from sklearn.decomposition import PCA
        from sklearn.utils.extmath import svd_flip

        F = np.asarray(F, dtype=np.float64)
        m, n = F.shape
        k = int(self.n_components)
        if not 1 <= k <= min(m - 1, n):
            raise ValueError(f"PCAWhitening: n_components must be in 1..{min(m - 1, n)}, got {k}")
        if m >= n:
            pca = PCA(n_components=k, whiten=True, svd_solver="covariance_eigh").fit(F)
            self.mean_, self.components_, self.explained_variance_ = (
                pca.mean_, pca.components_, pca.explained_variance_)
            return self
        self.mean_ = F.mean(axis=0)
        Fc = F - self.mean_
        w, U = eigh(Fc @ Fc.T, subset_by_index=[m - k, m - 1])    # ascending: the k largest
        w, U = np.maximum(w[::-1], 0.0), U[:, ::-1]
        s = np.sqrt(w)
        Vt = (U.T @ Fc) / np.maximum(s, 1e-300)[:, None]
        _, Vt = svd_flip(U, Vt, u_based_decision=False)
        self.components_ = Vt
        self.explained_variance_ = w / (m - 1)
        return self

    def transform(self, F: np.ndarray) -> np.ndarray:
        """[m', k] whitened coordinates of ``F`` [m', n]."""
        return ((np.asarray(F, dtype=np.float64) - self.mean_) @ self.components_.T) / np.sqrt(self.explained_variance_)
