"""The plugins' generated configs as a Hydra config source that builds a node only when a run selects it.

Hydra's ConfigStore turns every stored node into an OmegaConf tree when it is stored and deep-copies the
whole store again when it composes; a run selects four of a hundred. :class:`PluginConfigSource` (scheme
``lfabench://``) serves the table that :func:`serve` installs, ``"group/name" -> ConfigEntry``, building an
entry's node when Hydra loads that config. :class:`PluginSearchPath` puts it on every search path, after
lfabench's own ``conf/`` and before the ``hydra.searchpath`` folders, so a command line that replaces
``hydra.searchpath`` keeps the plugins' configs; the table leaves out every name that a yaml file provides
(:func:`lfabench.cli.run.register_plugin_configs`), so a yaml file still wins wherever it is.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from hydra.core.object_type import ObjectType
from hydra.core.plugins import Plugins
from hydra.core.singleton import Singleton
from hydra.plugins.config_source import ConfigLoadError, ConfigResult, ConfigSource
from hydra.plugins.search_path_plugin import SearchPathPlugin

SCHEME = "lfabench"
PATH = f"{SCHEME}://plugins"


@dataclass(frozen=True)
class ConfigEntry:
    """One generated config, as plain data (a launcher's workers receive the table with Hydra's state).

    ``node``: a fixed node, or ``None`` for plugin ``name`` of config group ``kind``, whose node
    :func:`lfabench.cli.run.plugin_node` builds from the plugin's declared defaults when it is loaded;
    ``package``: its Hydra package header (``None``: the group's own); ``provider``: the distribution
    that registered the plugin.
    """

    kind: str
    name: str
    package: str | None = None
    provider: str | None = None
    node: dict | None = None

    def make(self) -> dict:
        if self.node is not None:
            return copy.deepcopy(self.node)
        from .run import plugin_node

        return plugin_node(self.kind, self.name)


class _Table(metaclass=Singleton):
    """``"group/name" -> ConfigEntry``. A Hydra singleton: Hydra builds a source from its search-path entry
    alone and deep-copies it, and passes its singletons to a launcher's workers, which compose their jobs'
    configs there."""

    def __init__(self) -> None:
        self.entries: dict[str, ConfigEntry] = {}


def serve(entries: dict[str, ConfigEntry]) -> None:
    """Serve ``entries`` (``"group/name" -> ConfigEntry``) from now on, in place of what was served before,
    and register the source and its search path with Hydra (once per process)."""
    _Table.instance().entries = dict(entries)
    plugins = Plugins.instance()
    plugins.register(PluginConfigSource)
    plugins.register(PluginSearchPath)


def served() -> list[str]:
    """The ``"group/name"`` keys served now."""
    return sorted(_Table.instance().entries)


def _key(config_path: str) -> str:
    return config_path.rstrip("/").removesuffix(".yaml")


class PluginConfigSource(ConfigSource):
    """Hydra config source over the served table; each load builds a fresh node (Hydra edits what it loads)."""

    @staticmethod
    def scheme() -> str:
        return SCHEME

    def load_config(self, config_path: str) -> ConfigResult:
        from omegaconf import OmegaConf

        entry = _Table.instance().entries.get(_key(config_path))
        if entry is None:
            raise ConfigLoadError(f"Config not found: {config_path}")
        return ConfigResult(config=OmegaConf.create(entry.make()), path=self.full_path(),
                            provider=entry.provider or self.provider, header={"package": entry.package})

    def available(self) -> bool:
        return True

    def is_group(self, config_path: str) -> bool:
        group = config_path.strip("/")
        return group == "" or any(key.startswith(f"{group}/") for key in _Table.instance().entries)

    def is_config(self, config_path: str) -> bool:
        return _key(config_path) in _Table.instance().entries

    def list(self, config_path: str, results_filter: ObjectType | None) -> list[str]:
        prefix = f"{config_path.strip('/')}/" if config_path.strip("/") else ""
        found = set()
        for key in _Table.instance().entries:
            if key.startswith(prefix):
                head, subgroup, _ = key[len(prefix):].partition("/")
                if results_filter in (None, ObjectType.GROUP if subgroup else ObjectType.CONFIG):
                    found.add(head)
        return sorted(found)


class PluginSearchPath(SearchPathPlugin):
    """Adds :data:`PATH` to Hydra's search path (before the ``hydra.searchpath`` folders, which Hydra appends
    after every search-path plugin)."""

    def manipulate_search_path(self, search_path) -> None:
        search_path.append(provider="lfabench", path=PATH)
