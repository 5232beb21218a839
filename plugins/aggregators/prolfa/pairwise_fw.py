"""Block majorise-minimise with pairwise Frank-Wolfe steps, for the paper's exact model (``max_support=None``).

The same model as :func:`~lfabench_plugins.aggregators.prolfa.fit.fit_prolfa` (eq. "ModelRelax2", or
"ModelSemi") and the same start (the seeded one-hot start), by another route, with a stopping rule that certifies
stationarity: the Frank-Wolfe gap (:func:`~lfabench_plugins.aggregators.prolfa.problem.frank_wolfe_gap`).

The solver of the plain simplex (:mod:`.fit` chooses it). Outer iteration:

1. **Exact search.** ``G = 2 X H + 2 lambda1 (r 1^T - C)`` is J's gradient in C at fixed W (``r`` the row
   sums of C). Off a column's support ``g_ij = 2 x_i . h_j + 2 lambda1 r_i``: an inner product of
   ``[x_i, r_i]`` with ``[h_j, lambda1]``, so one exact flat search (FAISS) gives every column's
   ``n_candidates`` rows of smallest gradient, the row term included. With the support's own gradient
   this is each column's Frank-Wolfe gap ``<g_j, c_j> - min_i g_ij`` *exactly* (rows outside the list
   have a larger gradient than every listed one). Stop when ``sum_j gap_j <= gap_tol * J``.
2. **Working set.** Each column's support plus its searched rows.
3. ``search_every`` **block steps** (:func:`column_step`), each followed by the exact W-step
   (:func:`.wstep.solve_w`): every column minimises a convex quadratic *upper bound* of J's change on its
   working set (the fit's curvature through ``(1 + sigma_max(W)^2)`` times the column's Gram matrix in the
   image means' metric; the exclusivity term's coupling between columns through the number of working sets
   sharing each row), by pairwise Frank-Wolfe steps (Lacoste-Julien & Jaggi 2015), all columns at once.
   The joint move is then scaled by the exact minimiser of J along it (J is quadratic in C at fixed W), so
   J never increases.

Why: the cBCD solver's projected-gradient and ADMM moves on the plain simplex stall far from a stationary
point at paper scale (docs/prolfa-performance.md: relative FW gap 20-22 % when its relative-change rule
fires), and plain pairwise steps on J (one pair per column per step) fall only as ~1/t. Pairwise steps move
weight between two descriptors of a column without shrinking the others, so supports grow only where J asks
for it; the bound lets each column take many of them per step, with the step sizes of its own curvature. The
working set is held as ``(d̄, K)`` padded arrays (``K`` grows with the largest support).
"""

from __future__ import annotations

import logging
import time
import warnings

import numpy as np

from lfabench.sdk import LazyModule

from .options import FitOptions
from .problem import Problem, energy, fit_loss, gradient_factor, quadratic_term
from .result import ProLFAResult
from .search import top_candidates
from .sparsecols import split_keys
from .start import Start, initial_selection
from .wstep import w_step

sp = LazyModule("scipy.sparse")  # imported at first use: a third of a second at start-up

__all__ = ["ColumnBuckets", "WorkingColumns", "column_grams", "column_step", "fit_pairwise", "search_gap"]

log = logging.getLogger("lfabench_plugins.aggregators.prolfa")

#: Pairwise steps on each column's quadratic bound per block step (:func:`column_step`).
INNER_STEPS = 64

#: Padded width granularity of the working set (K grows in steps of this many slots).
PAD = 16


