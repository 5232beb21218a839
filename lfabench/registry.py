"""The plugin registry: one pluggy PluginManager fed by the ``lfabench`` entry-point group.

Built-in plugins (``lfabench_plugins.*``, the repository's ``plugins/`` folder) are
declared in lfabench's own ``pyproject.toml`` under ``[project.entry-points.lfabench]``,
exactly like third-party ones, and are loaded by the same code path.

A plugin module that fails to import, or whose hook raises, is reported (warning
and :attr:`PluginRegistry.failures`) with its distribution name and version; the
other plugins keep working. Two plugins claiming one ``(kind, name)`` is a
:class:`PluginConflictError` naming both, raised when that name is used.
"""

from __future__ import annotations

import difflib
import importlib.metadata as importlib_metadata
import threading
import warnings
from dataclasses import dataclass

import pluggy

from . import hookspecs
from .plugin import KINDS, PluginSpec

ENTRY_POINT_GROUP = "lfabench"
#: Entry-point group for packages that ship Hydra config group files
#: (value: an importable package holding ``aggregator/*.yaml`` etc.).
CONFIG_ENTRY_POINT_GROUP = "lfabench.conf"

_HOOKS = {
    "aggregator": "lfabench_aggregators",
    "descriptor": "lfabench_descriptors",
    "dataset": "lfabench_datasets",
    "evaluator": "lfabench_evaluators",
}


class PluginLoadWarning(UserWarning):
    """A plugin failed to import or register; it is skipped."""


class UnknownPluginError(LookupError):
    """No plugin of that kind has that name (the message lists the available ones)."""


class PluginConflictError(RuntimeError):
    """Two plugins claim the same kind and name."""


@dataclass
class PluginFailure:
    """A plugin that could not be loaded."""

    entry_point: str
    distribution: str
    version: str
    error: str

    def __str__(self) -> str:
        return (f"plugin entry point {self.entry_point!r} from {self.distribution} {self.version} "
                f"failed to load: {self.error}")


def _dist_of(ep) -> tuple[str, str]:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "<unknown distribution>", "?"
    return dist.metadata["Name"] or dist.name, dist.version


