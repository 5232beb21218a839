"""Metrics recomputed from stored predictions equal the evaluators' own, checked against independent references."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import accuracy_score

from lfabench.evaluation import (average_precision, knn_predictions, precision_at_k, predictions_fingerprint,
                                 ranked_list_from_places, ranking_prefix, ranks_of, recompute_metrics,
                                 retrieval_predictions)
from lfabench.registry import get_plugin


def compute_ap_cpp(pos, amb, ranked_list):
    """Independent port of Oxford's compute_ap.cpp."""
    pos, amb = set(pos), set(amb)
    old_r, old_p, ap, hits, j = 0.0, 1.0, 0.0, 0, 0
    for item in ranked_list:
        if item in amb:
            continue
        hits += item in pos
        r, p = hits / len(pos), hits / (j + 1.0)
        ap += (r - old_r) * (old_p + p) / 2.0
        old_r, old_p, j = r, p, j + 1
    return ap


def test_knn_accuracy_from_predictions_equals_sklearn():
    rng = np.random.default_rng(0)
    true = rng.integers(0, 5, 200)
    pred = np.where(rng.random(200) < 0.7, true, rng.integers(0, 5, 200))
    wrong = rng.random(200) < 0.05
    arrays = knn_predictions(np.arange(800), np.arange(800, 1000), pred, true, wrong)
    # samples counted wrong are misses whatever their prediction: give them a label no class has
    expected = 100.0 * accuracy_score(true, np.where(wrong, -1, pred))
    assert recompute_metrics(arrays)["accuracy"] == pytest.approx(expected, abs=1e-12)


def _stored(ranked, pos, junk, k_max):
    """What a record keeps of one ranking: its head and the places of the positives and the junk."""
    return ranking_prefix(ranked, junk, k_max), ranks_of(ranked, pos), ranks_of(ranked, junk)


def test_head_and_places_keep_every_metric_of_the_full_list():
    rng = np.random.default_rng(1)
    for _ in range(300):
        n = int(rng.integers(10, 80))
        ranked = rng.permutation(n)[:int(rng.integers(5, n + 1))]  # some ids never ranked (e.g. removed)
        pos = rng.choice(n, int(rng.integers(1, 6)), replace=False)
        junk = rng.choice(np.setdiff1d(np.arange(n), pos), int(rng.integers(0, 4)), replace=False)
        k_max = int(rng.integers(0, 12))
        head, pos_places, junk_places = _stored(ranked, pos, junk, k_max)
        assert np.array_equal(head, ranked[:head.size]) and head.size <= ranked.size
        rebuilt = ranked_list_from_places(head, pos, pos_places, junk, junk_places)
        assert average_precision(rebuilt, pos, junk) == average_precision(ranked, pos, junk)
        assert average_precision(rebuilt, pos, junk) == pytest.approx(compute_ap_cpp(pos, junk, ranked), abs=1e-12)
        for k in range(1, k_max + 1):
            assert precision_at_k(rebuilt, pos, k, junk) == precision_at_k(ranked, pos, k, junk)


def test_head_and_places_by_hand():
    # positives 3, 7; junk 5: the 3rd non-junk item is at place 3 (5 is skipped); 9 is never ranked
    ranked = [3, 5, 1, 2, 7, 0, 4]
    assert ranking_prefix(ranked, [5], 3).tolist() == [3, 5, 1, 2]
    assert ranking_prefix(ranked, [5], 0).tolist() == []
    assert ranking_prefix(ranked, [5], 9).tolist() == ranked
    assert ranks_of(ranked, [7, 3, 9]).tolist() == [4, 0, -1]
    assert ranked_list_from_places([3, 5], [3, 7], [0, 4], [5], [1]).tolist() == [3, 5, -3, -4, 7]
    with pytest.raises(ValueError, match="place 0 is claimed twice"):
        ranked_list_from_places([3], [7], [0], [], [])


