"""Revisited Oxford/Paris scores against an independent implementation of revisitop's evaluation
(``tests/revisited_reference.py``), on hand-computed cases and random fixtures in the gnd format."""

from __future__ import annotations

import numpy as np
import pytest

from lfabench.evaluation.revisited import SETUPS, revisited_precision_at_k, revisited_scores, revisited_setup

from revisited_reference import reference_scores


def _random_gnd(rng, n_db, n_queries, empty_hard=(), empty_easy=()):
    gnd = []
    for q in range(n_queries):
        items = rng.permutation(n_db)
        n_easy = 0 if q in empty_easy else int(rng.integers(1, 6))
        n_hard = 0 if q in empty_hard else int(rng.integers(1, 6))
        n_junk = int(rng.integers(0, 5))
        gnd.append({"easy": items[:n_easy].tolist(), "hard": items[n_easy:n_easy + n_hard].tolist(),
                    "junk": items[n_easy + n_hard:n_easy + n_hard + n_junk].tolist(), "bbx": [0.0, 0.0, 9.0, 9.0]})
    return gnd


def test_the_setups_are_revisitops():
    pos, ign = revisited_setup([1, 2], [3], [4], "easy")
    assert sorted(pos) == [1, 2] and sorted(ign) == [3, 4]
    pos, ign = revisited_setup([1, 2], [3], [4], "medium")
    assert sorted(pos) == [1, 2, 3] and sorted(ign) == [4]
    pos, ign = revisited_setup([1, 2], [3], [4], "hard")
    assert sorted(pos) == [3] and sorted(ign) == [1, 2, 4]
    with pytest.raises(ValueError, match="setup"):
        revisited_setup([1], [], [], "medium+")


def test_a_hand_computed_query():
    # ranking 7 9 3 5 8; easy {3}, hard {5}, junk {9}
    ranking, g = [7, 9, 3, 5, 8], {"easy": [3], "hard": [5], "junk": [9]}
    scores = revisited_scores([ranking], [g["easy"]], [g["hard"]], [g["junk"]], ks=(1, 5))
    # easy: ignore 9 and 5 -> 7 3 8: positive at position 2 (1-based): AP = (0/1 + 1/2)/2 = 0.25;
    # P@1 = 0/1; P@5: k' = min(5, 2) = 2 -> 1/2
    assert scores["easy"]["mAP"] == pytest.approx(0.25)
    assert scores["easy"]["mP@k"] == {1: 0.0, 5: 0.5}
    # medium: ignore 9 -> 7 3 5 8: positives at 2, 3: AP = ((0 + 1/2)/2 + (1/2 + 2/3)/2) / 2 = 0.41666...
    assert scores["medium"]["mAP"] == pytest.approx((0.25 + (0.5 + 2 / 3) / 2) / 2)
    assert scores["medium"]["mP@k"][5] == pytest.approx(2 / 3)
    # hard: ignore 9 and 3 -> 7 5 8: same as easy
    assert scores["hard"]["mAP"] == pytest.approx(0.25)


def test_precision_counts_up_to_the_last_positive_only():
    assert revisited_precision_at_k([1, 2, 3, 4], [1, 2], 10) == 1.0
    assert revisited_precision_at_k([1, 9, 2, 3], [1, 2], 10) == pytest.approx(2 / 3)
    assert revisited_precision_at_k([9, 8], [1], 5) == 0.0     # a positive never ranked


@pytest.mark.parametrize("seed", range(5))
def test_scores_equal_the_independent_implementation_with_junk_and_empty_setups(seed):
    rng = np.random.default_rng(seed)
    n_db, n_queries = 60, 12
    gnd = _random_gnd(rng, n_db, n_queries, empty_hard=(2, 5), empty_easy=(7,))
    # some rankings cover only part of the database (positives never ranked), like a shortlist
    rankings = [rng.permutation(n_db)[: (n_db if q % 3 else 40)] for q in range(n_queries)]
    ours = revisited_scores(rankings, [g["easy"] for g in gnd], [g["hard"] for g in gnd],
                            [g["junk"] for g in gnd], ks=(1, 5, 10))
    ref = reference_scores(rankings, gnd)
    for setup in SETUPS:
        assert ours[setup]["mAP"] == pytest.approx(ref[setup][0], abs=1e-12)
        for k in (1, 5, 10):
            assert ours[setup]["mP@k"][k] == pytest.approx(ref[setup][1][k], abs=1e-12)
    assert ours["hard"]["n_queries"] == n_queries - 2 and ours["easy"]["n_queries"] == n_queries - 1
    assert np.isnan(ours["hard"]["ap"][2]) and np.isnan(ours["easy"]["ap"][7])


def test_a_setup_without_any_positive_is_nan():
    scores = revisited_scores([[1, 2, 3]], [[1]], [[]], [[]])
    assert np.isnan(scores["hard"]["mAP"]) and scores["hard"]["n_queries"] == 0
    assert scores["easy"]["mAP"] == 1.0
