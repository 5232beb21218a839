"""Retrieval metrics against a direct port of Oxford's compute_ap.cpp and hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from lfabench.evaluation import average_precision, mean_average_precision, precision_at_k


def compute_ap_cpp(pos, amb, ranked_list):
    """Line-by-line port of compute_ap() in the Oxford Buildings' compute_ap.cpp (double precision)."""
    pos, amb = set(pos), set(amb)
    old_recall, old_precision, ap = 0.0, 1.0, 0.0
    intersect_size, j = 0, 0
    for item in ranked_list:
        if item in amb:
            continue
        if item in pos:
            intersect_size += 1
        recall = intersect_size / float(len(pos))
        precision = intersect_size / (j + 1.0)
        ap += (recall - old_recall) * ((old_precision + precision) / 2.0)
        old_recall, old_precision = recall, precision
        j += 1
    return ap


def test_hand_computed_values():
    # ranks 1 and 3 relevant of 2: 1/2 * (1 + 1)/2 + 1/2 * (1/2 + 2/3)/2 = 19/24
    assert average_precision([1, 2, 3], [1, 3]) == pytest.approx(19 / 24, abs=1e-15)
    # junk at rank 2 is skipped entirely: the same list as [a, b] -> perfect
    assert average_precision(["a", "j", "b"], ["a", "b"], junk_ids=["j"]) == 1.0
    # one positive at rank 2 (after a negative): 1 * (1/2 + 0/1... ) -> (0 + 1/2)/2 = 1/4
    assert average_precision([5, 4], [4]) == pytest.approx(0.25)
    # a junk item before it does not advance the rank: back to 1
    assert average_precision([9, 4], [4], junk_ids=[9]) == 1.0
    # a positive never ranked keeps recall at 1/2: 1/2 * (1 + 1)/2 = 1/2
    assert average_precision([1, 2], [1, 99]) == pytest.approx(0.5)
    assert average_precision([1, 2], [7]) == 0.0


def test_equals_compute_ap_port_on_random_rankings_with_junk():
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(1, 60))
        ranking = rng.permutation(1000)[:n]
        pool = np.concatenate([ranking, rng.integers(1000, 1100, size=5)])   # some positives never ranked
        pos = rng.choice(pool, size=int(rng.integers(1, min(pool.size, 15) + 1)), replace=False)
        junk = rng.choice(ranking, size=int(rng.integers(0, n + 1)), replace=False)
        expected = compute_ap_cpp(pos.tolist(), junk.tolist(), ranking.tolist())
        assert average_precision(ranking, pos, junk) == pytest.approx(expected, abs=1e-12)


def test_positive_listed_as_junk_is_skipped_as_in_the_cpp():
    # compute_ap.cpp tests junk first: such an item never counts, but pos.size() still includes it
    assert average_precision([1, 2], [1, 2], junk_ids=[2]) == pytest.approx(compute_ap_cpp([1, 2], [2], [1, 2]))
    assert average_precision([1, 2], [1, 2], junk_ids=[2]) == pytest.approx(0.5)


def test_mean_average_precision_and_precision_at_k():
    rankings = [[1, 2, 3, 4], [4, 3, 2, 1]]
    positives = [[1, 3], [1]]
    junk = [[], [3]]
    aps = [19 / 24, compute_ap_cpp([1], [3], [4, 3, 2, 1])]
    assert mean_average_precision(rankings, positives, junk) == pytest.approx(np.mean(aps))
    assert precision_at_k([1, 2, 3, 4], [1, 3], k=2) == 0.5
    assert precision_at_k([9, 1, 2, 3], [1, 3], k=2, junk_ids=[9]) == 0.5   # junk skipped
    assert precision_at_k([1, 3], [1, 3], k=5) == pytest.approx(0.4)           # missing places are misses


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="no positives"):
        average_precision([1, 2], [])
    with pytest.raises(ValueError, match="duplicates"):
        average_precision([1, 2, 1], [1])
    with pytest.raises(ValueError, match="query 1"):
        mean_average_precision([[1], [2]], [[1], []])
    with pytest.raises(ValueError, match="k >= 1"):
        precision_at_k([1], [1], k=0)


# --------------------------------------------------------------- scores from places
def _random_ranking(rng, n=60):
    """A ranking of ``n`` of 80 ids with positives (some unranked, one listed twice, some also junk) and junk."""
    ranked = rng.permutation(80)[:n]
    positives = rng.choice(80, int(rng.integers(1, 8)), replace=False)
    positives = np.concatenate([positives, positives[:1]])          # a duplicate counts once
    junk = rng.choice(80, int(rng.integers(0, 10)), replace=False)
    if rng.random() < 0.5:
        junk = np.concatenate([junk, positives[1:2], junk[:1]])      # a positive that is junk; a duplicate junk id
    return ranked, positives, junk


@pytest.mark.parametrize("seed", range(200))
def test_scores_from_places_equal_the_ranked_list_functions_bit_for_bit(seed):
    from lfabench.evaluation import ranks_of, scores_from_places

    rng = np.random.default_rng(seed)
    ranked, positives, junk = _random_ranking(rng, n=int(rng.integers(0, 80)))
    ks = (1, 3, 10, 100)
    ap, at_k = scores_from_places(positives, ranks_of(ranked, positives), junk, ranks_of(ranked, junk), ks)
    if ranked.size:
        assert ap == average_precision(ranked, positives, junk)          # ==: the same float64 operations
        assert ap == pytest.approx(compute_ap_cpp(set(positives), set(junk), ranked.tolist()), abs=1e-12)
        assert at_k == [precision_at_k(ranked, positives, k, junk) for k in ks]
    else:
        assert ap == 0.0 and at_k == [0.0] * len(ks)


def test_scores_from_places_by_hand_and_bad_input():
    from lfabench.evaluation import scores_from_places

    # ranking p j x p (p: positives 10 and 11, j junk): kept ranks 0 and 2: (1 + 1)/2/2 + (1/2 + 2/3)/2/2
    ap, (p1, p2) = scores_from_places([10, 11, 12], [0, 3, -1], [20], [1], (1, 2))
    assert ap == pytest.approx((1.0 + (0.5 + 2 / 3) / 2) / 3) and (p1, p2) == (1.0, 0.5)
    # a positive that is also junk is junk: skipped, but still counted in the number of positives
    assert scores_from_places([10, 11], [0, 1], [11], [1])[0] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="at least one positive"):
        scores_from_places([], [], [20], [1])
    with pytest.raises(ValueError, match="one place per id"):
        scores_from_places([10, 11], [0], [], [])
    with pytest.raises(ValueError, match="k >= 1"):
        scores_from_places([10], [0], ks=(0,))
