"""Deprecated (``backend="dense"``/``"cupy"``; removed in the next release): a dense ProLFA solver on an array
namespace, NumPy on the CPU or CuPy on an NVIDIA GPU. The capped model is solved by cBCD and the plain simplex
by pairwise Frank-Wolfe (:mod:`.fit`); this route converges slowly on the plain simplex.

The same model as :func:`~lfabench_plugins.aggregators.prolfa.cbcd.fit_cbcd` (eq. "ModelRelax2",
or "ModelSemi"), the same start (``init``), the same J and the same stopping rule (relative change of J
below ``tol``), by a different route: ``C`` is held whole, ``(N, d̄)`` in float64, and every outer
iteration of the cBCD scheme (Algorithm 2) is

1. the C-step: one projected-gradient step on ``fit + lambda1 E`` (W fixed) from ``C``,
   ``C+ = Proj(C - t G)`` with ``G = 2 X H + 2 lambda1 (r 1^T - C)`` (``r`` the row sums), then

   * plain simplex (``max_support=None``, the paper's model): the exact minimiser of the quadratic
     ``J(C + s D, W)`` over ``s in [0, s_max]`` along ``D = C+ - C``, where ``s_max <= extrapolate``
     keeps every entry ``>= 0`` (the segment stays feasible);
   * k-sparse simplex (``max_support=k``): ``C+`` itself, accepted when ``J(C+, W) < J(C, W)``
     (exact: J is quadratic), else ``t`` halves (segments leave the k-sparse set);

2. the W-step: the exact Sylvester solve (:func:`~lfabench_plugins.aggregators.prolfa.wstep.solve_w`).

Both steps never raise J, so ``objective_history`` is non-increasing. ``t`` is the Barzilai-Borwein
step of the last move (spectral projected gradient, Birgin, Martinez & Raydan 2000), which the exact
line search (or, k-sparse, the halving) makes safe. The ADMM sub-solver (Algorithm 1) is not
used: its dense form costs the same passes over ``N x d̄`` per inner iteration and, at Scene-15 scale,
the sparse solver keeps the projected-gradient move in 174 of 232 iterations anyway
(``docs/prolfa-performance.md``).

Why dense: on a GPU every pass over ``C`` is a few milliseconds (N = 316k, d̄ = 4096: 10 GB in
float64), so the candidate search, working sets and dense-column fallbacks of the sparse solver are not
needed, and the paper's exact model (no support cap) costs the same as the capped one. On the CPU it
is the reference for small problems (memory grows as ``N d̄``).

Measured (``docs/prolfa-performance.md``, "What was tried, and why it is not the default"): on an H100 the
paper-scale default fit (k = 4) converges in 165 iterations and 215 s to a J 1.6 % below the sparse CPU solver's.
The plain simplex converges slowly with these steps (the Barzilai-Borwein step collapses once columns spread): thousands
of iterations on small problems, where the sparse solver needs hundreds.

Simplex projection: the threshold ``tau`` of each column (``sum_i max(v_i - tau, 0) = 1``) by Newton's
method from the lower bound ``max(v) - 1`` (Michelot 1986; Condat 2016, Algorithm 3): each step is two
reductions over the column, and the iteration is finite and increasing.
"""

from __future__ import annotations

import logging
import time
import warnings

import numpy as np

from lfabench.sdk import LazyModule

from .arrays import array_namespace, to_host
from .options import FitOptions
from .problem import Problem, energy, first_trial_step, fit_loss, gradient_factor, quadratic_term
from .result import ProLFAResult
from .start import Start, initial_selection
from .wstep import solve_w

sp = LazyModule("scipy.sparse")  # imported at first use: a third of a second at start-up

__all__ = ["DENSE_BYTES_LIMIT", "array_namespace", "fit_dense", "project_columns_newton", "project_columns_topk",
           "to_host"]

log = logging.getLogger("lfabench_plugins.aggregators.prolfa")

#: The NumPy backend refuses problems whose dense float64 arrays (about three ``N x d̄``) exceed this.
DENSE_BYTES_LIMIT = 4 << 30
#: Columns per block of the C-step (bounds the temporaries to a few ``N x block`` arrays).
BLOCK_BYTES = 1 << 30


def project_columns_newton(V, xp=np, max_iter: int = 200):
    """Project every column of ``V`` (``(n, b)``, float64) onto the probability simplex; returns ``(P, tau)``.

    Newton's method on ``f(tau) = sum_i max(v_i - tau, 0) - 1`` (convex, decreasing, piecewise linear)
    from ``tau_0 = max(v) - 1 <= tau*``: ``tau_{k+1} = (sum_{v > tau_k} v - 1) / |{v > tau_k}|`` increases to
    the exact threshold in finitely many steps; it stops when no column's threshold increases.
    """
    tau = V.max(axis=0) - 1.0
    for _ in range(max_iter):
        above = V > tau
        count = above.sum(axis=0)
        total = xp.where(above, V, 0.0).sum(axis=0)
        new = (total - 1.0) / count
        if not bool(xp.any(new > tau)):
            break
        tau = xp.maximum(new, tau)
    else:
        raise RuntimeError(f"simplex projection: the threshold did not settle in {max_iter} Newton steps")
    return xp.maximum(V - tau, 0.0), tau


