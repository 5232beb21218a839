import types

import pytest

from lfabench import PluginSpec, get_plugin, hookimpl
from lfabench.registry import PluginConflictError, PluginLoadWarning, PluginRegistry, UnknownPluginError


def _module(name, hook, specs):
    mod = types.ModuleType(name)

    @hookimpl
    def impl():
        return specs() if callable(specs) else specs

    impl.__name__ = hook
    setattr(mod, hook, impl)
    return mod


class Dummy:
    def __init__(self, alpha: float = 1.0, random_state=None):
        self.alpha = alpha


def test_builtins_come_from_entry_points():
    bow = get_plugin("aggregator", "bow")
    assert bow.__module__ == "lfabench_plugins.aggregators.bow"
    reg = PluginRegistry()
    spec = reg.get_spec("aggregator", "bow")
    assert spec.distribution == "lfabench" and spec.kind == "aggregator"
    assert spec.defaults["n_clusters"] == 256  # declared defaults = the factory's keyword defaults
    assert {"bow"} <= set(reg.names("aggregator")) and {"knn"} <= set(reg.names("evaluator"))


def test_unknown_name_lists_available_and_closest():
    with pytest.raises(UnknownPluginError, match=r"unknown aggregator plugin 'bwo'\. Did you mean 'bow'\?"):
        get_plugin("aggregator", "bwo")
    with pytest.raises(ValueError, match="unknown plugin kind"):
        get_plugin("aggregators", "bow")


def test_two_plugins_claiming_one_name_is_an_error_naming_both():
    reg = PluginRegistry(load_entry_points=False)
    reg.register(_module("pkg_a.plugin", "lfabench_aggregators", [PluginSpec("twin", Dummy, "a")]),
                 name="a", distribution="pkg-a", version="1.0")
    reg.register(_module("pkg_b.plugin", "lfabench_aggregators", [PluginSpec("twin", Dummy, "b"),
                                                                  PluginSpec("solo", Dummy, "s")]),
                 name="b", distribution="pkg-b", version="2.0")
    with pytest.raises(PluginConflictError, match=r"pkg_a\.plugin \(pkg-a 1\.0\).*pkg_b\.plugin \(pkg-b 2\.0\)"):
        reg.get_spec("aggregator", "twin")
    assert reg.names("aggregator") == ["solo"]          # the others keep working
    assert len(reg.conflicts()) == 1


def test_raising_hook_is_reported_not_fatal():
    def boom():
        raise RuntimeError("hook exploded")

    reg = PluginRegistry(load_entry_points=False)
    reg.register(_module("bad.plugin", "lfabench_evaluators", boom), name="bad", distribution="bad-dist",
                 version="0.1")
    reg.register(_module("good.plugin", "lfabench_evaluators", [PluginSpec("fine", Dummy, "ok")]), name="good")
    with pytest.warns(PluginLoadWarning, match="bad-dist 0.1.*hook exploded"):
        assert reg.names("evaluator") == ["fine"]
    assert reg.failures and "hook exploded" in reg.failures[0].error


def test_spec_validation():
    with pytest.raises(ValueError, match="without spaces"):
        PluginSpec("two words", Dummy, "x")
    with pytest.raises(TypeError, match="must be callable"):
        PluginSpec("x", 42, "x")
    assert PluginSpec("x", Dummy, "  a\n b ").description == "a b"
    assert PluginSpec("x", Dummy, "d").defaults == {"alpha": 1.0, "random_state": None}
