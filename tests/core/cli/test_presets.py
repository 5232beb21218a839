"""The paper's experiments as presets (``conf/experiment/``): every one composes, every smoke variant runs
end to end on embedded data, and a preset whose data is absent stops at its first run, saying what to get."""

from __future__ import annotations

import functools
import itertools
import json
from importlib import resources

import pytest
import yaml

from lfabench.leaderboard import build_leaderboard, find_records

from conftest import run_cli

EXPERIMENTS = resources.files("lfabench_conf") / "experiment"
NAMES = sorted(f.name[:-5] for f in EXPERIMENTS.iterdir() if f.name.endswith(".yaml"))
FULL = [n for n in NAMES if not n.endswith("_smoke")]
SMOKE = [n for n in NAMES if n.endswith("_smoke")]
GROUPS = ("dataset", "descriptor", "aggregator", "evaluator")


def sweep_params(name: str) -> dict[str, list[str]]:
    """The preset's ``hydra.sweeper.params``, each axis as a list of values."""
    data = yaml.safe_load((EXPERIMENTS / f"{name}.yaml").read_text())
    params = ((data.get("hydra") or {}).get("sweeper") or {}).get("params") or {}
    out = {}
    for key, value in params.items():
        text = str(value)
        if text.startswith("range(") and text.endswith(")"):
            out[key] = [str(v) for v in range(*map(int, text[6:-1].split(",")))]
        else:
            out[key] = [v.strip() for v in text.split(",")]
    return out


def test_every_full_preset_has_a_smoke_variant():
    assert len(FULL) >= 9 and sorted(f"{n}_smoke" for n in FULL) == SMOKE


@pytest.fixture(scope="module")
def compose():
    """Hydra's compose API on lfabench's primary config (what ``lfabench run`` composes)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    from lfabench.cli.run import CONFIG_PACKAGE, PRIMARY_CONFIG, register_plugin_configs, register_primary_config

    register_plugin_configs()
    register_primary_config()
    GlobalHydra.instance().clear()
    with initialize_config_module(config_module=CONFIG_PACKAGE, version_base="1.3"):
        yield lambda overrides: hydra_compose(PRIMARY_CONFIG, overrides=overrides)
    GlobalHydra.instance().clear()


@functools.lru_cache(maxsize=None)
def _options(group: str) -> frozenset[str]:
    """The group's options (the same for every preset and value: read once)."""
    from lfabench.cli.run import config_options

    return frozenset(config_options(group))


@pytest.mark.parametrize("name", NAMES)
def test_every_sweep_value_of_every_preset_composes(name, compose):
    """Each value of each sweep axis, with the preset; plugins not registered here are skipped by name."""
    missing = []
    for key, values in sweep_params(name).items():
        for value in values:
            if key in GROUPS and "/" not in value and value not in _options(key):
                missing.append(f"{key}={value}")
                continue
            cfg = compose([f"+experiment={name}", f"{key}={value}"])
            if key in GROUPS:
                assert cfg[key]["name"], (key, value)
            elif key != "seed":
                node = cfg
                for part in key.split("."):
                    node = node[part]
                assert str(node) == value or float(node) == float(value)
    if missing:
        pytest.skip(f"{name}: not registered on this installation (their plugins come from other packages or "
                    f"branches): {', '.join(missing)}; every other sweep value composed")


def test_the_cli_prints_a_preset_config(tmp_path):
    proc = run_cli(["run", "--cfg", "job", "+experiment=classification"], cwd=tmp_path)
    cfg = yaml.safe_load(proc.stdout)
    assert cfg["dataset"]["name"] == "scene15" and cfg["descriptor"]["params"]["max_keypoints"] == 90
    assert cfg["aggregator"]["params"]["n_prototypes"] == 4096 and cfg["evaluator"]["params"]["k"] == 1


