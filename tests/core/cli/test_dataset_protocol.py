"""A dataset's own protocol is what a run composes by default (``PluginSpec.protocol``); overrides win."""

from __future__ import annotations

import json

import pytest
import yaml

from lfabench import get_registry
from lfabench.params import ConfigError
from lfabench.plugin import DatasetProtocol
from lfabench.run import check_task

from conftest import compose_config, run_cli


def test_cfg_job_of_oxford5k_shows_the_papers_search_setting(tmp_path):
    out = run_cli(["run", "--cfg", "job", "aggregator=prolfa", "dataset=oxford5k"], cwd=tmp_path).stdout
    cfg = yaml.safe_load(out)
    assert cfg["descriptor"]["name"] == "sift" and cfg["descriptor"]["params"]["max_keypoints"] == 90
    assert cfg["evaluator"]["name"] == "retrieval"
    assert cfg["dataset"]["name"] == "oxford5k" and cfg["aggregator"]["name"] == "prolfa"


@pytest.mark.parametrize("dataset, descriptor, cap, evaluator", [
    ("oxford5k", "daisy", 300, "retrieval"), ("holidays", "daisy", 300, "retrieval"),
    ("holidays", "sift", 90, "retrieval"), ("scene15", "daisy", 150, "knn"), ("voc2007", "sift", 90, "knn")])
def test_each_dataset_composes_its_own_caps_and_evaluator(dataset, descriptor, cap, evaluator):
    cfg = compose_config([f"dataset={dataset}", f"descriptor={descriptor}"])
    assert cfg["descriptor"]["name"] == descriptor and cfg["descriptor"]["params"]["max_keypoints"] == cap
    assert cfg["evaluator"]["name"] == evaluator


def test_explicit_overrides_win_over_the_protocol():
    cfg = compose_config(["dataset=oxford5k", "descriptor=daisy", "descriptor.params.max_keypoints=7", "evaluator=knn"])
    assert cfg["descriptor"]["params"]["max_keypoints"] == 7 and cfg["evaluator"]["name"] == "knn"
    cfg = compose_config(["dataset=oxford5k", "descriptor=patches"])  # a descriptor without a cap keeps its own params
    assert cfg["descriptor"]["name"] == "patches" and "max_keypoints" not in cfg["descriptor"]["params"]
    # the embedded default run is unchanged: digits with its 3x3 patches and 1-NN
    cfg = compose_config([])
    assert (cfg["dataset"]["name"], cfg["descriptor"]["name"], cfg["evaluator"]["name"]) == ("digits", "patches", "knn")


def test_every_protocol_names_registered_plugins():
    registry = get_registry()
    for spec in registry.specs("dataset"):
        protocol = spec.protocol
        if protocol is None:
            continue
        for kind in ("descriptor", "evaluator"):
            name = getattr(protocol, kind)
            assert name is None or name in registry.names(kind), f"{spec.name}: unknown {kind} {name!r}"
        for descriptor in protocol.max_keypoints:
            assert descriptor in registry.names("descriptor"), f"{spec.name}: cap for unknown {descriptor!r}"


def test_a_retrieval_evaluator_on_a_classification_set_is_one_clear_error_before_any_work(tmp_path):
    # the root does not exist: the refusal must come before the dataset is even looked for
    proc = run_cli(["run", "evaluator=retrieval", "dataset=scene15", f"dataset.params.root={tmp_path / 'absent'}",
                    "hydra.run.dir=r"], cwd=tmp_path, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    assert "scores retrieval datasets" in proc.stderr and "'scene15' is a classification dataset" in proc.stderr
    rec = json.loads((tmp_path / "r" / "result.json").read_text())
    assert rec["status"] == "failed" and rec["error"]["stage"] == "config"


def test_check_task_reads_a_task_parameter_and_names_the_datasets_that_fit():
    registry = get_registry()
    synthetic = registry.get_spec("dataset", "synthetic")
    retrieval = registry.get_spec("evaluator", "retrieval").factory()
    check_task(synthetic, {"task": "retrieval"}, "retrieval", retrieval, registry)  # no error
    with pytest.raises(ConfigError, match=r"'synthetic' is a classification dataset.*oxford5k"):
        check_task(synthetic, {"task": "classification"}, "retrieval", retrieval, registry)
    knn = registry.get_spec("evaluator", "knn").factory()
    with pytest.raises(ConfigError, match="scores classification datasets.*own protocol: evaluator=retrieval"):
        check_task(registry.get_spec("dataset", "oxford5k"), {}, "knn", knn, registry)


def test_protocol_declarations_are_checked():
    with pytest.raises(ValueError, match="task"):
        DatasetProtocol("detection")
    with pytest.raises(ValueError, match="caps >= 1"):
        DatasetProtocol("retrieval", max_keypoints={"sift": 0})
