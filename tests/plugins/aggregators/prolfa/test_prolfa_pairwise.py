"""Block pairwise Frank-Wolfe on the paper's exact model (``max_support=None``): the gap it stops on is the
independent formula's, every step is a descent step on the simplex, and a converged fit is certified stationary."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from prolfa_problems import clustered_problem

from lfabench_plugins.aggregators.prolfa import FitOptions, SolverOptions, fit_prolfa, objective, solver_path
from lfabench_plugins.aggregators.prolfa import search
from lfabench_plugins.aggregators.prolfa.cbcd import fit_cbcd
from lfabench_plugins.aggregators.prolfa.pairwise_fw import (
    INNER_STEPS,
    ColumnBuckets,
    WorkingColumns,
    _pairwise_steps,
    column_grams,
    column_step,
    fit_pairwise,
    search_gap,
)
from lfabench_plugins.aggregators.prolfa.plugin import ProLFA
from lfabench_plugins.aggregators.prolfa.problem import frank_wolfe_gap, gradient_factor
from lfabench_plugins.aggregators.prolfa.sparsecols import make_keys
from lfabench_plugins.aggregators.prolfa.wstep import solve_w


def random_columns(pb, n_cols, per_col, seed):
    """A feasible C with ``per_col`` (an int, or one count per column) distinct random rows per column (rows shared
    across columns on purpose)."""
    rng = np.random.default_rng(seed)
    N = pb.n_descriptors
    counts = np.broadcast_to(per_col, (n_cols,))
    rows = np.concatenate([np.sort(rng.choice(N // 3, k, replace=False)) for k in counts])
    cols = np.repeat(np.arange(n_cols), counts)
    vals = rng.random(rows.size) + 0.1
    vals /= np.bincount(cols, weights=vals)[cols]
    keys = make_keys(rows, cols, N)
    order = np.argsort(keys)
    X32 = np.ascontiguousarray(pb.X, dtype=np.float32)
    return WorkingColumns.from_keys(X32, keys[order], vals[order], n_cols), X32


def float32_problem(seed=0):
    pb = clustered_problem(seed=seed)
    pb.X = np.ascontiguousarray(pb.X, dtype=np.float32)        # what the plugin hands the solver
    return pb


@pytest.mark.parametrize("flat_search", [False, True])
def test_search_gap_equals_the_frank_wolfe_gap_formula(monkeypatch, flat_search):
    """Per column, against :func:`frank_wolfe_gap` (a dense pass over every row), on the dense and the FAISS path."""
    if flat_search:
        monkeypatch.setattr(search, "DENSE_SEARCH_LIMIT", 0)
    pb = float32_problem()
    wc, X32 = random_columns(pb, 8, 5, seed=1)
    C = wc.selection()
    W = solve_w(pb, wc.prototypes())
    H = gradient_factor(pb, wc.prototypes(), W)
    for m in (1, 3, 12):
        cand, gap = search_gap(pb, X32, wc, H, wc.row_sums(), m)
        assert cand.shape == (8, m)
        np.testing.assert_allclose(gap, frank_wolfe_gap(pb, C, W), rtol=1e-5, atol=1e-6)


def test_working_set_keeps_the_support_and_adds_each_candidate_once():
    pb = float32_problem()
    wc, _ = random_columns(pb, 6, 3, seed=2)
    before = wc.selection().toarray()
    cand = np.tile(np.arange(5), (6, 1))
    cand[0] = wc.rows[0, :3].tolist() + [200, 201]                  # two of column 0's candidates are its support
    ext = wc.extended(cand)
    np.testing.assert_array_equal(ext.selection().toarray(), before)
    for j in range(6):
        filled = ext.rows[j][ext.rows[j] >= 0]
        assert np.unique(filled).size == filled.size
        assert set(filled) == set(wc.rows[j][wc.support[j]]) | set(cand[j])
    np.testing.assert_array_equal(ext.Xg[ext.rows >= 0], pb.X[ext.rows[ext.rows >= 0]])


def test_column_grams_give_each_columns_fit_curvature():
    """``d^T B_j d == ||R X^T d||^2`` for a move ``d`` of column j on its working set (the direct formula)."""
    pb = float32_problem(seed=4)
    wc, _ = random_columns(pb, 5, 4, seed=4)
    B = column_grams(pb, wc)
    rng = np.random.default_rng(0)
    for j in range(5):
        d = np.where(wc.rows[j] >= 0, rng.normal(size=wc.rows.shape[1]), 0.0)
        u = np.asarray(pb.X[wc.rows[j][wc.rows[j] >= 0]], dtype=np.float64).T @ d[wc.rows[j] >= 0]
        assert d @ B[j].astype(np.float64) @ d == pytest.approx(float(np.sum((pb.R @ u) ** 2)), rel=1e-5)


def test_width_groups_take_the_full_widths_steps():
    """:class:`ColumnBuckets` (each column on its own padded width) against the full ``(d̄, K)`` arrays: the same
    weights, prototypes, row sums and step, over several block steps; ``X^T D`` against the full einsum."""
    pb = float32_problem(seed=5)
    rng = np.random.default_rng(5)
    n_cols = 12
    wc, X32 = random_columns(pb, n_cols, rng.integers(1, 40, size=n_cols), seed=5)    # widths 16 to 48
    P = wc.prototypes()
    W = solve_w(pb, P)
    r = wc.row_sums()
    H = gradient_factor(pb, P, W)
    wc = wc.extended(search_gap(pb, X32, wc, H, r, 6)[0])
    groups = ColumnBuckets.of(pb, wc)
    assert len(groups) >= 2 and sorted(np.concatenate([g[0] for g in groups]).tolist()) == list(range(n_cols))
    D = np.where(wc.rows >= 0, rng.normal(size=wc.rows.shape), 0.0)
    np.testing.assert_allclose(groups.prototypes_move(D), np.einsum("jkd,jk->dj", wc.Xg, D, dtype=np.float64),
                               rtol=1e-12, atol=1e-12)
    full = WorkingColumns(wc.X, wc.rows.copy(), wc.vals.copy())
    B = column_grams(pb, full)
    Pf, rf, Pg, rg = P, r, P, r
    for _ in range(5):
        Pf, rf, tf = column_step(pb, full, B, Pf, W, gradient_factor(pb, Pf, W), rf, INNER_STEPS)
        Pg, rg, tg = column_step(pb, wc, groups, Pg, W, gradient_factor(pb, Pg, W), rg, INNER_STEPS)
        assert tg == pytest.approx(tf, rel=1e-12)
        np.testing.assert_allclose(wc.vals, full.vals, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(Pg, Pf, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(rg, rf, rtol=1e-12, atol=1e-15)
    assert tf > 0


@pytest.mark.parametrize("n_inner", [1, 64])
def test_a_block_step_never_raises_j_and_stays_on_the_simplex(n_inner):
    """J(., W) at fixed W, by ``objective`` itself; the returned P and row sums equal the recomputed ones."""
    pb = float32_problem(seed=3)
    wc, X32 = random_columns(pb, 8, 4, seed=3)
    P = wc.prototypes()
    W = solve_w(pb, P)
    r = wc.row_sums()
    H = gradient_factor(pb, P, W)
    cand, _ = search_gap(pb, X32, wc, H, r, 6)
    wc = wc.extended(cand)
    B = column_grams(pb, wc)
    taus = []
    for _ in range(20):
        J0 = objective(pb, wc.selection(), W)
        P, r, tau = column_step(pb, wc, B, P, W, gradient_factor(pb, P, W), r, n_inner)
        taus.append(tau)
        C = wc.selection()
        assert objective(pb, C, W) <= J0 + 1e-10 * abs(J0)
        assert C.data.min() > 0
        np.testing.assert_allclose(np.asarray(C.sum(axis=0)).ravel(), 1.0, atol=1e-12)
        np.testing.assert_allclose(P, wc.prototypes(), atol=1e-10)
        np.testing.assert_allclose(r, wc.row_sums(), atol=1e-12)
    assert max(taus) > 0                                              # it moved


def test_a_converged_fit_is_certified_stationary_and_j_never_rises():
    """The stopping rule is checked against the independent gap formula at the returned point."""
    pb = float32_problem(seed=1)
    res = fit_prolfa(pb, FitOptions(n_prototypes=8, random_state=0, max_support=None,
                                       gap_tol=1e-2, max_iter=2000))
    assert res.converged
    h = np.asarray(res.objective_history)
    assert np.all(np.diff(h) <= 1e-9 * np.abs(h[:-1]))
    C, W = res.selection, res.projection
    np.testing.assert_allclose(np.asarray(C.sum(axis=0)).ravel(), 1.0, atol=1e-12)
    assert C.data.min() > 0
    np.testing.assert_allclose(objective(pb, C, W), h[-1], rtol=1e-9)
    np.testing.assert_allclose(W, solve_w(pb, pb.prototypes(C)), atol=1e-10)
    gap = float(frank_wolfe_gap(pb, C, W).sum())
    assert gap <= 1e-2 * h[-1]
    assert res.info["frank_wolfe_gap"] == pytest.approx(gap, rel=1e-5, abs=1e-8)


def test_max_iter_warns_and_records_the_gap_at_the_returned_point():
    pb = float32_problem(seed=2)
    with pytest.warns(ConvergenceWarning, match="pairwise Frank-Wolfe"):
        res = fit_prolfa(pb, FitOptions(n_prototypes=8, random_state=0, max_support=None,
                                           gap_tol=1e-9, max_iter=3))
    assert not res.converged and res.n_iter == 3
    assert res.info["frank_wolfe_gap"] == pytest.approx(
        float(frank_wolfe_gap(pb, res.selection, res.projection).sum()), rel=1e-5)


def test_the_capped_model_is_refused_by_name():
    with pytest.raises(ValueError, match="max_support=None"):
        fit_pairwise(float32_problem(), FitOptions(n_prototypes=8, max_support=4))
    with pytest.raises(ValueError, match="gap_tol"):
        FitOptions(gap_tol=0)


def test_the_plugin_fits_with_it():
    """Through the estimator (float32 descriptors, dedup, normalisation), on the plain simplex."""
    rng = np.random.default_rng(0)
    from lfabench.bags import Bags

    y = np.arange(30) % 3
    bags = Bags.from_list([rng.normal(loc=k, size=(8, 5)).astype(np.float32) for k in y])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = ProLFA(n_prototypes=6, max_support=None, solver=SolverOptions(gap_tol=1e-2), random_state=0).fit(bags, y)
    assert est.transform(bags).shape == (30, 6)
    assert est.fit_info_["frank_wolfe_gap"] >= 0
    assert isinstance(est.selection_, sp.spmatrix)


def reference_pairwise_steps(gq, v, B, e, scale, n_inner):
    """:func:`_pairwise_steps` written out column by column in Python floats, from the update it documents: move
    ``min(v_a, -delta / (2 curv))`` from the support slot ``a`` of largest bound gradient to the slot ``s`` of
    smallest, with ``curv = scale (B_ss + B_aa - 2 B_sa) + e_s + e_a``; then ``g += 2 scale gamma (B_s - B_a)``,
    ``g_s += 2 gamma e_s``, ``g_a -= 2 gamma e_a``. Every column steps until no column can move."""
    g, v = [list(map(float, row)) for row in gq], [list(map(float, row)) for row in v]
    for _ in range(n_inner):
        steps = []
        for j in range(len(g)):
            s = min(range(len(g[j])), key=g[j].__getitem__)
            a = max((k for k in range(len(g[j])) if v[j][k] > 0), key=g[j].__getitem__, default=None)
            a = a if a is not None else 0                      # no support: no move (delta >= 0 below)
            delta = g[j][s] - g[j][a] if v[j][a] > 0 else 0.0
            steps.append((s, a, delta))
        if not any(delta < 0 and s != a for s, a, delta in steps):
            break
        for j, (s, a, delta) in enumerate(steps):
            if not (delta < 0 and s != a):
                continue
            Bj = B[j]
            curv = scale * (float(Bj[s, s]) + float(Bj[a, a]) - 2.0 * float(Bj[s, a])) + float(e[j, s]) + float(e[j, a])
            gamma = min(v[j][a], -delta / (2.0 * max(curv, 1e-300)))
            v[j][s] += gamma
            v[j][a] = 0.0 if gamma >= v[j][a] else v[j][a] - gamma
            g[j] = [gk + (2.0 * scale * gamma) * (float(bs) - float(ba)) for gk, bs, ba in zip(g[j], Bj[s], Bj[a])]
            g[j][s] += 2.0 * gamma * float(e[j, s])
            g[j][a] -= 2.0 * gamma * float(e[j, a])
    return np.array(g), np.array(v)


@pytest.mark.parametrize("n_inner", [1, 7, 64])
def test_the_vectorised_pairwise_steps_equal_a_column_by_column_loop(n_inner):
    """The flat-index inner steps (all columns at once) against the same update written out per column in Python
    floats: equal to the last bit, on the bound of a real working set (empty slots: +inf gradient, zero weight)."""
    pb = float32_problem(seed=4)
    wc, X32 = random_columns(pb, 9, np.random.default_rng(4).integers(1, 12, size=9), seed=4)
    P = wc.prototypes()
    W = solve_w(pb, P)
    r = wc.row_sums()
    H = gradient_factor(pb, P, W)
    wc = wc.extended(search_gap(pb, X32, wc, H, r, 6)[0])
    B = column_grams(pb, wc).astype(np.float64)
    full = wc.rows >= 0
    shared = np.bincount(wc.rows[full], minlength=pb.n_descriptors)
    e = np.where(full, pb.lambda1 * np.maximum(shared[np.maximum(wc.rows, 0)] - 1, 0), 0.0)
    scale = 1.0 + float(np.linalg.norm(W, 2) ** 2)
    gq, v = wc.gradient(pb, H, r, exact=False), wc.vals.copy()
    g_ref, v_ref = reference_pairwise_steps(gq, v, B, e, scale, n_inner)
    _pairwise_steps(gq, v, B, e, scale, n_inner)
    assert not np.array_equal(v, wc.vals)                           # it moved
    np.testing.assert_array_equal(v, v_ref)
    np.testing.assert_array_equal(gq, g_ref)
    np.testing.assert_allclose(v.sum(axis=1), 1.0, atol=1e-12)
    with pytest.raises(ValueError, match="C-contiguous"):
        _pairwise_steps(np.asfortranarray(gq), v, B, e, scale, 1)


def test_the_solver_follows_the_model():
    """The plain simplex is fitted by pairwise Frank-Wolfe, the capped model by cBCD (``solver_path``, the one
    place that decides); ``fit_info_`` says which solver ran, and each solver refuses the other's model."""
    assert solver_path(FitOptions(max_support=None)) == "pairwise_fw"
    assert solver_path(FitOptions(max_support=4)) == "cbcd"
    rng = np.random.default_rng(1)
    from lfabench.bags import Bags

    y = np.arange(24) % 3
    bags = Bags.from_list([rng.normal(loc=k, size=(6, 4)) for k in y])
    for max_support, resolved in ((None, "pairwise_fw"), (3, "cbcd")):
        est = ProLFA(n_prototypes=5, max_support=max_support, random_state=0).fit(bags, y)
        assert est.fit_info_["solver"] == resolved
    with pytest.raises(ValueError, match="cBCD fits the capped model only"):
        fit_cbcd(float32_problem(), FitOptions(n_prototypes=8, max_support=None))
