"""The face step: every column's exact minimiser of ``J(., W)`` on its own support, then one exact line search.

With ``max_support = k`` the capped solver spends most of a paper-scale fit with nearly fixed supports
(at Scene-15 scale a few dozen of 4,096 columns change their support per outer iteration after the first
ten) while J falls slowly: the projected-gradient step moves the weights on those supports by a step the
whole problem's curvature limits. This step solves the weights instead.

For column ``j`` with the other columns fixed, ``J(C, W)`` restricted to the column's support ``S``
(``|S| <= k``) is the convex quadratic

    ``q_j(c) = c^T Q_j c + l_j^T c``,  ``Q_j = A_jj (R X_S^T)^T (R X_S^T)``,  ``A = W W^T + I``,

(the fit's Hessian block of the column; ``T = R^T R``) whose linear part ``l_j = g_j - 2 Q_j c_j`` comes from
the gradient ``g_j`` of J at the current point (fit part ``2 X H`` plus the exclusivity part
``2 lambda1 (r_i - c_ij)``; paper Definition 1: E is linear in one column when the others are fixed).
Its minimiser over the simplex on ``S`` is found exactly by enumerating the faces of that simplex
(``2^|S| - 1`` equality-constrained solves, batched over columns). All columns move at once (a Jacobi
step), so the move ``D`` is then scaled by the exact minimiser of ``J(C + s D, W)`` over ``s in [0, 1]``,
which accounts for the coupling the per-column problems ignore (``W W^T`` and shared rows in E). The
segment stays on every column's support, hence in the k-sparse simplex, and J never increases.
"""

from __future__ import annotations

import itertools

import numpy as np

from .problem import Problem, gradient_entries, gradient_factor, line_coefficients
from .sparsecols import combine, gather_float64, split_keys

__all__ = ["face_step", "simplex_qp_on_faces", "MAX_FACE_SUPPORT"]

#: Largest support the face enumeration handles (``2^k - 1`` solves per column).
MAX_FACE_SUPPORT = 8


def simplex_qp_on_faces(Q: np.ndarray, lin: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """``argmin c^T Q c + lin^T c`` over ``{c >= 0, sum c = 1, c = 0 off valid}``, per problem, exactly.

    ``Q``: ``(m, k, k)`` positive semi-definite; ``lin``: ``(m, k)``; ``valid``: ``(m, k)`` bool, at least one
    True per row. Returns ``(m, k)``. Every face (subset of valid slots) is solved by its KKT system and
    the feasible solution of lowest value is kept: for a convex quadratic this is the minimiser over the
    simplex (a tiny ridge, 1e-12 of ``Q``'s scale, keeps singular faces solvable).
    """
    m, k = lin.shape
    ridge = 1e-12 * (np.abs(Q).max(axis=(1, 2)) + 1.0)
    Qr = Q + ridge[:, None, None] * np.eye(k)
    best = np.full(m, np.inf)
    out = np.zeros((m, k))
    eye = np.eye(k + 1)
    for size in range(1, k + 1):
        for face in itertools.combinations(range(k), size):
            on = np.zeros(k, bool)
            on[list(face)] = True
            usable = valid[:, on].all(axis=1)
            if not usable.any():
                continue
            idx = np.flatnonzero(usable)
            # KKT of the face: 2 Q_SS c_S + nu 1 = -lin_S, 1^T c_S = 1; slots off the face pinned at 0
            M = np.broadcast_to(eye, (idx.size, k + 1, k + 1)).copy()
            rhs = np.zeros((idx.size, k + 1))
            S = np.flatnonzero(on)
            M[:, S[:, None], S[None, :]] = 2.0 * Qr[idx][:, S[:, None], S[None, :]]
            M[:, S, k] = 1.0
            M[:, k, :] = 0.0
            M[:, k, S] = 1.0
            rhs[:, S] = -lin[idx][:, S]
            rhs[:, k] = 1.0
            sol = np.linalg.solve(M, rhs[..., None])[..., 0][:, :k]
            feasible = (sol[:, S] >= -1e-12).all(axis=1)
            sol = np.clip(sol, 0.0, None)
            sol /= sol.sum(axis=1, keepdims=True)
            value = np.einsum("mi,mij,mj->m", sol, Q[idx], sol) + np.einsum("mi,mi->m", lin[idx], sol)
            better = feasible & (value < best[idx])
            best[idx[better]] = value[better]
            out[idx[better]] = sol[better]
    return out


def face_step(pb: Problem, W: np.ndarray, keys: np.ndarray, c: np.ndarray, n_cols: int) -> tuple[np.ndarray, float]:
    """The face step from ``C`` (sorted ``keys``, values ``c``) at fixed ``W``.

    Only the stored non-zeros of ``C`` move (``c == 0`` entries stay 0; at most
    :data:`MAX_FACE_SUPPORT` non-zeros per column). Returns ``(new values on keys, s)``: the accepted
    point ``C + s (C_face - C)``, with ``s`` the exact line-search weight in ``[0, 1]``.
    """
    N = pb.n_descriptors
    live = np.flatnonzero(c > 0)
    rows, cols = split_keys(keys[live], N)
    counts = np.bincount(cols, minlength=n_cols)
    k = int(counts.max()) if counts.size else 0
    if k < 2:
        return c.copy(), 0.0
    if k > MAX_FACE_SUPPORT:
        raise ValueError(f"face_step handles at most {MAX_FACE_SUPPORT} non-zeros per column, got {k}")
    start = np.concatenate(([0], np.cumsum(counts)[:-1]))
    slot = np.arange(live.size) - start[cols]
    # the fit's Hessian block of each column: A_jj (R x_a) . (R x_b) over the column's support
    Xw = gather_float64(pb.X, rows)                                               # (nnz, d), gathered once
    RX = Xw @ pb.R.T
    A_diag = 1.0 + np.einsum("jc,jc->j", W, W)
    padded = np.zeros((n_cols, k, RX.shape[1]))
    padded[cols, slot] = RX
    Q = A_diag[:, None, None] * np.einsum("jad,jbd->jab", padded, padded)
    valid = np.zeros((n_cols, k), bool)
    valid[cols, slot] = True
    cur = np.zeros((n_cols, k))
    cur[cols, slot] = c[live]
    H = gradient_factor(pb, combine(pb.X, rows, cols, c[live], n_cols, Xw=Xw), W)
    r = np.bincount(rows, weights=c[live], minlength=N)
    g = gradient_entries(pb, H, rows, cols, Xw=Xw) + 2.0 * pb.lambda1 * (r[rows] - c[live])
    grad = np.zeros((n_cols, k))
    grad[cols, slot] = g
    lin = grad - 2.0 * np.einsum("jab,jb->ja", Q, cur)     # 0 on empty slots (their Q rows, grad, cur are 0)
    has = counts > 0
    target = cur.copy()
    target[has] = simplex_qp_on_faces(Q[has], lin[has], valid[has])
    dv = np.zeros_like(c)
    dv[live] = target[cols, slot] - c[live]
    if not np.any(dv):
        return c.copy(), 0.0
    a, b = line_coefficients(pb, W, H, rows, cols, c[live], dv[live], n_cols, Xw=Xw)
    if b > 0:
        s = float(np.clip(-a / (2.0 * b), 0.0, 1.0))
    else:
        s = 1.0 if a + b < 0 else 0.0
    return c + s * dv, s
