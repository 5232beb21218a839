"""The ``retrieval`` evaluator on hand-made datasets: Oxford junk + query boxes, Holidays query removal."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lfabench import Bags, PluginSpec, hookimpl
from lfabench.aggregate import Aggregator
from lfabench.dataset import Dataset, RetrievalGroundTruth
from lfabench.registry import get_plugin, get_registry, reset_registry
from lfabench.run import run_benchmark

# Six images, two 2-D descriptors each, keypoints (x, y). Means: img0 (5, 5); inside img0's box only (0, 0).
DESCRIPTORS = [[[0, 0], [10, 10]], [[0.1, 0], [0.1, 0]], [[5, 5.2], [5, 5.2]],
               [[1, 0], [1, 0]], [[20, 20], [20, 20]], [[0.5, 0], [0.5, 0]]]
KEYPOINTS = [[[1, 1], [50, 50]]] + [[[3, 3], [40, 40]]] * 5
BOX = (0.0, 0.0, 10.0, 10.0)


def compute_ap_cpp(pos, amb, ranked_list):
    """Port of compute_ap.cpp (see test_evaluation_ranking.py)."""
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


class MeanPool(Aggregator):
    """Per-image mean descriptor (a transparent aggregator for hand-checked rankings); keeps the labels it saw."""

    def __init__(self, random_state=None):
        self.random_state = random_state

    def _fit(self, bags, y):
        self.seen_labels_ = None if y is None else np.asarray(y).copy()

    def _transform(self, bags):
        return bags.means()


def make_dataset(holidays: bool = False, bboxes=(BOX, None), labels=None) -> Dataset:
    bags = Bags.from_list([np.asarray(d, np.float32) for d in DESCRIPTORS],
                          keypoints=[np.asarray(k, np.float32) for k in KEYPOINTS])
    bags = Bags(bags.descriptors, bags.offsets, keypoints=bags.keypoints, keypoint_fields=("x", "y"))
    if holidays:
        gt = RetrievalGroundTruth(queries=[0], positives=[[2]], junk=[[]], exclude_query_from_ranking=True)
    else:
        gt = RetrievalGroundTruth(queries=[0, 4], positives=[[1, 3, 0], [2]], junk=[[5], []],
                                  bboxes=list(bboxes) if bboxes is not None else None)
    return Dataset(name="toy_retrieval", task="retrieval", sample_ids=[f"img{i}" for i in range(6)], bags=bags,
                   labels=labels, ground_truth=gt)


def evaluate(evaluator, dataset, seed=0):
    split = evaluator.split(dataset, seed)
    agg = MeanPool().fit(dataset.bags.subset(split.fit_indices), split.fit_labels)
    features = agg.transform(evaluator.prepare_bags(dataset.bags, dataset, split))
    return evaluator.evaluate(features, dataset, split), split, agg


def test_oxford_query_box_and_junk_by_hand():
    Retrieval = get_plugin("evaluator", "retrieval")
    metrics, split, _ = evaluate(Retrieval(precision_at=[1, 5]), make_dataset())
    # query 0 from its box: mean (0, 0); ranking 1, 5(junk), 3, 0, 2, 4 -> positives 1, 3, 0 first: AP 1
    # query 1 (img4, no box): ranking 4, 2, ... -> its positive img2 at rank 2: AP (0 + 1/2)/2 = 1/4
    assert split.info["per_query_ap"] == {"img0": 1.0, "img4": 0.25}
    assert metrics["mAP"] == pytest.approx(100 * (1.0 + 0.25) / 2)
    assert metrics["precision@1"] == pytest.approx(100 * (1 + 0) / 2)
    assert metrics["precision@5"] == pytest.approx(100 * (3 / 5 + 1 / 5) / 2)
    assert split.info["query_region"].startswith("bbox for 1 of 2")
    assert split.info["query_descriptors_in_boxes"] == {"kept": 1, "of": 2}


def test_full_query_variant_by_hand():
    Retrieval = get_plugin("evaluator", "retrieval")
    _, split, _ = evaluate(Retrieval(query_region="full"), make_dataset())
    # query 0 = whole img0 (5, 5): ranking 0, 2, 3, 5(junk), 1, 4
    assert split.info["per_query_ap"]["img0"] == pytest.approx(55 / 72)
    assert split.info["per_query_ap"]["img0"] == pytest.approx(compute_ap_cpp([1, 3, 0], [5], [0, 2, 3, 5, 1, 4]))
    assert split.info["query_region"] == "full"


def test_holidays_query_removed_from_its_ranking():
    Retrieval = get_plugin("evaluator", "retrieval")
    metrics, split, _ = evaluate(Retrieval(), make_dataset(holidays=True))
    assert metrics["mAP"] == 100.0                      # img2 first once img0 itself is removed
    assert split.info["query_removed_from_ranking"] is True
    kept = make_dataset(holidays=True)
    kept.ground_truth.exclude_query_from_ranking = False
    assert evaluate(Retrieval(), kept)[0]["mAP"] == 25.0     # img0 itself ranks first otherwise


def test_cosine_ranking_differs_and_matches_hand_ranking():
    Retrieval = get_plugin("evaluator", "retrieval")
    _, split, _ = evaluate(Retrieval(metric="cosine", query_region="full"), make_dataset())
    # cosine to (5, 5): img0, img4 (angle 0, tie: lower index first), img2, then the x-axis ones (1, 3, 5 junk)
    expected = compute_ap_cpp([1, 3, 0], [5], [0, 4, 2, 1, 3, 5])
    assert split.info["per_query_ap"]["img0"] == pytest.approx(expected)


def test_labelled_fraction_per_class_and_unlabelled_samples():
    Retrieval = get_plugin("evaluator", "retrieval")
    labels = np.array([0, 0, 1, 1, -1, 1])
    _, split, agg = evaluate(Retrieval(labelled_fraction=0.5), make_dataset(labels=labels), seed=3)
    seen = agg.seen_labels_
    assert seen[4] == -1                                # no class: never labelled
    assert (seen == 0).sum() == 1 and (seen == 1).sum() == 2      # ceil(0.5 * 2), ceil(0.5 * 3)
    labelled = seen >= 0
    np.testing.assert_array_equal(seen[labelled], labels[labelled])
    again = Retrieval(labelled_fraction=0.5).split(make_dataset(labels=labels), 3).fit_labels
    np.testing.assert_array_equal(again, seen)          # seeded: identical for every method
    assert split.info["n_labelled"] == 3


def test_labelled_unit_class_labels_whole_classes_and_is_recorded():
    Retrieval = get_plugin("evaluator", "retrieval")
    labels = np.array([0, 0, 1, 1, -1, 1])
    _, split, agg = evaluate(Retrieval(labelled_fraction=0.5, labelled_unit="class"), make_dataset(labels=labels),
                             seed=3)
    seen = agg.seen_labels_
    assert seen[4] == -1                                # no class: never labelled
    drawn = np.unique(seen[seen >= 0])
    assert drawn.size == 1                              # ceil(0.5 * 2 classes)
    np.testing.assert_array_equal(seen >= 0, labels == drawn[0])  # every sample of it, none of the other
    assert split.info["labelled_unit"] == "class" and split.info["n_labelled"] == int((labels == drawn[0]).sum())
    assert "labelled_unit" not in Retrieval(labelled_fraction=0.5).split(make_dataset(labels=labels), 3).info
    from lfabench.run import ignored_params

    bow = get_plugin("aggregator", "bow")()
    assert ignored_params(bow, Retrieval(), {"labelled_fraction": 0.2}) == ["evaluator.labelled_fraction"]
    assert ignored_params(bow, Retrieval(labelled_unit="class"), {"labelled_fraction": 0.2, "labelled_unit": "class"}
                          ) == ["evaluator.labelled_fraction", "evaluator.labelled_unit"]
    with pytest.raises(ValueError, match="labelled_unit"):
        Retrieval(labelled_unit="group")


def test_labelled_unit_is_opt_in_so_earlier_runs_keep_their_setting_keys():
    defaults = get_registry().get_spec("evaluator", "retrieval").defaults
    assert "labelled_fraction" in defaults and "labelled_unit" not in defaults


def test_bbox_needs_keypoints():
    Retrieval = get_plugin("evaluator", "retrieval")
    ds = make_dataset()
    ds.bags = Bags(ds.bags.descriptors, ds.bags.offsets)
    with pytest.raises(ValueError, match="query_region=full"):
        evaluate(Retrieval(), ds)


def test_classification_dataset_is_refused():
    Retrieval = get_plugin("evaluator", "retrieval")
    ds = Dataset(name="c", task="classification", sample_ids=["a"], labels=[0])
    with pytest.raises(ValueError, match="retrieval datasets"):
        Retrieval().split(ds, 0)


class _TestPlugins:
    @hookimpl
    def lfabench_datasets(self):
        return [PluginSpec("toy_retrieval", make_dataset, "hand-made retrieval set (tests)")]

    @hookimpl
    def lfabench_aggregators(self):
        return [PluginSpec("meanpool", MeanPool, "mean descriptor (tests)")]


def test_end_to_end_through_the_runner(tmp_path):
    reset_registry()
    try:
        get_registry().register(_TestPlugins(), name="tests:retrieval")
        cfg = {"dataset": {"name": "toy_retrieval", "params": {}}, "descriptor": {"name": "native", "params": {}},
               "aggregator": {"name": "meanpool", "params": {"random_state": 0}},
               "evaluator": {"name": "retrieval", "params": {"precision_at": [1]}}, "seed": 0}
        record = run_benchmark(cfg, tmp_path)
    finally:
        reset_registry()
    saved = json.loads((tmp_path / "result.json").read_text())
    assert saved["status"] == "ok" and saved["metrics"]["mAP"] == pytest.approx(62.5)
    assert saved["split"]["per_query_ap"] == {"img0": 1.0, "img4": 0.25}
    assert saved["split"]["query_region"].startswith("bbox")
    assert record["output_dim"] == 2 and saved["split"]["n_database"] == 6


def test_database_images_without_descriptors_rank_last_and_empty_queries_score_zero():
    Retrieval = get_plugin("evaluator", "retrieval")
    ds = make_dataset()
    ev = Retrieval(query_region="full")
    split = ev.split(ds, 0)
    features = MeanPool().fit(ds.bags).transform(ds.bags)
    # img2 lost its descriptors: its zero row must not be ranked by distance (query 0 is nearest to it)
    features[2] = 0.0
    split.empty_rows = np.arange(6) == 2
    ev.evaluate(features, ds, split)
    # query 0 = img0 (5, 5): ranking of the rest by distance 0, 3, 5(junk), 1, 4 and img2 last
    assert split.info["per_query_ap"]["img0"] == pytest.approx(compute_ap_cpp([1, 3, 0], [5], [0, 3, 5, 1, 4, 2]))
    assert split.info["empty_samples"] == {"database_ranked_last": 1, "queries_scored_zero": 0}
    split.empty_rows = np.arange(6) == 4  # query img4 has nothing to search with
    metrics = ev.evaluate(features, ds, split)
    assert split.info["per_query_ap"]["img4"] == 0.0 and split.info["empty_samples"]["queries_scored_zero"] == 1
    assert metrics["mAP"] == pytest.approx(100 * split.info["per_query_ap"]["img0"] / 2)
