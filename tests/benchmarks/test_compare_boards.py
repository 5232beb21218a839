"""``benchmarks/compare_boards.py``: two regenerations of a board paired by method and seed, against hand-computed
differences and scipy's Wilcoxon test."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest
from scipy.stats import wilcoxon

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from compare_boards import base_name, paired


def _runs(rows):
    return pd.DataFrame([dict(dataset="s", descriptor=d, evaluator="knn", metric="accuracy", aggregator=a, seed=s,
                              value=v) for d, a, s, v in rows])


@pytest.mark.parametrize(("label", "name"), [("t1[max_iter=50]", "t1"), ("prolfa_d4096", "prolfa"),
                                             ("prolfa[n_prototypes=4096]", "prolfa"), ("fv_nn", "fv_nn"),
                                             ("semi_prolfa_d2048", "semi_prolfa")])
def test_a_method_is_matched_by_its_name_without_settings(label, name):
    assert base_name(label) == name


def test_paired_differences_over_the_shared_seeds():
    old = _runs([("sift", "t1[max_iter=50]", s, v) for s, v in enumerate([10.0, 20.0, 30.0, 40.0])]
                + [("sift", "bow", 0, 50.0), ("daisy", "t1[max_iter=50]", 0, 1.0)])
    new = _runs([("sift", "t1", s, v) for s, v in enumerate([20.0, 20.0, 25.0, 60.0, 99.0])]  # seed 4: not in old
                + [("sift", "vlad", 0, 50.0)])                                                   # not in old
    table = paired(old, new, n_test=200)
    assert len(table) == 1
    row = table.iloc[0]
    assert (row.descriptor, row.method, row.old_setting, row.new_setting) == ("sift", "t1", "t1[max_iter=50]", "t1")
    assert row.seeds == 4
    assert row.old_mean == pytest.approx(25.0) and row.new_mean == pytest.approx(31.25)
    assert row.per_seed == "+20 +0 -10 +40"           # percentage points x 200 test samples / 100
    assert (row.wins, row.ties, row.losses) == (2, 1, 1)
    assert row.p_wilcoxon == pytest.approx(wilcoxon([10.0, -5.0, 20.0], method="exact").pvalue)
