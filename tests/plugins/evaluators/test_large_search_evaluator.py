"""The retrieval evaluator's large-database search: exact shortlists score as the full ranking; IVF-PQ is
recorded with its recall against exact search."""

from __future__ import annotations

import numpy as np
import pytest

from lfabench.registry import get_plugin, get_registry
from lfabench_plugins.datasets.synthetic import make_synthetic


def _scores(search, **params):
    ds = make_synthetic(n_classes=20, samples_per_class=30, dim=4, task="retrieval")
    evaluator = get_plugin("evaluator", "retrieval")(query_region="full", search=search, **params)
    split = evaluator.split(ds, seed=0)
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(20, 24)) * 3
    features = centres[ds.labels] + rng.normal(size=(ds.n_samples, 24))
    empty = np.zeros(ds.n_samples, dtype=bool)
    empty[[5, 77]] = True                      # two database samples without descriptors
    split.empty_rows = empty
    return evaluator.evaluate(features, ds, split), split.info


def test_exact_shortlists_covering_the_database_equal_the_full_ranking():
    full, _ = _scores("full")
    exact, info = _scores("exact", shortlist=600)
    assert info["search"]["method"] == "exact"
    # both are exact in float32; FAISS's two kernels (pairwise distances, flat index search) round the
    # distances differently, which may swap neighbours closer than 1e-6: equal up to that
    for name in full:
        assert exact[name] == pytest.approx(full[name], abs=1e-3), name


def test_auto_goes_approximate_past_the_memory_budget_and_records_recall():
    metrics, info = _scores("auto", shortlist=50, memory_budget_gb=1e-6)
    search = info["search"]
    assert search["method"] == "ivfpq" and search["index"].startswith("IVF") and search["shortlist"] == 50
    assert 0.0 <= search["recall_at_k_vs_exact"] <= 1.0 and search["recall_queries"] == 20
    assert 0.0 <= metrics["mAP"] <= 100.0


def test_large_search_parameters_are_opt_in_and_checked():
    assert "search" not in get_registry().get_spec("evaluator", "retrieval").defaults   # run keys unchanged
    with pytest.raises(ValueError, match="supports metrics"):
        get_plugin("evaluator", "retrieval")(metric="mahalanobis", search="auto")
    with pytest.raises(ValueError, match="search must be one of"):
        get_plugin("evaluator", "retrieval")(search="hnsw")
