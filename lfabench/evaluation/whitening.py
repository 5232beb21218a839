"""Mahalanobis distance as whitening followed by Euclidean distance.

``d_M(x, y)^2 = (x - y)^T C^{-1} (x - y) = ||W x - W y||^2`` with ``W = C^{-1/2}``
for a covariance estimate ``C`` of the training vectors. When ``dim >= n_train``
the empirical covariance is singular, so the estimate is one of:

* ``"empirical"`` — the maximum-likelihood covariance (``1/n`` normalisation);
  refused when singular;
* ``"ledoit_wolf"`` / ``"oas"`` — shrinkage towards ``mu I`` (``mu = trace(S)/d``):
  ``C = (1 - s) S + s mu I`` with ``s`` from scikit-learn
  (:func:`sklearn.covariance.ledoit_wolf_shrinkage`, :func:`sklearn.covariance.oas`;
  Ledoit & Wolf 2004, Chen et al. 2010), the same matrix as
  ``LedoitWolf().fit(X).covariance_`` / ``OAS().fit(X).covariance_``;
* ``"pca"`` — PCA-whitening on the components whose variance exceeds
  ``max_eigenvalue * max(n, d) * eps`` (the ``numpy.linalg.matrix_rank`` tolerance),
  i.e. ``C^{-1}`` replaced by the pseudo-inverse; directions of zero training
  variance are dropped;
* ``"auto"`` (default) — ``"empirical"`` when the empirical covariance has full
  rank, else ``"ledoit_wolf"``.

The eigen-decomposition is taken from the ``(d, d)`` covariance when ``d <= n``
and from a thin SVD of the centred ``(n, d)`` training matrix otherwise, so a
high-dimensional whitening never forms a ``(d, d)`` matrix (except ``"oas"``,
whose scikit-learn estimator does).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Whitening", "fit_whitening", "COVARIANCE_ESTIMATORS"]

COVARIANCE_ESTIMATORS = ("auto", "empirical", "ledoit_wolf", "oas", "pca")


@dataclass
class Whitening:
    """A fitted whitening ``x -> x @ M`` (``M = C^{-1/2}``, symmetric, or ``(d, r)`` for PCA).

    Stored in factored form: ``x @ M = beta * x + ((x @ U) * c) @ U.T`` for the
    shrinkage and empirical estimators (``U``: ``(d, r)`` eigenvectors with
    non-zero training variance) and ``(x @ U) * c`` for PCA (``beta`` is None).
    ``info`` records the estimator actually used, the shrinkage and the rank.
    """

    U: np.ndarray
    c: np.ndarray
    beta: float | None
    info: dict = field(default_factory=dict)

    def transform(self, X: np.ndarray) -> np.ndarray:
        """``(n, d)`` -> whitened ``(n, d)`` (``(n, r)`` for PCA), float64."""
        X = np.asarray(X, dtype=np.float64)
        proj = (X @ self.U) * self.c
        if self.beta is None:
            return proj
        return self.beta * X + proj @ self.U.T

    def precision_matrix(self) -> np.ndarray:
        """The ``(d, d)`` matrix ``M M^T`` (``C^{-1}``, or its pseudo-inverse for PCA): for checks and small d."""
        d = self.U.shape[0]
        M = self.transform(np.eye(d))
        return M @ M.T


def _spectrum(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (descending) and eigenvectors ``(d, r)`` of the ``1/n`` empirical covariance of ``X``."""
    n, d = X.shape
    Xc = X - X.mean(axis=0)
    if d <= n:
        lam, U = np.linalg.eigh(Xc.T @ Xc / n)
        lam, U = lam[::-1], U[:, ::-1]
    else:  # thin SVD: at most n non-zero eigenvalues, no (d, d) matrix
        _, s, Vt = np.linalg.svd(Xc, full_matrices=False)
        lam, U = s**2 / n, Vt.T
    return np.clip(lam, 0.0, None), U


def fit_whitening(train_X: np.ndarray, covariance: str = "auto") -> Whitening:
    """Fit the Mahalanobis whitening of ``train_X`` (``(n, d)``) with the chosen covariance estimator."""
    if covariance not in COVARIANCE_ESTIMATORS:
        raise ValueError(f"covariance must be one of {COVARIANCE_ESTIMATORS}, got {covariance!r}")
    X = np.asarray(train_X, dtype=np.float64)
    n, d = X.shape
    if n < 2:
        raise ValueError(f"Mahalanobis distance needs at least 2 training vectors to estimate a covariance, got {n}")
    lam, U = _spectrum(X)
    tol = (lam[0] if lam.size else 0.0) * max(n, d) * np.finfo(np.float64).eps
    rank = int(np.count_nonzero(lam > tol))
    full_rank = rank == d
    chosen = covariance
    if covariance == "auto":
        chosen = "empirical" if full_rank else "ledoit_wolf"
    info = {"covariance": chosen, "rank": rank, "dim": d, "n_train": n}
    if chosen == "empirical":
        if not full_rank:
            raise ValueError(f"the empirical covariance of the {n} training vectors is singular (rank {rank} < "
                             f"dim {d}): use covariance='ledoit_wolf', 'oas' or 'pca'")
        return Whitening(U, 1.0 / np.sqrt(lam), None, info)
    if chosen == "pca":
        keep = lam > tol
        if not keep.any():
            raise ValueError("PCA-whitening: the training vectors have no variance (all identical)")
        return Whitening(U[:, keep], 1.0 / np.sqrt(lam[keep]), None, info)
    from sklearn.covariance import ledoit_wolf_shrinkage, oas

    s = float(ledoit_wolf_shrinkage(X)) if chosen == "ledoit_wolf" else float(oas(X)[1])
    mu = float(lam.sum() / d)                               # trace(S) / d
    if s * mu <= 0.0:
        raise ValueError(f"{chosen} shrinkage {s:.3g} with mean variance {mu:.3g} leaves a singular covariance "
                         f"(the training vectors have no variance?)")
    beta = 1.0 / np.sqrt(s * mu)                            # eigenvalue s*mu off the training span
    c = 1.0 / np.sqrt((1.0 - s) * lam + s * mu) - beta
    info["shrinkage"] = s
    return Whitening(U, c, beta, info)