def test_paper_settings_of_the_full_presets(compose):
    search = compose(["+experiment=search", "descriptor=daisy300", "aggregator=semi_prolfa_d2048"])
    assert search["descriptor"]["params"]["max_keypoints"] == 300
    assert search["aggregator"]["params"]["n_prototypes"] == 2048
    assert search["evaluator"]["params"]["labelled_fraction"] == 0.2
    assert sweep_params("classification")["seed"] == [str(s) for s in range(6)]
    assert compose(["+experiment=classification", "descriptor=daisy"])["descriptor"]["params"]["max_keypoints"] == 150
    timing = compose(["+experiment=running_time"])
    assert timing["cache"] is False and timing["cache_descriptors"] is True  # refit codebooks, not SIFT


CURVES = {"labelled_proportion_smoke": "evaluator.labelled_fraction", "lambda1_smoke": "aggregator.lambda1",
          "dbar_smoke": "aggregator.n_prototypes", "k_metric_smoke": "evaluator.k"}


@pytest.mark.slow
@pytest.mark.parametrize("name", SMOKE)
def test_smoke_preset_runs_end_to_end(name, tmp_path):
    run_cli(["run", "-m", f"+experiment={name}"], cwd=tmp_path)
    records = find_records([tmp_path / "lfabench_multirun"])
    axes = sweep_params(name)
    assert len(records) == len(list(itertools.product(*axes.values())))
    recs = [json.loads(p.read_text()) for p in records]
    assert {r["status"] for r in recs} == {"ok"}
    if name == "search_smoke":  # the retrieval protocol; unsupervised methods ignore the labelled fraction
        assert all("mAP" in r["metrics"] for r in recs)
        assert {r["config"]["aggregator"]["name"]: r["ignored_params"] for r in recs} == {
            "bow": ["evaluator.labelled_fraction"], "vlad": ["evaluator.labelled_fraction"], "prolfa": [],
            "semi_prolfa": []}
        # fully supervised ProLFA learns from the annotated images only; Semi-ProLFA from every database image
        fits = {r["config"]["aggregator"]["name"]: r["split"] for r in recs}
        assert fits["prolfa"]["n_fit"] == fits["prolfa"]["n_labelled"] < fits["prolfa"]["n_database"]
        assert fits["semi_prolfa"]["n_fit"] == fits["semi_prolfa"]["n_database"]
    if name == "running_time_smoke":  # timed runs refit everything: nothing taken from the fitted-array cache
        assert not any(e.get("hit") for r in recs for e in r["fit_cache"])
    out = build_leaderboard([tmp_path / "lfabench_multirun"], tmp_path / "lb")
    assert "No successful run records" not in out["markdown"].read_text()
    if name in CURVES:
        assert any(p.name.endswith(f"{CURVES[name]}-curve.png") for p in out["plots"]), \
            [p.name for p in out["plots"]]


@pytest.mark.slow
def test_a_preset_without_its_data_stops_at_the_first_run(tmp_path):
    empty = tmp_path / "no-data"
    empty.mkdir()
    proc = run_cli(["run", "-m", "+experiment=lambda1"], cwd=tmp_path, env={"LFABENCH_DATA": str(empty)},
                   check=False)
    assert proc.returncode != 0
    assert "stopped before any other run" in proc.stderr and "dataset 'scene15'" in proc.stderr
    assert "lfabench data fetch scene15" in proc.stderr and "lfabench data add scene15" in proc.stderr
    records = find_records([tmp_path / "lfabench_multirun"])
    assert len(records) == 1  # not one failed record per job of the 36-run sweep


@pytest.mark.slow  # a sweep of two runs; the composition of every axis value is in the default tier above
def test_a_command_line_axis_replaces_the_presets(tmp_path):
    """``lfabench run -m +experiment=X aggregator=...`` narrows the preset (nested options such as smoke/bow too)."""
    run_cli(["run", "-m", "+experiment=classification_smoke", "aggregator=smoke/bow"], cwd=tmp_path)
    recs = [json.loads(p.read_text()) for p in find_records([tmp_path / "lfabench_multirun"])]
    assert sorted((r["config"]["aggregator"]["name"], r["seed"]) for r in recs) == [("bow", 0), ("bow", 1)]
