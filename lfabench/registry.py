"""The plugin registry: one pluggy PluginManager fed by the ``lfabench`` entry-point group.

Built-in plugins (``lfabench_plugins.*``, the repository's ``plugins/`` folder) are
declared in lfabench's own ``pyproject.toml`` under ``[project.entry-points.lfabench]``,
exactly like third-party ones, and are loaded by the same code path.

A plugin module that fails to import, or whose hook raises, is reported (warning
and :attr:`PluginRegistry.failures`) with its distribution name and version; the
other plugins keep working. That includes a ``KeyboardInterrupt`` or any other
``BaseException`` a plugin raises while importing or declaring itself; only a real
Ctrl-C (SIGINT) that arrives meanwhile still stops the command.

Every plugin can be named ``<distribution>:<name>`` (``lfabench:bow``, ``acme-lfabench:bow``).
When several plugins claim one ``(kind, name)``:

* if one of them is built in (distribution ``lfabench``), the plain name stays the built-in's (records,
  boards and commands that say ``bow`` keep meaning lfabench's BoW); the others are reachable by their
  qualified name only, and one :class:`PluginNameWarning` per name says so, naming every distribution;
* otherwise the plain name is ambiguous: using it is a :class:`PluginConflictError` naming every
  claimant and their qualified names (never "unknown plugin"); the qualified names work.
"""

from __future__ import annotations

import difflib
import importlib.metadata as importlib_metadata
import signal
import threading
import warnings
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass

import pluggy

from . import hookspecs
from .plugin import KINDS, PluginSpec, default_params

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


#: The distribution of the built-in plugins: it keeps a plain name that a third-party package also claims.
BUILTIN_DISTRIBUTION = "lfabench"


class PluginLoadWarning(UserWarning):
    """A plugin failed to import or register; it is skipped."""


class PluginNameWarning(UserWarning):
    """A third-party plugin claims a built-in plugin's name: the built-in keeps it, the other is qualified."""


class UnknownPluginError(LookupError):
    """No plugin of that kind has that name (the message lists the available ones)."""


class PluginConflictError(LookupError, RuntimeError):
    """Two third-party plugins claim the same kind and name, and the plain name was used.

    A ``LookupError`` like :class:`UnknownPluginError` (the name finds no single plugin: readers of old
    records treat both alike) and, as it always was, a ``RuntimeError``."""


def qualified_name(spec: PluginSpec) -> str:
    """``<distribution>:<name>``: the name of ``spec`` that no other installed plugin can claim."""
    return f"{spec.distribution}:{spec.name}"


class _Interrupts:
    """Tells a real Ctrl-C (SIGINT) apart from a ``KeyboardInterrupt`` that plugin code raises itself."""

    def __init__(self):
        self.signalled = False

    @contextmanager
    def watching(self):
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        try:
            previous = signal.getsignal(signal.SIGINT)
        except ValueError:  # pragma: no cover - no signal support here
            yield self
            return

        def on_sigint(signum, frame):
            self.signalled = True
            if callable(previous):
                previous(signum, frame)
            raise KeyboardInterrupt

        signal.signal(signal.SIGINT, on_sigint)
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, previous)

    def is_plugin_fault(self, exc: BaseException) -> bool:
        """Whether ``exc``, raised by plugin code, is that plugin's fault (not the user's Ctrl-C)."""
        return not (isinstance(exc, KeyboardInterrupt) and self.signalled)


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


def _dist_of(ep, known: dict[int, tuple[str, str]]) -> tuple[str, str]:
    """``(name, version)`` of the distribution that declares ``ep``. ``known`` holds those already read, by the
    distribution object's id: every read of ``Distribution.metadata`` parses its METADATA file again (about a
    millisecond each), and the entry points of one distribution share one object."""
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "<unknown distribution>", "?"
    if id(dist) not in known:
        metadata = dist.metadata
        known[id(dist)] = (metadata["Name"] or dist.name, metadata["Version"])
    return known[id(dist)]


