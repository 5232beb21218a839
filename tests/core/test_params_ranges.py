"""Values out of a parameter's range are refused before any descriptor is extracted, naming the parameter."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from lfabench.params import ConfigError, check_params, check_seed, constraints
from lfabench.registry import get_plugin
from lfabench.run import run_benchmark

from conftest import run_cli


def _cfg(seed=0, evaluator=None, **aggregator_params):
    return {"dataset": {"name": "digits", "params": {"n_samples": 60}},
            "descriptor": {"name": "patches", "params": {}},
            "aggregator": {"name": "bow", "params": {"n_clusters": 4, "random_state": 0, **aggregator_params}},
            "evaluator": {"name": "knn", "params": evaluator or {}}, "seed": seed, "cache": False}


@pytest.mark.parametrize("kind, name, params, words", [
    ("aggregator", "bow", {"n_clusters": 0},
     r"aggregator 'bow': parameter n_clusters=0 must be an int in the range \[1, inf\) "
     r"\(`aggregator.params.n_clusters=...`\)$"),
    ("aggregator", "vlad", {"n_clusters": -3}, "aggregator 'vlad': parameter n_clusters="),
    ("aggregator", "fv", {"n_components": 0}, "aggregator 'fv': parameter n_components="),
    ("aggregator", "bow", {"random_state": -1}, "aggregator 'bow': parameter random_state="),
    ("evaluator", "knn", {"test_fraction": 0.0}, "evaluator 'knn': parameter test_fraction="),
    ("evaluator", "knn", {"test_fraction": 1.5},
     r"evaluator 'knn': parameter test_fraction=1.5 must be a float in the range \(0.0, 1.0\)"),
    ("evaluator", "knn", {"test_fraction": 1}, "evaluator 'knn': parameter test_fraction="),
    ("evaluator", "knn", {"labelled_fraction": 0.0}, "evaluator 'knn': parameter labelled_fraction="),
    ("descriptor", "precomputed", {"max_keypoints": 0},
     r"descriptor 'precomputed': parameter max_keypoints=0 must be an int in the range \[1, inf\) or None"),
    ("descriptor", "precomputed", {"max_keypoints": -9}, "descriptor 'precomputed': parameter max_keypoints="),
])
def test_out_of_range_values_are_refused_naming_plugin_and_parameter(kind, name, params, words):
    with pytest.raises(ConfigError, match=words):
        check_params(kind, name, get_plugin(kind, name), params)


@pytest.mark.parametrize("kind, name, params", [
    ("aggregator", "bow", {"n_clusters": 1, "random_state": 0}),
    ("aggregator", "bow", {"random_state": None}),
    ("aggregator", "bow", {"random_state": 2**32 - 1}),
    ("aggregator", "temb", {"n_components": None}),  # None is allowed where the signature's default is None
    ("evaluator", "knn", {"test_fraction": 0.5, "labelled_fraction": 1.0}),
    ("descriptor", "precomputed", {"max_keypoints": None}),
    ("descriptor", "precomputed", {"max_keypoints": 1}),
])
def test_values_in_range_pass(kind, name, params):
    check_params(kind, name, get_plugin(kind, name), params)


def test_none_is_refused_where_the_signature_does_not_allow_it():
    assert None not in constraints(get_plugin("aggregator", "bow"))["n_clusters"]
    assert None in constraints(get_plugin("aggregator", "bow"))["random_state"]


def test_a_plugins_own_constraints_replace_the_convention():
    class Plugin:
        _parameter_constraints = {"k": [int]}  # any integer, 0 included

        def __init__(self, k: int = 1):
            self.k = k

    check_params("evaluator", "mine", Plugin, {"k": 0})


@pytest.mark.parametrize("seed", [-1, 2**32])
def test_a_seed_outside_numpys_range_is_refused_naming_seed(seed):
    with pytest.raises(ConfigError, match=rf"seed={seed} must be an integer from 0"):
        check_seed(seed)


@pytest.mark.parametrize("cfg, words", [
    (_cfg(n_clusters=0), "n_clusters"),
    (_cfg(evaluator={"test_fraction": 1.5}), "test_fraction"),
    (_cfg(seed=-1), "seed=-1"),
])
def test_range_errors_fail_in_the_config_stage(tmp_path, cfg, words):
    with pytest.raises(ConfigError, match=words):
        run_benchmark(cfg, tmp_path)
    rec = json.loads((tmp_path / "result.json").read_text())
    assert rec["error"]["stage"] == "config" and "descriptors" not in rec["timings_s"]


def test_k_larger_than_the_training_set_fails_before_descriptors(tmp_path):
    # the first 60 digits: class sizes 8 6 7 5 4 7 5 6 6 6; round(0.2 n_c) of each held out (2 1 1 1 1 1 1 1 1 1)
    # leaves 60 - 11 = 49 training samples
    with pytest.raises(ConfigError, match=r"evaluator 'knn': k=50 exceeds the 49 training samples of 'digits'"):
        run_benchmark(_cfg(evaluator={"k": 50}), tmp_path)
    rec = json.loads((tmp_path / "result.json").read_text())
    assert rec["error"]["stage"] == "dataset" and "descriptors" not in rec["timings_s"]


def test_k_equal_to_the_training_set_is_accepted(tmp_path):
    rec = run_benchmark(_cfg(evaluator={"k": 49}), tmp_path)
    assert rec["status"] == "ok"


@pytest.mark.parametrize("override, words", [
    ("aggregator.params.n_clusters=0", "aggregator 'bow': parameter n_clusters="),
    # the same path for the other kinds and the seed (their messages are checked in-process above)
    pytest.param("evaluator.params.test_fraction=0", "evaluator 'knn': parameter test_fraction=",
                 marks=pytest.mark.slow),
    pytest.param("seed=-1", "seed=-1 must be an integer", marks=pytest.mark.slow),
])
def test_cli_range_error_is_one_message_exit_2(tmp_path, override, words):
    proc = run_cli(["run", "aggregator=bow", "dataset=digits", "dataset.params.n_samples=60", override,
                    "hydra.run.dir=bad"], cwd=tmp_path, check=False)
    assert proc.returncode == 2, proc.stderr
    assert words in proc.stderr
    assert "Traceback" not in proc.stderr and "HYDRA_FULL_ERROR" not in proc.stderr


@pytest.mark.parametrize("command", [["plugins"], pytest.param(["cache", "list"], marks=pytest.mark.slow),
                                     ["run", "--info", "searchpath"], ["run", "--cfg", "job"]])
def test_a_closed_pipe_ends_a_command_without_a_traceback(tmp_path, command):
    # 141 (128 + SIGPIPE) as a shell reports it: the command's own exit status, or the signal itself (a printing
    # `lfabench run`, which Hydra prints through handlers of its own)
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line (as `| head -0` would leave it)
    env = dict(os.environ, LFABENCH_CACHE=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-m", "lfabench.cli", *command], stdout=write_end, stderr=subprocess.PIPE,
                          text=True, env=env, timeout=300)
    os.close(write_end)
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr, proc.stderr
    assert proc.returncode == (-signal.SIGPIPE if command[0] == "run" else 141)


def test_a_dataset_factory_refusing_its_parameters_is_a_config_error(tmp_path):
    cfg = _cfg()
    cfg["dataset"]["params"] = {"n_samples": 0}
    with pytest.raises(ConfigError, match=r"dataset 'digits': digits: n_samples must be in 1\.\.1797, got 0"):
        run_benchmark(cfg, tmp_path)
    rec = json.loads((tmp_path / "result.json").read_text())
    assert rec["error"]["stage"] == "dataset" and "descriptors" not in rec["timings_s"]


def test_debug_shows_the_traceback_of_a_user_error(tmp_path):
    proc = run_cli(["--debug", "run", "aggregator=bow", "aggregator.params.n_clusters=0", "hydra.run.dir=bad"],
                   cwd=tmp_path, check=False)
    assert proc.returncode == 2
    assert "aggregator 'bow': parameter n_clusters=" in proc.stderr and "Traceback" in proc.stderr


@pytest.mark.parametrize("name, param", [("t1", "max_iter"), ("eobow", "max_iter"), ("dbows", "max_iter"),
                                         ("fv_nn", "n_estimators")])
def test_zero_is_accepted_where_the_plugin_gives_it_a_meaning(name, param):
    """``max_iter=0`` (the unsupervised start) and ``n_estimators=0`` (FV+NN's whitened FV) are documented
    settings: the configuration accepts them as the estimator does, and still refuses a negative count."""
    factory = get_plugin("aggregator", name)
    check_params("aggregator", name, factory, {param: 0})
    factory(**{param: 0})  # the estimator builds with it
    with pytest.raises(ConfigError, match=f"aggregator '{name}': parameter {param}=-1 must be an int in the range \\[0, inf\\)"):
        check_params("aggregator", name, factory, {param: -1})
