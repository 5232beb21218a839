"""Holm, tie-aware ranks, Friedman and Nemenyi against independent references (statsmodels, scipy, Demšar 2006)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from lfabench.evaluation.multiple import friedman_test, holm, nemenyi_cd, nemenyi_q, tied_ranks


def test_holm_matches_statsmodels_and_keeps_nan_out_of_the_family():
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    rng = np.random.default_rng(0)
    for m in (1, 2, 5, 14, 28):
        p = rng.uniform(0, 0.2, m)
        p[rng.integers(0, m)] = 0.03125  # the exact Wilcoxon's floor at 6 pairs
        want = multitest.multipletests(p, alpha=0.05, method="holm")[1]
        np.testing.assert_allclose(holm(p), want, rtol=0, atol=1e-15)
    p = np.array([0.01, np.nan, 0.04, 0.03])
    got = holm(p)
    assert math.isnan(got[1])
    np.testing.assert_allclose(got[[0, 2, 3]], multitest.multipletests(p[[0, 2, 3]], method="holm")[1])


def test_holm_hand_computed():
    # sorted 0.01, 0.02, 0.04 (m = 3): 3*0.01 = 0.03, 2*0.02 = 0.04, 1*0.04 = 0.04 (monotone: max so far)
    np.testing.assert_allclose(holm([0.04, 0.01, 0.02]), [0.04, 0.03, 0.04])
    # six exact-Wilcoxon floors: none survives (6 * 0.03125 = 0.1875)
    np.testing.assert_allclose(holm([0.03125] * 6), [0.1875] * 6)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        holm([0.5, 1.5])


def test_tied_ranks_share_the_mean_rank_and_compare_fractions_exactly():
    # DM and EO-BoW on DAISY (Scene-15, 897 test images, seeds 0-5): the same 2363 correct, other per-seed counts;
    # the float means of the recorded accuracies differ in the last bit, the exact means do not
    dm, eobow = (372, 398, 397, 403, 397, 396), (392, 402, 402, 409, 385, 373)
    a, b = (sum((Fraction(c, 897) for c in counts), Fraction(0)) / 6 for counts in (dm, eobow))
    assert a == b and np.mean([100.0 * (c / 897) for c in dm]) != np.mean([100.0 * (c / 897) for c in eobow])
    np.testing.assert_array_equal(tied_ranks([Fraction(1, 2), a, b, Fraction(1, 10)]), [1.0, 2.5, 2.5, 4.0])
    np.testing.assert_array_equal(tied_ranks([3, 1, 3, 3]), [2.0, 4.0, 2.0, 2.0])
    np.testing.assert_array_equal(tied_ranks([3, 1, 2], higher_is_better=False), [3.0, 1.0, 2.0])


def _ranks(scores):
    return np.vstack([tied_ranks(row) for row in scores])


@pytest.mark.parametrize("with_ties", [False, True])
def test_friedman_matches_scipy(with_ties):
    rng = np.random.default_rng(1)
    scores = rng.integers(0, 4 if with_ties else 10**6, size=(7, 5)).astype(float)
    got = friedman_test(_ranks(scores))
    # scipy ranks each block itself (ascending); Friedman's statistic is symmetric in the direction
    want = stats.friedmanchisquare(*scores.T)
    assert got.chi2 == pytest.approx(want.statistic, rel=1e-12)
    assert got.p_chi2 == pytest.approx(want.pvalue, rel=1e-10)
    n, k = scores.shape
    assert got.f == pytest.approx((n - 1) * want.statistic / (n * (k - 1) - want.statistic), rel=1e-12)
    assert got.p_f == pytest.approx(stats.f.sf(got.f, k - 1, (k - 1) * (n - 1)), rel=1e-10)


def test_friedman_hand_computed():
    # S = (2, 5, 5): 12 / (2*3*4) * (4 + 25 + 25) - 3*2*4 = 3; F_F = 1 * 3 / (2*2 - 3) = 3 on (2, 2) df,
    # whose survival function is 1 / (1 + x); chi-square with 2 df: exp(-x / 2)
    r = friedman_test([[1, 2, 3], [1, 3, 2]])
    assert (r.chi2, r.f) == pytest.approx((3.0, 3.0))
    assert r.p_f == pytest.approx(0.25)
    assert r.p_chi2 == pytest.approx(math.exp(-1.5))
    np.testing.assert_allclose(r.mean_ranks, [1.0, 2.5, 2.5])
    perfect = friedman_test([[1, 2, 3], [1, 2, 3]])  # chi2 = N (k - 1): F_F is infinite
    assert perfect.chi2 == pytest.approx(4.0) and math.isinf(perfect.f) and perfect.p_f == 0.0
    with pytest.raises(ValueError, match="ranking of 1..k"):
        friedman_test([[1, 2, 2], [1, 2, 3]])
    with pytest.raises(ValueError, match="tasks >= 2"):
        friedman_test([[1, 2, 3]])


def test_nemenyi_q_and_cd_against_demsar_and_the_studentized_range():
    demsar_table_5a = {2: 1.960, 3: 2.343, 4: 2.569, 5: 2.728, 6: 2.850, 7: 2.949, 8: 3.031, 9: 3.102, 10: 3.164}
    for k, q in demsar_table_5a.items():
        assert nemenyi_q(k) == pytest.approx(q, abs=1.5e-3)  # the table's three decimals
        assert nemenyi_q(k) == pytest.approx(stats.studentized_range.ppf(0.95, k, np.inf) / math.sqrt(2), rel=1e-9)
    assert nemenyi_q(4, alpha=0.10) == pytest.approx(2.291, abs=1.5e-3)  # Table 5a, alpha = 0.10
    # Demšar's worked example (Sec. 3.2.4): k = 4 methods on N = 14 data sets, CD = 2.569 sqrt(4*5/(6*14)) = 1.25
    assert nemenyi_cd(4, 14) == pytest.approx(1.25, abs=5e-3)
    with pytest.raises(ValueError, match="at least 2"):
        nemenyi_q(1)