class PluginRegistry:
    """Plugins by kind and name. Use :func:`get_registry` for the process-wide one."""

    def __init__(self, load_entry_points: bool = True):
        self.pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        self.pm.add_hookspecs(hookspecs)
        self.failures: list[PluginFailure] = []
        self._origin: dict[int, tuple[str, str, str]] = {}  # id(plugin) -> (dist, version, module)
        self._specs: dict[str, dict[str, PluginSpec]] | None = None
        self._conflicts: dict[tuple[str, str], list[PluginSpec]] = {}
        if load_entry_points:
            self.load_entry_points()

    # ---------------------------------------------------------------- loading
    def load_entry_points(self, group: str = ENTRY_POINT_GROUP) -> None:
        """Import and register every module of the entry-point group, reporting failures."""
        seen = set()
        for ep in importlib_metadata.entry_points(group=group):
            dist, version = _dist_of(ep)
            key = (ep.name, ep.value)
            if key in seen:  # the same distribution visible twice on sys.path
                continue
            seen.add(key)
            try:
                obj = ep.load()
            except (Exception, SystemExit) as exc:  # noqa: BLE001 - not even sys.exit at import takes the CLI down
                self._fail(ep.name, dist, version, f"{type(exc).__name__}: {exc}")
                continue
            self.register(obj, name=f"{dist}:{ep.name}", distribution=dist, version=version)

    def register(self, plugin, name: str | None = None, distribution: str = "<local>", version: str = "") -> None:
        """Register a module or object implementing some of the hooks (also for tests and notebooks)."""
        try:
            self.pm.register(plugin, name=name)
        except Exception as exc:  # noqa: BLE001
            self._fail(name or repr(plugin), distribution, version, f"{type(exc).__name__}: {exc}")
            return
        module = getattr(plugin, "__name__", type(plugin).__name__)
        self._origin[id(plugin)] = (distribution, version, module)
        self._specs = None

    def _fail(self, entry_point: str, dist: str, version: str, error: str) -> None:
        failure = PluginFailure(entry_point, dist, version, error)
        self.failures.append(failure)
        warnings.warn(str(failure), PluginLoadWarning, stacklevel=3)

    # --------------------------------------------------------------- querying
    def _collect(self) -> dict[str, dict[str, PluginSpec]]:
        if self._specs is not None:
            return self._specs
        specs: dict[str, dict[str, PluginSpec]] = {k: {} for k in KINDS}
        conflicts: dict[tuple[str, str], list[PluginSpec]] = {}
        for kind, hook_name in _HOOKS.items():
            for impl in getattr(self.pm.hook, hook_name).get_hookimpls():
                dist, version, module = self._origin.get(id(impl.plugin), ("<local>", "", impl.plugin_name))
                try:
                    returned = impl.function() or []
                    items = list(returned)
                    for spec in items:
                        if not isinstance(spec, PluginSpec):
                            raise TypeError(f"{hook_name} must return PluginSpec objects, got {type(spec).__name__}")
                except (Exception, SystemExit) as exc:  # noqa: BLE001
                    self._fail(impl.plugin_name, dist, version, f"{hook_name}() raised {type(exc).__name__}: {exc}")
                    continue
                for spec in items:
                    spec.kind, spec.distribution, spec.version, spec.module = kind, dist, version, module
                    other = specs[kind].get(spec.name)
                    if other is not None:
                        conflicts.setdefault((kind, spec.name), [other]).append(spec)
                        continue
                    specs[kind][spec.name] = spec
        self._specs, self._conflicts = specs, conflicts
        return specs

    def conflicts(self) -> list[PluginConflictError]:
        self._collect()
        return [self._conflict_error(k, n) for (k, n) in self._conflicts]

    def _conflict_error(self, kind: str, name: str) -> PluginConflictError:
        claims = "; ".join(f"{s.module} ({s.distribution} {s.version})" for s in self._conflicts[(kind, name)])
        return PluginConflictError(f"{kind} plugin name {name!r} is claimed by more than one plugin: {claims}. "
                                   f"Uninstall or rename one of them.")

    def names(self, kind: str) -> list[str]:
        """Sorted names of the plugins of ``kind`` (conflicting names excluded)."""
        _check_kind(kind)
        specs = self._collect()
        return sorted(n for n in specs[kind] if (kind, n) not in self._conflicts)

    def specs(self, kind: str | None = None) -> list[PluginSpec]:
        """All plugin specs (of one kind, or of every kind), sorted by kind then name."""
        specs = self._collect()
        kinds = KINDS if kind is None else (_check_kind(kind),)
        return [specs[k][n] for k in kinds for n in sorted(specs[k])]

    def get_spec(self, kind: str, name: str) -> PluginSpec:
        """The :class:`PluginSpec` of ``kind`` called ``name``.

        Raises :class:`UnknownPluginError` (with the available names and the closest
        match) or :class:`PluginConflictError`.
        """
        _check_kind(kind)
        specs = self._collect()
        if (kind, name) in self._conflicts:
            raise self._conflict_error(kind, name)
        if name not in specs[kind]:
            raise UnknownPluginError(unknown_message(kind, name, self.names(kind)))
        return specs[kind][name]


def unknown_message(kind: str, name: str, available: list[str]) -> str:
    close = difflib.get_close_matches(str(name), available, n=1, cutoff=0.5)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return (f"unknown {kind} plugin {name!r}.{hint} Available {kind} plugins: "
            f"{', '.join(available) or '(none)'}. `lfabench plugins` lists them with their origin.")


def _check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"unknown plugin kind {kind!r}; kinds are {', '.join(KINDS)}")
    return kind


_registry: PluginRegistry | None = None
_lock = threading.Lock()


def get_registry() -> PluginRegistry:
    """The process-wide registry, loaded from entry points on first use."""
    global _registry
    with _lock:
        if _registry is None:
            _registry = PluginRegistry()
        return _registry


def reset_registry() -> None:
    """Forget the process-wide registry (the next use reloads the entry points)."""
    global _registry
    with _lock:
        _registry = None


def get_plugin(kind: str, name: str):
    """Return the class or factory of the ``kind`` plugin called ``name``.

    >>> BoW = get_plugin("aggregator", "bow")
    >>> agg = BoW(n_clusters=64, random_state=0).fit(bags)
    """
    return get_registry().get_spec(kind, name).factory


def config_search_paths() -> list[str]:
    """Hydra search paths (``pkg://...``) contributed by installed packages' ``lfabench.conf`` entry points."""
    paths = []
    for ep in importlib_metadata.entry_points(group=CONFIG_ENTRY_POINT_GROUP):
        paths.append(f"pkg://{ep.value}")
    return sorted(set(paths))
