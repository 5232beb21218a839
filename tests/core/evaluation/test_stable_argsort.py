"""``stable_argsort_rows`` (rank_database's sort) equals NumPy's stable argsort, ties, signed zeros, inf and NaN."""

from __future__ import annotations

import numpy as np
import pytest

from lfabench.evaluation.search import rank_database, rank_database_blocks, stable_argsort_rows


@pytest.mark.parametrize("seed", range(5))
def test_equals_numpy_stable_argsort_with_ties_zeros_inf_and_nan(seed):
    rng = np.random.default_rng(seed)
    keys = rng.integers(-4, 5, size=(40, 300)).astype(np.float32) / 2     # many ties, negatives
    keys[rng.random(keys.shape) < 0.1] = -0.0                               # -0.0 ties with +0.0
    keys[rng.random(keys.shape) < 0.05] = np.inf
    keys[rng.random(keys.shape) < 0.05] = -np.inf
    keys[rng.random(keys.shape) < 0.05] = np.nan                            # last, in column order
    keys[rng.random(keys.shape) < 0.02] = -np.float32(np.nan)               # a NaN with its sign bit set
    keys[rng.random(keys.shape) < 0.05] = np.float32(1e-45)                 # subnormals
    keys[0] = rng.standard_normal(300).astype(np.float32)                   # one row without ties
    expected = np.argsort(keys, axis=1, kind="stable")
    out = stable_argsort_rows(keys)
    assert out.dtype == np.int64 and out.shape == keys.shape and np.array_equal(out, expected)
    assert not np.isnan(keys[0]).any() and not np.array_equal(out[0], np.arange(300))


def test_input_is_not_changed_and_only_float32_matrices_are_taken():
    keys = np.array([[-0.0, 0.0, np.nan, -1.0]], dtype=np.float32)
    before = keys.copy()
    assert stable_argsort_rows(keys).tolist() == [[3, 0, 1, 2]]
    assert np.array_equal(keys.view(np.uint32), before.view(np.uint32))
    with pytest.raises(TypeError, match="2-D float32"):
        stable_argsort_rows(keys.astype(np.float64))


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_rank_database_is_a_stable_sort_of_the_faiss_distances(metric):
    """Small-integer vectors with zero rows: equal distances everywhere (cosine ranks by negated inner products,
    so its zero similarities are -0.0)."""
    import faiss

    from lfabench.evaluation import fit_metric_space

    rng = np.random.default_rng(0)
    db = rng.integers(-1, 2, size=(300, 3)).astype(np.float32)
    queries = rng.integers(-1, 2, size=(30, 3)).astype(np.float32)
    space = fit_metric_space(db, metric)
    D = faiss.pairwise_distances(space.transform(queries), space.transform(db), space.faiss_metric)
    key = -D if metric == "cosine" else D
    assert (np.unique(key, return_counts=True)[1] > 1).any()              # ties to break
    expected = np.argsort(key, axis=1, kind="stable")
    assert np.array_equal(rank_database(db, queries, metric, chunk=7), expected)
    blocks = rank_database_blocks(db, queries, metric, chunk=7)
    assert blocks.n_queries == 30 and [b.shape for b in blocks] == [(7, 300)] * 4 + [(2, 300)]
    assert np.array_equal(np.vstack(list(rank_database_blocks(db, queries, metric, chunk=7))), expected)
    assert rank_database(db, queries[:0], metric).shape == (0, 300)


def test_rank_database_blocks_checks_the_input_before_the_first_block():
    with pytest.raises(ValueError, match="query_X has 2 columns but database_X has 3"):
        rank_database_blocks(np.eye(3), np.ones((4, 2)))
