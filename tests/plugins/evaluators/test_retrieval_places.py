"""The ``retrieval`` evaluator's place-based scoring against the ranked-list reference it replaced.

The evaluator scores each query from the places of its positives and junk in its ranking (the inverse
permutation of the query's order row) with :func:`lfabench.evaluation.scores_from_places`.
``reference_evaluate`` below is the earlier evaluator, kept as the reference: it builds each query's whole
ranked list (full stable argsort of the distances, empty database rows moved last by a second stable argsort,
the query removed) and scores it with the public ranked-list functions (``average_precision``,
``precision_at_k``, ``ranking_prefix``, ``ranks_of``, ``revisited_scores``). Metrics, per-query AP and the
stored predictions must be equal, bit for bit and array for array, on data full of ties (small-integer
vectors), junk, removed queries, a database that leaves samples out, database rows and queries without
descriptors, the Revisited setups and the large-database shortlists.
"""

from __future__ import annotations

import numpy as np
import pytest

from lfabench.dataset import Dataset, RetrievalGroundTruth
from lfabench.evaluation import (average_precision, fit_metric_space, precision_at_k, ranking_prefix, ranks_of,
                                 recompute_metrics, retrieval_predictions, revisited_metrics, revisited_scores)
from lfabench.registry import get_plugin


def _reference_rank(database_X, query_X, metric, p, covariance, chunk=256):
    """Every database row per query, best first: a stable argsort of the FAISS distances (ties: lower row)."""
    import faiss

    space = fit_metric_space(database_X, metric, p, covariance)
    base, queries = space.transform(database_X), space.transform(query_X)
    order = np.empty((queries.shape[0], base.shape[0]), dtype=np.int64)
    for start in range(0, queries.shape[0], chunk):
        D = faiss.pairwise_distances(queries[start:start + chunk], base, space.faiss_metric, space.metric_arg)
        order[start:start + chunk] = np.argsort(-D if space.larger_is_closer else D, axis=1, kind="stable")
    return order


def reference_evaluate(evaluator, features, dataset, split):
    """The earlier ``Retrieval.evaluate``: whole ranked lists scored by the public ranked-list functions."""
    gt = dataset.ground_truth
    db = evaluator._database(dataset)
    rows = evaluator._query_rows(dataset, features.shape[0])
    empty = split.empty_mask(features.shape[0])
    ks = evaluator._ks
    if evaluator.search == "full":
        order = _reference_rank(features[db], features[rows], evaluator.metric, evaluator.p, evaluator.covariance)
        if empty[db].any():
            order = np.take_along_axis(order, np.argsort(empty[db][order], axis=1, kind="stable"), axis=1)
    else:
        order = evaluator._shortlists(features, db, rows, empty, split, seed=split.seed)
    aps, precisions, rankings = [], {k: [] for k in ks}, []
    heads, pos_places, junk_places = [], [], []
    for q in range(gt.queries.size):
        if empty[rows[q]]:
            aps.append(0.0)
            heads.append(np.empty(0, dtype=np.int64))
            pos_places.append(np.full(len(gt.positives[q]), -1))
            junk_places.append(np.full(len(gt.junk[q]), -1))
            for k in ks:
                precisions[k].append(0.0)
            rankings.append(db[:0])
            continue
        ranked = db[order[q][order[q] >= 0]]
        if gt.exclude_query_from_ranking:
            ranked = ranked[ranked != gt.queries[q]]
        rankings.append(ranked)
        aps.append(average_precision(ranked, gt.positives[q], gt.junk[q]))
        heads.append(ranking_prefix(ranked, gt.junk[q], max(ks, default=0)))
        pos_places.append(ranks_of(ranked, gt.positives[q]))
        junk_places.append(ranks_of(ranked, gt.junk[q]))
        for k in ks:
            precisions[k].append(precision_at_k(ranked, gt.positives[q], k, gt.junk[q]))
    predictions = retrieval_predictions(gt.queries, heads, gt.positives, pos_places, gt.junk, junk_places,
                                        empty[rows], ks, difficulty=gt.difficulty)
    metrics = {"mAP": float(100.0 * np.mean(aps))}
    metrics.update({f"precision@{k}": float(100.0 * np.mean(v)) for k, v in precisions.items()})
    if gt.difficulty is not None:
        metrics.update(revisited_metrics(revisited_scores(rankings, gt.difficulty["easy"], gt.difficulty["hard"],
                                                          gt.junk, ks)))
    per_query_ap = {str(dataset.sample_ids[i]): float(ap) for i, ap in zip(gt.queries, aps)}
    return metrics, predictions, per_query_ap


