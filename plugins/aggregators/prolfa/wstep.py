"""The W-step (paper eq. "W"): the Sylvester equation ``(Xbar^T Xbar + lambda2 I) W + W (Y^T Y) = 2 Xbar^T Y``.

``Xbar = Mu P`` has rank ``r <= d`` whatever ``d̄`` is, so instead of a
Bartels-Stewart solve on the ``d̄ x d̄`` matrix (``O(d̄^3)``; 7e11 flops at
d̄ = 4096) we diagonalise both sides:

* ``Y^T Y = V_B diag(beta) V_B^T`` (``c x c``; diagonal with counts for one-hot ``Y``);
* ``Xbar^T Xbar = V diag(s^2) V^T`` from the thin SVD of ``R P`` (``d x d̄``, ``R^T R = Mu^T Mu``).

In the rotated unknown ``W' = W V_B`` the equation splits into ``c`` ridge
systems ``(V diag(s^2) V^T + (lambda2 + beta_k) I) w'_k = q'_k``, solved in the
eigenbasis. Where ``s_i^2 + lambda2 + beta_k = 0`` (``lambda2 = 0`` with a
singular ``Y^T Y``) the operator is singular and the minimum-norm solution is
returned (those components set to zero).
"""

from __future__ import annotations

import numpy as np

from .options import SolverOptions
from .problem import Problem

__all__ = ["solve_w", "sylvester_residual", "uses_basis_norm", "w_step"]


def w_step(pb: Problem, P: np.ndarray, opts: SolverOptions) -> np.ndarray:
    """:func:`solve_w` as the solver options ``opts`` (``spectral_norm``, ``w_svd``) choose its norm and SVD."""
    return solve_w(pb, P, uses_basis_norm(pb, opts.spectral_norm), opts.w_svd == "tall")


def uses_basis_norm(pb: Problem, choice: str) -> bool:
    """Whether the W-step works out ``sigma_max(W)`` in the prototypes' basis, for the option ``spectral_norm``:
    "basis" always, "svd" never, "auto" where that is cheaper than the SVD of ``W`` itself: with more classes
    than descriptor dimensions (``c > d``; the basis costs a ``(d̄, d)`` QR, ``W``'s SVD ``O(d̄ c^2)``)."""
    return choice == "basis" or (choice == "auto" and pb.MY.shape[1] > pb.MY.shape[0])


def solve_w(pb: Problem, P: np.ndarray, norm_from_basis: bool = False, tall_svd: bool = True) -> np.ndarray:
    """The exact minimiser over ``W`` of ``J(., W)`` for prototypes ``P`` (``(d, d̄)``); returns ``(d̄, c)``.

    ``norm_from_basis``: also work out ``sigma_max(W)`` (what :meth:`Problem.spectral_norm` answers for this
    ``W``) from ``W``'s coordinates in an orthonormal basis ``B`` (``(d̄, <= d)``) of the column space of
    ``P^T``, which holds every column of ``W`` (``W = 2 P^T M_Y`` and ``V`` terms, below): the SVD of
    ``B^T W`` (``<= d x c``) instead of ``W``'s (``d̄ x c``). ``tall_svd``: the SVD of ``R P`` taken as that of
    its ``(d̄, d)`` transpose (the option ``w_svd="tall"``), else of ``R P`` itself (``"wide"``).
    """
    beta, VB = pb.YtY_eigh
    perm = pb.YtY_permutation
    Q = 2.0 * (P.T @ pb.MY)                       # (d̄, c) = 2 Xbar^T Y
    # C order, as the product gives it: the next GEMM rounds differently on a transposed layout
    Qr = Q @ VB if perm is None else np.ascontiguousarray(Q[:, perm[0]]) * perm[1][None, :]
    if tall_svd:
        # the SVD of the (d̄, d) transpose, whose left vectors are the right vectors of R P: LAPACK's tall path
        # (QR first) takes 0.58x the time of its wide one (LQ first) at d = 128-200, d̄ = 4,096
        U, s, _ = np.linalg.svd((pb.R @ P).T, full_matrices=False)
    else:
        _, s, Vt = np.linalg.svd(pb.R @ P, full_matrices=False)
    keep = s > (s[0] if s.size else 0.0) * 1e-12
    s, Vt = s[keep], (U[:, keep].T if tall_svd else Vt[keep])
    coef = Vt @ Qr                                # (r, c) components in the row space of Xbar
    rest = Qr - Vt.T @ coef                       # components in its null space
    shift = pb.lambda2 + beta                     # (c,)
    Wr = Vt.T @ (coef / (s[:, None] ** 2 + shift[None, :]))
    safe = shift > 0
    Wr[:, safe] += rest[:, safe] / shift[safe]
    if perm is None:
        W = Wr @ VB.T
    else:
        W = np.empty_like(Wr)
        W[:, perm[0]] = Wr * perm[1][None, :]      # Wr @ VB.T, a signed permutation of the columns
    if norm_from_basis:
        # Vt's rows lie in the row space of R P, inside that of P, and Qr = 2 P^T M_Y V_B: so do W's columns
        B = np.linalg.qr(P.T)[0] if P.size else P.T
        pb.remember_spectral_norm(W, float(np.linalg.norm(B.T @ W, 2)) if W.size else 0.0)
    return W


def sylvester_residual(A: np.ndarray, B: np.ndarray, Q: np.ndarray, W: np.ndarray) -> float:
    """``||A W + W B - Q||_F / ||Q||_F`` (a check, for small problems with an explicit ``A``)."""
    return float(np.linalg.norm(A @ W + W @ B - Q) / max(np.linalg.norm(Q), 1e-300))