class PluginRegistry:
    """Plugins by kind and name. Use :func:`get_registry` for the process-wide one."""

    def __init__(self, load_entry_points: bool = True):
        self.pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        self.pm.add_hookspecs(hookspecs)
        self.failures: list[PluginFailure] = []
        self._origin: dict[int, tuple[str, str, str]] = {}  # id(plugin) -> (dist, version, module)
        self._specs: dict[str, dict[str, PluginSpec]] | None = None
        self._conflicts: dict[tuple[str, str], list[PluginSpec]] = {}
        self._qualified: dict[str, dict[str, PluginSpec]] = {k: {} for k in KINDS}
        if load_entry_points:
            self.load_entry_points()

    # ---------------------------------------------------------------- loading
    def load_entry_points(self, group: str = ENTRY_POINT_GROUP) -> None:
        """Import and register every module of the entry-point group, reporting failures."""
        seen, distributions = set(), {}
        interrupts = _Interrupts()
        for ep in importlib_metadata.entry_points(group=group):
            dist, version = _dist_of(ep, distributions)
            key = (ep.name, ep.value)
            if key in seen:  # the same distribution visible twice on sys.path
                continue
            seen.add(key)
            try:
                with interrupts.watching():
                    obj = ep.load()
            except BaseException as exc:  # noqa: BLE001 - not even sys.exit or KeyboardInterrupt at import takes the CLI down
                if not interrupts.is_plugin_fault(exc):
                    raise
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
        claims: dict[str, dict[str, list[PluginSpec]]] = {k: {} for k in KINDS}
        interrupts = _Interrupts()
        for kind, hook_name in _HOOKS.items():
            for impl in getattr(self.pm.hook, hook_name).get_hookimpls():
                dist, version, module = self._origin.get(id(impl.plugin), ("<local>", "", impl.plugin_name))
                try:
                    with interrupts.watching():
                        returned = impl.function() or []
                        items = list(returned)
                    for spec in items:
                        if not isinstance(spec, PluginSpec):
                            raise TypeError(f"{hook_name} must return PluginSpec objects, got {type(spec).__name__}")
                except BaseException as exc:  # noqa: BLE001 - a plugin's KeyboardInterrupt/SystemExit too
                    if not interrupts.is_plugin_fault(exc):
                        raise
                    self._fail(impl.plugin_name, dist, version, f"{hook_name}() raised {type(exc).__name__}: {exc}")
                    continue
                for spec in items:
                    spec.kind, spec.distribution, spec.version, spec.module = kind, dist, version, module
                    claims[kind].setdefault(spec.name, []).append(spec)
        specs: dict[str, dict[str, PluginSpec]] = {k: {} for k in KINDS}
        conflicts: dict[tuple[str, str], list[PluginSpec]] = {}
        qualified: dict[str, dict[str, PluginSpec]] = {k: {} for k in KINDS}
        for kind, by_name in claims.items():
            for name, claimants in by_name.items():
                for spec in claimants:
                    qualified[kind].setdefault(qualified_name(spec), spec)
                specs[kind][name] = claimants[0]
                if len(claimants) == 1:
                    continue
                builtin = [s for s in claimants if s.distribution == BUILTIN_DISTRIBUTION]
                if len(builtin) == 1:
                    specs[kind][name] = builtin[0]
                    others = ", ".join(f"{qualified_name(s)} ({s.module}, {s.distribution} {s.version})"
                                       for s in claimants if s is not builtin[0])
                    warnings.warn(f"{kind} plugin name {name!r} is lfabench's built-in ({builtin[0].module}) and is "
                                  f"also claimed by {others}: {name!r} means the built-in; use the qualified name "
                                  f"for the other", PluginNameWarning, stacklevel=3)
                else:
                    conflicts[(kind, name)] = claimants
        self._specs, self._conflicts, self._qualified = specs, conflicts, qualified
        return specs

    def conflicts(self) -> list[PluginConflictError]:
        self._collect()
        return [self._conflict_error(k, n) for (k, n) in self._conflicts]

    def _conflict_error(self, kind: str, name: str) -> PluginConflictError:
        claimants = self._conflicts[(kind, name)]
        claims = "; ".join(f"{s.module} ({s.distribution} {s.version})" for s in claimants)
        choose = " or ".join(f"{kind}={qualified_name(s)}" for s in claimants)
        return PluginConflictError(f"{kind} plugin name {name!r} is claimed by more than one plugin: {claims}. "
                                   f"Choose one by its qualified name ({choose}), or uninstall one of them.")

    def names(self, kind: str) -> list[str]:
        """Sorted names of the plugins of ``kind`` (ambiguous names excluded; see :meth:`qualified_names`)."""
        _check_kind(kind)
        specs = self._collect()
        return sorted(n for n in specs[kind] if (kind, n) not in self._conflicts)

    def ambiguous_names(self, kind: str) -> list[str]:
        """Names of ``kind`` that several third-party plugins claim (usable by qualified name only)."""
        _check_kind(kind)
        self._collect()
        return sorted(n for (k, n) in self._conflicts if k == kind)

    def qualified_names(self, kind: str) -> list[str]:
        """``<distribution>:<name>`` of every plugin of ``kind``."""
        _check_kind(kind)
        self._collect()
        return sorted(self._qualified[kind])

    def specs(self, kind: str | None = None) -> list[PluginSpec]:
        """All plugin specs (of one kind, or of every kind), sorted by kind then name."""
        specs = self._collect()
        kinds = KINDS if kind is None else (_check_kind(kind),)
        return [specs[k][n] for k in kinds for n in sorted(specs[k])]

    def qualified_specs(self) -> list[tuple[str, PluginSpec]]:
        """``(qualified name, spec)`` of every plugin, those that lost or share a plain name included."""
        self._collect()
        return [(q, self._qualified[k][q]) for k in KINDS for q in sorted(self._qualified[k])]

    def get_spec(self, kind: str, name: str) -> PluginSpec:
        """The :class:`PluginSpec` of ``kind`` called ``name``.

        ``name`` is a plain name or a qualified one (``<distribution>:<name>``). Raises
        :class:`UnknownPluginError` (with the available names and the closest match) or
        :class:`PluginConflictError` (a plain name that several third-party plugins claim).
        """
        _check_kind(kind)
        specs = self._collect()
        if (kind, name) in self._conflicts:
            raise self._conflict_error(kind, name)
        if name not in specs[kind] and name in self._qualified[kind]:
            return self._qualified[kind][name]
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