def test_retrieval_metrics_from_stored_rankings_match_a_direct_formula():
    rankings = [[1, 5, 3, 0, 2, 4], [4, 2, 0]]
    positives, junk = [[1, 3, 0], [2]], [[5], []]
    stored = [_stored(r, p, j, 5) for r, p, j in zip(rankings, positives, junk)]
    arrays = retrieval_predictions([0, 4], [s[0] for s in stored], positives, [s[1] for s in stored], junk,
                                   [s[2] for s in stored], [False, False], [1, 5])
    got = recompute_metrics(arrays)
    aps = [compute_ap_cpp(p, j, r) for r, p, j in zip(rankings, positives, junk)]
    assert got["mAP"] == pytest.approx(100 * np.mean(aps), abs=1e-12) and got["mAP"] == pytest.approx(62.5)
    assert got["precision@1"] == 50.0 and got["precision@5"] == pytest.approx(100 * (3 / 5 + 1 / 5) / 2)
    zero = dict(arrays, scored_zero=np.array([False, True]), precision_at=np.array([1]))
    assert recompute_metrics(zero) == {"mAP": 50.0, "precision@1": 50.0}


def test_bad_predictions_are_named():
    arrays = retrieval_predictions([0], [[1, 2]], [[1]], [[0]], [[]], [[]], [False], [1])
    with pytest.raises(ValueError, match="lack the array\\(s\\) junk_offsets"):
        recompute_metrics({k: v for k, v in arrays.items() if k != "junk_offsets"})
    with pytest.raises(ValueError, match="ranking_offsets do not partition ranking"):
        recompute_metrics(dict(arrays, ranking_offsets=np.array([0, 5])))
    with pytest.raises(ValueError, match="positive_ranks has shape"):
        recompute_metrics(dict(arrays, positive_ranks=np.array([0, 1])))
    with pytest.raises(ValueError, match="unknown kind 'x'"):
        recompute_metrics(dict(arrays, kind=np.array("x")))


def test_fingerprint_sees_one_changed_prediction():
    a = knn_predictions([0, 1], [2, 3], [1, 2], [1, 2], [False, False])
    b = dict(a, predicted=np.array([1, 3]))
    assert predictions_fingerprint(a) == predictions_fingerprint(dict(a))
    assert predictions_fingerprint(a) != predictions_fingerprint(b)


def test_both_evaluators_return_predictions_that_give_back_their_metrics():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins" / "evaluators"))
    from test_retrieval_evaluator import evaluate, make_dataset

    Retrieval = get_plugin("evaluator", "retrieval")
    for ds, ev in ((make_dataset(), Retrieval(precision_at=[1, 5])),
                   (make_dataset(), Retrieval(query_region="full", precision_at=3)),
                   (make_dataset(holidays=True), Retrieval())):
        metrics, split, _ = evaluate(ev, ds)
        assert split.predictions is not None and recompute_metrics(split.predictions) == metrics

    from lfabench.dataset import Dataset

    KNN = get_plugin("evaluator", "knn")
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(3), 10)
    X = rng.normal(size=(30, 8)) + labels[:, None]
    ds = Dataset(name="toy", task="classification", sample_ids=[f"s{i}" for i in range(30)], labels=labels,
                 images=[np.zeros((2, 2))] * 30)
    for ev in (KNN(), KNN(k=3, metric="cosine")):
        split = ev.split(ds, 0)
        split.empty_rows = np.isin(np.arange(30), split.test_indices[:1])
        metrics = ev.evaluate(X, ds, split)
        p = split.predictions
        assert recompute_metrics(p) == metrics
        assert np.array_equal(p["test_indices"], split.test_indices)
        assert np.array_equal(p["true"], labels[p["test_indices"]])
        assert p["counted_wrong"].sum() == 1


