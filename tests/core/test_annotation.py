"""Fully supervised aggregators on partially annotated protocols (lfabench.annotation): fitted on the annotated
samples only, refused before extraction when the protocol annotates nothing or the criterion is undefined."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lfabench import PluginSpec, hookimpl
from lfabench.aggregate import Aggregator, UndefinedCriterionError, annotated_class_sizes, describe_class_sizes
from lfabench.annotation import ALL_OFFERED, ANNOTATED_ONLY, NoAnnotationError, fit_samples
from lfabench.evaluate import Split
from lfabench.fingerprint import fitted_fingerprint
from lfabench.params import ConfigError
from lfabench.registry import get_plugin, get_registry, reset_registry
from lfabench.run import run_benchmark

from conftest import REPO, run_cli

from lfabench import Bags
from lfabench.dataset import Dataset, RetrievalGroundTruth


def make_dataset(labels) -> Dataset:
    """Six images of two 2-D descriptors; queries img0 and img4 (Oxford-style: not removed from their ranking)."""
    rng = np.random.default_rng(0)
    bags = Bags.from_list([rng.normal(loc=i, size=(2, 2)).astype(np.float32) for i in range(6)])
    gt = RetrievalGroundTruth(queries=[0, 4], positives=[[1, 3, 0], [2]], junk=[[5], []])
    return Dataset(name="toy_retrieval", task="retrieval", sample_ids=[f"img{i}" for i in range(6)], bags=bags,
                   labels=labels, ground_truth=gt)


class SupervisedMeanPool(Aggregator):
    """Mean descriptor that needs every fitted sample labelled (check_labels refuses -1) and keeps what it saw."""

    supervised = True

    def __init__(self, random_state=None):
        self.random_state = random_state

    def _fit(self, bags, y):
        from lfabench.aggregate import check_labels

        check_labels(y, bags.n_samples)  # raises on -1, as every built-in supervised plugin does
        self.seen = {"n": int(bags.n_samples), "labels": np.asarray(y).tolist(),
                     "means": bags.means().round(6).tolist()}

    def _transform(self, bags):
        return bags.means()


def _labelled_toy():
    return make_dataset(labels=np.array([0, 0, 1, 0, 1, 1]))


def _unlabelled_toy():
    return make_dataset(labels=None)


class _Plugins:
    @hookimpl
    def lfabench_datasets(self):
        return [PluginSpec("toy_labelled", _labelled_toy, "hand-made retrieval set with classes (tests)"),
                PluginSpec("toy_unlabelled", _unlabelled_toy, "hand-made retrieval set without labels (tests)")]

    @hookimpl
    def lfabench_aggregators(self):
        return [PluginSpec("supmean", SupervisedMeanPool, "supervised mean descriptor (tests)")]


@pytest.fixture
def registry():
    reset_registry()
    get_registry().register(_Plugins(), name="tests:annotation")
    yield get_registry()
    reset_registry()


def _cfg(dataset: str, aggregator: str = "supmean", aggregator_params=None, **evaluator):
    return {"dataset": {"name": dataset, "params": {}}, "descriptor": {"name": "native", "params": {}},
            "aggregator": {"name": aggregator, "params": {"random_state": 0, **(aggregator_params or {})}},
            "evaluator": {"name": "retrieval", "params": {"precision_at": [1], "query_region": "full", **evaluator}},
            "seed": 0}


def _split(labels):
    labels = None if labels is None else np.asarray(labels)
    return Split(fit_indices=np.arange(10, 10 + (6 if labels is None else labels.size)), fit_labels=labels)


def test_fit_samples_rule_by_kind_of_aggregator():
    labels = [3, -1, 4, -1, -1, 3]
    sup = fit_samples(SupervisedMeanPool(), _split(labels))
    assert sup.rule == ANNOTATED_ONLY and sup.indices.tolist() == [10, 12, 15] and sup.labels.tolist() == [3, 4, 3]
    assert sup.record() == {"n_fit": 3, "fit_rule": ANNOTATED_ONLY, "n_fit_offered": 6}
    semi = fit_samples(get_plugin("aggregator", "semi_prolfa")(), _split(labels))
    unsup = fit_samples(get_plugin("aggregator", "bow")(), _split(labels))
    for every in (semi, unsup):  # they read -1 (semi) or ignore labels (unsupervised): every offered sample
        assert every.rule == ALL_OFFERED and every.indices.tolist() == list(range(10, 16))
        assert every.record() == {"n_fit": 6}  # the record's split reads as it always has
    full = fit_samples(SupervisedMeanPool(), _split([1, 2, 1]))
    assert full.rule == ALL_OFFERED and full.indices.size == 3


@pytest.mark.parametrize("labels", [None, [-1, -1, -1]])
def test_fit_samples_refuses_a_supervised_method_that_is_annotated_nothing(labels):
    with pytest.raises(NoAnnotationError, match="semi_prolfa.*unsupervised.*labelled_fraction") as info:
        fit_samples(SupervisedMeanPool(), _split(labels), "supmean", "retrieval")
    assert isinstance(info.value, ConfigError) and "'supmean' is fully supervised" in str(info.value)
    assert fit_samples(get_plugin("aggregator", "bow")(), _split(labels)).rule == ALL_OFFERED


def test_a_supervised_run_fits_on_the_annotated_database_images_and_ranks_them_all(registry, tmp_path):
    record = run_benchmark(_cfg("toy_labelled", labelled_fraction=0.5), tmp_path)
    assert record["status"] == "ok"
    split = json.loads((tmp_path / "result.json").read_text())["split"]
    # 0.5 of each class of 3, rounded up: 2 + 2 annotated of the 6 database images
    assert split["n_labelled"] == 4 and split["n_fit"] == 4
    assert split["fit_rule"] == ANNOTATED_ONLY and split["n_fit_offered"] == 6
    # the fit equals a fit on exactly those images' bags and labels (independent of the runner)
    ds = _labelled_toy()
    split_obj = get_plugin("evaluator", "retrieval")(labelled_fraction=0.5).split(ds, 0)
    annotated = split_obj.fit_labels >= 0
    direct = SupervisedMeanPool(random_state=0).fit(ds.bags.subset(np.flatnonzero(annotated)),
                                                   split_obj.fit_labels[annotated])
    assert record["fingerprints"]["fitted"] == fitted_fingerprint(direct)
    assert record["output_dim"] == 2 and split["n_database"] == 6  # every image transformed and ranked


def test_no_annotation_fails_before_the_descriptors_with_the_alternatives(registry, tmp_path):
    with pytest.raises(NoAnnotationError, match="semi_prolfa"):
        run_benchmark(_cfg("toy_unlabelled"), tmp_path)
    saved = json.loads((tmp_path / "result.json").read_text())
    assert saved["status"] == "failed" and saved["error"]["type"] == "NoAnnotationError"
    assert "descriptors" not in saved["timings_s"] and "fit" not in saved["timings_s"]
    # an unsupervised method on the same protocol runs
    assert run_benchmark(_cfg("toy_unlabelled", "bow", {"n_clusters": 2}), tmp_path / "bow")["status"] == "ok"


def test_class_sizes_in_words():
    classes, sizes = annotated_class_sizes(np.array([5, -1, 5, 7, 9, -1]))
    assert classes.tolist() == [5, 7, 9] and sizes.tolist() == [2, 1, 1]
    assert describe_class_sizes(sizes) == "3 classes: 2 with 1 annotated sample, 1 with 2-9"
    assert describe_class_sizes(np.full(4485, 1)) == "4485 classes: 4485 with 1 annotated sample"


def test_dbows_criterion_is_undefined_with_one_annotated_image_per_class():
    dbows = get_plugin("aggregator", "dbows")()
    with pytest.raises(UndefinedCriterionError, match=r"within-class scatter S_w.*3 classes: 3 with 1 annotated"):
        dbows.check_fit_labels(np.array([0, -1, 1, -1, 2]))
    with pytest.raises(UndefinedCriterionError, match="at least 2 classes"):
        dbows.check_fit_labels(np.array([4, 4, -1]))
    dbows.check_fit_labels(np.array([0, 0, 1, -1, 2]))  # one class with two images: S_w is not identically zero


def test_lcksvd2_criterion_is_undefined_with_more_classes_than_atoms():
    lcksvd = get_plugin("aggregator", "lcksvd2")(n_atoms=4)
    with pytest.raises(UndefinedCriterionError, match=r"n_atoms=4 is split over 6 classes.*2 classes without"):
        lcksvd.check_fit_labels(np.arange(6))
    lcksvd.check_fit_labels(np.array([0, 1, 2, 3, 3]))


def test_fit_itself_checks_the_criterion_so_python_users_get_the_same_error():
    bags = Bags.from_list([np.random.default_rng(i).normal(size=(5, 3)).astype(np.float32) for i in range(3)])
    with pytest.raises(UndefinedCriterionError, match="within-class scatter"):
        get_plugin("aggregator", "dbows")(n_clusters=2, max_iter=1).fit(bags, np.array([0, 1, 2]))


@pytest.mark.slow
def test_cli_undefined_criterion_is_one_message_exit_2_before_extraction(tmp_path):
    proc = run_cli(["run", "dataset=synthetic", "dataset.params.task=retrieval", "aggregator=dbows",
                    "evaluator=retrieval", "evaluator.params.labelled_fraction=0.01", f"hydra.run.dir={tmp_path}/run"],
                   cwd=REPO, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "within-class scatter S_w is zero" in proc.stderr and "Traceback" not in proc.stderr
    saved = json.loads((tmp_path / "run" / "result.json").read_text())
    assert saved["error"]["type"] == "UndefinedCriterionError" and "descriptors" not in saved["timings_s"]


@pytest.mark.slow
def test_cli_prolfa_on_a_partially_annotated_retrieval_protocol_runs(tmp_path):
    proc = run_cli(["run", "dataset=synthetic", "dataset.params.task=retrieval", "aggregator=smoke/prolfa",
                    "evaluator=retrieval", f"hydra.run.dir={tmp_path}/run"], cwd=REPO)
    saved = json.loads((tmp_path / "run" / "result.json").read_text())
    assert saved["status"] == "ok" and "mAP" in saved["metrics"], proc.stdout
    assert saved["split"]["fit_rule"] == ANNOTATED_ONLY
    assert saved["split"]["n_fit"] == saved["split"]["n_labelled"] < saved["split"]["n_fit_offered"]
