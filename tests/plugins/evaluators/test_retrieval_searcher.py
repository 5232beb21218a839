"""The retrieval evaluator scores a searcher (a method that indexes the database and searches it itself) with the
code it scores vectors with: the same places, tie rule, junk, query removal, empty-sample rules, metrics and
predictions, and ``lfabench verify``'s recomputation gives the same metrics back."""

from __future__ import annotations

import numpy as np
import pytest

from lfabench.bags import Bags
from lfabench.dataset import Dataset, RetrievalGroundTruth
from lfabench.evaluation import recompute_metrics
from lfabench.sdk import Searcher
from lfabench_plugins.evaluators.retrieval import Retrieval

from searcher_helpers import MeanPool, NegativeDistances


def _dataset(rng, exclude_query: bool, separate_queries: bool, n: int = 60, dim: int = 6) -> Dataset:
    """Random bags in 6 groups, a few of them empty (database and query), with junk and ties (duplicated
    samples). ``separate_queries``: the queries are outside the database (Oxford layout), else every sample is
    in it and each query is removed from its own ranking when ``exclude_query`` (Holidays rule)."""
    arrays = [rng.normal(size=(int(rng.integers(1, 6)), dim)) + (i % 6) * 0.4 for i in range(n)]
    arrays[7] = np.empty((0, dim))                      # a database sample without descriptors
    arrays[13] = arrays[12].copy()                      # a tie between two database samples
    arrays[18] = np.empty((0, dim))                     # a query without descriptors
    bags = Bags.from_list(arrays)
    groups = np.arange(n) % 6
    queries = np.array([0, 1, 2, 18, 30, 41])
    database = np.setdiff1d(np.arange(n), queries) if separate_queries else None
    pool = np.arange(n) if database is None else database
    positives, junk = [], []
    for q in queries:
        same = pool[(groups[pool] == groups[q]) & (pool != q)]
        positives.append(same[: max(1, same.size - 2)])
        junk.append(same[max(1, same.size - 2):])
    gt = RetrievalGroundTruth(queries=queries, positives=positives, junk=junk, database=database,
                              exclude_query_from_ranking=exclude_query and not separate_queries)
    return Dataset(name="searcher_check", task="retrieval", sample_ids=[f"s{i}" for i in range(n)], labels=groups,
                   class_names=[str(g) for g in range(6)], bags=bags, ground_truth=gt)


def _both(dataset: Dataset):
    """(metrics, predictions) of the vector path and of the searcher path, for the same split."""
    evaluator = Retrieval(query_region="full", precision_at=(1, 3, 5))
    bags = dataset.bags
    out = []
    for searcher in (False, True):
        split = evaluator.split(dataset, 0)
        split.empty_rows = bags.counts == 0
        if searcher:
            est = NegativeDistances().fit(bags.subset(split.fit_indices))
            est.index(bags.subset(evaluator.database_rows(dataset, split, bags.n_samples)))
            metrics = evaluator.evaluate_search(est, bags, dataset, split)
        else:
            metrics = evaluator.evaluate(MeanPool().fit(bags).transform(bags), dataset, split)
        out.append((metrics, split.predictions, split.info))
    return out


@pytest.mark.parametrize("exclude_query,separate_queries", [(True, False), (False, False), (False, True)])
def test_a_searcher_of_negative_distances_scores_as_the_vectors_do(exclude_query, separate_queries):
    dataset = _dataset(np.random.default_rng(3), exclude_query, separate_queries)
    (m_vec, p_vec, info_vec), (m_search, p_search, info_search) = _both(dataset)
    assert m_search == m_vec
    assert p_search.keys() == p_vec.keys()
    for key in p_vec:
        assert np.array_equal(np.asarray(p_search[key]), np.asarray(p_vec[key])), key
    assert info_search["per_query_ap"] == info_vec["per_query_ap"]
    # samples 7 and 18 are empty; 18 is a query, in the database unless the queries are apart
    assert info_search["empty_samples"] == info_vec["empty_samples"] == {
        "database_ranked_last": 1 if separate_queries else 2, "queries_scored_zero": 1}
    assert 0 < m_vec["mAP"] < 100
    assert info_search["ranked_by"] == "searcher" and "ranked_by" not in info_vec
    assert recompute_metrics(p_search) == pytest.approx(m_search, abs=1e-9)  # what `lfabench verify` recomputes


def test_scores_are_ranked_higher_first_with_ties_to_the_lower_database_row():
    """A hand-made score table: the ranking the evaluator reads from it, and its AP, by hand."""

    class Table(Searcher):
        def __init__(self, table=None):
            self.table = table

        def _fit(self, bags, y):
            self.dim_ = bags.dim

        def _index(self, bags):
            pass

        def _search(self, bags):
            return np.asarray(self.table, dtype=np.float32)[: bags.n_samples]

    bags = Bags.from_list([np.ones((1, 2))] * 4)
    gt = RetrievalGroundTruth(queries=np.array([0]), positives=[np.array([2, 3])], junk=[np.empty(0, np.int64)],
                              database=np.array([1, 2, 3]))
    dataset = Dataset(name="t", task="retrieval", sample_ids=list("abcd"), labels=None, bags=bags,
                      ground_truth=gt)
    evaluator = Retrieval(query_region="full", precision_at=(1, 2))
    split = evaluator.split(dataset, 0)
    # database rows 1, 2, 3 score 5, 5, 1: sample 1 (the lower row of the tie) first, then 2, then 3
    est = Table([[5.0, 5.0, 1.0]]).fit(bags)
    est.index(bags.subset([1, 2, 3]))
    metrics = evaluator.evaluate_search(est, bags, dataset, split)
    assert metrics["precision@1"] == 0.0 and metrics["precision@2"] == 50.0
    # positives at places 1 and 2 (0-based): the trapezoid AP of compute_ap: 0.5 * (0 + 1/2) / 2 + 0.5 * (1/2 + 2/3) / 2
    assert metrics["mAP"] == pytest.approx(100 * (0.25 * 0.5 + 0.25 * (0.5 + 2 / 3)))


def test_the_large_database_searches_refuse_a_searcher():
    evaluator = Retrieval(search="exact")
    assert "search='exact'" in evaluator.searcher_problem()
    assert Retrieval().searcher_problem() is None and Retrieval.scores_searchers is True


def test_a_searcher_indexed_on_another_database_is_refused():
    dataset = _dataset(np.random.default_rng(0), True, False)
    evaluator = Retrieval(query_region="full")
    split = evaluator.split(dataset, 0)
    est = NegativeDistances().fit(dataset.bags)
    est.index(dataset.bags.subset(np.arange(10)))
    with pytest.raises(ValueError, match="10 database samples indexed"):
        evaluator.evaluate_search(est, dataset.bags, dataset, split)