def fill_missing(params: dict, values: dict) -> dict:
    """``params`` with each key of ``values`` it lacks added; a nested option group (ProLFA's ``solver``) that
    both hold as mappings is filled the same way, key by key."""
    out = dict(params)
    for key, value in values.items():
        if key not in out:
            out[key] = value
        elif isinstance(value, dict) and isinstance(out[key], dict):
            out[key] = fill_missing(out[key], value)
    return out


def fill_plugin_params(config: dict, values_of: Callable[[PluginSpec], dict]) -> dict:
    """``config`` with each of its plugins' ``params`` completed by :func:`fill_missing` from ``values_of(spec)``
    (the plugin's :class:`PluginSpec`); a plugin that is not installed, or whose values are empty, is left as it
    is, and a spec is copied only when a value was added."""
    out = dict(config)
    for kind in KINDS:
        spec = out.get(kind)
        if not isinstance(spec, dict) or not spec.get("name"):
            continue
        try:
            plugin = get_registry().get_spec(kind, str(spec["name"]))
        except (LookupError, KeyError, ValueError):
            continue
        values = values_of(plugin)
        if not values:
            continue
        params = dict(spec.get("params") or {})
        filled = fill_missing(params, values)
        if filled != params:
            out[kind] = {**spec, "params": filled}
    return out


def introduced_defaults(plugin: PluginSpec) -> dict:
    """The plugin's ``introduced_params`` keys at its default now (``PluginSpec.defaults``, else the factory's
    keyword default; in a nested group, the group's default key by key)."""
    introduced = getattr(plugin.factory, "introduced_params", None) or {}
    if not introduced:
        return {}
    defaults = {**default_params(plugin.factory), **(plugin.defaults or {})}
    return {key: ({k: v for k, v in defaults[key].items() if k in value}
                  if isinstance(value, dict) and isinstance(defaults.get(key), dict) else defaults.get(key, value))
            for key, value in introduced.items() if key in defaults}


def with_introduced_defaults(config: dict) -> dict:
    """``config`` (a run's) with every parameter its plugins list in ``introduced_params`` that it does not name
    set to the plugin's default now (:func:`introduced_defaults`), so that the run's record names the behaviour
    it ran: a record lacking such a parameter is one written before it existed, and ``lfabench reproduce`` reruns
    it with the ``introduced_params`` value instead."""
    return fill_plugin_params(config, introduced_defaults)


def config_search_paths() -> list[str]:
    """Hydra search paths (``pkg://...``) contributed by installed packages' ``lfabench.conf`` entry points."""
    paths = []
    for ep in importlib_metadata.entry_points(group=CONFIG_ENTRY_POINT_GROUP):
        paths.append(f"pkg://{ep.value}")
    return sorted(set(paths))
