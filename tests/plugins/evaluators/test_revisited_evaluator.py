"""The retrieval evaluator on revisitop-format fixtures: Easy / Medium / Hard equal an independent evaluation."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

from lfabench.evaluation import recompute_metrics
from lfabench.record import validate_record
from lfabench.registry import get_plugin
from lfabench_plugins.datasets.revisited import load_roxford5k

from data_helpers import revisited_folder
from record_helpers import record
from revisited_reference import reference_scores


def _fixture(tmp_path, rng, n_db=30, n_q=6):
    """A roxford5k folder in the official layout (gnd_roxford5k.pkl + jpg/) with junk and empty setups."""
    return revisited_folder(tmp_path, rng, "roxford5k", n_db, n_q)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_easy_medium_hard_equal_the_independent_implementation(tmp_path, seed):
    rng = np.random.default_rng(seed)
    gnd = _fixture(tmp_path, rng)
    ds = load_roxford5k(root=str(tmp_path), strict=False)
    evaluator = get_plugin("evaluator", "retrieval")(query_region="full", precision_at=[1, 5, 10])
    split = evaluator.split(ds, seed=0)
    features = rng.normal(size=(ds.n_samples, 5))
    split.empty_rows = np.zeros(ds.n_samples, dtype=bool)
    metrics = evaluator.evaluate(features, ds, split)
    # rankings as revisitop makes them: the database sorted by distance to each query (queries are not in it)
    db, queries = features[:30], features[30:]
    rankings = [np.argsort(((db - q) ** 2).sum(axis=1), kind="stable") for q in queries]
    ref = reference_scores(rankings, gnd)
    for setup in ("easy", "medium", "hard"):
        assert metrics[f"mAP_{setup}"] == pytest.approx(100 * ref[setup][0], abs=1e-9)
        for k in (1, 5, 10):
            assert metrics[f"mP@{k}_{setup}"] == pytest.approx(100 * ref[setup][1][k], abs=1e-9)
    assert metrics["mAP"] == pytest.approx(metrics["mAP_medium"], abs=1e-9)   # positives easy + hard, junk skipped
    assert split.info["revisited_queries_scored"] == {"easy": 5, "medium": 6, "hard": 4}


@pytest.mark.parametrize("seed", [0, 1])
def test_stored_predictions_give_back_every_revisited_metric(tmp_path, seed):
    """Easy / Medium / Hard recompute from the stored places alone, exactly (a query without descriptors too),
    and equal the independent evaluation; the easy/hard bits are what the gnd file says."""
    rng = np.random.default_rng(10 + seed)
    gnd = _fixture(tmp_path, rng, n_db=40, n_q=7)
    ds = load_roxford5k(root=str(tmp_path), strict=False)
    evaluator = get_plugin("evaluator", "retrieval")(query_region="full", precision_at=[1, 3, 10])
    split = evaluator.split(ds, seed=0)
    features = rng.normal(size=(ds.n_samples, 4))
    split.empty_rows = np.zeros(ds.n_samples, dtype=bool)
    split.empty_rows[ds.ground_truth.queries[5]] = True        # query 5 has no descriptors: scored 0
    metrics = evaluator.evaluate(features, ds, split)
    assert any(k.endswith("_hard") for k in metrics) and recompute_metrics(split.predictions) == metrics
    p = split.predictions
    offsets = p["positive_offsets"]
    for q, g in enumerate(gnd):
        pos, bits = p["positives"][offsets[q]:offsets[q + 1]], p["positive_difficulty"][offsets[q]:offsets[q + 1]]
        assert sorted(pos[bits == 1].tolist()) == sorted(g["easy"]) and sorted(pos[bits == 2].tolist()) == sorted(g["hard"])
    db, queries = features[:40], features[40:]
    rankings = [np.argsort(((db - q) ** 2).sum(axis=1), kind="stable") for q in queries]
    rankings[5] = np.empty(0, dtype=np.int64)
    ref = reference_scores(rankings, gnd, ks=(1, 3, 10))
    for setup in ("easy", "medium", "hard"):
        assert metrics[f"mAP_{setup}"] == pytest.approx(100 * ref[setup][0], abs=1e-9)
        assert metrics[f"mP@3_{setup}"] == pytest.approx(100 * ref[setup][1][3], abs=1e-9)
    # one hard positive relabelled easy in the stored predictions: the Easy and Hard setups no longer recompute
    tampered = dict(p, positive_difficulty=p["positive_difficulty"].copy())
    tampered["positive_difficulty"][np.flatnonzero(tampered["positive_difficulty"] == 2)[0]] = 1
    again = recompute_metrics(tampered)
    assert again["mAP_medium"] == metrics["mAP_medium"] and again["mAP_hard"] != metrics["mAP_hard"]
    with pytest.raises(ValueError, match="positive_difficulty has shape"):
        recompute_metrics(dict(p, positive_difficulty=p["positive_difficulty"][:-1]))


def test_a_setup_without_any_positive_has_no_metric_and_out_of_range_ones_are_refused(tmp_path):
    """No hard image in any query: the Hard setup has no score (absent, not NaN, which no record may hold), and
    the predictions give back the same metrics; a Revisited percentage over 100 fails record validation."""
    gnd = _fixture(tmp_path, np.random.default_rng(3), n_db=20, n_q=3)
    data = pickle.loads((tmp_path / "gnd_roxford5k.pkl").read_bytes())
    for g in data["gnd"]:
        g["easy"], g["hard"] = list(g["easy"]) + list(g["hard"]), []
    (tmp_path / "gnd_roxford5k.pkl").write_bytes(pickle.dumps(data, protocol=2))
    ds = load_roxford5k(root=str(tmp_path), strict=False)
    evaluator = get_plugin("evaluator", "retrieval")(query_region="full", precision_at=[1, 5])
    split = evaluator.split(ds, seed=0)
    split.empty_rows = np.zeros(ds.n_samples, dtype=bool)
    metrics = evaluator.evaluate(np.random.default_rng(0).normal(size=(ds.n_samples, 3)), ds, split)
    assert all(np.isfinite(v) for v in metrics.values()) and len(gnd) == 3
    assert "mAP_hard" not in metrics and "mP@1_hard" not in metrics and metrics["mAP_easy"] == metrics["mAP_medium"]
    assert recompute_metrics(split.predictions) == metrics

    record(tmp_path / "run", 0, None, dataset="roxford5k", evaluator="retrieval",
           metrics={"mAP": 50.0, "mAP_hard": 170.0, "mP@5_easy": 20.0})
    rec = json.loads((tmp_path / "run" / "result.json").read_text())
    with pytest.raises(ValueError, match="metric 'mAP_hard' = 170.0 lies outside \\[0, 100\\]"):
        validate_record(rec, "run/result.json")
    rec["metrics"] = {"mAP": 50.0, "mP@5_easy": -1.0}
    with pytest.raises(ValueError, match="'mP@5_easy' = -1.0 lies outside"):
        validate_record(rec)
