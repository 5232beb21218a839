"""EM for a diagonal-covariance Gaussian mixture in float32 GEMMs: scikit-learn's algorithm at the GEMM rate.

The same EM as ``sklearn.mixture.GaussianMixture(covariance_type="diag")`` started from given weights, means
and precisions (``weights_init``, ``means_init``, ``precisions_init``), with its stopping rule: iteration ``t``
computes the mean log-likelihood ``L_t = 1/N sum_i log sum_k w_k N(x_i; mu_k, sigma_k^2)`` of the current
parameters (the E-step), then the M-step; EM stops after the iteration where ``|L_t - L_{t-1}| < tol``
(``L_0 = -inf``) or after ``max_iter`` iterations. The M-step is scikit-learn's: ``n_k = sum_i r_ik + 10 eps``,
``mu_k = sum_i r_ik x_i / n_k``, ``sigma_k^2 = sum_i r_ik x_i^2 / n_k - mu_k^2 + reg_covar`` (a negative difference,
only ever float32's rounding, taken as zero), ``w_k = n_k / sum n``.

What differs is the arithmetic. With ``Z = [x^2, x]`` (``(N, 2d)`` float32, built once), one pass over blocks of
rows does both steps of an iteration:

* E-step: the ``(B, K)`` log-densities are one float32 GEMM, ``Z_b [-prec/2; mu prec]`` (``prec = 1/sigma^2``),
  plus a per-component constant in float64; the log-sum-exp is row-max shifted (float32 exponentials, whose sum
  of ``K`` terms is at least 1) and each row's ``log p(x_i)`` is summed in float64 into ``L_t``.
* M-step statistics: ``r_b^T Z_b`` (``(K, 2d)``, one float32 GEMM) and ``sum_i r_ik``, accumulated over blocks in
  float64; the parameters are then formed in float64.

``8 N K d`` float32 operations per iteration (``4 N K d`` each step), against scikit-learn's float64 GEMMs and
its passes over ``(N, K)`` and ``(N, d)`` float64 temporaries; scikit-learn also fits a k-means whose labels it
discards when every initial parameter is given, and a last E-step for ``fit_predict``'s labels, neither of which
is done here. The data are centred first (EM commutes with a translation), so that the expanded squares'
terms, which cancel, stay small in float32. The blocks are a fixed number of rows (never sized by the thread count),
each computed at one BLAS thread, side by side under a run's ``threads``, and summed in block order: the same bits at
every thread count (``docs/reproducibility.md``).

Agreement with scikit-learn (``tests/plugins/aggregators/test_gmm.py``): the log-likelihood of each iteration to
1e-5 relative, and the fitted parameters to 1e-3 relative in the mean and variance of each component when both
run the same number of iterations. float32 rounding can move the stopping iteration by one where
``|L_t - L_{t-1}|`` lands within about 1e-5 of ``tol``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from lfabench.sdk import imap_in_order

__all__ = ["DiagGMM", "fit_diag_gmm_em", "log_likelihood"]

#: Rows per block of a pass: the ``(B, K)`` log-densities and the ``(B, 2d)`` rows stay in cache.
BLOCK_ROWS = 8192
#: ``log`` of the smallest normal float32. A log-density this far below its row's largest would exponentiate to a
#: subnormal, which the GEMM ``r^T Z`` then reads at a small fraction of its speed on CPUs that handle subnormal
#: operands in microcode (25x on a Sapphire Rapids Xeon). It is taken as 0: such a term is below the rounding of
#: its row's sum, which holds the row's largest term (1), and of a component's sums unless the component's whole
#: share of the data is that small.
LOG_SMALLEST_NORMAL32 = np.float32(np.log(np.finfo(np.float32).tiny))


@dataclass
class DiagGMM:
    """A fitted diagonal GMM: ``weights`` ``(K,)``, ``means`` and ``variances`` ``(K, d)`` float64; ``n_iter``
    EM iterations run, ``lower_bound`` the mean log-likelihood of the last E-step (scikit-learn's
    ``lower_bound_``), ``lower_bounds`` that of every iteration, ``converged`` whether ``tol`` was reached."""

    weights: np.ndarray
    means: np.ndarray
    variances: np.ndarray
    n_iter: int
    lower_bound: float
    lower_bounds: list[float]
    converged: bool


def _coefficients(weights: np.ndarray, means: np.ndarray, precisions: np.ndarray):
    """``A`` ``(2d, K)`` float32 and ``c`` ``(K,)`` float64 with ``log w_k + log N(x; mu_k, 1/prec_k) = [x^2, x] A + c``."""
    d = means.shape[1]
    A = np.concatenate([-0.5 * precisions, means * precisions], axis=1).T.astype(np.float32)
    c = (np.log(weights) - 0.5 * d * np.log(2.0 * np.pi) + 0.5 * np.sum(np.log(precisions), axis=1)
         - 0.5 * np.sum(means * means * precisions, axis=1))
    return np.ascontiguousarray(A), c


def _pass(Z: np.ndarray, A: np.ndarray, c: np.ndarray, statistics: bool):
    """One pass over the rows of ``Z`` ``(N, 2d)`` float32: ``(sum_i log p(x_i), n (K,), S (K, 2d))`` float64,
    ``n`` and ``S`` the responsibilities' sums and ``r^T Z`` (None when not ``statistics``).

    The blocks' terms are computed side by side under a run's ``threads`` (:func:`lfabench.threads.imap_in_order`)
    and summed here in block order: the sums of one thread, bit for bit."""
    N = Z.shape[0]
    K = A.shape[1]
    c32 = c.astype(np.float32)
    total = 0.0
    n = np.zeros(K) if statistics else None
    S = np.zeros((K, Z.shape[1])) if statistics else None

    def block(lo: int):
        Zb = Z[lo:lo + BLOCK_ROWS]
        Lb = np.matmul(Zb, A)
        Lb += c32
        top = Lb.max(axis=1, keepdims=True)
        Lb -= top
        np.putmask(Lb, Lb < LOG_SMALLEST_NORMAL32, -np.inf)
        np.exp(Lb, out=Lb)
        mass = Lb.sum(axis=1, keepdims=True, dtype=np.float64)        # in [1, K]: no underflow of the sum
        log_p = float(np.sum(np.log(mass) + top, dtype=np.float64))
        if not statistics:
            return log_p, None, None
        Lb *= (1.0 / mass).astype(np.float32)                          # responsibilities r_ik
        return log_p, Lb.sum(axis=0, dtype=np.float64), Lb.T @ Zb

    for log_p, n_b, S_b in imap_in_order(block, range(0, N, BLOCK_ROWS)):
        total += log_p
        if statistics:
            n += n_b
            S += S_b
    return total, n, S


def log_likelihood(X: np.ndarray, weights: np.ndarray, means: np.ndarray, variances: np.ndarray) -> float:
    """Mean log-likelihood ``1/N sum_i log p(x_i)`` of ``X`` ``(N, d)`` under the diagonal GMM (float32 GEMMs as
    :func:`fit_diag_gmm_em`; scikit-learn's ``GaussianMixture.score``)."""
    centre = np.asarray(X).mean(axis=0, dtype=np.float64)
    X = (np.asarray(X) - centre).astype(np.float32)
    Z = np.concatenate([X * X, X], axis=1)
    A, c = _coefficients(np.asarray(weights, np.float64), np.asarray(means, np.float64) - centre,
                         1.0 / np.asarray(variances, np.float64))
    return _pass(Z, A, c, statistics=False)[0] / X.shape[0]


def fit_diag_gmm_em(X: np.ndarray, weights: np.ndarray, means: np.ndarray, precisions: np.ndarray,
                    max_iter: int = 100, tol: float = 1e-3, reg_covar: float = 1e-6) -> DiagGMM:
    """EM from ``weights`` ``(K,)`` (summing to 1), ``means`` ``(K, d)`` and ``precisions`` ``(K, d)`` on ``X``
    ``(N, d)``: scikit-learn's ``GaussianMixture(covariance_type="diag", tol=tol, reg_covar=reg_covar,
    max_iter=max_iter, weights_init=weights, means_init=means, precisions_init=precisions)`` (module docstring).

    Not reaching ``tol`` within ``max_iter`` iterations warns (scikit-learn's ``ConvergenceWarning``), as
    scikit-learn does. ``max_iter=0`` returns the initial parameters.
    """
    X = np.asarray(X)
    N, d = X.shape
    # EM commutes with a translation of the data (the log-likelihood does not change): centring keeps the terms
    # of the expanded squares, which cancel, small, so float32 loses less of them
    centre = X.mean(axis=0, dtype=np.float64)
    X32 = (X - centre).astype(np.float32)
    Z = np.concatenate([X32 * X32, X32], axis=1)                       # (N, 2d): [x^2, x]
    w = np.asarray(weights, dtype=np.float64)
    mu = np.asarray(means, dtype=np.float64) - centre
    prec = np.asarray(precisions, dtype=np.float64)
    var = 1.0 / prec
    eps10 = 10 * np.finfo(np.float64).eps                              # scikit-learn's (float64 responsibilities)
    lower_bound, bounds, converged, n_iter = -np.inf, [], False, 0
    for n_iter in range(1, int(max_iter) + 1):
        previous = lower_bound
        A, c = _coefficients(w, mu, prec)
        total, n, S = _pass(Z, A, c, statistics=True)
        lower_bound = total / N
        bounds.append(lower_bound)
        n = n + eps10
        mu = S[:, d:] / n[:, None]
        # a weighted variance is never negative: a negative difference is the float32 products' rounding (a
        # component collapsed onto a few points, whose float32 responsibilities elsewhere underflow to zero), and
        # is taken as zero, where scikit-learn's float64 EM finds a variance of about reg_covar
        var = np.maximum(S[:, :d] / n[:, None] - mu * mu, 0.0) + reg_covar
        if np.any(var <= 0.0):
            raise ValueError("diagonal GMM: a variance fell to zero or below (degenerate data or too small "
                             "reg_covar); scikit-learn's EM fails the same way")
        w = n / n.sum()
        prec = 1.0 / var
        if abs(lower_bound - previous) < tol:
            converged = True
            break
    if not converged and int(max_iter) > 0:
        from sklearn.exceptions import ConvergenceWarning

        warnings.warn("diagonal GMM: EM did not converge (the change of the mean log-likelihood stayed above "
                      f"tol={tol} for max_iter={max_iter} iterations)", ConvergenceWarning, stacklevel=2)
    return DiagGMM(weights=w, means=mu + centre, variances=var, n_iter=n_iter, lower_bound=float(lower_bound),
                   lower_bounds=bounds, converged=converged)
