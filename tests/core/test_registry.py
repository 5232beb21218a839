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


# ----------------------------------------------------------------- names claimed twice, plugins that interrupt
def _builtin_and(distribution: str, *names: str) -> PluginRegistry:
    reg = PluginRegistry(load_entry_points=False)
    from lfabench_plugins.aggregators import bow

    reg.register(bow, name="lfabench:bow", distribution="lfabench", version="0.1.0")
    for n in names:
        reg.register(_module(f"{n}.plugin", "lfabench_aggregators", [PluginSpec("bow", Dummy, "impostor")]),
                     name=n, distribution=distribution if len(names) == 1 else f"{n}-dist", version="9.9")
    return reg


def test_a_third_party_claiming_a_builtin_name_leaves_the_builtin_reachable_with_one_warning():
    from lfabench.registry import PluginNameWarning

    reg = _builtin_and("acme-lfabench", "acme")
    with pytest.warns(PluginNameWarning, match=r"'bow' is lfabench's built-in .*also claimed by "
                                               r"acme-lfabench:bow \(acme\.plugin, acme-lfabench 9\.9\)") as caught:
        spec = reg.get_spec("aggregator", "bow")
    assert [w.category for w in caught].count(PluginNameWarning) == 1
    assert spec.distribution == "lfabench" and spec.factory.__name__ == "BoW"
    assert reg.get_spec("aggregator", "acme-lfabench:bow").factory is Dummy
    assert reg.get_spec("aggregator", "lfabench:bow") is spec
    assert reg.names("aggregator") == ["bow"] and reg.conflicts() == []


def test_two_third_party_plugins_with_one_name_are_named_never_unknown():
    reg = PluginRegistry(load_entry_points=False)
    for n in ("one", "two"):
        reg.register(_module(f"{n}.plugin", "lfabench_aggregators", [PluginSpec("pool", Dummy, n)]), name=n,
                     distribution=f"{n}-dist", version="1.0")
    with pytest.raises(PluginConflictError, match=r"one\.plugin \(one-dist 1\.0\); two\.plugin \(two-dist 1\.0\)\. "
                                                  r"Choose one by its qualified name \(aggregator=one-dist:pool or "
                                                  r"aggregator=two-dist:pool\)"):
        reg.get_spec("aggregator", "pool")
    assert reg.ambiguous_names("aggregator") == ["pool"]
    assert reg.get_spec("aggregator", "two-dist:pool").description == "two"


@pytest.mark.parametrize("exc", [KeyboardInterrupt("at import"), GeneratorExit(), SystemExit(3)])
def test_a_hook_raising_any_base_exception_is_a_broken_plugin(exc):
    def boom():
        raise exc

    reg = PluginRegistry(load_entry_points=False)
    reg.register(_module("bad.plugin", "lfabench_aggregators", boom), name="bad", distribution="bad-dist")
    reg.register(_module("good.plugin", "lfabench_aggregators", [PluginSpec("fine", Dummy, "ok")]), name="good")
    with pytest.warns(PluginLoadWarning, match=f"bad-dist.*{type(exc).__name__}"):
        assert reg.names("aggregator") == ["fine"]


def test_a_real_ctrl_c_while_plugins_load_still_stops():
    import os
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")

    def slow_hook():
        os.kill(os.getpid(), signal.SIGINT)  # the user's Ctrl-C arrives while this plugin declares itself
        return [PluginSpec("late", Dummy, "never")]

    reg = PluginRegistry(load_entry_points=False)
    reg.register(_module("slow.plugin", "lfabench_aggregators", slow_hook), name="slow")
    with pytest.raises(KeyboardInterrupt):
        reg.names("aggregator")


def test_boards_read_records_of_an_ambiguous_name_as_of_an_unknown_one(monkeypatch):
    from lfabench import registry
    from lfabench.recordset import frame

    reg = PluginRegistry(load_entry_points=False)
    for n in ("one", "two"):
        reg.register(_module(f"{n}.plugin", "lfabench_aggregators", [PluginSpec("pool", Dummy, n)]), name=n,
                     distribution=f"{n}-dist")
    monkeypatch.setattr(registry, "_registry", reg)
    frame._default_values.cache_clear()
    try:
        # no single plugin answers to it: read like a plugin not installed here, not an error
        assert frame._default_values("aggregator", "pool") == frame._default_values("aggregator", "no-such-plugin")
        assert frame._default_values("aggregator", "one-dist:pool") == {"alpha": {"1.0"}, "random_state": {"null"}}
    finally:
        frame._default_values.cache_clear()


def test_entry_points_of_one_distribution_read_its_metadata_once(monkeypatch):
    # every read of Distribution.metadata parses its METADATA file again: one read per distribution, not per entry point
    import lfabench.registry as registry_mod

    reads = []

    class Dist:
        @property
        def metadata(self):
            reads.append(1)
            return {"Name": "acme-lfabench", "Version": "1.2"}

    class EntryPoint:
        def __init__(self, name, dist):
            self.name, self.value, self.dist = name, f"acme.{name}", dist

        def load(self):
            return _module(f"acme.{self.name}", "lfabench_aggregators", [PluginSpec(self.name, Dummy, "x")])

    dist = Dist()
    points = [EntryPoint(name, dist) for name in ("one", "two", "three")]
    monkeypatch.setattr(registry_mod.importlib_metadata, "entry_points", lambda group: points)
    reg = PluginRegistry()
    assert len(reads) == 1
    assert sorted(reg.names("aggregator")) == ["one", "three", "two"]
    assert {(reg.get_spec("aggregator", n).distribution, reg.get_spec("aggregator", n).version)
            for n in ("one", "two", "three")} == {("acme-lfabench", "1.2")}
