"""The ADMM C-step (paper eq. "C"): a projected gradient step on the C-Lagrangian, sparse, on a working set.

``L(C) = fit(C) + mu/2 ||Z - C||^2 + <Lambda, Z - C>`` is a convex quadratic;
its gradient is ``2 X H + mu (C - Z) - Lambda`` (``H`` from
:func:`~lfabench_plugins.aggregators.prolfa.problem.gradient_factor`). The step is
``C+ = Proj_simplex(C - t grad)`` column by column (Duchi et al. 2008).

Never dense ``N x d̄`` (5.3 GB in float32 at Scene-15 scale). Off the stored
support of ``C, Z, Lambda`` an entry's value before projection is just
``-t (2 X H)_ij``, so only rows of large ``-(X H)_ij`` can enter a column's
simplex support. :func:`working_set` finds, for every column, the ``k`` best
such rows by one exact maximum-inner-product search of the d̄ columns of ``-H``
against the ``N`` descriptors (``faiss.knn`` on its blocked-BLAS route, no ``N x d̄``
buffer), and records the ``k``-th best value as a bound on everything left out.

:func:`c_step` projects on the working set. With the bound (a *full* step) the
result is the exact projection of the whole column whenever the column's
threshold is at least its bound; columns where it is not are redone densely
(one ``X h_j`` product each, then only the column's top entries are sorted:
:func:`~lfabench_plugins.aggregators.prolfa.simplex.project_columns_top`). When more than a few
columns fail (``max_dense``), :class:`CandidatesExhausted` tells the solver to
search 4x more rows per column instead: one FAISS search is far cheaper than
thousands of dense numpy columns at Scene-15 scale. Without it (*restricted* steps, used for the ADMM
iterations inside one outer iteration, whose working set is fixed) the step is
exact for the problem restricted to the working set; the next outer iteration's
search adds any row that should enter.

Step size: the paper uses ``1 / L`` with ``L`` a Lipschitz bound. We keep the
spectral bound (:func:`~lfabench_plugins.aggregators.prolfa.problem.lipschitz_bound` ``+ mu``) as
the floor ``t_min`` and, by default, backtrack from a larger trial step: ``t`` is
accepted when the descent lemma holds along the actual move ``D = C+ - C``,
``q(D) <= ||D||^2 / (2 t)``, with the exact second-order term ``q`` (the
objective is quadratic, so this is exact and costs ``O(nnz(D) d)``). With the
global bound alone the step is orders of magnitude below what sparse moves
allow and the C-step freezes at scale.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .problem import Problem, gradient_entries, quadratic_term
from .simplex import project_columns_sparse_entries, project_columns_top, project_segments, project_segments_sparse
from .sparsecols import ColumnLayout, combine, gather_float64, make_keys, split_keys, union_keys
from .search import top_candidates

__all__ = ["CandidatesExhausted", "WorkingSet", "CStepResult", "working_set", "c_step"]

#: Largest float64 copy of the working set's descriptor rows kept for the inner iterations.
GATHER_LIMIT_BYTES = 1536 << 20


class CandidatesExhausted(Exception):
    """More columns outgrew their candidate list than ``max_dense`` allows: search more rows instead.

    Redoing a column densely costs a full ``N x d`` pass in numpy; past a few
    columns one wider exact search (FAISS) is far cheaper.
    """


@dataclass
class WorkingSet:
    """Entries (sorted keys, their rows/cols) a C-step may make non-zero, and the bound on the rest."""

    keys: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    bound: np.ndarray | None     # (d̄,) best left-out value of -(2 X H) per column; None: restricted
    k: int                       # rows searched per column
    Xw: np.ndarray | None = None  # X[rows] in float64, shared by every step on this working set
    layout: ColumnLayout | None = None   # the grouping of cols, built by the first step that asks for it

    def column_layout(self, n_cols: int) -> ColumnLayout:
        """The :class:`~.sparsecols.ColumnLayout` of ``cols``, shared by every step on these entries."""
        if self.layout is None:
            self.layout = ColumnLayout(self.cols, n_cols)
        return self.layout

    def restricted(self) -> "WorkingSet":
        """The same entries without the bound: later steps are exact on the working set only."""
        return WorkingSet(self.keys, self.rows, self.cols, None, self.k, self.Xw, self.layout)

    def extended(self, extra_keys: np.ndarray, n_rows: int) -> "WorkingSet":
        """The working set plus ``extra_keys`` (sorted); the bound is dropped."""
        keys = union_keys(self.keys, extra_keys)
        r, c = split_keys(keys, n_rows)
        return WorkingSet(keys, r, c, None, self.k)   # rows changed: no gathered copy


@dataclass
class CStepResult:
    values: np.ndarray      # the new C on the working set (zeros included)
    step: float             # accepted step t
    n_trials: int           # backtracking trials
    extra_keys: np.ndarray  # non-zeros outside the working set (from dense columns), sorted
    extra_values: np.ndarray
    n_dense_columns: int


def working_set(X32: np.ndarray, H: np.ndarray, keys: np.ndarray, n_cols: int, k: int) -> WorkingSet:
    """The stored entries ``keys`` plus, per column, the ``k`` rows of most negative fit gradient."""
    N = X32.shape[0]
    k = int(min(max(k, 1), N))
    vals, rows = top_candidates(X32, H, k)
    cand = make_keys(rows.ravel(), np.repeat(np.arange(n_cols), k), N)
    ukeys = union_keys(keys, cand)
    r, c = split_keys(ukeys, N)
    bound = 2.0 * vals[:, -1] if k < N else np.full(n_cols, -np.inf)
    return WorkingSet(ukeys, r, c, bound, k)


def gather_rows(X: np.ndarray, rows: np.ndarray) -> np.ndarray | None:
    """``X[rows]`` in float64 when it fits :data:`GATHER_LIMIT_BYTES`, else None (callers gather per chunk)."""
    if rows.size * X.shape[1] * 8 > GATHER_LIMIT_BYTES:
        return None
    return gather_float64(X, rows)


def _dense_columns(pb: Problem, H: np.ndarray, cols: np.ndarray, ws: WorkingSet, base: np.ndarray,
                   corr: np.ndarray, t: float, row_extra: np.ndarray | None,
                   max_support: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact projection of whole columns ``cols`` (their candidate list was too short).

    ``base`` / ``corr`` are, on the working set, the value of C and the gradient
    terms beyond the fit part; ``row_extra`` (``(N,)`` or None) is added to the
    gradient of every other row. Returns sorted keys and values of the result.
    """
    N = pb.n_descriptors
    out_k, out_v = [], []
    for start in range(0, cols.size, 32):
        block = cols[start:start + 32]
        # the product in X's dtype, transposed before widening (half the bytes from float32): the projections
        # then read each column's N entries contiguously; every value is as in 2 (X @ H_block)
        Gt = np.ascontiguousarray((pb.X @ H[:, block].astype(pb.X.dtype, copy=False)).T, dtype=np.float64)
        Gt *= 2.0
        if row_extra is not None:
            Gt += row_extra[None, :]
        Vt = -t * Gt
        sel = np.isin(ws.cols, block)
        rr, pos = ws.rows[sel], np.searchsorted(block, ws.cols[sel])
        g_fit = Gt[pos, rr] - (0.0 if row_extra is None else row_extra[rr])
        Vt[pos, rr] = base[sel] - t * (g_fit + corr[sel])
        if max_support is None:
            r, j, v = project_columns_top(Vt.T, 4 * max(ws.k, 16))
        else:
            r, j, v = project_columns_sparse_entries(Vt.T, max_support)
        out_k.append(make_keys(r, block[j], N))
        out_v.append(v)
    keys = np.concatenate(out_k)
    order = np.argsort(keys)
    return keys[order], np.concatenate(out_v)[order]


