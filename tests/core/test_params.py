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


# ----------------------------------------------------------------- one validator: Python and the command line


def _run_error(tmp_path, name: str, **params) -> str:
    """The message of the ConfigError a run of aggregator ``name`` with ``params`` stops on (the command line's
    path: the config stage, before the dataset is read)."""
    cfg = _cfg()
    cfg["aggregator"] = {"name": name, "params": params}
    with pytest.raises(ConfigError) as exc:
        run_benchmark(cfg, tmp_path)
    return str(exc.value)


def _bags():
    from lfabench.testing import make_check_bags

    return make_check_bags()


def test_vlad_fit_refuses_a_fractional_count_in_the_command_lines_words(tmp_path):
    with pytest.raises(ConfigError) as exc:
        get_plugin("aggregator", "vlad")(n_clusters=2.5).fit(_bags()[0])
    python = str(exc.value)
    cli = _run_error(tmp_path, "vlad", n_clusters=2.5)
    assert python == "VLAD: parameter n_clusters=2.5 must be an integer"
    assert cli == "aggregator 'vlad': parameter n_clusters=2.5 must be an integer (`aggregator.params.n_clusters=...`)"


def test_bow_refuses_a_count_given_as_text_at_construction_in_the_command_lines_words(tmp_path):
    with pytest.raises(ConfigError) as exc:
        get_plugin("aggregator", "bow")(n_clusters="4")
    assert str(exc.value) == "BoW: parameter n_clusters='4' must be an integer"
    assert _run_error(tmp_path, "bow", n_clusters="4") == (
        "aggregator 'bow': parameter n_clusters='4' must be an integer (`aggregator.params.n_clusters=...`)")


def test_fit_checks_what_set_params_changed():
    bags, _ = _bags()
    est = get_plugin("aggregator", "bow")(n_clusters=4, random_state=0).set_params(n_clusters=0)
    with pytest.raises(ConfigError, match=r"^BoW: parameter n_clusters=0 must be an int in the range \[1, inf\)$"):
        est.fit(bags)


@pytest.mark.parametrize("name, params, words", [
    ("t1", {"softness": 0}, "parameter softness=0 must be a float in the range (0.0, inf)"),
    ("t1", {"reg": -1e-3}, "parameter reg=-0.001 must be a float in the range [0.0, inf)"),
    ("eobow", {"entropy_softness": 0.0}, "parameter entropy_softness=0.0 must be a float in the range (0.0, inf)"),
    ("dbows", {"max_iter": -1}, "parameter max_iter=-1 must be an int in the range [0, inf)"),
    ("fv_nn", {"whiten_components": 0}, "parameter whiten_components=0 must be an int in the range [1, inf)"),
    ("univcg", {"ridge": -1.0}, "parameter ridge=-1.0 must be a float in the range [0.0, inf)"),
    ("lcksvd2", {"sparsity": 0}, "parameter sparsity=0 must be an int in the range [1, inf)"),
    ("prolfa", {"lambda1": -0.5}, "parameter lambda1=-0.5 must be a float in the range [0.0, inf)"),
    ("prolfa", {"scale": "big"},
     "parameter scale='big' must be a float in the range (0.0, inf) or a str among {'auto'}"),
])
def test_a_plugins_own_ranges_are_refused_at_construction_as_on_the_command_line(tmp_path, name, params, words):
    """The ranges supervised methods and ProLFA checked inside ``fit`` in their own words are declarations now:
    refused as the estimator is built, in the command line's words."""
    factory = get_plugin("aggregator", name)
    with pytest.raises(ConfigError) as exc:
        factory(**params)
    assert str(exc.value) == f"{factory.__name__}: {words}"
    (key,) = params
    assert _run_error(tmp_path, name, **params) == f"aggregator {name!r}: {words} (`aggregator.params.{key}=...`)"


@pytest.mark.parametrize("name, params", [
    ("t1", {"softness": 1e-9, "reg": 0.0, "max_iter": 0}), ("eobow", {"max_iter": 0}), ("dbows", {"max_iter": 0}),
    ("fv_nn", {"n_estimators": 0, "whiten_components": 1}), ("univcg", {"ridge": 0.0, "n_rounds": 1}),
    ("lcksvd2", {"sqrt_alpha": 0.0, "sqrt_beta": 0, "n_iter": 0, "init_iter": 0}),
    ("prolfa", {"lambda1": 0, "lambda2": 0.0, "scale": "auto"}), ("prolfa", {"scale": 2}),
])
def test_the_edges_of_each_range_still_build(name, params):
    get_plugin("aggregator", name)(**params)


def test_intervals_accept_and_word_values_as_scikit_learns():
    from numbers import Integral, Real

    import numpy as np

    from lfabench.params import Interval

    values = [-1, 0, 1, 2, 0.5, 1.0, -0.0, 3.5, float("nan"), float("inf"), True, np.int64(0), np.float32(0.5), "1"]
    for kind in (Integral, Real):
        for left, right in ((None, None), (0, None), (None, 1), (0, 1)):
            for closed in ("left", "right", "both", "neither"):
                ours = Interval(kind, left, right, closed=closed)
                try:
                    theirs = ours.to_sklearn()
                except ValueError:  # an integer interval closed at an infinite bound: scikit-learn refuses it
                    continue
                assert str(ours) == str(theirs)
                for v in values:
                    assert ours.is_satisfied_by(v) == theirs.is_satisfied_by(v), (ours, v)
