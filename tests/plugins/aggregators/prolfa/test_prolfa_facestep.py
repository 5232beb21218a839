"""The face step of cBCD (``2 <= max_support <= 8``): exact per-column weights on the support, then an exact line search."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning
from prolfa_problems import clustered_problem

from lfabench_plugins.aggregators.prolfa import FitOptions, fit_prolfa, objective
from lfabench_plugins.aggregators.prolfa.cbcd_facestep import MAX_FACE_SUPPORT, face_step, simplex_qp_on_faces
from lfabench_plugins.aggregators.prolfa.problem import Problem
from lfabench_plugins.aggregators.prolfa.sparsecols import make_keys, split_keys, to_csc
from lfabench_plugins.aggregators.prolfa.wstep import solve_w


def _random_qps(seed, m=60, k=4):
    rng = np.random.default_rng(seed)
    B = rng.normal(size=(m, k, 3))                      # rank 3 < k for some: singular faces occur
    Q = np.einsum("mad,mbd->mab", B, B)
    lin = rng.normal(scale=3.0, size=(m, k))
    valid = rng.random((m, k)) < 0.8
    valid[np.arange(m), rng.integers(k, size=m)] = True
    return Q, lin, valid


@pytest.mark.parametrize("seed", [0, 1])
def test_simplex_qp_on_faces_meets_the_kkt_conditions_and_matches_scipy(seed):
    Q, lin, valid = _random_qps(seed)
    sol = simplex_qp_on_faces(Q, lin, valid)
    assert np.all(sol >= 0) and np.all(sol[~valid] == 0)
    np.testing.assert_allclose(sol.sum(axis=1), 1.0, atol=1e-12)
    for i in range(Q.shape[0]):
        v = np.flatnonzero(valid[i])
        g = 2.0 * Q[i] @ sol[i] + lin[i]
        # KKT on the simplex: one multiplier for the support, no valid slot off it with a lower gradient
        on = v[sol[i, v] > 1e-9]
        assert np.ptp(g[on]) < 1e-7 * (1 + np.abs(g[on]).max())
        assert g[v].min() >= g[on].max() - 1e-7 * (1 + np.abs(g[v]).max())
        # an independent solver (SLSQP) finds no lower value
        f = lambda x, i=i, v=v: x @ Q[i][np.ix_(v, v)] @ x + lin[i, v] @ x
        ref = minimize(f, np.full(v.size, 1.0 / v.size), method="SLSQP", bounds=[(0, 1)] * v.size,
                       constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1.0}], options={"ftol": 1e-14})
        assert f(sol[i, v]) <= ref.fun + 1e-9


def _capped_point(pb, n_cols, k, seed):
    """A random k-sparse simplex ``C`` (as keys and values) and its optimal ``W``."""
    rng = np.random.default_rng(seed)
    N = pb.n_descriptors
    rows = np.concatenate([rng.choice(N, size=k, replace=False) for _ in range(n_cols)])
    cols = np.repeat(np.arange(n_cols), k)
    vals = rng.random(rows.size) + 0.05
    vals /= np.bincount(cols, weights=vals)[cols]
    keys = make_keys(rows, cols, N)
    order = np.argsort(keys)
    keys, vals = keys[order], vals[order]
    C = to_csc(keys, vals, N, n_cols)
    return keys, vals, C, solve_w(pb, pb.prototypes(C))


def test_face_step_never_raises_J_and_keeps_every_column_on_its_support():
    pb = clustered_problem(seed=4)
    n_cols, k = 12, 4
    keys, c, C, W = _capped_point(pb, n_cols, k, seed=1)
    J0 = objective(pb, C, W)
    new, s = face_step(pb, W, keys, c, n_cols)
    C1 = to_csc(keys, new, pb.n_descriptors, n_cols)
    assert 0.0 < s <= 1.0
    assert np.all(new >= 0)
    np.testing.assert_allclose(np.asarray(C1.sum(axis=0)).ravel(), 1.0, atol=1e-12)
    assert objective(pb, C1, W) < J0
    # the exact line search: J(C + s' D) is no lower for s' near s
    dv = new - c
    for s2 in (0.5, 0.9, 1.1):
        trial = c + (s2 / s) * dv
        if np.all(trial >= 0):
            assert objective(pb, to_csc(keys, trial, pb.n_descriptors, n_cols), W) >= objective(pb, C1, W) - 1e-9


def test_face_step_is_each_columns_exact_minimiser_when_the_columns_do_not_interact():
    """With W = 0 and lambda1 = 0 the columns do not interact: s = 1 and every column is its own optimum
    on its support, checked column by column with SLSQP on the paper's J."""
    pb0 = clustered_problem(seed=5)
    pb = Problem.build(pb0.X, pb0.Mu, pb0.Y, 0.0, pb0.lambda2)
    n_cols, k = 6, 3
    keys, c, _C, _ = _capped_point(pb, n_cols, k, seed=2)
    W = np.zeros((n_cols, pb.Y.shape[1]))
    new, s = face_step(pb, W, keys, c, n_cols)
    assert s == pytest.approx(1.0)
    _rows, cols = split_keys(keys, pb.n_descriptors)
    for j in range(n_cols):
        sel = cols == j

        def J_col(x, sel=sel):
            trial = new.copy()
            trial[sel] = x
            return objective(pb, to_csc(keys, trial, pb.n_descriptors, n_cols), W)

        ref = minimize(J_col, c[sel], method="SLSQP", bounds=[(0, 1)] * k,
                       constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1.0}], options={"ftol": 1e-14})
        assert J_col(new[sel]) <= ref.fun + 1e-9


def test_solver_with_the_face_step_is_monotone_k_sparse_and_takes_it():
    pb = clustered_problem(seed=6)
    opts = FitOptions(n_prototypes=16, max_support=3, random_state=0, max_iter=400)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = fit_prolfa(pb, opts)
    h = np.asarray(res.objective_history)
    assert np.all(np.diff(h) <= 1e-9 * np.abs(h[:-1]))
    C = res.selection.toarray()
    np.testing.assert_allclose(C.sum(axis=0), 1.0, atol=1e-10)
    assert C.min() >= 0 and (C > 0).sum(axis=0).max() <= 3
    assert len(res.info["face_s"]) == res.n_iter and max(res.info["face_s"]) > 0


def test_face_step_is_skipped_where_it_does_not_apply():
    """Supports over MAX_FACE_SUPPORT fit without the face step."""
    pb = clustered_problem(seed=7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)           # 30 iterations: enough to see each skip
        res = fit_prolfa(pb, FitOptions(n_prototypes=8, max_support=MAX_FACE_SUPPORT + 1, random_state=1,
                                        max_iter=30))
    assert res.info["face_s"] == []