def c_step(pb: Problem, W: np.ndarray, H: np.ndarray, ws: WorkingSet, base: np.ndarray, corr: np.ndarray,
           curvature: float, n_cols: int, t_init: float, t_min: float, backtracking: bool = True,
           row_extra: np.ndarray | None = None, exclusive: bool = False,
           max_dense: int | None = None, max_support: int | None = None) -> CStepResult:
    """One projected-gradient step from ``C = base`` (values on ``ws``) along ``2 X H + corr``.

    ``curvature`` is the weight of ``||D||^2`` in the second-order term beyond
    the fit (``mu / 2`` for the C-Lagrangian). ``t_min`` (the spectral bound's
    step) is always accepted; with ``backtracking`` the first trial is
    ``t_init`` and the step halves until the exact descent-lemma test passes.

    ``exclusive=True`` is the solver's monotone fallback, a step on
    ``fit(C) + lambda1 E(C)``: then ``corr = 2 lambda1 (r_i - c_ij)`` and
    ``row_extra = 2 lambda1 r`` (``r`` the row sums, ``C >= 0``; ``>= 0`` off the
    support, so the candidate bound still holds), and the second-order term
    gains ``lambda1 (||rowsum(D)||^2 - ||D||^2)`` (its concave part included).

    ``max_support`` (k): project onto the k-sparse simplex instead
    (:func:`~lfabench_plugins.aggregators.prolfa.simplex.project_segments_sparse`). The set is not
    convex, but ``C`` lies in it, so the projected point still satisfies
    ``<g, D> <= -||D||^2 / (2 t)`` and the same descent-lemma test guarantees
    descent. A column is exact on the working set when ``max(tau, k-th value)``
    is at least its search bound.
    """
    N = pb.n_descriptors
    grad = gradient_entries(pb, H, ws.rows, ws.cols, Xw=ws.Xw) + corr
    t = max(float(t_init), t_min) if backtracking else t_min
    if backtracking and curvature > 0 and not exclusive:
        # q(D) >= curvature ||D||^2 (quadratic_term is a sum of squares), so every t above
        # 1 / (2 curvature) fails the descent test whatever D is: halve past those trials without
        # evaluating them (same accepted step, one wasted projection and X^T D product fewer; the
        # ADMM C-step's doubled trial 2t exceeds 1/mu on every call of the embedded digits fit)
        sure_fail = (1.0 + 1e-6) / (2.0 * curvature)
        while t > t_min and t > sure_fail:
            t = max(t / 2.0, t_min)
    n_trials = 0
    empty = np.empty(0, np.int64), np.empty(0)
    layout = ws.column_layout(n_cols)
    while True:
        n_trials += 1
        if max_support is None:
            proj, tau = project_segments(ws.cols, base - t * grad, n_cols, layout=layout)
        else:
            proj, tau, kth = project_segments_sparse(ws.cols, base - t * grad, n_cols, max_support, layout=layout)
            tau = np.maximum(tau, kth)
        extra_k, extra_v = empty
        bad = np.empty(0, np.int64)
        if ws.bound is not None:
            slack = 1e-9 * np.maximum(np.abs(t * ws.bound), 1.0)
            bad = np.flatnonzero(tau < t * ws.bound - slack)
            if max_dense is not None and bad.size > max_dense:
                raise CandidatesExhausted(int(bad.size))
            if bad.size:
                extra_k, extra_v = _dense_columns(pb, H, bad, ws, base, corr, t, row_extra, max_support)
                proj[np.isin(ws.cols, bad)] = 0.0
                inside = np.isin(extra_k, ws.keys)
                proj[np.searchsorted(ws.keys, extra_k[inside])] = extra_v[inside]
                extra_k, extra_v = extra_k[~inside], extra_v[~inside]
        if not backtracking or t <= t_min:
            break
        dv = proj - base
        d2 = float(dv @ dv + extra_v @ extra_v)
        U = combine(pb.X, ws.rows, ws.cols, dv, n_cols, Xw=ws.Xw, layout=layout)
        if extra_k.size:
            er, ec = split_keys(extra_k, N)
            U += combine(pb.X, er, ec, extra_v, n_cols)
        q = quadratic_term(pb, U, W) + curvature * d2
        if exclusive:
            rho = np.bincount(ws.rows, weights=dv, minlength=N)
            if extra_k.size:
                rho += np.bincount(er, weights=extra_v, minlength=N)
            q += pb.lambda1 * (float(rho @ rho) - d2)
        if q <= d2 / (2.0 * t) * (1.0 + 1e-9) + 1e-300:
            break
        t = max(t / 2.0, t_min)
    return CStepResult(proj, t, n_trials, extra_k, extra_v, int(bad.size))