def project_columns_topk(V, k: int, xp=np):
    """Project every column of ``V`` (``(n, b)``) onto the k-sparse simplex (Kyrillidis et al. 2013): the ``k``
    largest entries projected onto the simplex, the rest 0 (ties: the first row). Returns ``P``."""
    n, b = V.shape
    k = int(min(k, n))
    cols = xp.arange(b)
    work = V.copy()
    rows = []
    for _ in range(k):          # k is small (default 4): k arg-max passes beat a partial sort of tall columns
        i = work.argmax(axis=0)
        rows.append(i)
        work[i, cols] = -xp.inf
    del work
    R = xp.stack(rows)                                  # (k, b)
    top, _ = project_columns_newton(V[R, cols[None, :]], xp)
    P = xp.zeros_like(V)
    P[R, cols[None, :]] = top
    return P


class _DenseState:
    """``C`` on the device with its row sums ``r``, ``||C||^2`` and prototypes ``P = X^T C`` (host, float64)."""

    def __init__(self, xp, X, C):
        self.xp, self.X, self.C = xp, X, C
        self.refresh()

    def refresh(self):
        xp = self.xp
        self.r = self.C.sum(axis=1)
        self.c_sq = float(xp.sum(self.C * self.C))
        self.P = to_host(self.X.T @ self.C)

    def exclusivity(self) -> float:
        return float(self.xp.dot(self.r, self.r)) - self.c_sq


def _objective(pb: Problem, st: _DenseState, W: np.ndarray) -> float:
    """J (eq. "ModelRelax2") at the state's C and ``W``, from its prototypes, row sums and ``||C||^2``."""
    return energy(pb, st.P, W, st.exclusivity())