def test_records_store_predictions_or_say_there_are_none(tmp_path):
    """Through the conductor: a retrieval run stores its rankings (metrics recompute, file digest named); a
    third-party evaluator that gives no predictions still runs, and its record says none are stored."""
    import json
    import sys
    from pathlib import Path

    from lfabench import PluginSpec, hookimpl
    from lfabench.evaluate import Evaluator, Split
    from lfabench.record import file_sha256, load_predictions
    from lfabench.registry import get_registry, reset_registry
    from lfabench.run import run_benchmark

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins" / "evaluators"))
    from test_retrieval_evaluator import MeanPool, make_dataset

    class Oldstyle(Evaluator):
        """A protocol written before predictions existed: the mean of the first feature."""

        task = "retrieval"

        def split(self, dataset, seed):
            idx = np.arange(dataset.n_samples)
            return Split(fit_indices=idx, fit_labels=None, train_indices=idx, test_indices=idx, seed=seed)

        def evaluate(self, features, dataset, split):
            return {"score": float(features[:, 0].mean())}

    class Plugins:
        @hookimpl
        def lfabench_datasets(self):
            return [PluginSpec("toy_retrieval", make_dataset, "hand-made retrieval set (tests)")]

        @hookimpl
        def lfabench_aggregators(self):
            return [PluginSpec("meanpool", MeanPool, "mean descriptor (tests)")]

        @hookimpl
        def lfabench_evaluators(self):
            return [PluginSpec("oldstyle", Oldstyle, "no predictions (tests)")]

    reset_registry()
    try:
        get_registry().register(Plugins(), name="tests:predictions")
        base = {"dataset": {"name": "toy_retrieval", "params": {}}, "descriptor": {"name": "native", "params": {}},
                "aggregator": {"name": "meanpool", "params": {"random_state": 0}}, "seed": 0}
        run_benchmark(dict(base, evaluator={"name": "retrieval", "params": {"precision_at": [1, 5]}}), tmp_path / "r")
        run_benchmark(dict(base, evaluator={"name": "oldstyle", "params": {}}), tmp_path / "o")
    finally:
        reset_registry()
    rec = json.loads((tmp_path / "r" / "result.json").read_text())
    assert rec["predictions"]["kind"] == "retrieval"
    assert rec["predictions"]["sha256"] == file_sha256(tmp_path / "r" / "predictions.npz")
    arrays = load_predictions(tmp_path / "r" / "predictions.npz")
    assert recompute_metrics(arrays) == rec["metrics"] and rec["metrics"]["mAP"] == pytest.approx(62.5)
    assert rec["fingerprints"]["predictions"] == predictions_fingerprint(arrays)
    assert set(rec["fingerprints"]) == {"descriptors", "fitted", "fitted_sparse", "features", "predictions"}
    assert rec["fingerprints"]["fitted_sparse"] == "csr"  # how a sparse fitted matrix was digested
    old = json.loads((tmp_path / "o" / "result.json").read_text())
    assert old["status"] == "ok" and old["predictions"] is None and not (tmp_path / "o" / "predictions.npz").exists()


def test_labels_layout_holds_any_classifiers_labels_and_the_knn_name_still_reads():
    """``labels`` is what k-NN and any other classifier write; records of the layout's first name (``knn``) read
    alike and fingerprint alike, so published records still verify and a rerun of one compares equal."""
    from lfabench.evaluation import label_predictions

    new = label_predictions([0, 1, 2], [3, 4, 5, 6], ["a", "b", "b", "a"], ["a", "b", "a", "a"],
                            counted_wrong=[False, False, False, True])
    assert str(new["kind"]) == "labels"
    assert recompute_metrics(new) == {"accuracy": 50.0}
    old = dict(new, kind=np.array("knn"))
    assert recompute_metrics(old) == {"accuracy": 50.0}
    assert predictions_fingerprint(old) == predictions_fingerprint(new)
    assert predictions_fingerprint(dict(new, predicted=np.array(["a", "a", "b", "a"]))) != predictions_fingerprint(new)
    no_wrong = label_predictions([0], [1, 2], [0, 1], [0, 0])
    assert no_wrong["counted_wrong"].tolist() == [False, False] and recompute_metrics(no_wrong) == {"accuracy": 50.0}
    with pytest.raises(ValueError, match="one entry per test sample"):
        label_predictions([0], [1, 2], [0], [0, 0])
