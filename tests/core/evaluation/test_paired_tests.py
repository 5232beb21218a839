"""The paired tests with power, each against an independent reference: scipy's t-test and t quantiles, statsmodels'
McNemar, an exact enumeration of every sign vector, scipy's bootstrap, and the evaluator's own per-query scorer."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from lfabench.evaluation import (bootstrap_mean_ci, corrected_resampled_ttest, mcnemar_exact_p,
                                 per_query_scores_from_places, scores_from_places, sign_flip_pvalues)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_corrected_t_is_the_paired_t_with_the_variance_inflated_by_n_test_over_n_train(seed):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(50, 2, 6), rng.normal(49, 2, 6)
    k, n_train, n_test = 6, 3588, 897
    got = corrected_resampled_ttest(a, b, n_train, n_test)
    # Nadeau & Bengio: t = mean(d) / sqrt((1/k + n_test/n_train) var(d)); the plain paired t has 1/k alone
    plain = stats.ttest_rel(a, b)
    factor = math.sqrt((1 / k) / (1 / k + n_test / n_train))
    assert got.statistic == pytest.approx(plain.statistic * factor, rel=1e-12)
    assert got.p == pytest.approx(2 * stats.t.sf(abs(plain.statistic * factor), k - 1), rel=1e-12)
    d = a - b
    half = stats.t.ppf(0.975, k - 1) * math.sqrt((1 / k + n_test / n_train) * d.var(ddof=1))
    assert (got.ci_low, got.ci_high) == pytest.approx((d.mean() - half, d.mean() + half), rel=1e-12)
    assert got.diff == pytest.approx(d.mean()) and got.n == 6


def test_without_the_correction_it_is_scipys_paired_t_test_and_interval():
    a = np.array([43.1, 42.0, 44.5, 43.9, 42.2, 44.0])
    b = np.array([34.0, 35.2, 33.1, 35.5, 34.9, 34.4])
    got = corrected_resampled_ttest(a, b, n_train=10 ** 12, n_test=1)  # n_test/n_train -> 0
    want = stats.ttest_rel(a, b)
    ci = want.confidence_interval(0.95)
    assert got.p == pytest.approx(want.pvalue, rel=1e-6)
    assert (got.ci_low, got.ci_high) == pytest.approx((ci.low, ci.high), rel=1e-6)


def test_the_corrected_t_never_rejects_more_than_the_plain_t():
    rng = np.random.default_rng(3)
    for _ in range(50):
        a, b = rng.normal(0, 1, 6), rng.normal(0.5, 1, 6)
        assert corrected_resampled_ttest(a, b, 80, 20).p >= stats.ttest_rel(a, b).pvalue


def test_degenerate_differences():
    assert corrected_resampled_ttest([1.0, 2.0], [1.0, 2.0], 8, 2).p == 1.0  # every difference 0
    assert corrected_resampled_ttest([2.0, 3.0], [1.0, 2.0], 8, 2).p == 0.0  # every difference 1: infinite t
    assert math.isnan(corrected_resampled_ttest([2.0], [1.0], 8, 2).p)       # one pair: no variance
    with pytest.raises(ValueError):
        corrected_resampled_ttest([1.0, 2.0], [1.0], 8, 2)


@pytest.mark.parametrize(("n10", "n01"), [(793, 646), (957, 487), (5, 1), (0, 0), (10, 10), (0, 7), (3, 40)])
def test_mcnemar_is_statsmodels_exact_mcnemar(n10, n01):
    from statsmodels.stats.contingency_tables import mcnemar

    want = 1.0 if n10 + n01 == 0 else mcnemar([[100, n10], [n01, 100]], exact=True).pvalue
    assert mcnemar_exact_p(n10, n01) == pytest.approx(want, rel=1e-9)


def test_stratified_mcnemar_pools_the_discordant_counts_of_every_split():
    # conditional on each split's discordant total, each goes either way with probability 1/2: the pooled count
    # is binomial(total, 1/2), the exact binomial test of scipy
    n10, n01 = np.array([130, 140, 120, 135, 128, 140]), np.array([100, 110, 105, 99, 120, 112])
    want = stats.binomtest(int(n10.sum()), int(n10.sum() + n01.sum()), 0.5).pvalue
    assert mcnemar_exact_p(n10, n01) == pytest.approx(want, rel=1e-9)


def _exact_sign_flip_p(x: np.ndarray) -> float:
    """Every one of the 2**n sign vectors: the exact two-sided p of the randomization test."""
    observed = abs(x.sum())
    flips = np.array(list(itertools.product([-1.0, 1.0], repeat=x.size)))
    return float(np.mean(np.abs(flips @ x) >= observed - 1e-12))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_sign_flip_p_converges_to_the_exact_enumeration(seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(0.4, 1.0, 12)
    exact = _exact_sign_flip_p(x)
    got = sign_flip_pvalues(x, n_permutations=40_000, seed=seed)[0]
    assert abs(got - exact) < 4 * math.sqrt(exact * (1 - exact) / 40_000) + 1 / 40_001


def test_sign_flip_agrees_with_scipys_permutation_test():
    rng = np.random.default_rng(7)
    a, b = rng.normal(0.6, 0.2, 15), rng.normal(0.55, 0.2, 15)
    ref = stats.permutation_test((a, b), lambda x, y, axis: np.mean(x - y, axis=axis), permutation_type="samples",
                                 n_resamples=np.inf).pvalue  # all 2**15 pairings: exact
    got = sign_flip_pvalues(a - b, n_permutations=40_000, seed=1)[0]
    assert abs(got - ref) < 4 * math.sqrt(ref * (1 - ref) / 40_000) + 1 / 40_001


def test_sign_flip_columns_are_separate_tests_and_the_draw_is_fixed():
    rng = np.random.default_rng(0)
    x = np.column_stack([rng.normal(0, 1, 50), rng.normal(2, 1, 50), np.zeros(50)])
    p = sign_flip_pvalues(x, n_permutations=999, seed=5)
    assert p[1] == 1 / 1000 and p[2] == 1.0 and 0.001 < p[0] <= 1.0
    assert np.array_equal(p, sign_flip_pvalues(x, n_permutations=999, seed=5))  # a rebuild: the same p
    assert p[0] == sign_flip_pvalues(x[:, 0], n_permutations=999, seed=5)[0]


def test_bootstrap_interval_matches_scipys_percentile_bootstrap():
    rng = np.random.default_rng(11)
    d = rng.exponential(1.0, 400) - 0.8
    low, high = bootstrap_mean_ci(d, n_resamples=20_000, seed=3)
    ref = stats.bootstrap((d,), np.mean, n_resamples=20_000, method="percentile", random_state=4).confidence_interval
    se = d.std(ddof=1) / math.sqrt(d.size)
    assert abs(low[0] - ref.low) < 0.1 * se and abs(high[0] - ref.high) < 0.1 * se


def test_bootstrap_of_query_sums_is_the_mean_over_every_seed_and_query():
    rng = np.random.default_rng(2)
    per_seed = rng.normal(1.0, 3.0, (6, 300))  # (seeds, queries)
    low, high = bootstrap_mean_ci(per_seed.sum(axis=0), np.full(300, 6.0), n_resamples=4000, seed=0)
    assert low[0] < per_seed.mean() < high[0]
    # resampling whole queries: the interval of the mean of query means, scipy's percentile bootstrap
    ref = stats.bootstrap((per_seed.mean(axis=0),), np.mean, n_resamples=4000, method="percentile",
                          random_state=1).confidence_interval
    assert low[0] == pytest.approx(ref.low, abs=0.05) and high[0] == pytest.approx(ref.high, abs=0.05)


def _random_places(rng, n_queries=40, n_db=60):
    """Per query: positive and junk ids with their places in one random ranking (some not ranked, some shared)."""
    pos, pos_at, junk, junk_at = [], [], [], []
    for _ in range(n_queries):
        ranking = rng.permutation(n_db)[:rng.integers(10, n_db)]
        p = rng.choice(n_db, rng.integers(1, 6), replace=False)
        j = rng.choice(n_db, rng.integers(0, 4), replace=False)
        place = {int(v): i for i, v in enumerate(ranking)}
        pos.append(p), junk.append(j)
        pos_at.append(np.array([place.get(int(v), -1) for v in p])), junk_at.append(np.array([place.get(int(v), -1)
                                                                                             for v in j]))
    return pos, pos_at, junk, junk_at


def _flat(lists):
    off = np.concatenate([[0], np.cumsum([len(v) for v in lists])])
    return (np.concatenate(lists).astype(np.int64) if lists else np.empty(0, np.int64)), off


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_per_query_scores_are_the_evaluators_scores_of_every_query(seed):
    rng = np.random.default_rng(seed)
    pos, pos_at, junk, junk_at = _random_places(rng)
    zero = rng.random(len(pos)) < 0.1
    (p, po), (pa, _), (j, jo), (ja, _) = _flat(pos), _flat(pos_at), _flat(junk), _flat(junk_at)
    ap, at_k = per_query_scores_from_places(p, po, pa, j, jo, ja, zero, ks=[1, 5, 10])
    for q in range(len(pos)):
        want_ap, want_k = (0.0, [0.0] * 3) if zero[q] else scores_from_places(pos[q], pos_at[q], junk[q], junk_at[q],
                                                                             [1, 5, 10])
        assert ap[q] == pytest.approx(want_ap, rel=1e-12, abs=1e-15)
        assert [at_k[k][q] for k in (1, 5, 10)] == pytest.approx(want_k)


@pytest.mark.parametrize("seed", [0, 1])
def test_paired_t_over_seeds_is_scipys_ttest_rel(seed):
    from lfabench.evaluation import paired_t_p

    rng = np.random.default_rng(seed)
    a, b = rng.normal(92.7, 0.1, 6), rng.normal(92.3, 0.2, 6)
    assert paired_t_p(a, b) == pytest.approx(stats.ttest_rel(a, b).pvalue, rel=1e-12)
    assert paired_t_p([1.0, 2.0], [1.0, 2.0]) == 1.0 and math.isnan(paired_t_p([1.0], [0.0]))


def test_two_way_bootstrap_resamples_seeds_and_queries_together():
    from lfabench.evaluation import two_way_bootstrap_ci

    rng = np.random.default_rng(4)
    d = rng.normal(0.5, 0.3, (6, 1)) + rng.normal(0.0, 2.0, (1, 500)) + rng.normal(0.0, 1.0, (6, 500))
    low, high = two_way_bootstrap_ci(d, n_resamples=4000, seed=0)
    ref = np.random.default_rng(9)
    means = [d[ref.integers(0, 6, 6)][:, ref.integers(0, 500, 500)].mean() for _ in range(4000)]
    want_low, want_high = np.quantile(means, [0.025, 0.975])
    width = want_high - want_low
    assert abs(low - want_low) < 0.1 * width and abs(high - want_high) < 0.1 * width
    # wider than the bootstrap over queries alone, which ignores the seeds' (fits') variation
    q_low, q_high = bootstrap_mean_ci(d.sum(axis=0), np.full(500, 6.0), n_resamples=4000, seed=0)
    assert high - low > q_high[0] - q_low[0]
