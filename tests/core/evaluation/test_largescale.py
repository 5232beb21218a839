"""Large-database search: streamed exact top-k equals brute force; IVF-PQ is chosen past the budget, recorded,
and its recall against exact search is what an independent count gives."""

from __future__ import annotations

import numpy as np
import pytest

from lfabench.evaluation.largescale import ChunkedDatabase, exact_topk, large_search, plan_search, recall_at_k


def _brute(X, Q, k, metric):
    if metric == "cosine":
        X = X / np.linalg.norm(X, axis=1, keepdims=True)
        Q = Q / np.linalg.norm(Q, axis=1, keepdims=True)
        d = -(Q.astype(np.float64) @ X.T.astype(np.float64))
    else:
        d = ((Q[:, None, :].astype(np.float64) - X[None, :, :]) ** 2).sum(-1)
    return np.argsort(d, axis=1, kind="stable")[:, :k]


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_streamed_exact_topk_equals_brute_force(metric):
    rng = np.random.default_rng(0)
    X, Q = rng.normal(size=(1000, 16)).astype(np.float32), rng.normal(size=(20, 16)).astype(np.float32)
    _, I = exact_topk(ChunkedDatabase.from_array(X, chunk=97), Q, 10, metric)   # chunks of an odd size
    np.testing.assert_array_equal(I, _brute(X, Q, 10, metric))


def test_exact_topk_ties_go_to_the_lower_index_across_chunks():
    X = np.zeros((50, 4), np.float32)          # every vector at the same distance
    _, I = exact_topk(ChunkedDatabase.from_array(X, chunk=7), np.ones((3, 4), np.float32), 12)
    assert (I == np.arange(12)).all()


def test_the_plan_is_exact_within_the_budget_and_ivfpq_beyond():
    assert plan_search(1_000_000, 2048, 9 * 2**30).method == "exact"       # 7.63 GiB fits 9 GiB
    plan = plan_search(1_000_000, 2048, 4 * 2**30)
    assert (plan.method, plan.nlist, plan.m) == ("ivfpq", 256, 64) and plan.index_string == "IVF256,PQ64"
    assert plan_search(10, 4, 0, method="exact").method == "exact"
    assert plan_search(5000, 30, 1e9, method="ivfpq").m == 30
    with pytest.raises(ValueError, match="auto, exact or ivfpq"):
        plan_search(10, 4, 1, method="hnsw")


def test_recall_at_k_counts_the_shared_neighbours():
    assert recall_at_k(np.array([[1, 2, 3], [4, 5, 6]]), np.array([[3, 2, 9], [7, 8, 9]])) == pytest.approx(1 / 3)


@pytest.mark.slow
def test_ivfpq_on_a_database_past_the_budget_reports_its_recall():
    rng = np.random.default_rng(1)
    centres = rng.normal(size=(200, 32)).astype(np.float32) * 4
    X = (centres[rng.integers(0, 200, 20000)] + rng.normal(size=(20000, 32))).astype(np.float32)
    Q = X[rng.choice(20000, 50, replace=False)] + 0.05 * rng.normal(size=(50, 32)).astype(np.float32)
    D, I, info = large_search(X, Q, 10, memory_budget_bytes=1e5, nprobe=16, recall_queries=50)
    assert info["method"] == "ivfpq" and info["index"].startswith("IVF") and I.shape == (50, 10)
    exact = _brute(X, Q, 10, "euclidean")
    assert info["recall_at_k_vs_exact"] == pytest.approx(recall_at_k(I, exact))
    assert info["recall_at_k_vs_exact"] > 0.3                          # far above chance (10 / 20000)
    _, I_exact, info_exact = large_search(X, Q, 10, memory_budget_bytes=1e9)
    assert info_exact["method"] == "exact"
    np.testing.assert_array_equal(I_exact, exact)


def test_ivfpq_added_in_parts_gives_the_same_neighbours_and_distances(monkeypatch):
    # the index is filled a chunk at a time in parts of about ADD_ROWS rows (bounding FAISS's work space):
    # the answer must equal one add per chunk, bit for bit. 16-D: the index trains one PQ quantizer per dimension
    # (PQ16), three times here, in about a third of 48-D's time
    import lfabench.evaluation.largescale as largescale

    rng = np.random.default_rng(2)
    X = (rng.normal(size=(12000, 16)) + 3 * rng.normal(size=(300, 16))[rng.integers(0, 300, 12000)])
    X = X.astype(np.float32)
    Q = X[rng.choice(12000, 40, replace=False)] + np.float32(0.1)
    db = ChunkedDatabase.from_array(X, chunk=5000)
    answers = []
    for rows in (1 << 30, 1000, 300):
        monkeypatch.setattr(largescale, "ADD_ROWS", rows)
        D, I, info = large_search(db, Q, 20, memory_budget_bytes=1e5, nprobe=8, recall_queries=40)
        assert info["method"] == "ivfpq"
        answers.append((D, I))
    for D, I in answers[1:]:
        np.testing.assert_array_equal(D, answers[0][0])
        np.testing.assert_array_equal(I, answers[0][1])
