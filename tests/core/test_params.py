"""Parameters are checked against the plugin's signature before anything is computed: no silent coercion."""

from __future__ import annotations

import json

import pytest

from lfabench.params import ConfigError, check_params, check_seed
from lfabench.registry import get_plugin
from lfabench.run import run_benchmark

from conftest import run_cli


def _cfg(**aggregator_params):
    return {"dataset": {"name": "digits", "params": {"n_samples": 60}},
            "descriptor": {"name": "patches", "params": {}},
            "aggregator": {"name": "bow", "params": {"n_clusters": 4, "random_state": 0, **aggregator_params}},
            "evaluator": {"name": "knn", "params": {}}, "seed": 0, "cache": False}


@pytest.mark.parametrize("value", [2.5, "abc", True, None])
def test_a_wrong_type_is_refused_naming_the_parameter(value):
    with pytest.raises(ConfigError, match=r"aggregator 'bow': parameter n_clusters=.* must be an integer"):
        check_params("aggregator", "bow", get_plugin("aggregator", "bow"), {"n_clusters": value})


def test_unknown_parameter_lists_the_real_ones():
    with pytest.raises(ConfigError, match="no parameter 'n_cluster'.*n_clusters"):
        check_params("aggregator", "bow", get_plugin("aggregator", "bow"), {"n_cluster": 3})


def test_annotations_decide_where_given():
    fv = get_plugin("aggregator", "fv")
    check_params("aggregator", "fv", fv, {"pca_components": None, "power": 1})  # int | None; float takes an int
    with pytest.raises(ConfigError, match="pca_components=2.5 must be an integer or null"):
        check_params("aggregator", "fv", fv, {"pca_components": 2.5})


@pytest.mark.parametrize("seed", [True, 1.5, "1"])
def test_seed_must_be_an_integer(seed):
    with pytest.raises(ConfigError, match="seed"):
        check_seed(seed)


def test_bad_parameter_fails_before_the_dataset_is_loaded_or_described(tmp_path):
    with pytest.raises(ConfigError, match="n_clusters=2.5"):
        run_benchmark(_cfg(n_clusters=2.5), tmp_path)
    rec = json.loads((tmp_path / "result.json").read_text())
    assert rec["status"] == "failed" and rec["error"]["stage"] == "config"
    assert "descriptors" not in rec["timings_s"] and "dataset" not in rec["timings_s"]


def test_seed_true_is_not_run_as_seed_1(tmp_path):
    cfg = _cfg()
    cfg["seed"] = True
    with pytest.raises(ConfigError, match="seed=True"):
        run_benchmark(cfg, tmp_path)


def test_a_constructor_refusing_its_parameters_is_a_config_error(tmp_path):
    cfg = _cfg()
    cfg["evaluator"]["params"] = {"metric": "nope"}
    with pytest.raises(ConfigError, match="evaluator 'knn' refused its parameters: knn: metric must be one of"):
        run_benchmark(cfg, tmp_path)


@pytest.mark.slow  # a run through the command; its one-message path is the default tier's missing-data test
def test_cli_user_error_is_one_message_without_traceback_and_the_record_keeps_it(tmp_path):
    proc = run_cli(["run", "aggregator=bow", "aggregator.params.n_clusters=abc", "hydra.run.dir=bad"], cwd=tmp_path,
                   check=False)
    assert proc.returncode == 2
    assert "n_clusters='abc' must be an integer" in proc.stderr
    assert "Traceback" not in proc.stderr and "HYDRA_FULL_ERROR" not in proc.stderr
    rec = json.loads((tmp_path / "bad" / "result.json").read_text())
    assert rec["status"] == "failed" and "Traceback" in rec["error"]["traceback"]


def test_cli_missing_dataset_is_one_message(tmp_path):
    proc = run_cli(["run", "dataset=scene15", f"dataset.params.root={tmp_path / 'nowhere'}", "hydra.run.dir=r"],
                   cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "scene15" in proc.stderr and "Traceback" not in proc.stderr


def test_run_level_switches_are_checked_too(tmp_path):
    cfg = _cfg()
    cfg["skip_corrupt_images"] = "yes"
    with pytest.raises(ConfigError, match="skip_corrupt_images='yes'"):
        run_benchmark(cfg, tmp_path / "a")
    with pytest.raises(ConfigError, match="time_limit='10'"):
        run_benchmark(_cfg(), tmp_path / "b", time_limit_s="10")
    with pytest.raises(ConfigError, match="isolate='thread' must be one of none, process"):
        run_benchmark(_cfg(), tmp_path / "c", isolate="thread")
    rec = json.loads((tmp_path / "c" / "result.json").read_text())
    assert rec["status"] == "failed" and rec["isolate"] == "thread" and "dataset" not in rec["timings_s"]
