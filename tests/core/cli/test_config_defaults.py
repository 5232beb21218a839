"""A plugin's defaults are stated once, in code: every composed config equals its class defaults."""

from __future__ import annotations

import pytest
import yaml
from omegaconf import OmegaConf

from lfabench import KINDS, get_registry
from lfabench.cli.run import PRIMARY_CONFIG, RUN_LEVEL, register_configs, required_params

from conftest import compose_config, run_cli


def _expected(value, key):
    if key in RUN_LEVEL and value == RUN_LEVEL[key][0] and type(value) is type(RUN_LEVEL[key][0]):
        return RUN_LEVEL[key][1]
    return list(value) if isinstance(value, tuple) else value


@pytest.mark.parametrize("kind", KINDS)
def test_every_composed_plugin_config_equals_the_class_defaults(kind):
    specs = get_registry().specs(kind)
    assert specs, f"no {kind} plugin registered"
    for spec in specs:
        node = compose_config([f"{kind}={spec.name}"])[kind]
        assert node["name"] == spec.name
        params = node["params"]
        for key in required_params(spec.factory):
            assert params[key] == "???", f"{kind} {spec.name}: required {key} must be Hydra's mandatory ???"
        for key, value in spec.defaults.items():
            assert key in params, f"{kind} {spec.name}: default {key} missing from the composed config"
            assert params[key] == _expected(value, key), (
                f"{kind} {spec.name}: composed {key}={params[key]!r}, class default {value!r}")
        assert set(params) <= set(spec.defaults) | set(required_params(spec.factory))


def test_run_level_settings_reach_plugins():
    cfg = OmegaConf.create(compose_config(["aggregator=vlad", "seed=7", "cache=false"]))
    assert cfg.aggregator.params.random_state == 7 and cfg.aggregator.params.cache is False


@pytest.mark.slow  # the command in a subprocess; the same composition is checked in-process for every plugin above
def test_cli_cfg_job_shows_the_class_defaults(tmp_path):
    from lfabench_plugins.aggregators.vlad import VLAD

    out = run_cli(["run", "--cfg", "job", "aggregator=vlad"], cwd=tmp_path).stdout
    params = yaml.safe_load(out)["aggregator"]["params"]
    defaults = VLAD().get_params()
    assert {k: v for k, v in params.items() if k not in ("random_state", "cache")} == {
        k: v for k, v in defaults.items() if k not in ("random_state", "cache")}
    assert params["random_state"] == "${seed}" and params["cache"] == "${cache}"


def test_a_variant_yaml_merges_onto_the_plugin_defaults(tmp_path):
    conf = tmp_path / "conf" / "aggregator"
    conf.mkdir(parents=True)
    (conf / "bow_wide.yaml").write_text("defaults:\n  - bow\n  - _self_\nparams:\n  n_clusters: 512\n")
    out = run_cli(["run", "--cfg", "job", "aggregator=bow_wide", f"hydra.searchpath=[file://{tmp_path / 'conf'}]"],
                  cwd=tmp_path).stdout
    node = yaml.safe_load(out)["aggregator"]
    from lfabench_plugins.aggregators.bow import BoW

    expected = dict(BoW().get_params(), n_clusters=512, cache="${cache}", random_state="${seed}")
    assert node == {"name": "bow", "params": expected}


def test_the_registration_reads_the_config_entry_points_once(monkeypatch):
    # each read of the installed packages' entry points costs milliseconds at every start of a run
    import lfabench.registry as registry_mod
    from hydra.core.config_store import ConfigStore

    expected = registry_mod.config_search_paths()
    real = registry_mod.importlib_metadata.entry_points
    groups = []

    def counting(group):
        groups.append(group)
        return real(group=group)

    get_registry()  # the plugins' own entry points are read when the registry loads, not counted here
    monkeypatch.setattr(registry_mod.importlib_metadata, "entry_points", counting)
    register_configs()
    assert groups.count(registry_mod.CONFIG_ENTRY_POINT_GROUP) == 1
    primary = ConfigStore.instance().load(f"{PRIMARY_CONFIG}.yaml").node
    assert list(primary.hydra.searchpath) == expected


def test_the_override_check_and_the_registration_read_no_entry_point_when_given_the_search_paths(monkeypatch):
    # `lfabench run` reads the config entry points once and hands them to both (each read costs milliseconds)
    import lfabench.registry as registry_mod
    from lfabench.cli.run import check_group_overrides

    search_paths = registry_mod.config_search_paths()
    get_registry()
    groups = []
    real = registry_mod.importlib_metadata.entry_points
    monkeypatch.setattr(registry_mod.importlib_metadata, "entry_points",
                        lambda group: groups.append(group) or real(group=group))
    argv = ["aggregator=vlad", "descriptor=daisy", "dataset=digits", "evaluator=knn"]
    check_group_overrides(argv, search_paths)
    register_configs(search_paths=search_paths)
    assert registry_mod.CONFIG_ENTRY_POINT_GROUP not in groups
    check_group_overrides(argv)  # not given: read for each group named
    assert groups.count(registry_mod.CONFIG_ENTRY_POINT_GROUP) == 4
