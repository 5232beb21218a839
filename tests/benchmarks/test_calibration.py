"""The board's tests under a true null (A/A), by simulation at alpha = 0.05: at least 1,000 simulations each, in
seconds (``benchmarks/calibration.py`` gives the documented rates with more simulations)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from calibration import (SCENARIOS, bootstrap_null_misses, mcnemar_null_pvalues, sign_flip_null_pvalues,
                         ttest_null_pvalues)

N_SIMS = 1000
WINDOW = (0.03, 0.07)


def test_mcnemar_rejects_about_five_percent_of_aa_comparisons():
    rate = np.mean(mcnemar_null_pvalues(N_SIMS, seed=10) < 0.05)
    assert WINDOW[0] <= rate <= WINDOW[1], rate


def test_the_per_query_sign_flip_rejects_about_five_percent_of_aa_comparisons():
    rate = np.mean(sign_flip_null_pvalues(N_SIMS, seed=10) < 0.05)
    assert WINDOW[0] <= rate <= WINDOW[1], rate


def test_the_bootstrap_interval_misses_zero_about_five_percent_of_the_time():
    rate = np.mean(bootstrap_null_misses(N_SIMS, seed=10))
    assert WINDOW[0] <= rate <= WINDOW[1], rate


def test_the_corrected_t_does_not_exceed_alpha_for_a_randomized_method_under_two_labels():
    # the A/A of a board whose methods' codebooks follow the seed: the test is conservative there (measured
    # about 0.01, docs/leaderboard-statistics.md); it is the other null model, deterministic methods of equal
    # population accuracy, where it exceeds alpha (about 0.08)
    p = ttest_null_pvalues(N_SIMS, seed=10, scenario=SCENARIOS[0], n=150, dim=2, proj=1)
    assert np.mean(p < 0.05) <= 0.05


def test_the_corrected_t_on_independent_seed_differences_rejects_at_the_exact_shrunken_rate():
    # why it is conservative on the boards: independent differences make it the plain t shrunk by
    # sqrt((1/k) / (1/k + n_test/n_train)); 20,000 draws of 6 normal differences through the board's own test
    from calibration import randomized_aa_rate

    from lfabench.evaluation import corrected_resampled_ttest

    rng = np.random.default_rng(7)
    diffs = rng.normal(size=(20_000, 6))
    p = np.array([corrected_resampled_ttest(d, np.zeros(6), n_train=240, n_test=60).p for d in diffs])
    exact = randomized_aa_rate(k=6, test_over_train=60 / 240)
    assert exact == pytest.approx(0.00969, abs=1e-4)
    se = np.sqrt(exact * (1 - exact) / diffs.shape[0])
    assert abs(np.mean(p < 0.05) - exact) <= 3 * se