def random_retrieval(seed, n=120, n_queries=30, holidays=False, revisited=False, database_subset=False,
                     n_empty=0):
    """A dataset of ``n`` samples in groups, with features of small integers (many exact distance ties), and
    a split with ``n_empty`` samples without descriptors (database rows and queries among them)."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 8, size=n)
    features = (labels[:, None] % 3 + rng.integers(0, 3, size=(n, 4))).astype(np.float32)
    features[rng.choice(n, 10, replace=False)] = features[0]                     # exact duplicates
    queries = rng.choice(n, n_queries, replace=False)
    database = np.sort(rng.choice(n, n - 15, replace=False)) if database_subset else None
    pool = np.arange(n) if database is None else database
    positives, junk, easy, hard = [], [], [], []
    for qi in queries:
        same = pool[(labels[pool] == labels[qi]) & (pool != qi)]
        pos = rng.choice(same, min(same.size, int(rng.integers(1, 6))), replace=False) if same.size else pool[:1]
        others = np.setdiff1d(pool, pos)
        jk = rng.choice(others, int(rng.integers(0, 6)), replace=False) if not holidays else others[:0]
        positives.append(pos)
        junk.append(jk)
        cut = int(rng.integers(0, np.unique(pos).size + 1))
        easy.append(np.unique(pos)[:cut])
        hard.append(np.unique(pos)[cut:])
    if database is not None:                      # some positives outside the database: never ranked
        positives[0] = np.concatenate([positives[0], np.setdiff1d(np.arange(n), database)[:2]])
    gt = RetrievalGroundTruth(queries=queries, positives=positives, junk=junk, database=database,
                              exclude_query_from_ranking=holidays,
                              difficulty={"easy": easy, "hard": hard} if revisited else None)
    dataset = Dataset(name="random_retrieval", task="retrieval", sample_ids=[f"s{i}" for i in range(n)],
                      ground_truth=gt)
    empty = np.zeros(n, dtype=bool)
    if n_empty:
        empty[rng.choice(pool, n_empty - 1, replace=False)] = True
        empty[queries[1]] = True                  # one query without descriptors
    return dataset, features, empty


def _both(dataset, features, empty, **params):
    out = []
    for scorer in ("new", "reference"):
        evaluator = get_plugin("evaluator", "retrieval")(query_region="full", **params)
        split = evaluator.split(dataset, seed=0)
        split.empty_rows = empty
        if scorer == "new":
            metrics = evaluator.evaluate(features, dataset, split)
            out.append((metrics, split.predictions, split.info["per_query_ap"]))
        else:
            out.append(reference_evaluate(evaluator, features, dataset, split))
    return out


def assert_same(new, reference):
    (metrics, predictions, per_query), (ref_metrics, ref_predictions, ref_per_query) = new, reference
    assert metrics == ref_metrics                                  # bit for bit: ==, not approx
    assert per_query == ref_per_query
    assert sorted(predictions) == sorted(ref_predictions)
    for name, array in ref_predictions.items():
        assert predictions[name].dtype == array.dtype and np.array_equal(predictions[name], array), name
    assert recompute_metrics(predictions) == metrics              # what verify recomputes


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("case", [
    {}, {"holidays": True}, {"database_subset": True}, {"n_empty": 6}, {"holidays": True, "n_empty": 6},
    {"revisited": True}, {"revisited": True, "n_empty": 6, "database_subset": True},
])
def test_full_ranking_scores_equal_the_ranked_list_reference(seed, case):
    dataset, features, empty = random_retrieval(seed, **case)
    assert_same(*_both(dataset, features, empty))


@pytest.mark.parametrize("metric", ["euclidean", "cosine", "minkowski", "mahalanobis"])
def test_every_metric_equals_the_reference(metric):
    dataset, features, empty = random_retrieval(7, holidays=True, n_empty=4)
    params = {"metric": metric, "p": 3.0 if metric == "minkowski" else None, "precision_at": (1, 3, 200)}
    assert_same(*_both(dataset, features, empty, **params))


@pytest.mark.parametrize("search", ["exact", "ivfpq"])
@pytest.mark.parametrize("case", [{"holidays": True, "n_empty": 6}, {"revisited": True, "n_empty": 4}])
def test_shortlists_equal_the_reference(search, case):
    dataset, features, empty = random_retrieval(3, n=400, n_queries=40, **case)
    features = features + np.random.default_rng(0).normal(scale=0.3, size=features.shape).astype(np.float32)
    assert_same(*_both(dataset, features, empty, search=search, shortlist=20))


def test_ties_keep_the_lower_database_index():
    """Five identical database vectors: the ranking lists them in index order, so the positive at index 3
    is at place 3 (two equal vectors before it) and the head is 0, 1, 2."""
    features = np.zeros((6, 2), dtype=np.float32)
    features[5] = 1.0                                              # the query, equidistant from rows 0..4
    gt = RetrievalGroundTruth(queries=[5], positives=[[3]], junk=[[1]], database=np.arange(5))
    dataset = Dataset(name="ties", task="retrieval", sample_ids=[f"s{i}" for i in range(6)], ground_truth=gt)
    evaluator = get_plugin("evaluator", "retrieval")(query_region="full", precision_at=(2,))
    split = evaluator.split(dataset, seed=0)
    metrics = evaluator.evaluate(features, dataset, split)
    assert split.predictions["positive_ranks"].tolist() == [3] and split.predictions["junk_ranks"].tolist() == [1]
    assert split.predictions["ranking"].tolist() == [0, 1, 2]      # up to the 2nd non-junk item
    # junk skipped: the positive is 3rd of the kept list 0, 2, 3, 4
    assert metrics["mAP"] == pytest.approx(100 * (1 / 3) / 2) and metrics["precision@2"] == 0.0


def test_a_database_listing_a_sample_twice_is_one_clear_error():
    gt = RetrievalGroundTruth(queries=[0], positives=[[1]], junk=[[]], database=np.array([1, 2, 2]))
    dataset = Dataset(name="twice", task="retrieval", sample_ids=["a", "b", "c"], ground_truth=gt)
    evaluator = get_plugin("evaluator", "retrieval")(query_region="full")
    split = evaluator.split(dataset, seed=0)
    with pytest.raises(ValueError, match="'twice' lists database sample 'c' more than once"):
        evaluator.evaluate(np.eye(3, dtype=np.float32), dataset, split)