class WorkingColumns:
    """C on per-column working sets, as ``(d̄, K)`` padded arrays.

    ``rows`` (int64, -1 for an empty slot), ``vals`` (float64, the weights of C; 0 off the support) and
    ``Xg`` (``(d̄, K, d)`` in X's dtype, float32 from the plugin: the rows' descriptors, 0 for empty slots),
    all NumPy arrays.
    """

    def __init__(self, X, rows, vals):
        self.X = X
        self.rows, self.vals = rows, vals
        self.Xg = np.zeros(rows.shape + (X.shape[1],), dtype=X.dtype)
        full = rows >= 0
        self.Xg[full] = X[rows[full]]

    @classmethod
    def from_keys(cls, X, keys: np.ndarray, values: np.ndarray, n_cols: int) -> WorkingColumns:
        """From C's sorted keys and values."""
        rows, cols = split_keys(keys, X.shape[0])
        counts = np.bincount(cols, minlength=n_cols)
        K = _padded(int(counts.max()) if counts.size else 1)
        slot = np.arange(cols.size) - np.repeat(np.cumsum(counts) - counts, counts)
        R = np.full((n_cols, K), -1, dtype=np.int64)
        V = np.zeros((n_cols, K))
        R[cols, slot] = rows
        V[cols, slot] = values
        return cls(X, R, V)

    @property
    def support(self) -> np.ndarray:
        return self.vals > 0

    def row_sums(self) -> np.ndarray:
        """``r`` ``(N,)``: the row sums of C."""
        sup = self.support
        return np.bincount(self.rows[sup], weights=self.vals[sup], minlength=self.X.shape[0])

    def exclusivity(self, r: np.ndarray) -> float:
        """``E(C) = r.r - ||C||_F^2`` from the row sums ``r`` (:func:`row_sums`)."""
        return float(r @ r) - float(np.sum(self.vals * self.vals))

    def on_support(self, cand: np.ndarray) -> np.ndarray:
        """``(d̄, m)`` bool: whether each row of ``cand`` ``(d̄, m)`` is on its column's support."""
        return (cand[:, :, None] == np.where(self.support, self.rows, -2)[:, None, :]).any(axis=2)

    def prototypes(self) -> np.ndarray:
        """``P = X^T C`` ``(d, d̄)`` float64."""
        return np.einsum("jkd,jk->dj", self.Xg, self.vals, dtype=np.float64)

    def selection(self) -> sp.csc_matrix:
        rows, vals = self.rows, self.vals
        sup = vals > 0
        cols = np.broadcast_to(np.arange(rows.shape[0])[:, None], rows.shape)[sup]
        return sp.csc_matrix((vals[sup], (rows[sup], cols)), shape=(self.X.shape[0], rows.shape[0]))

    def gradient(self, pb: Problem, H: np.ndarray, r: np.ndarray, exact: bool = True) -> np.ndarray:
        """J's gradient ``g_ij`` on every slot ``(d̄, K)`` (``+inf`` on empty slots).

        ``exact=False`` forms the fit part in float32 (relative error ~1e-7, 3x faster): enough to choose a
        step's rows, whose descent is then decided by exact line-search coefficients.
        """
        full = self.rows >= 0
        if exact:
            fit = 2.0 * np.einsum("jkd,dj->jk", self.Xg, np.asarray(H), dtype=np.float64)
        else:
            fit = 2.0 * np.einsum("jkd,jd->jk", self.Xg, np.asarray(H.T, dtype=self.Xg.dtype))
        g = fit + 2.0 * pb.lambda1 * (np.where(full, r[np.maximum(self.rows, 0)], 0.0) - self.vals)
        return np.where(full, g, np.inf)

    def extended(self, cand: np.ndarray) -> WorkingColumns:
        """The support plus the rows ``cand`` ``(d̄, m)`` not already on it (empty slots dropped)."""
        sup = self.support
        new = ~self.on_support(cand)
        rows = np.concatenate([np.where(sup, self.rows, -1), np.where(new, cand, -1)], axis=1)
        vals = np.concatenate([np.where(sup, self.vals, 0.0), np.zeros(cand.shape)], axis=1)
        # filled slots first, in order (a stable sort)
        order = np.argsort((rows < 0).astype(np.int8), axis=1, kind="stable")
        K = _padded(int((rows >= 0).sum(axis=1).max()))
        return WorkingColumns(self.X, np.take_along_axis(rows, order, axis=1)[:, :K],
                              np.take_along_axis(vals, order, axis=1)[:, :K])


