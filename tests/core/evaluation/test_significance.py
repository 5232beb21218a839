"""Paired exact Wilcoxon p-values: scipy, brute-force enumeration of sign flips, hand values."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.stats import rankdata, wilcoxon

from lfabench.evaluation import compare_to_best, paired_wilcoxon_p


def brute_force_p(a, b):
    """Two-sided exact p by enumerating all 2^n sign assignments of the ranks (no ties), zeros dropped."""
    d = np.asarray(a, float) - np.asarray(b, float)
    d = d[d != 0]
    ranks = rankdata(np.abs(d))
    t_obs = ranks[d > 0].sum()
    null = np.array([sum(r for r, s in zip(ranks, signs) if s) for signs in itertools.product([0, 1], repeat=d.size)])
    return min(1.0, 2 * min(np.mean(null <= t_obs), np.mean(null >= t_obs)))


def test_hand_values():
    a = np.array([80.0, 81, 82, 83, 84, 85])
    assert paired_wilcoxon_p(a + 1, a) == 2 / 64                    # n = 6, all one way: the smallest p
    assert paired_wilcoxon_p(a + [0, 2, 3, 4, 5, 6], a) == 2 / 32   # a zero difference drops n to 5
    assert paired_wilcoxon_p(a, a) == 1.0                           # every difference zero
    assert np.isnan(paired_wilcoxon_p([], []))


def test_equals_brute_force_and_scipy():
    rng = np.random.default_rng(0)
    for _ in range(100):
        n = int(rng.integers(1, 9))
        a = rng.normal(size=n)
        b = a + rng.normal(loc=rng.normal(), size=n)
        if rng.random() < 0.3:
            b[0] = a[0]                                              # a zero difference
        p = paired_wilcoxon_p(a, b)
        assert p == pytest.approx(brute_force_p(a, b), abs=1e-12)
        if np.any(a != b):
            assert p == wilcoxon(a, b, alternative="two-sided", method="exact").pvalue


def test_tied_differences_equal_scipy():
    a = np.array([70.0, 71.0, 72.0, 73.0, 74.0, 75.0])
    b = a - np.array([1.0, 1.0, 2.0, -2.0, 3.0, 0.0])
    assert paired_wilcoxon_p(a, b) == wilcoxon(a, b, alternative="two-sided", method="exact").pvalue


def test_compare_to_best_pairs_by_shared_seeds():
    rows = [("A", s, 80.0 + s) for s in range(6)] + [("B", s, 70.0 + s) for s in range(6)]
    rows += [("C", s, 75.0) for s in (0, 1, 9)] + [("A", 0, 82.0)]           # A seed 0 run twice: averaged
    table = compare_to_best(pd.DataFrame(rows, columns=["method", "seed", "value"])).set_index("method")
    assert list(table.index) == ["A", "C", "B"] and table.loc["A", "best"]
    assert np.isnan(table.loc["A", "p_vs_best"])
    assert table.loc["A", "mean"] == pytest.approx(np.mean([81.0, 81, 82, 83, 84, 85]))
    assert table.loc["B", "p_vs_best"] == 2 / 64 and table.loc["B", "n_pairs"] == 6
    a_scores = [81.0, 81.0]                                                   # seeds 0, 1 (seed 9: A has none)
    assert table.loc["C", "n_pairs"] == 2
    assert table.loc["C", "p_vs_best"] == wilcoxon([75.0, 75.0], a_scores, method="exact").pvalue
    assert table.loc["C", "std"] == 0.0 and table.loc["C", "n_seeds"] == 3


def test_unequal_lengths_rejected():
    with pytest.raises(ValueError, match="equal length"):
        paired_wilcoxon_p([1.0, 2.0], [1.0])
