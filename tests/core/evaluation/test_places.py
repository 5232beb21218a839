"""A ranking known by counts (:func:`query_places`) against the full stable sort it replaces."""

from __future__ import annotations

import numpy as np
import pytest

from lfabench.evaluation import query_places, query_places_by_sort, rank_database, ranking_key_blocks


def reference(keys, columns, head, excluded=-1, last=None):
    """The evaluator's earlier ranking, written out: NumPy's stable argsort, the excluded column removed, the
    ``last`` columns moved to the end in their order; places by the inverse permutation."""
    order = np.argsort(keys, kind="stable")
    order = order[order != excluded]
    if last is not None:
        mask = np.zeros(keys.size, bool)
        mask[last] = True
        order = np.concatenate([order[~mask[order]], order[mask[order]]])
    place = np.full(keys.size, -1)
    place[order] = np.arange(order.size)
    return place[columns], order[:head]


def rows(seed: int, n: int):
    """Rows with many ties (few distinct values), signed zeros, and plain random floats."""
    rng = np.random.default_rng(seed)
    yield rng.integers(0, 5, n).astype(np.float32)
    signed = rng.integers(-1, 2, n).astype(np.float32) * np.float32(0.0)       # -0.0, 0.0 mixed: all tie
    yield signed
    yield rng.standard_normal(n).astype(np.float32)
    yield np.full(n, 3.0, dtype=np.float32)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("n", [1, 2, 7, 50, 400])
def test_places_and_head_equal_the_stable_sort(seed, n):
    rng = np.random.default_rng(100 + seed)
    for keys in rows(seed, n):
        columns = rng.integers(0, n, min(n, 20))             # repeats allowed; 20: counted, not sorted
        for head in (0, 1, 3, n, n + 5):
            for excluded in (-1, int(rng.integers(0, n))):
                for last in (None, np.flatnonzero(rng.random(n) < 0.1), np.arange(n)):
                    expected = reference(keys, columns, head, excluded, last)
                    got = query_places(keys, columns, head, excluded, last)
                    assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1]), \
                        (keys, columns, head, excluded, last)
                    by_sort = query_places_by_sort(keys, columns, head, excluded, last)
                    assert np.array_equal(by_sort[0], expected[0]) and np.array_equal(by_sort[1], expected[1])


def test_a_tie_across_the_heads_cut_keeps_the_lower_columns():
    keys = np.array([5, 1, 1, 1, 0, 1], dtype=np.float32)                # head of 3 cuts the group of 1s
    places, head = query_places(keys, np.arange(6), 3)
    assert head.tolist() == [4, 1, 2] and places.tolist() == [5, 1, 2, 3, 0, 4]


def test_rows_with_nan_take_the_sorts_nan_last_rule():
    keys = np.array([np.nan, 1.0, np.nan, 0.0, np.inf], dtype=np.float32)
    places, head = query_places(keys, np.arange(5), 5)
    assert head.tolist() == [3, 1, 4, 0, 2] and places.tolist() == [3, 1, 4, 0, 2]


@pytest.mark.parametrize("values", [50, 100_000])
def test_long_rows_are_counted_without_the_sort(monkeypatch, values):
    # a database row of 20,000 keys (ties galore with 50 distinct values), a few images ranked last: the counting
    # path alone (the sort would raise here) gives the reference's places and head
    import lfabench.evaluation.places as places_module

    def no_sort(*args):
        raise AssertionError("the row was sorted")

    monkeypatch.setattr(places_module, "query_places_by_sort", no_sort)
    rng = np.random.default_rng(7)
    keys = rng.integers(0, values, 20_000).astype(np.float32)
    columns = rng.permutation(20_000)[:40]
    last = np.union1d(rng.permutation(20_000)[:40], columns[:5])          # some wanted columns are last
    for excluded in (-1, int(columns[3]), int(columns[7])):
        for head in (0, 10, 200):
            expected = reference(keys, columns, head, excluded=excluded, last=last)
            got = query_places(keys, columns, head, excluded=excluded, last=last)
            assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])


def test_a_query_with_many_items_is_ranked_by_the_sort_with_the_same_answer():
    rng = np.random.default_rng(9)
    keys = rng.integers(0, 30, 3000).astype(np.float32)
    columns = rng.permutation(3000)[:500]                                  # Oxford-like: hundreds of positives
    last = np.flatnonzero(rng.random(3000) < 0.005)
    expected = reference(keys, columns, 40, excluded=int(columns[1]), last=last)
    got = query_places(keys, columns, 40, excluded=int(columns[1]), last=last)
    assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_ranking_key_blocks_are_what_rank_database_sorts(metric):
    rng = np.random.default_rng(3)
    db = rng.integers(0, 3, (300, 4)).astype(np.float32)                  # many equal distances
    queries = rng.integers(0, 3, (20, 4)).astype(np.float32)
    order = rank_database(db, queries, metric, chunk=7)
    keys = np.vstack(list(ranking_key_blocks(db, queries, metric, chunk=7)))
    for q in range(queries.shape[0]):
        places, head = query_places(keys[q], np.arange(db.shape[0]), db.shape[0])
        assert np.array_equal(head, order[q]) and np.array_equal(places[order[q]], np.arange(db.shape[0]))