def _padded(k: int) -> int:
    return max(PAD, -(-k // PAD) * PAD)


def search_gap(pb: Problem, X32, wc: WorkingColumns, H: np.ndarray, r, m: int):
    """Each column's ``m`` rows of smallest off-support gradient and its exact Frank-Wolfe gap.

    Returns ``(cand (d̄, m) int64, gap (d̄,))``. The gap equals
    :func:`~lfabench_plugins.aggregators.prolfa.problem.frank_wolfe_gap` (tested): a row off the
    searched list has a gradient no smaller than every listed row's.
    """
    Xa = np.empty((X32.shape[0], X32.shape[1] + 1), dtype=np.float32)
    Xa[:, :-1] = X32
    Xa[:, -1] = r
    Ha = np.vstack([H, np.full((1, H.shape[1]), pb.lambda1)])
    _, cand = top_candidates(Xa, Ha, m)              # largest -(x.h + lambda1 r): smallest gradient
    del Xa
    sup = wc.support
    g = wc.gradient(pb, H, r)
    on_support_min = np.where(sup, g, np.inf).min(axis=1)
    listed = wc.on_support(cand)
    Xc = np.asarray(wc.X[cand], dtype=np.float64)
    base = 2.0 * np.einsum("jmd,dj->jm", Xc, np.asarray(H)) + 2.0 * pb.lambda1 * r[cand]
    off_support_min = np.where(listed, np.inf, base).min(axis=1)
    gap = np.sum(wc.vals * np.where(sup, g, 0.0), axis=1) - np.minimum(on_support_min, off_support_min)
    return cand, np.maximum(gap, 0.0)


def column_grams(pb: Problem, wc: WorkingColumns):
    """``B_j = (Xg_j R^T)(Xg_j R^T)^T`` ``(d̄, K, K)`` in X's dtype: each column's curvature of the fit in the image
    means' metric (``||R X^T d||^2 = d^T B_j d`` for a move ``d`` of column j on its working set)."""
    return _grams(pb, wc.Xg)


def _grams(pb: Problem, Xg):
    """:func:`column_grams` of descriptors ``Xg`` ``(n, K, d)``: ``(n, K, K)``."""
    Y = np.matmul(Xg, np.asarray(pb.R.T, dtype=Xg.dtype))
    return np.matmul(Y, np.swapaxes(Y, 1, 2))


class ColumnBuckets(list):
    """The working set's columns grouped by padded width: ``(cols, width, Xg, B)`` per group, ``Xg`` its descriptors
    on ``width`` slots and ``B`` its Gram matrices (:func:`column_grams`). On the CPU the pairwise steps and ``X^T D``
    then cost each column its own width instead of the widest column's (``K`` grows with the largest support:
    208-224 slots at paper scale, where the mean working set holds ~70), and the Gram matrices ``sum_j K_j^2``
    instead of ``d̄ K^2``."""

    @classmethod
    def of(cls, pb: Problem, wc: WorkingColumns) -> ColumnBuckets:
        widths = np.array([_padded(int(k)) for k in (wc.rows >= 0).sum(axis=1)])
        groups = cls()
        for w in np.unique(widths).tolist():
            cols = np.flatnonzero(widths == w)
            Xg = wc.Xg[cols, :w]
            groups.append((cols, w, Xg, _grams(pb, Xg)))
        return groups

    def prototypes_move(self, D: np.ndarray) -> np.ndarray:
        """``X^T D`` ``(d, d̄)`` float64 for a move ``D`` ``(d̄, K)`` that is zero past each group's width."""
        U = np.empty((self[0][2].shape[2], D.shape[0]))
        for cols, width, Xg, _ in self:
            U[:, cols] = np.einsum("jkd,jk->dj", Xg, D[cols, :width], dtype=np.float64)
        return U


def _pairwise_steps(gq, v, B, e, scale: float, n_inner: int) -> None:
    """``n_inner`` pairwise Frank-Wolfe steps on every column's quadratic bound (:func:`column_step`), vectorised
    over columns, in place on ``gq`` (the bound's gradient, ``(d̄, K)``) and ``v`` (the weights), both C-contiguous.

    Column j's entries are read and written through flat indices (``j K + slot`` into ``gq``, ``v`` and ``e``;
    ``(j K + s) K + a`` into ``B``): one 1-D gather per quantity instead of a two-axis fancy index, the same
    arithmetic in the same order. On tiny problems a step is a few dozen operations on ``d̄``-entry arrays, so
    their per-call cost is the fit's time (moon.mat: 64 steps per block step, 2 columns)."""
    if not (gq.flags.c_contiguous and v.flags.c_contiguous):
        raise ValueError("_pairwise_steps updates gq and v in place through flat views: pass C-contiguous arrays")
    n_cols, K = gq.shape
    gf, vf, ef, Bf, Brows = gq.reshape(-1), v.reshape(-1), e.reshape(-1), B.reshape(-1), B.reshape(-1, K)
    base = np.arange(n_cols) * K            # column j's first slot in the flat arrays
    diag = np.diagonal(B, axis1=1, axis2=2).reshape(-1)       # B_j[s, s] at flat slot j K + s
    two_scale = 2.0 * scale
    for _ in range(n_inner):
        s = base + gq.argmin(axis=1)
        a = base + np.where(v > 0, gq, -np.inf).argmax(axis=1)
        delta = gf[s] - gf[a]
        move = (delta < 0) & (s != a)
        if not bool(move.any()):
            break
        es, ea = ef[s], ef[a]
        # B_j[s, a] sits at (j K + s) K + a = f_s K + f_a - j K for the flat slots f_s, f_a
        curv = scale * (diag[s] + diag[a] - 2.0 * Bf[s * K + a - base]) + es + ea
        gamma = np.where(move, np.minimum(vf[a], -delta / (2.0 * np.maximum(curv, 1e-300))), 0.0)
        vf[s] += gamma
        va = vf[a]
        vf[a] = np.where(move & (gamma >= va), 0.0, va - gamma)
        # B_j is symmetric: its rows s and a are its columns (a contiguous gather); empty slots have zero rows
        # and columns in B and e, so their +inf stays
        gq += two_scale * gamma[:, None] * (Brows[s] - Brows[a])
        gf[s] += 2.0 * gamma * es
        gf[a] -= 2.0 * gamma * ea


def column_step(pb: Problem, wc: WorkingColumns, B, P: np.ndarray, W: np.ndarray, H: np.ndarray,
                r, n_inner: int) -> tuple[np.ndarray, object, float]:
    """One block majorise-minimise step on the working set, in place on ``wc.vals``; returns ``P``, ``r``, ``tau``.

    Each column minimises a convex quadratic upper bound of J's change (W fixed) over the simplex on its working
    set: ``g.d + (1 + sigma_max(W)^2) d^T B_j d + lambda1 sum_i (m_i - 1) d_i^2``, where ``m_i`` counts the
    columns whose working set holds row i (Cauchy-Schwarz on the exclusivity term's cross-column part), by
    ``n_inner`` pairwise steps with exact line search on that bound (vectorised over columns). The joint move
    ``D`` is then scaled by the exact minimiser ``tau in [0, 1]`` of the quadratic ``J(C + tau D, W)``, from
    coefficients computed on ``D`` itself, so J never increases. ``B``: :func:`column_grams`, or
    :class:`ColumnBuckets` (what :func:`fit_pairwise` passes).
    """
    full = wc.rows >= 0
    c0 = wc.vals.copy()
    sigma2 = pb.spectral_norm(W) ** 2
    shared = np.bincount(wc.rows[full], minlength=wc.X.shape[0])
    e = np.where(full, pb.lambda1 * np.maximum(shared[np.maximum(wc.rows, 0)] - 1, 0), 0.0)
    scale = 1.0 + sigma2
    gq = wc.gradient(pb, H, r, exact=False)            # the bound's gradient, at d = 0
    v = c0.copy()
    if isinstance(B, ColumnBuckets):
        # each group on its own width: the slots past it are empty (+inf gradient, zero weight), so no step takes
        # them and every column moves as on the full width
        for cols, width, _, Bb in B:
            gb, vb = gq[cols, :width], v[cols, :width]
            _pairwise_steps(gb, vb, Bb, e[cols, :width], scale, n_inner)
            v[cols, :width] = vb
    else:
        _pairwise_steps(gq, v, B, e, scale, n_inner)
    D = np.where(full, v - c0, 0.0)
    if isinstance(B, ColumnBuckets):
        U = B.prototypes_move(D)
    else:
        U = np.einsum("jkd,jk->dj", wc.Xg, D, dtype=np.float64)       # X^T D
    rho = np.bincount(wc.rows[full], weights=D[full], minlength=r.size)
    lin = 2.0 * float(np.sum(H * U)) + 2.0 * pb.lambda1 * (float(r @ rho) - float(np.sum(c0 * D)))
    quad = quadratic_term(pb, U, W) + pb.lambda1 * (float(rho @ rho) - float(np.sum(D * D)))
    if not lin < 0:
        return P, r, 0.0
    tau = 1.0 if quad <= 0 else float(min(1.0, -lin / (2.0 * quad)))
    wc.vals[:] = np.maximum(c0 + tau * D, 0.0) if tau < 1.0 else np.maximum(v, 0.0)
    return P + tau * U, r + tau * rho, tau


def fit_pairwise(pb: Problem, opts: FitOptions, start: Start | None = None) -> ProLFAResult:
    """Minimise J on the paper's plain simplex by block majorise-minimise with pairwise steps (module docstring).

    ``opts``: ``n_candidates`` rows searched per column, ``search_every`` block steps per search,
    ``max_iter`` searches at most, ``gap_tol`` the stopping rule (``sum_j gap_j <= gap_tol * J`` at a
    search).
    ``objective_history`` holds J at the start and after every outer iteration (non-increasing).
    """
    if opts.max_support is not None:
        raise ValueError(f"pairwise Frank-Wolfe fits the paper's plain simplex only: set max_support=None "
                         f"(got max_support={opts.max_support})")
    t_start = time.perf_counter()
    X = np.asarray(pb.X) if pb.X.dtype in (np.float32, np.float64) else np.asarray(pb.X, dtype=np.float64)
    X32 = X if X.dtype == np.float32 else np.ascontiguousarray(X, dtype=np.float32)       # the search's copy
    keys, values, start_name = initial_selection(pb, opts, start)
    wc = WorkingColumns.from_keys(X, keys, values, opts.n_prototypes)
    P = wc.prototypes()
    W = w_step(pb, P, opts)
    r = wc.row_sums()
    J = energy(pb, P, W, wc.exclusivity(r))
    history, gaps, converged, it = [J], [], False, 0
    stats = {"start": start_name, "searches": 0, "search_s": 0.0, "zero_steps": 0}
    for it in range(1, opts.max_iter + 1):
        H = gradient_factor(pb, P, W)
        t0 = time.perf_counter()
        cand, gap = search_gap(pb, X32, wc, H, r, min(opts.n_candidates, pb.n_descriptors))
        gaps.append(float(gap.sum()))
        stats["search_s"] += time.perf_counter() - t0
        stats["searches"] += 1
        log.log(logging.INFO, "prolfa pairwise iter %d: J=%.6g gap=%.4g (%.2e of J) nnz=%d K=%d (%.1fs)", it, J,
                gaps[-1], gaps[-1] / abs(J), int(wc.support.sum()), wc.rows.shape[1], time.perf_counter() - t_start)
        if gaps[-1] <= opts.gap_tol * abs(J):
            converged = True
            break
        wc = wc.extended(cand)
        B = ColumnBuckets.of(pb, wc)             # per-width groups
        for _ in range(opts.search_every):
            P, r, tau = column_step(pb, wc, B, P, W, H, r, INNER_STEPS)
            stats["zero_steps"] += tau == 0.0
            W = w_step(pb, P, opts)
            H = gradient_factor(pb, P, W)
        del B
        r = wc.row_sums()                         # no drift from the incremental updates
        P = wc.prototypes()
        J = energy(pb, P, W, wc.exclusivity(r))
        history.append(J)
    if not converged:
        # the last gap was measured before the last steps: measure it at the point returned
        gaps.append(float(search_gap(pb, X32, wc, gradient_factor(pb, P, W), r, 1)[1].sum()))
        from sklearn.exceptions import ConvergenceWarning

        warnings.warn(f"ProLFA (pairwise Frank-Wolfe) stopped at max_iter={opts.max_iter} searches before the Frank-Wolfe "
                      f"gap fell below gap_tol={opts.gap_tol} of J (last: {gaps[-1] / abs(J):.2e})",
                      ConvergenceWarning, stacklevel=3)
    C = wc.selection()
    stats.update(fit_loss=fit_loss(pb, P, W), exclusivity=wc.exclusivity(r),
                 frank_wolfe_gap=gaps[-1], frank_wolfe_gaps=gaps, seconds=time.perf_counter() - t_start,
                 nnz_per_column_max=int(wc.support.sum(axis=1).max()))
    return ProLFAResult(selection=C, projection=W, prototypes=P, objective_history=history, n_iter=it,
                        converged=converged, info=stats)
