"""The plugins' generated configs are served on demand: a run builds the nodes it selects and no other."""

from __future__ import annotations

import pickle

import yaml
from hydra.core.object_type import ObjectType
from hydra.core.singleton import Singleton
from omegaconf import OmegaConf

import lfabench.cli.run as run_mod
from lfabench import KINDS, get_registry
from lfabench.cli.config_source import PATH, PluginConfigSource, serve, served
from lfabench.cli.protocol import CAPS_GROUP
from lfabench.cli.run import register_configs, yaml_options

from conftest import compose_config, run_cli


def test_a_run_builds_the_nodes_of_the_plugins_it_selects_only(monkeypatch):
    built = []
    real = run_mod.plugin_config

    def counting(spec):
        built.append((spec.kind, spec.name))
        return real(spec)

    monkeypatch.setattr(run_mod, "plugin_config", counting)
    cfg = compose_config(["aggregator=vlad", "descriptor=daisy"])
    selected = {(kind, cfg[kind]["name"]) for kind in KINDS}
    assert ("aggregator", "vlad") in selected and ("descriptor", "daisy") in selected
    assert set(built) == selected  # the other plugins' nodes are never built
    assert len(served()) > 4 * len(KINDS)  # and every plugin is still an option


def test_every_plugin_and_qualified_name_is_listed_as_an_option():
    register_configs()
    source = PluginConfigSource(provider="lfabench", path=PATH)
    registry = get_registry()
    for kind in KINDS:
        options = set(source.list(kind, ObjectType.CONFIG))
        yaml_files = yaml_options(kind)  # a yaml file of a plugin's own name (synthetic's) is served by Hydra
        assert yaml_files.isdisjoint(options) and set(registry.names(kind)) - yaml_files <= options
        assert set(registry.qualified_names(kind)) <= options
        assert source.is_group(kind) and source.list(kind, ObjectType.GROUP) == []
    assert set(source.list("", ObjectType.GROUP)) == set(KINDS) | {CAPS_GROUP}
    assert source.list("", ObjectType.CONFIG) == []
    assert source.is_config("aggregator/bow") and source.is_config("aggregator/bow.yaml")
    assert not source.is_config("aggregator/no_such_method") and not source.is_group("no_such_group")


def test_each_load_is_a_fresh_node_equal_to_the_plugin_config():
    register_configs()
    source = PluginConfigSource(provider="lfabench", path=PATH)
    first = source.load_config("aggregator/vlad")
    first.config.params.n_clusters = -1  # Hydra edits what it loads (it pops the defaults list)
    second = source.load_config("aggregator/vlad.yaml")
    assert OmegaConf.to_container(second.config) == run_mod.plugin_config(get_registry().get_spec("aggregator", "vlad"))
    assert second.header == {"package": None} and second.provider == "lfabench"


def test_the_table_travels_with_hydras_state_to_a_launchers_workers():
    # joblib's workers restore Hydra's singletons and compose their jobs' configs from them
    register_configs()
    before = served()
    state = Singleton.get_state()
    instances = pickle.loads(pickle.dumps(state["instances"]))  # the resolvers go by cloudpickle, not needed here
    serve({})
    assert served() == []
    Singleton.set_state(dict(state, instances=instances))
    assert served() == before
    register_configs()  # set_state rediscovers Hydra's plugins, so register the source again


def test_a_yaml_file_of_a_plugins_name_on_the_command_line_search_path_wins(tmp_path):
    conf = tmp_path / "conf" / "aggregator"
    conf.mkdir(parents=True)
    (conf / "bow.yaml").write_text("name: bow\nparams:\n  n_clusters: 7\n")
    out = run_cli(["run", "--cfg", "job", "aggregator=bow", f"hydra.searchpath=[file://{tmp_path / 'conf'}]"],
                  cwd=tmp_path).stdout
    assert yaml.safe_load(out)["aggregator"] == {"name": "bow", "params": {"n_clusters": 7}}
