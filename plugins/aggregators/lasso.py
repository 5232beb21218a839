"""Batched lasso codes on a fixed dictionary: the objective of scikit-learn's ``sparse_encode(algorithm="lasso_cd")``,
certified per descriptor by its duality gap, computed for all descriptors at once with GEMMs.

The problem, for each row ``x`` of ``X`` (``(N, d)``) and a dictionary ``D`` (``(K, d)``, atoms as rows)::

    P(u) = 1/2 ||x - D^T u||^2 + alpha ||u||_1        (u >= 0 too when ``positive``)

``sparse_encode(X, D, algorithm="lasso_cd", alpha=alpha)`` solves exactly this: it fits
``Lasso(alpha=alpha / d)`` to ``(D^T, x)``, whose objective ``1/(2d) ||x - D^T u||^2 + alpha/d ||u||_1`` is
``P / d``, by coordinate descent on the Gram matrix until the duality gap of ``P`` is at most
``1e-8 ||x||^2``. :func:`lasso_codes` returns codes whose duality gap meets the same bound, ``tol ||x||^2``
(``tol=1e-8`` by default), so both codes are within ``tol ||x||^2`` of the optimum and of each other in ``P``.

How (Gram form: ``G = D D^T``, ``c = D x``; one ``(B, d) x (d, K)`` GEMM gives ``c`` for a block of rows):

1. The lasso path of each row (homotopy / LARS-lasso: Osborne, Presnell & Turlach 2000; Efron, Hastie,
   Johnstone & Tibshirani 2004), from ``lambda = max_j |c_j|`` (code 0) down to ``alpha``, row by row in a
   compiled kernel (:func:`~lfabench_plugins.aggregators.lasso_kernels.homotopy_supports`). Along the path the
   code on its support ``S`` with signs ``s`` is ``u_S = G_SS^{-1} (c_S - lambda s_S)``; each step moves the row
   to its next event (an atom joins, a code crosses zero and leaves, or ``lambda`` reaches ``alpha``). A step
   costs a Cholesky solve on the support and one pass of ``|S| K`` multiply-adds over the Gram rows; the steps a
   row takes are about its final support size (10 atoms on DAISY at the plugin's defaults), whatever the Gram's
   conditioning, which is what slows coordinate descent (and FISTA) on DAISY's mutually correlated atoms.
2. On the final support, one more solve of ``u_S = G_SS^{-1} (c_S - alpha s_S)`` removes the rounding the
   path's steps accumulated, and the exact duality gap of every row (scikit-learn's formula) certifies it:
   a row is accepted when its gap is within ``tol ||x||^2`` and its signs are consistent.
3. Rows not accepted (a singular ``G_SS``, a path longer than ``max_steps``; none on the Fifteen Scene DAISY
   we measured) are finished by ``sparse_encode`` itself, warm-started from their code, so every row meets
   the bound or is what the reference solver returns from a start at least as good as its own.

The path gives only the support and signs: the codes are those of step 2's solve, so the path's rounding never
reaches them: a row's code depends on its path only through the support and signs the path ends on. Where
rounding could decide those (two events of a step within a relative ``NEAR``, a near-singular ``G_SS``), the
row's path is taken again in NumPy, all such rows in lock-step (:func:`_lockstep_homotopy`), so that those rows
end where that form ends them (and the others do, but for rounding that drifts past ``NEAR`` unseen: one path of
the Fifteen Scene board's twelve SC runs).
Rows are processed in fixed blocks of ``block`` descriptors, in order. Each row's arithmetic is its own
(the path's kernel, small LAPACK solves, a single-threaded sparse product, elementwise steps) except the GEMM
``X D^T``, which OpenBLAS splits by output blocks, never along the sum: the codes are bit-identical across
thread counts (a test runs ``OMP_NUM_THREADS=1`` and ``2``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

__all__ = ["HOMOTOPY_PATHS", "LassoStats", "lasso_codes", "lasso_objective", "lasso_duality_gap"]

#: Where :func:`lasso_codes` runs the rows' paths: the compiled kernel (near-ties in lock-step), or all in lock-step.
HOMOTOPY_PATHS = ("compiled", "lockstep")

#: An event this close to the current lambda is the one just taken.
TINY = 1e-12
#: Two events of a step within this relative distance: rounding may order them (the path's ``close`` rows).
NEAR = 1e-7
#: A support whose smallest relative Cholesky pivot is under this (``G_SS`` conditioned worse than about 1e4, as
#: near-duplicate atoms make it): the path's rounding grows with the conditioning, so it is decided in lock-step.
NEAR_PIVOT = 1e-4


@dataclass
class LassoStats:
    """What :func:`lasso_codes` did: rows it coded (``n_rows``), certified by the path (``n_exact``) or
    handed to ``sparse_encode`` (``n_fallback``), and the ``ConvergenceWarning`` messages that fallback raised."""

    n_rows: int = 0
    n_exact: int = 0
    n_fallback: int = 0
    convergence_warnings: list[str] = field(default_factory=list)


def lasso_objective(X: np.ndarray, dictionary: np.ndarray, U: np.ndarray, alpha: float) -> np.ndarray:
    """``(N,)`` values of ``P(u_i) = 1/2 ||x_i - D^T u_i||^2 + alpha ||u_i||_1`` (direct, not via the Gram)."""
    R = np.asarray(X, dtype=np.float64) - np.asarray(U, dtype=np.float64) @ np.asarray(dictionary, np.float64)
    return 0.5 * np.einsum("ij,ij->i", R, R) + alpha * np.abs(U).sum(axis=1)


def _gap(U, C, GU, xx, alpha, positive):
    """Duality gap of ``P`` per row from Gram quantities (the formula of scikit-learn's ``gap_enet_gram``):
    residual ``r = x - D^T u`` with ``||r||^2 = x.x - u.c - u.(c - Gu)``, dual point ``theta = s r`` scaled so
    that ``||D theta||_inf <= alpha``; ``gap = 1/2 ||r||^2 (1 + s^2) + alpha ||u||_1 - s r.x``."""
    g = C - GU                                          # D r
    uc = np.einsum("ij,ij->i", U, C)
    r2 = np.maximum(xx - uc - np.einsum("ij,ij->i", U, g), 0.0)
    dual_norm = g.max(axis=1) if positive else np.abs(g).max(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(dual_norm > alpha, alpha / dual_norm, 1.0)
    return 0.5 * r2 * (1.0 + s * s) + alpha * np.abs(U).sum(axis=1) - s * (xx - uc), g


def lasso_duality_gap(X: np.ndarray, dictionary: np.ndarray, U: np.ndarray, alpha: float,
                      positive: bool = False) -> np.ndarray:
    """``(N,)`` duality gaps of ``P`` at codes ``U``: ``P(u_i) - P(u_i*) <= gap_i`` (a certificate)."""
    X = np.asarray(X, dtype=np.float64)
    D = np.asarray(dictionary, dtype=np.float64)
    U = np.asarray(U, dtype=np.float64)
    C = X @ D.T
    return _gap(U, C, U @ (D @ D.T), np.einsum("ij,ij->i", X, X), alpha, positive)[0]


class _Supports:
    """The supports of ``n`` rows in CSR order (``rows``, ``cols`` sorted by row then atom; ``ptr`` the row
    starts), read once from a boolean ``(n, K)`` mask."""

    def __init__(self, S):
        self.n, self.K = S.shape
        self.rows, self.cols = np.nonzero(S)
        self.sizes = np.bincount(self.rows, minlength=self.n)
        self.ptr = np.concatenate(([0], np.cumsum(self.sizes)))

    def solve(self, G, rhs, max_support):
        """``x_S = G_SS^{-1} rhs_S`` per row, as values aligned with ``cols`` (rows of one support size share
        one stacked LAPACK call); rows whose ``G_SS`` is singular or whose support is empty or larger than
        ``max_support`` are flagged in ``bad`` (their values are 0)."""
        vals = np.zeros(len(self.cols))
        bad = (self.sizes == 0) | (self.sizes > max_support)
        for m in np.unique(self.sizes[~bad]):
            rows = np.flatnonzero(self.sizes == m)
            at = self.ptr[rows][:, None] + np.arange(m)                  # (r, m) positions in cols
            idx = self.cols[at]
            A = G[idx[:, :, None], idx[:, None, :]]
            b = rhs[at]
            try:
                vals[at] = np.linalg.solve(A, b[:, :, None])[:, :, 0]
            except np.linalg.LinAlgError:
                for j in range(len(rows)):                                   # find the singular ones
                    try:
                        vals[at[j]] = np.linalg.solve(A[j], b[j])
                    except np.linalg.LinAlgError:
                        bad[rows[j]] = True
                        vals[at[j]] = 0.0
        return vals, bad

    def times(self, vals, G):
        """``W @ G`` for the sparse ``W`` holding ``vals`` on the supports: ``nnz * K`` operations."""
        from scipy.sparse import csr_array

        return np.asarray(csr_array((vals, self.cols, self.ptr), shape=(self.n, self.K)) @ G)

    def dense(self, vals):
        W = np.zeros((self.n, self.K))
        W[self.rows, self.cols] = vals
        return W


def _homotopy(C, G, alpha, positive, max_steps):
    """The lasso path of every row from ``lambda_max = max_j |c_j|`` down to ``alpha`` (LARS-lasso: Efron,
    Hastie, Johnstone & Tibshirani 2004, sec. 3.1; Osborne, Presnell & Turlach 2000).

    On the path, ``u_S(lambda) = G_SS^{-1} (c_S - lambda s_S)``: as ``lambda`` falls by ``gamma`` the codes
    move by ``gamma w`` with ``w_S = G_SS^{-1} s_S`` and the correlations ``a = c - G u`` by ``-gamma G w``.
    Each step goes to the next event of the row: an atom's ``|a_j|`` reaching ``lambda`` (it joins, with
    the sign of ``a_j``), a code crossing zero (it leaves), or ``lambda = alpha`` (the row is done). Returns
    the supports and signs at ``alpha`` and a mask of the rows that did not get there (too many steps, a
    singular ``G_SS``): those are left to the caller's fallback.

    Every row runs in the compiled :func:`~lfabench_plugins.aggregators.lasso_kernels.homotopy_supports`; the
    rows where it finds two events within a relative ``NEAR`` of each other, or a near-singular ``G_SS``
    (near-duplicate atoms, as early dictionary learning makes), are decided again by
    :func:`_lockstep_homotopy`: rounding decides such a row, and there it is the lock-step form's.
    """
    from .lasso_kernels import homotopy_supports

    C = np.ascontiguousarray(C)
    S, sign, failed, close = homotopy_supports(C, np.ascontiguousarray(G), float(alpha), bool(positive),
                                               int(max_steps), TINY, NEAR, NEAR_PIVOT)
    rows = np.flatnonzero(close)
    if rows.size:
        S[rows], sign[rows], failed[rows] = _lockstep_homotopy(C[rows], G, alpha, positive, max_steps)
    return S, sign, failed


def _lockstep_homotopy(C, G, alpha, positive, max_steps):
    """:func:`_homotopy`'s path in NumPy, all rows in lock-step: what decides the rows the compiled path marks
    ``close``. Each row's arithmetic is its own (a LAPACK solve per matrix, a CSR product per row, elementwise
    steps), so a row's path is the same bits in any company. Returns what :func:`_homotopy` returns.
    """
    n, K = C.shape
    tiny = TINY
    score = C if positive else np.abs(C)
    j0 = score.argmax(axis=1)
    lam = score[np.arange(n), j0]
    S = np.zeros((n, K), dtype=bool)
    sign = np.zeros((n, K))
    failed = np.zeros(n, dtype=bool)
    live = np.flatnonzero(lam > alpha)                    # lambda_max <= alpha: the code is 0
    S[live, j0[live]] = True
    sign[live, j0[live]] = 1.0 if positive else np.sign(C[live, j0[live]])
    # the live rows' state, compacted as rows finish
    Sl, sl, Al, laml = S[live], sign[live], C[live], lam[live]
    Ul = np.zeros((len(live), K))
    for _ in range(max_steps):
        if not len(live):
            break
        sup = _Supports(Sl)
        w, bad = sup.solve(G, sl[sup.rows, sup.cols], max_support=K)
        V = sup.times(w, G)
        r = np.arange(len(live))
        with np.errstate(divide="ignore", invalid="ignore"):
            # joins: a_j - gamma v_j = +-(lambda - gamma), the first positive root off the support
            join = (laml[:, None] - Al) / (1.0 - V)
            join[Sl | ~(join > tiny)] = np.inf
            if not positive:
                down = (laml[:, None] + Al) / (1.0 + V)
                down[Sl | ~(down > tiny)] = np.inf
                np.minimum(join, down, out=join)
            # drops: u_j + gamma w_j = 0 on the support
            ratio = -Ul[sup.rows, sup.cols] / w
        j_join = join.argmin(axis=1)
        g_join = join[r, j_join]
        ratio[~(ratio > tiny)] = np.inf
        g_drop = np.full(len(live), np.inf)
        np.minimum.at(g_drop, sup.rows, ratio)
        first = np.flatnonzero(ratio == g_drop[sup.rows])
        j_drop = np.zeros(len(live), dtype=np.intp)
        j_drop[sup.rows[first[::-1]]] = sup.cols[first[::-1]]     # the lowest atom among ties
        g_end = laml - alpha
        gamma = np.minimum(np.minimum(g_join, g_drop), g_end)
        Ul[sup.rows, sup.cols] += gamma[sup.rows] * w
        V *= gamma[:, None]
        Al -= V
        laml = laml - gamma
        dropping = (g_drop <= g_join) & (g_drop < g_end)
        joining = (g_join < g_drop) & (g_join < g_end)
        rd, rj = r[dropping], r[joining]
        Sl[rd, j_drop[dropping]] = False
        sl[rd, j_drop[dropping]] = 0.0
        Ul[rd, j_drop[dropping]] = 0.0
        Sl[rj, j_join[joining]] = True
        sl[rj, j_join[joining]] = np.sign(Al[rj, j_join[joining]])
        finished = (gamma >= g_end) | bad | ~np.isfinite(gamma)
        if finished.any():
            done = live[finished]
            S[done], sign[done] = Sl[finished], sl[finished]
            failed[done] = bad[finished] | ~np.isfinite(gamma[finished])
            keep = ~finished
            live, Sl, sl, Al, laml, Ul = live[keep], Sl[keep], sl[keep], Al[keep], laml[keep], Ul[keep]
    failed[live] = True
    return S, sign, failed


def _block_codes(X, D, G, alpha, positive, tol, max_steps, max_iter, stats, path):
    C = X @ D.T
    xx = np.einsum("ij,ij->i", X, X)
    S, sign, failed = (_homotopy if path == "compiled" else _lockstep_homotopy)(C, G, alpha, positive, max_steps)
    # the path's codes carry the rounding of every step: solve once more, on the final support
    sup = _Supports(S)
    vals, bad = sup.solve(G, C[sup.rows, sup.cols] - alpha * sign[sup.rows, sup.cols], max_support=X.shape[1])
    U = sup.dense(vals)
    gap, _ = _gap(U, C, sup.times(vals, G), xx, alpha, positive)
    inconsistent = np.zeros(len(X), dtype=bool)
    inconsistent[sup.rows[vals * sign[sup.rows, sup.cols] < 0]] = True
    empty = sup.sizes == 0                                # u = 0 is exact there (checked by the gap)
    ok = (gap <= tol * xx) & ~(bad & ~empty) & ~inconsistent & ~failed
    stats.n_exact += int(ok.sum())
    todo = np.flatnonzero(~ok)
    if len(todo):
        from sklearn.decomposition import sparse_encode
        from sklearn.exceptions import ConvergenceWarning

        stats.n_fallback += len(todo)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            U[todo] = sparse_encode(X[todo], D, algorithm="lasso_cd", alpha=alpha, positive=positive,
                                    init=U[todo], max_iter=max_iter)
        for w in caught:
            if issubclass(w.category, ConvergenceWarning):
                stats.convergence_warnings.append(str(w.message))
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return U


def lasso_codes(X: np.ndarray, dictionary: np.ndarray, alpha: float, positive: bool = False, tol: float = 1e-8,
                block: int = 4096, max_steps: int | None = None, max_iter: int = 1000,
                stats: LassoStats | None = None, path: str = "compiled") -> np.ndarray:
    """``(N, K)`` float64 lasso codes of ``X`` (``(N, d)``) on ``dictionary`` (``(K, d)``), each within
    ``tol * ||x||^2`` of the optimum of ``P`` (module docstring), i.e. of ``sparse_encode``'s ``lasso_cd``.

    ``block`` rows are coded at a time (memory ``~ block * K`` floats, a few times); ``max_steps`` bounds
    the path's steps (default ``8 K``); ``max_iter`` is the fallback's coordinate-descent budget, as in
    ``sparse_encode``. ``stats`` (optional) is filled with what happened. ``path`` (:data:`HOMOTOPY_PATHS`):
    ``"compiled"`` runs each row's path in the compiled kernel and decides the rows it marks close in the
    lock-step form (:func:`_homotopy`); ``"lockstep"`` runs every row in the lock-step form
    (:func:`_lockstep_homotopy`: 3-4x slower). The two find the same supports but where rounding that drifts
    past ``NEAR`` decides one (the module docstring), so the codes of a row can differ between them.
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    D = np.ascontiguousarray(dictionary, dtype=np.float64)
    if X.ndim != 2 or D.ndim != 2 or X.shape[1] != D.shape[1]:
        raise ValueError(f"lasso_codes: X {X.shape} and dictionary {D.shape} need the same number of columns")
    if not alpha > 0:
        raise ValueError(f"lasso_codes: alpha must be > 0, got {alpha}")
    if path not in HOMOTOPY_PATHS:
        raise ValueError(f"lasso_codes: path must be one of {HOMOTOPY_PATHS}, got {path!r}")
    stats = stats if stats is not None else LassoStats()
    G = D @ D.T
    steps = int(max_steps) if max_steps is not None else 8 * D.shape[0]
    out = np.empty((X.shape[0], D.shape[0]))
    for lo in range(0, X.shape[0], block):
        hi = min(lo + block, X.shape[0])
        out[lo:hi] = _block_codes(X[lo:hi], D, G, float(alpha), bool(positive), float(tol), steps, int(max_iter),
                                  stats, path)
    stats.n_rows += X.shape[0]
    return out