def _blocks(n_rows: int, n_cols: int):
    width = max(1, min(n_cols, BLOCK_BYTES // max(8 * n_rows, 1)))
    return [slice(s, min(s + width, n_cols)) for s in range(0, n_cols, width)]


def _direction(pb: Problem, st: _DenseState, Hd, t: float, ksup: int | None, D):
    """Fill ``D = Proj(C - t G) - C`` block by block; returns ``(a, dd, rho, U, s_max)``: the linear
    coefficient ``<G, D>``, ``||D||^2``, the row sums of ``D``, ``X^T D`` (host) and, for the plain simplex,
    the largest feasible ``s`` (``inf`` when no entry decreases)."""
    xp, X, C = st.xp, st.X, st.C
    lam1 = pb.lambda1
    a, dd, s_max = 0.0, 0.0, np.inf
    rho = xp.zeros(C.shape[0])
    for blk in _blocks(*C.shape):
        Cb = C[:, blk]
        G = 2.0 * (X @ Hd[:, blk])
        if lam1:
            G += 2.0 * lam1 * (st.r[:, None] - Cb)
        V = Cb - t * G
        Pb = project_columns_newton(V, xp)[0] if ksup is None else project_columns_topk(V, ksup, xp)
        del V
        Db = Pb - Cb
        del Pb
        a += float(xp.sum(G * Db))
        del G
        dd += float(xp.sum(Db * Db))
        rho += Db.sum(axis=1)
        if ksup is None:
            neg = Db < 0
            if bool(xp.any(neg)):
                s_max = min(s_max, float(xp.min(xp.where(neg, Cb / xp.where(neg, -Db, 1.0), xp.inf))))
        D[:, blk] = Db
    U = to_host(X.T @ D)
    return a, dd, rho, U, s_max


def _frank_wolfe_gap(pb: Problem, st: _DenseState, W: np.ndarray) -> float:
    """:func:`~lfabench_plugins.aggregators.prolfa.problem.frank_wolfe_gap` summed over columns, on the device:
    ``sum_j <g_j, c_j> - min_i g_ij`` with ``G = 2 X H + 2 lambda1 (r 1^T - C)``."""
    xp, X, C = st.xp, st.X, st.C
    Hd = xp.asarray(gradient_factor(pb, st.P, W))
    total = 0.0
    for blk in _blocks(*C.shape):
        G = 2.0 * (X @ Hd[:, blk]) + 2.0 * pb.lambda1 * (st.r[:, None] - C[:, blk])
        total += float(xp.sum(G * C[:, blk]) - xp.sum(G.min(axis=0)))
    return total


def _start(pb: Problem, opts: FitOptions, xp, X, given: Start | None):
    N, dbar = pb.n_descriptors, opts.n_prototypes
    keys, values, name = initial_selection(pb, opts, given)
    C = xp.zeros((N, dbar))
    C[xp.asarray(keys % N), xp.asarray(keys // N)] = xp.asarray(values)
    return _DenseState(xp, X, C), name


def fit_dense(pb: Problem, options: FitOptions, start: Start | None = None):
    """Minimise J (eq. "ModelRelax2") with ``C`` dense on ``options.backend`` (see the module docstring), from
    ``start`` (a given ``C``, :func:`~.start.selection_start`) or else the seeded start ``options.init`` names.

    Returns a :class:`~lfabench_plugins.aggregators.prolfa.cbcd.ProLFAResult` (``selection`` sparse, on the
    host), the same object the sparse solver returns.
    """
    opts = options
    xp = array_namespace(opts.backend)
    N, dbar, ksup = pb.n_descriptors, opts.n_prototypes, opts.max_support
    need = 3 * 8 * N * dbar
    if xp is np and need > DENSE_BYTES_LIMIT:
        raise MemoryError(f"ProLFA backend='dense' holds C whole: N={N} descriptors x n_prototypes={dbar} needs "
                          f"~{need / 2**30:.1f} GiB (limit {DENSE_BYTES_LIMIT / 2**30:.0f} GiB); use "
                          f"backend='auto' (the default: the model's solver)")
    t0 = time.perf_counter()
    X = xp.asarray(np.asarray(pb.X, dtype=np.float64))
    st, start_name = _start(pb, opts, xp, X, start)
    W = solve_w(pb, st.P)
    J = _objective(pb, st, W)
    history = [J]
    D = xp.empty_like(st.C)
    t = first_trial_step(pb, W)             # the sparse solver's first trial, without the ADMM penalty
    stats = {"start": start_name, "steps": [], "line_search_s": [], "rejected_trials": 0}
    converged, rel, it = False, np.inf, 0
    for it in range(1, opts.max_iter + 1):
        Hd = xp.asarray(gradient_factor(pb, st.P, W))
        for _ in range(60):
            a, dd, rho, U, s_max = _direction(pb, st, Hd, t, ksup, D)
            b = quadratic_term(pb, U, W) + pb.lambda1 * (float(xp.dot(rho, rho)) - dd)
            if dd == 0.0:
                s = 0.0
                break
            if ksup is None:
                s_max = min(s_max, opts.extrapolate)
                s = float(np.clip(-a / (2.0 * b), 0.0, s_max)) if b > 0 else (s_max if a < 0 else 0.0)
                break
            if a + b < 0:
                s = 1.0
                break
            stats["rejected_trials"] += 1
            t *= 0.5
        else:
            s = 0.0
        stats["steps"].append(t)
        stats["line_search_s"].append(s)
        if s > 0:
            st.C += s * D
            xp.maximum(st.C, 0.0, out=st.C)      # rounding at s = s_max can leave -1e-17
            st.refresh()
        # next trial: the Barzilai-Borwein step dd / (2 b) = ||Delta C||^2 / <Delta C, Delta G> of the move just
        # made (J is quadratic in C, so <Delta C, Delta G> = 2 s^2 b exactly): spectral projected gradient
        # (Birgin, Martinez & Raydan 2000); where the curvature is not positive, twice the step
        if ksup is None or s > 0:
            t = dd / (2.0 * b) if b > 0 and dd > 0 else 2.0 * t
        W = solve_w(pb, st.P)
        J_new = _objective(pb, st, W)
        history.append(J_new)
        rel = abs(J - J_new) / max(abs(J), 1e-300)
        log.log(logging.INFO if it % 50 == 0 else logging.DEBUG,
                "prolfa dense iter %d: J=%.6g rel=%.2e s=%.3f t=%.3g (%.1fs)", it, J_new, rel, s, t,
                time.perf_counter() - t0)
        J = J_new
        if rel < opts.tol:
            converged = True
            break
    if not converged:
        from sklearn.exceptions import ConvergenceWarning

        warnings.warn(f"ProLFA (backend={opts.backend!r}) stopped at max_iter={opts.max_iter} before the relative "
                      f"change of J fell below tol={opts.tol} (last change {rel:.2e})", ConvergenceWarning,
                      stacklevel=3)
    rows, cols = xp.nonzero(st.C)
    vals = st.C[rows, cols]
    C_host = sp.csc_matrix((to_host(vals), (to_host(rows), to_host(cols))), shape=(N, dbar))
    C_host.sort_indices()
    P = st.P
    stats.update(fit_loss=fit_loss(pb, P, W), exclusivity=st.exclusivity(), final_relative_change=rel,
                 seconds=time.perf_counter() - t0)
    if ksup is None:                         # as the sparse solver: how stationary the returned point is
        stats["frank_wolfe_gap"] = _frank_wolfe_gap(pb, st, W)
    return ProLFAResult(selection=C_host, projection=W, prototypes=P, objective_history=history, n_iter=it,
                        converged=converged, info=stats)
