"""ProLFA's starting selection: the seeded one-hot start, and a given start (continuation)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from prolfa_problems import clustered_problem
from sklearn.exceptions import ConvergenceWarning

from lfabench_plugins.aggregators.prolfa import FitOptions, fit_prolfa, objective
from lfabench_plugins.aggregators.prolfa.result import one_hot_start
from lfabench_plugins.aggregators.prolfa.sparsecols import split_keys, to_csc
from lfabench_plugins.aggregators.prolfa.start import selection_start, start_selection


def test_the_seeded_start_is_one_hot_on_distinct_rows_and_follows_the_seed():
    pb = clustered_problem(seed=2)
    opts = FitOptions(n_prototypes=24, random_state=5)
    st = start_selection(pb, opts)
    rows, cols = split_keys(st.keys, pb.n_descriptors)
    assert st.name == "one_hot" and np.all(st.values == 1.0)
    np.testing.assert_array_equal(cols, np.arange(24))
    assert np.unique(rows).size == 24
    keys, _ = one_hot_start(pb.n_descriptors, 24, np.random.default_rng(5))
    np.testing.assert_array_equal(st.keys, keys)


# ------------------------------------------------------------------------------------------------
# a given start (start=): continuation from one model's solution to another


def test_exact_model_continued_from_the_capped_solution_starts_at_its_J_and_never_rises():
    """``start=selection_start(C)``: J at the start is the capped fit's J (same C, optimal W), then J never
    rises, and the plain simplex (a superset of the capped set) ends at or below the capped fit."""
    pb = clustered_problem(seed=4)
    capped = fit_prolfa(pb, FitOptions(n_prototypes=16, random_state=1, max_support=2, tol=1e-7))
    # 50 outer iterations leave the capped support and lower J well below the start (the assertions below); more
    # only approach the exact model's optimum, which this test does not check, at 0.1-0.2 s an iteration
    opts = FitOptions(n_prototypes=16, random_state=1, max_support=None, gap_tol=1e-7, max_iter=50)
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


def test_exact_model_fits_record_the_frank_wolfe_gap_of_their_result():
    """``info["frank_wolfe_gap"]`` (exact model only) is the gap of the returned C and W, recomputed here."""
    from lfabench_plugins.aggregators.prolfa import frank_wolfe_gap

    pb = clustered_problem(seed=6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = fit_prolfa(pb, FitOptions(n_prototypes=12, random_state=2, max_support=None, max_iter=40))
        capped = fit_prolfa(pb, FitOptions(n_prototypes=12, random_state=2, max_iter=40))
    assert res.info["frank_wolfe_gap"] == pytest.approx(frank_wolfe_gap(pb, res.selection, res.projection).sum(),
                                                        rel=1e-9)
    assert res.info["frank_wolfe_gap"] >= -1e-9       # a sum of per-column gaps, each >= 0
    assert "frank_wolfe_gap" not in capped.info
