"""cBCD, the solver of the capped model (``max_support`` set): paper Algorithm 2 with the ADMM Z-subproblem
(Algorithm 1), C sparse on working sets. :mod:`.fit` chooses it; this module only runs it.

Outer iteration ``k``:

1. ADMM on the Z-subproblem (eq. "ModelZ_v2"), warm-started from the previous
   ``Z, C, Lambda``: re-weighted Z-step (:mod:`.cbcd_zstep`), projected-gradient
   C-step (:mod:`.cbcd_cstep`), ``Lambda += mu (Z - C)``; stops when
   ``||Z - C||_inf <= admm_tol`` and ``||Z^{t+1} - Z^t||_inf <= admm_tol`` (the
   paper's rule) or after ``max_iter_admm`` iterations.
2. Safeguard: the inexact, non-convex ADMM can raise ``J`` (notes, pitfall 4). ADMM runs on the working
   set only (and, with ``admm_patience``, is skipped on unsearched iterations once the safeguard has rejected
   it that many times in a row), the monotone projected-gradient step on ``fit + lambda1 E`` is computed
   every outer iteration, and the lower of the two points (by exact ``J(., W_k)``) is kept (the ADMM result
   only if it lowers ``J``). Then, for ``2 <= k <= 8``, every column's weights move to the exact minimiser of ``J(., W_k)`` on
   that column's support, the joint move scaled by an exact line search (:mod:`.cbcd_facestep`; ``J`` never
   increases).
3. W-step (:mod:`.wstep`): exact minimiser, so ``J`` never increases.

The working set of an iteration comes from an exact candidate search (the
rows of most negative gradient per column) on every ``search_every``-th
iteration; in between, the last searched rows are reused.

Hence ``objective_history`` is non-increasing (tested). The loop stops when the
relative change of ``J`` falls below ``tol`` (default 1e-4) on an iteration
that searched, or at ``max_iter`` with a :class:`ConvergenceWarning`.

The selection returned is ``C`` (simplex-feasible by construction), and ``J`` is
always evaluated at ``C``.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import warnings
from dataclasses import dataclass

import numpy as np

from lfabench.sdk import LazyModule

from .cbcd_cstep import CandidatesExhausted, c_step, gather_rows, working_set
from .cbcd_facestep import MAX_FACE_SUPPORT, face_step
from .options import FitOptions
from .problem import (
    Problem,
    exclusivity,
    first_trial_step,
    fit_loss,
    gradient_factor,
    line_coefficients,
    lipschitz_bound,
    objective,
)
from .result import ProLFAResult, one_hot_start
from .sparsecols import align, combine, from_csc, split_keys, to_csc, union_keys
from .start import Start, initial_selection
from .threads import one_thread
from .wstep import w_step
from .cbcd_zstep import reweighted_z_step

sp = LazyModule("scipy.sparse")  # imported at first use: a third of a second at start-up

__all__ = ["ProLFAResult", "fit_cbcd", "one_hot_start"]

log = logging.getLogger("lfabench_plugins.aggregators.prolfa")

def _gradient_step(pb: Problem, W: np.ndarray, H_k: np.ndarray, ws, full_ws, c_k: np.ndarray, t_prev: float,
                   backtracking: bool, max_dense: int, k_cand: int, ksup: int | None,
                   stats: dict) -> tuple[np.ndarray, np.ndarray, int]:
    """The monotone projected-gradient step on ``fit + lambda1 E`` from ``C_k`` (values ``c_k`` on ``ws``).

    Returns the new point's sorted keys and values, and the (possibly widened) candidate count.
    """
    N, dbar = pb.n_descriptors, H_k.shape[1]
    r = np.bincount(ws.rows, weights=c_k, minlength=N)
    L_pg = lipschitz_bound(pb, W) + 2.0 * pb.lambda1 * max(dbar - 1, 1)
    base_ws = align(ws.keys, c_k, full_ws.keys)
    fb_args = (base_ws, 2.0 * pb.lambda1 * (r[full_ws.rows] - base_ws), 0.0, dbar, 2.0 * t_prev,
               1.0 / L_pg, backtracking)
    try:
        res = c_step(pb, W, H_k, full_ws, *fb_args, row_extra=2.0 * pb.lambda1 * r, exclusive=True,
                     max_dense=max_dense if k_cand < N else None, max_support=ksup)
    except CandidatesExhausted:
        # many columns would leave the working set: step on the working set only (a
        # projection onto a face of the simplex holding C_k: still a descent step); the
        # next outer iteration's search brings the rows in
        res = c_step(pb, W, H_k, full_ws.restricted(), *fb_args, row_extra=2.0 * pb.lambda1 * r,
                     exclusive=True, max_support=ksup)
        # no wider search (measured at Scene-15 scale: 4x wider lists cost 3x per
        # iteration); the step is then exact on the working set (stored support + the k_cand rows of
        # most negative fit gradient per column), still a descent step
        stats["restricted_steps"] = stats.get("restricted_steps", 0) + 1
    stats["c_trials"] += res.n_trials
    fb = to_csc(full_ws.keys, res.values, N, dbar)
    if res.extra_keys.size:
        er, ec = split_keys(res.extra_keys, N)
        fb = fb + sp.csc_matrix((res.extra_values, (er, ec)), shape=(N, dbar))
    fk, fv = from_csc(fb)
    return fk, fv, k_cand


@dataclass
class _Iterate:
    """The current point of Algorithm 2: ``C`` (and the ADMM copies ``Z``, ``Lambda``) on sorted keys, ``P``, ``W``, ``J``."""

    keys: np.ndarray
    c: np.ndarray
    z: np.ndarray
    lam: np.ndarray
    C: sp.csc_matrix
    P: np.ndarray
    W: np.ndarray
    J: float


@dataclass
class _Search:
    """Candidate-search state: rows per column ``k_cand``, the last searched working set and when."""

    k_cand: int
    last: int | None = None
    searched: object = None
    confirm: bool = False     # the last change was below tol on reused rows: search and test again


def _start(pb: Problem, opts: FitOptions, given: Start | None = None) -> tuple[_Iterate, str]:
    """The start ``C`` (``given``, else the seeded one that ``opts.init`` names; :mod:`.start`), ``Z = C``,
    ``Lambda = 0``, the optimal ``W``; and which start it is."""
    N, dbar = pb.n_descriptors, opts.n_prototypes
    keys, c, name = initial_selection(pb, opts, given)
    C = to_csc(keys, c, N, dbar)
    P = pb.prototypes(C)
    W = w_step(pb, P, opts)
    return _Iterate(keys, c, c.copy(), np.zeros_like(c), C, P, W, objective(pb, C, W, P)), name


def _candidate_rows(pb: Problem, X32: np.ndarray, H_k: np.ndarray, cur: _Iterate, search: _Search, it: int,
                    opts: FitOptions, stats: dict):
    """The working set of iteration ``it``: an exact search on the first and every ``search_every``-th
    iteration (or to confirm convergence), else the last searched rows plus the current support.

    The exact search costs ~70% of an iteration at Scene-15 scale; steps on reused rows are exact on
    that set and still descent steps. Returns ``(working set, searched?)``.
    """
    t0 = time.perf_counter()
    search_now = search.confirm or search.last is None or it - search.last >= opts.search_every
    if search_now:
        search.searched = working_set(X32, H_k, cur.keys, opts.n_prototypes, search.k_cand)
        # this iteration's copy alone holds the gathered rows (a later iteration extends the searched
        # rows and gathers its own): at paper scale with a lifted map each gather is about 0.6 GB
        ws = dataclasses.replace(search.searched)
        stats["searches"] += 1
        stats["searched_iterations"].append(it)
        search.last = it
    else:
        ws = search.searched.extended(cur.keys, pb.n_descriptors)
    ws.Xw = gather_rows(pb.X, ws.rows)       # exact rows (float64 if X is), for all inner steps
    stats["search_s"] += time.perf_counter() - t0
    return ws, search_now


def _admm(pb: Problem, W: np.ndarray, H_k: np.ndarray, ws, cur: _Iterate, search: _Search, t_step: list,
          t_min: float, opts: FitOptions, stats: dict):
    """Algorithm 1 on the working set ``ws``, warm-started from ``cur``: Z-step (eq. "Zi"), C-step
    (eq. "C", projected gradient), ``Lambda += mu (Z - C)``, until the paper's rule or ``max_iter_admm``.

    ``t_step`` (a one-element list) carries the accepted C-step size between calls. Returns
    ``(ws, c_k, cw, zw, lw, n_admm)``: the (possibly extended, restricted) working set, ``C_k`` and
    the ADMM result ``C, Z, Lambda`` on it. Raises :class:`CandidatesExhausted` to ask for a wider search.
    """
    N, dbar, ksup, mu = pb.n_descriptors, opts.n_prototypes, opts.max_support, opts.mu
    max_dense = max(8, dbar // 50)
    ws, c_k, cw, zw, lw = _warm_start(ws, cur)
    H, n_admm = H_k, 0
    for _ in range(opts.max_iter_admm):
        n_admm += 1
        # Z-step (eqs. "OptimizeZi", "F", "Zi")
        z_new = reweighted_z_step(ws.rows, cw, zw, lw, N, mu, pb.lambda1, opts.eps, opts.max_iter_reweight,
                                  opts.reweight_tol)
        # C-step (eq. "C")
        res = c_step(pb, W, H, ws, cw, mu * (cw - z_new) - lw, 0.5 * mu, dbar, 2.0 * t_step[0], t_min,
                     opts.step == "backtracking",
                     max_dense=max_dense if ws.bound is not None and search.k_cand < N else None,
                     max_support=ksup)
        stats["c_trials"] += res.n_trials
        stats["steps"].append(res.step)
        t_step[0] = res.step
        c_new = res.values
        if res.n_dense_columns:
            stats["dense_columns"] += res.n_dense_columns
            if res.n_dense_columns > max_dense:
                search.k_cand = min(4 * search.k_cand, N)
            new_ws = ws.extended(res.extra_keys, N)
            c_new = align(ws.keys, c_new, new_ws.keys)
            c_new[np.searchsorted(new_ws.keys, res.extra_keys)] = res.extra_values
            c_k, cw, zw, z_new, lw = (align(ws.keys, a, new_ws.keys) for a in (c_k, cw, zw, z_new, lw))
            ws = new_ws
        ws = ws.restricted()
        # dual update
        lw = lw + mu * (z_new - c_new)
        primal = float(np.abs(z_new - c_new).max())
        dz = float(np.abs(z_new - zw).max())
        cw, zw = c_new, z_new
        if primal <= opts.admm_tol and dz <= opts.admm_tol:
            break
        if n_admm < opts.max_iter_admm:
            H = gradient_factor(pb, combine(pb.X, ws.rows, ws.cols, cw, dbar, Xw=ws.Xw, layout=ws.column_layout(dbar)),
                                W)
    stats["admm_iters"].append(n_admm)
    return ws, c_k, cw, zw, lw, n_admm


def _warm_start(ws, cur: _Iterate):
    """``(ws restricted, C_k, C, Z, Lambda)`` on the working set's keys: ADMM's warm start from ``cur``
    (``C = C_k``). ADMM runs on the working set only (never widens the search); the gradient step, computed every
    iteration, is the exact one (dense columns if needed). Where ADMM does not run (``admm_patience``), this is
    what the safeguard gets: a zero ADMM move, which it rejects for the projected-gradient step."""
    c_k = align(cur.keys, cur.c, ws.keys)
    return ws.restricted(), c_k, c_k.copy(), align(cur.keys, cur.z, ws.keys), align(cur.keys, cur.lam, ws.keys)


def _descent_point(pb: Problem, W: np.ndarray, H_k: np.ndarray, ws, full_ws, c_k, cw, zw, lw, search: _Search,
                   t_step: float, opts: FitOptions, stats: dict):
    """The safeguard: the accepted point for ``J(., W_k)``, never above ``C_k`` (see the module docstring).

    The better of the ADMM result and the gradient step (each rejected unless it descends).
    Returns ``(keys, c, z, lam, s)``.
    """
    N, dbar, ksup = pb.n_descriptors, opts.n_prototypes, opts.max_support
    backtracking, max_dense = opts.step == "backtracking", max(8, dbar // 50)
    dv = cw - c_k
    # segments leave the k-sparse set, so compare the two candidate points (ADMM result, gradient step),
    # each a descent step or rejected, by their exact J(., W_k); a zero move (ADMM not run) changes nothing
    a, b = line_coefficients(pb, W, H_k, ws.rows, ws.cols, c_k, dv, dbar, Xw=ws.Xw) if dv.any() else (0.0, 0.0)
    fk, fv, search.k_cand = _gradient_step(pb, W, H_k, ws, full_ws, c_k, t_step, backtracking, max_dense,
                                           search.k_cand, ksup, stats)
    ug = union_keys(ws.keys, fk)
    c0g = align(ws.keys, c_k, ug)
    rg, cg = split_keys(ug, N)
    ag, bg = line_coefficients(pb, W, H_k, rg, cg, c0g, align(fk, fv, ug) - c0g, dbar)
    use_grad = a + b >= 0 or ag + bg <= a + b
    s = 0.0 if use_grad else 1.0
    stats["line_search_s"].append(s)
    if use_grad:
        # ADMM offered no descent: take the monotone projected-gradient step on fit + lambda1 E instead
        # (full search bound), so that J stalls only where no descent step exists -- not merely where the
        # ADMM move is poor (the relative-change test would otherwise report a false convergence)
        stats["fallback_steps"] += 1
        ukeys = union_keys(ws.keys, fk)
        cw, zw = align(fk, fv, ukeys), align(fk, fv, ukeys)
        lw = align(ws.keys, lw, ukeys)
    else:
        ukeys = ws.keys
    live = (cw != 0) | (zw != 0) | (lw != 0)
    return ukeys[live], cw[live], zw[live], lw[live], s


def fit_cbcd(pb: Problem, opts: FitOptions, start: Start | None = None) -> ProLFAResult:
    """Solve eq. "ModelRelax2" (or "ModelSemi": ``pb`` then holds only labelled means) by cBCD.

    ``opts`` (:class:`~.options.FitOptions`) says how; ``start`` (optional) is a given starting ``C``
    (:func:`~.start.selection_start`), else the seeded start. Algorithm 2, as written below: from the start,
    repeat

    1. candidate rows (the working set) for this iteration;
    2. Z-subproblem by ADMM (Algorithm 1: Z-step, C-step, dual update), warm-started;
    3. safeguard: the accepted C never raises ``J(., W_k)`` (then the face step, capped model);
    4. W-step (exact Sylvester solve);
    5. objective ``J(C, W)``;
    6. stopping rule: relative change of J below ``tol`` on a searched iteration.

    ``max_support`` (k) adds ``||c_j||_0 <= k`` to every column's
    simplex constraint: all C-steps project onto the k-sparse simplex
    (Kyrillidis et al. 2013). Segments between two k-sparse points can have 2k
    non-zeros, so the safeguard then only chooses between the ADMM result
    (``s = 1``) and the monotone projected-gradient step, both computed every
    outer iteration: whichever gives the lower ``J(., W_k)`` is kept (the ADMM
    result only if it lowers ``J``). Hence a relative change below ``tol``
    means neither move found more descent. ``max_support=None`` (the plain simplex) is refused: pairwise
    Frank-Wolfe solves it (:mod:`.fit`).

    ``search_every`` (s): the exact candidate search runs on the first outer
    iteration and then every s-th; the iterations in between reuse the last
    searched rows (plus the current support), so their steps are exact on
    that set and still never raise ``J``. The stopping rule is only met on a
    searched iteration: a small change on reused rows triggers a search.
    """
    N, dbar, ksup = pb.n_descriptors, opts.n_prototypes, opts.max_support
    if ksup is None:
        raise ValueError("cBCD fits the capped model only: set max_support (the plain simplex, max_support=None, "
                         "is pairwise Frank-Wolfe's)")
    X32 = pb.X if pb.X.dtype == np.float32 else np.ascontiguousarray(pb.X, dtype=np.float32)
    t_start = time.perf_counter()
    cur, start_name = _start(pb, opts, start)
    history = [cur.J]
    t_step = [None]
    # k_cand = max_support would put the k-th candidate on the search bound (every column inexact);
    # 4 max_support fresh rows per column keep most columns exact
    search = _Search(k_cand=max(opts.n_candidates, 4 * ksup))
    converged, rel, it = False, np.inf, 0
    rejected = 0    # consecutive outer iterations whose ADMM result the safeguard rejected
    stats = {"start": start_name, "admm_iters": [], "line_search_s": [], "steps": [],
             "dense_columns": 0, "c_trials": 0, "fallback_steps": 0, "face_s": [], "searches": 0, "widened": 0,
             "search_s": 0.0, "searched_iterations": [], "admm_skipped": 0, "working_set_entries": 0}
    for it in range(1, opts.max_iter + 1):
        W = cur.W
        H_k = gradient_factor(pb, cur.P, W)
        t_min = 1.0 / (lipschitz_bound(pb, W) + opts.mu)
        if t_step[0] is None:
            t_step[0] = first_trial_step(pb, W, opts.mu)
        while True:
            # 1. candidate rows
            ws, search_now = _candidate_rows(pb, X32, H_k, cur, search, it, opts, stats)
            try:
                # the inner steps work on d x d̄ blocks: multi-threaded BLAS gains little there and, on a
                # loaded machine, its spinning threads cost up to 10x (measured); the search keeps all threads
                with one_thread("blas"):
                    # 2. Z-subproblem by ADMM (Algorithm 1), unless it has stopped paying (admm_patience)
                    if (opts.admm_patience is not None and rejected >= opts.admm_patience and not search_now):
                        (ws_admm, c_k, cw, zw, lw), n_admm = _warm_start(ws, cur), 0
                        stats["admm_skipped"] += 1
                    else:
                        ws_admm, c_k, cw, zw, lw, n_admm = _admm(pb, W, H_k, ws, cur, search, t_step, t_min, opts,
                                                                 stats)
            except CandidatesExhausted as exc:
                # too many columns outgrew the candidate list: one wider search beats dense columns
                log.info("prolfa iter %d: %s columns exceed %d candidates; searching %d", it, exc, search.k_cand,
                         min(4 * search.k_cand, N))
                search.k_cand = min(4 * search.k_cand, N)
                search.confirm = True        # search again within this iteration
                stats["widened"] += 1
                continue
            break
        search.confirm = False
        with one_thread("blas"):
            # 3. safeguard
            keys, c, z, lam, s = _descent_point(pb, W, H_k, ws_admm, ws, c_k, cw, zw, lw, search, t_step[0],
                                                opts, stats)
            if n_admm:
                rejected = 0 if s > 0 else rejected + 1
            stats["working_set_entries"] += int(ws_admm.keys.size)
            if ksup <= MAX_FACE_SUPPORT:
                c_face, s_face = face_step(pb, W, keys, c, dbar)
                stats["face_s"].append(s_face)
                if s_face > 0:
                    c, z = c_face, c_face.copy()     # restart the Z copy at the accepted point; Lambda is kept
            C = to_csc(keys, c, N, dbar)
            C.eliminate_zeros()
            P = pb.prototypes(C)
            # 4. W-step
            W = w_step(pb, P, opts)
            # 5. objective
            J_new = objective(pb, C, W, P)
        history.append(J_new)
        # 6. stopping rule
        rel = abs(cur.J - J_new) / max(abs(cur.J), 1e-300)
        # INFO on searched iterations only (every search_every-th): the embedded run's console stays short
        log.log(logging.INFO if search_now else logging.DEBUG,
                "prolfa iter %d: J=%.6g rel=%.2e admm=%d s=%.3f t=%.3g nnz=%d ws=%d%s (%.1fs)", it, J_new, rel,
                n_admm, s, t_step[0], C.nnz, ws_admm.keys.size, " searched" if search_now else "",
                time.perf_counter() - t_start)
        cur = _Iterate(keys, c, z, lam, C, P, W, J_new)
        ws = ws_admm = None      # free this iteration's gathered rows before the next iteration gathers
        if rel < opts.tol:
            if search_now:
                converged = True
                break
            # the change was measured on the reused rows only: stop only if a searched iteration agrees
            search.confirm = True
    if not converged:
        from sklearn.exceptions import ConvergenceWarning

        warnings.warn(f"ProLFA stopped at max_iter={opts.max_iter} before the relative change of J fell below "
                      f"tol={opts.tol} (last change {rel:.2e})", ConvergenceWarning, stacklevel=3)
    stats.update(fit_loss=fit_loss(pb, cur.P, cur.W), exclusivity=exclusivity(cur.C), final_relative_change=rel,
                 n_candidates=search.k_cand, seconds=time.perf_counter() - t_start)
    return ProLFAResult(selection=cur.C, projection=cur.W, prototypes=cur.P, objective_history=history, n_iter=it,
                        converged=converged, info=stats)
