"""ProLFA's starting selection (``init``): the one-hot start and the cancelling start."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning
from test_prolfa_dense import clustered_problem

from lfabench.registry import get_registry
from lfabench_plugins.aggregators.prolfa import FitOptions, exclusivity, fit_prolfa, objective
from lfabench_plugins.aggregators.prolfa.plugin import ProLFA
from lfabench_plugins.aggregators.prolfa.result import one_hot_start
from lfabench_plugins.aggregators.prolfa.sparsecols import split_keys, to_csc
from lfabench_plugins.aggregators.prolfa.start import (
    _cancelling_weights,
    _objective_at_optimal_w,
    cancelling_selection,
    one_hot_selection,
    selection_start,
    start_selection,
)


def _start(pb, **kw):
    """The start ``init`` names, built directly (``start_selection`` may fall back to the one-hot start)."""
    opts = FitOptions(**{"n_prototypes": 24, "random_state": 5, **kw})
    st = one_hot_selection(pb, opts)
    if opts.init == "cancelling":
        st = cancelling_selection(pb, opts, st)
    return opts, st.keys, st.values, to_csc(st.keys, st.values, pb.n_descriptors, opts.n_prototypes)


@pytest.mark.parametrize("max_support", [4, 2, None])
def test_cancelling_start_is_feasible_disjoint_and_grows_from_the_one_hot_anchors(max_support):
    pb = clustered_problem(seed=2)
    opts, keys, vals, C = _start(pb, init="cancelling", max_support=max_support)
    dense = C.toarray()
    assert np.all(np.diff(keys) > 0) and vals.min() > 0
    np.testing.assert_allclose(dense.sum(axis=0), 1.0, atol=1e-12)
    assert (dense > 0).sum(axis=0).max() <= (max_support or 4)
    assert (dense > 0).sum(axis=1).max() == 1, "a descriptor sits in two prototypes"
    assert exclusivity(C) == pytest.approx(0.0, abs=1e-12)
    # each column contains its one-hot anchor (same seeded rows as init="one_hot")
    anchor_keys, _ = one_hot_start(pb.n_descriptors, opts.n_prototypes, opts.rng())
    rows, cols = split_keys(anchor_keys, pb.n_descriptors)
    assert np.all(dense[rows, cols] > 0)
    assert (dense > 0).sum() > opts.n_prototypes, "no column grew"


def test_every_cancelling_prototype_responds_less_to_the_image_means_than_its_anchor():
    """Each round accepts a partner only if it lowers ``||R p_j||``, and the final weights descend from there."""
    pb = clustered_problem(seed=3)
    _, _, _, C = _start(pb, init="cancelling")
    _, _, _, C1 = _start(pb, init="one_hot")
    resp = np.sum((pb.R @ pb.prototypes(C)) ** 2, axis=0)
    resp1 = np.sum((pb.R @ pb.prototypes(C1)) ** 2, axis=0)
    assert np.all(resp <= resp1 * (1 + 1e-12)) and resp.sum() < 0.5 * resp1.sum()


def test_cancelling_weights_match_a_general_constrained_solver():
    rng = np.random.default_rng(0)
    Vs = rng.normal(size=(6, 4, 5))
    used = np.ones((6, 4), dtype=bool)
    used[2, 3] = used[4, 1:] = False
    start = np.where(used, 1.0, 0.0) / used.sum(axis=1, keepdims=True)
    c = _cancelling_weights(Vs, used, start, n_iter=5000)
    for j in range(6):
        S = np.flatnonzero(used[j])
        G = Vs[j, S] @ Vs[j, S].T
        ref = minimize(lambda x, G=G: x @ G @ x, np.full(S.size, 1.0 / S.size), method="SLSQP",
                       bounds=[(0, 1)] * S.size, constraints={"type": "eq", "fun": lambda x: x.sum() - 1},
                       options={"ftol": 1e-14, "maxiter": 1000})
        assert c[j] @ (Vs[j] @ Vs[j].T) @ c[j] == pytest.approx(ref.fun, rel=1e-6, abs=1e-12)
        assert np.all(c[j, ~used[j]] == 0) and c[j].sum() == pytest.approx(1.0)


@pytest.mark.parametrize("backend", ["sparse", "dense"])
@pytest.mark.parametrize("max_support", [4, None])
def test_a_fit_from_the_cancelling_start_is_monotone_feasible_and_starts_lower(backend, max_support):
    pb = clustered_problem(seed=4)
    runs = {}
    for init in ("one_hot", "cancelling"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            runs[init] = fit_prolfa(pb, FitOptions(n_prototypes=16, max_support=max_support, random_state=0,
                                                      backend=backend, init=init, max_iter=400))
    res = runs["cancelling"]
    h = np.asarray(res.objective_history)
    assert np.all(np.diff(h) <= 1e-12 * abs(h[0])), "J rose"
    assert h[0] < runs["one_hot"].objective_history[0]
    C = res.selection.toarray()
    assert C.min() >= 0 and np.allclose(C.sum(axis=0), 1.0, atol=1e-9)
    if max_support is not None:
        assert (C > 0).sum(axis=0).max() <= max_support
    assert objective(pb, res.selection, res.projection) == pytest.approx(h[-1], rel=1e-9)


def test_unknown_init_is_rejected_by_name():
    with pytest.raises(ValueError, match="init must be one of"):
        FitOptions(init="kmeans")
    with pytest.raises(ValueError, match="ProLFA: init must be one of"):
        ProLFA(solver={"init": "kmeans"})._check_params()


@pytest.mark.parametrize("data", ["clustered", "digits"])
def test_cancelling_falls_back_to_the_one_hot_start_when_that_has_the_lower_J(data):
    """On the clustered problem the cancelling start is lower; on the embedded digits (W not small: the one-hot
    start's J is below ``||Y||^2``) the cancelling columns sit at J ~ ``||Y||^2`` and the one-hot start is kept."""
    if data == "clustered":
        pb, dbar = clustered_problem(seed=4), 16
    else:
        reg = get_registry()
        dataset = reg.get_spec("dataset", "digits").factory()
        bags = reg.get_spec("descriptor", "patches").factory().describe(dataset, cache=False, n_jobs=1)
        split = reg.get_spec("evaluator", "knn").factory().split(dataset, 0)
        est = ProLFA(random_state=0)
        y, labelled = est._responses(bags.subset(split.fit_indices), split.fit_labels)
        pb = est._problem(bags.subset(split.fit_indices), y, labelled, est._check_params())[0]
        dbar = est.n_prototypes
    opts = FitOptions(n_prototypes=dbar, random_state=0, init="cancelling")
    _, keys1, _, _ = _start(pb, n_prototypes=dbar, random_state=0)
    _, keys, vals, _ = _start(pb, n_prototypes=dbar, random_state=0, init="cancelling")
    J = {name: _objective_at_optimal_w(pb, st, dbar) for name, st in
         (("one_hot", start_selection(pb, FitOptions(n_prototypes=dbar, random_state=0))),
          ("cancelling", start_selection(pb, opts)._replace(keys=keys, values=vals)))}
    chosen = start_selection(pb, opts)
    assert chosen.name == {"clustered": "cancelling", "digits": "one_hot"}[data] == min(J, key=J.get)
    if data == "digits":
        assert J["one_hot"] < 0.99 * pb.Y_sq and J["cancelling"] == pytest.approx(pb.Y_sq, rel=1e-3)
        np.testing.assert_array_equal(chosen.keys, keys1)
    res = fit_prolfa(pb, opts)
    assert res.info["start"] == chosen.name
    assert res.objective_history[0] == pytest.approx(J[chosen.name], rel=1e-12)


# ------------------------------------------------------------------------------------------------
# a given start (start=): continuation from one model's solution to another


@pytest.mark.parametrize("backend", [pytest.param("sparse", marks=pytest.mark.slow), "dense"])  # sparse: ~30 s
def test_exact_model_continued_from_the_capped_solution_starts_at_its_J_and_never_rises(backend):
    """``start=selection_start(C)``: J at the start is the capped fit's J (same C, optimal W), then J never
    rises, and the plain simplex (a superset of the capped set) ends at or below the capped fit."""
    pb = clustered_problem(seed=4)
    capped = fit_prolfa(pb, FitOptions(n_prototypes=16, random_state=1, max_support=2, tol=1e-7))
    opts = FitOptions(n_prototypes=16, random_state=1, max_support=None, backend=backend, tol=1e-7,
                         max_iter=3000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = fit_prolfa(pb, opts, start=selection_start(capped.selection, pb, "capped"))
    h = np.asarray(res.objective_history)
    assert res.info["start"] == "capped"
    assert h[0] == pytest.approx(capped.objective_history[-1], rel=1e-10)
    assert np.all(np.diff(h) <= 1e-9 * np.abs(h[:-1]))
    assert h[-1] < h[0]
    assert objective(pb, res.selection, res.projection) == pytest.approx(h[-1], rel=1e-10)
    assert (res.selection.getnnz(axis=0) > 2).any(), "the plain simplex never left the capped support"


def test_a_given_start_that_is_not_a_selection_is_refused_by_name():
    pb = clustered_problem(seed=4)
    C = to_csc(*one_hot_start(pb.n_descriptors, 8, np.random.default_rng(0)), pb.n_descriptors, 8)
    with pytest.raises(ValueError, match="'mine': C has 10 rows, the problem 480"):
        selection_start(C[:10], pb, "mine")
    half = C * 0.5
    with pytest.raises(ValueError, match="column 0 of C is not on the simplex"):
        selection_start(half, pb, "mine")
    start = selection_start(C, pb, "mine")
    with pytest.raises(ValueError, match="start 'mine' fills 8 columns up to column 7; the fit has n_prototypes=9"):
        fit_prolfa(pb, FitOptions(n_prototypes=9), start=start)


@pytest.mark.parametrize("backend", ["sparse", "dense"])
def test_exact_model_fits_record_the_frank_wolfe_gap_of_their_result(backend):
    """``info["frank_wolfe_gap"]`` (exact model only) is the gap of the returned C and W, recomputed here."""
    from lfabench_plugins.aggregators.prolfa import frank_wolfe_gap

    pb = clustered_problem(seed=6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = fit_prolfa(pb, FitOptions(n_prototypes=12, random_state=2, max_support=None, backend=backend,
                                           max_iter=40))
        capped = fit_prolfa(pb, FitOptions(n_prototypes=12, random_state=2, backend=backend, max_iter=40))
    assert res.info["frank_wolfe_gap"] == pytest.approx(frank_wolfe_gap(pb, res.selection, res.projection).sum(),
                                                        rel=1e-9)
    assert res.info["frank_wolfe_gap"] >= -1e-9       # a sum of per-column gaps, each >= 0
    assert "frank_wolfe_gap" not in capped.info


def test_r_metric_rows_in_blocks_equal_the_whole_product():
    """The start's ``X R^T`` and squared norms, block by block (a ragged last block), against one product."""
    from lfabench_plugins.aggregators.prolfa.start import _r_metric_rows

    pb = clustered_problem(seed=7)
    V = np.asarray(pb.X, dtype=np.float64) @ pb.R.T
    V32, sq = _r_metric_rows(pb, block=37)
    assert V32.dtype == np.float32 and V32.shape == V.shape
    np.testing.assert_allclose(V32, V.astype(np.float32), rtol=1e-6)
    np.testing.assert_allclose(sq, np.einsum("nd,nd->n", V, V), rtol=1e-12)
