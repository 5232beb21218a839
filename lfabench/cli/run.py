"""``lfabench run``: the Hydra application around :func:`lfabench.run.run_benchmark`.

Config groups ``aggregator/``, ``dataset/``, ``descriptor/``, ``evaluator/`` come from
three places, first match winning: lfabench's own ``conf/`` (installed as the
``lfabench_conf`` package), the config folders that plugin packages declare under
the ``lfabench.conf`` entry-point group, and, for every registered plugin without
a file, an entry generated from the plugin's declared defaults (:mod:`lfabench.cli.config_source`, built
when a run selects it).
"""

from __future__ import annotations

import gc
import inspect
import logging
import os
import sys
import traceback
from importlib import resources
from pathlib import Path

from ..plugin import KINDS
from ..registry import config_search_paths, get_registry, unknown_message
from ..resume import register_resolver
from .orphans import exit_with_sweep, mark_sweep_process
from .run_help import HELP_FLAGS, MODE_FLAGS, help_text
from .summary import format_result, quiet_console, strip_verbose

CONFIG_PACKAGE = "lfabench_conf"
#: Set (by ``lfabench --debug``) to print a user error's traceback under its one-line message.
DEBUG_ENV = "LFABENCH_DEBUG"


def _user_errors() -> tuple[type[BaseException], ...]:
    from ..aggregate import FitDataError, UndefinedCriterionError
    from ..checks import OutputError
    from ..dataset import CorruptImageError
    from ..describe import DescriptorDataError
    from ..params import ConfigError
    from ..registry import PluginConflictError, UnknownPluginError
    from ..run import RecordNotSavedError
    from ..storage import WriteError

    # FileNotFoundError covers DatasetNotFoundError and a descriptor file or folder that is not there;
    # WriteError: a file that could not be written (disk full...), named
    # UndefinedCriterionError: a supervised method's criterion undefined for the labels the protocol annotates
    return (ConfigError, UnknownPluginError, PluginConflictError, FileNotFoundError, CorruptImageError,
            RecordNotSavedError, WriteError, DescriptorDataError, UndefinedCriterionError, FitDataError, OutputError)


#: Errors a user caused and can fix (bad parameter, missing data...): one message, no traceback.
USER_ERRORS = _user_errors()

# ${lfabench_key:} (run directories) must resolve in every process that runs a job, including the
# workers of a launcher, which import this module to unpickle `task`.
register_resolver()
PRIMARY_CONFIG = "lfabench"


def _primitive(value) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_primitive(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _primitive(v) for k, v in value.items())
    return value is None or isinstance(value, (str, int, float, bool))


#: Run-level settings that reach every plugin declaring a parameter of that name with this default.
RUN_LEVEL = {"random_state": (None, "${seed}"), "seed": (None, "${seed}"), "cache": (False, "${cache}")}


def plugin_config(spec) -> dict:
    """The ``{name, params}`` config of a plugin, from its class defaults (the one place they are stated).

    A parameter without a default is Hydra's mandatory ``???`` (the run stops with its name until given).
    A ``random_state``/``seed`` default of ``None`` becomes ``${seed}`` and a ``cache`` default of
    ``False`` becomes ``${cache}``, so the run's seed and cache policy reach the plugin. Defaults
    that are not plain data are left out (the factory's own default then applies).
    """
    params = {name: "???" for name in required_params(spec.factory)}
    for key, value in (spec.defaults or {}).items():
        if key in RUN_LEVEL and value == RUN_LEVEL[key][0] and type(value) is type(RUN_LEVEL[key][0]):
            params[key] = RUN_LEVEL[key][1]
        elif _primitive(value):
            params[key] = list(value) if isinstance(value, tuple) else value
    return {"name": spec.name, "params": params}


def required_params(factory) -> list[str]:
    """Keyword parameters of ``factory`` that have no default."""
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):
        return []
    return [p.name for p in sig.parameters.values()
            if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def register_configs(extra_paths: list[str] = (), search_paths: list[str] | None = None) -> None:
    """:func:`register_plugin_configs` and :func:`register_primary_config`, what a run composes from, reading the
    installed packages' ``lfabench.conf`` entry points once for both (``search_paths``, when not given).
    ``extra_paths``: the folders of a command-line ``hydra.searchpath=[...]`` (:func:`searchpath_overrides`)."""
    search_paths = config_search_paths() if search_paths is None else search_paths
    register_plugin_configs(search_paths, extra_paths)
    register_primary_config(search_paths)


def register_plugin_configs(search_paths: list[str] | None = None, extra_paths: list[str] = ()) -> None:
    """Serve :func:`plugin_config` for every plugin without a yaml file of its name
    (:mod:`lfabench.cli.config_source`: a node is built only when a run selects it).

    A yaml file of a plugin's own name replaces that node (only ``synthetic`` has one: it also selects
    ``descriptor=native``); a variant under another name extends the node with a defaults list
    (``defaults: [bow]`` then only the changed ``params``). ``search_paths``: the plugin packages' config
    folders (:func:`~lfabench.registry.config_search_paths`, read when not given); ``extra_paths``: the
    folders of a command-line ``hydra.searchpath``, whose yaml files win too.
    """
    from .config_source import ConfigEntry, serve
    from .protocol import CAPS_GROUP, cap_nodes, with_protocol

    def entry(spec, name: str) -> ConfigEntry:
        # the package is known without building the node
        return ConfigEntry(spec.kind, name, package=with_protocol(spec, {})[1], provider=spec.distribution)

    search_paths = config_search_paths() if search_paths is None else search_paths
    yaml_names = {kind: yaml_options(kind, extra_paths, search_paths=search_paths) for kind in KINDS}
    entries = {f"{spec.kind}/{spec.name}": entry(spec, spec.name)
               for spec in get_registry().specs() if spec.name not in yaml_names[spec.kind]}
    # `aggregator=acme-lfabench:bow` (lfabench.registry)
    entries.update((f"{spec.kind}/{qualified}", entry(spec, qualified))
                   for qualified, spec in get_registry().qualified_specs())
    # a dataset's own per-image caps
    entries.update((f"{CAPS_GROUP}/{name}", ConfigEntry(CAPS_GROUP, name, package="_global_", node=node))
                   for name, node in cap_nodes(get_registry().specs("dataset")).items())
    serve(entries)


def plugin_node(kind: str, name: str) -> dict:
    """The generated config node of plugin ``name`` (a registered or a qualified ``distribution:name``) of
    ``kind``: :func:`plugin_config`, as a global node where the dataset's protocol selects other groups
    (:func:`~lfabench.cli.protocol.with_protocol`)."""
    from .protocol import with_protocol

    registry = get_registry()
    # the spec that was listed under this name (an ambiguous name too: the run then names its claimants)
    spec = next((s for s in registry.specs(kind) if s.name == name), None) or dict(registry.qualified_specs())[name]
    return with_protocol(spec, dict(plugin_config(spec), name=name))[0]


def register_primary_config(search_paths: list[str] | None = None) -> None:
    """The primary config: lfabench's ``config.yaml`` plus the plugin packages' config folders.

    Hydra reads ``hydra.searchpath`` from the primary config only, so the
    ``lfabench.conf`` entry points are turned into a stored primary node that
    includes ``config.yaml`` (command-line overrides stay exactly as Hydra's).
    """
    from hydra.core.config_store import ConfigStore

    search_paths = config_search_paths() if search_paths is None else search_paths
    node = {"defaults": ["config", "_self_"], "hydra": {"searchpath": list(search_paths)}}
    ConfigStore.instance().store(name=PRIMARY_CONFIG, node=node)


def yaml_options(group: str, extra_paths: list[str] = (), search_paths: list[str] | None = None) -> set[str]:
    """Options of a config group that are yaml files (nested folders included: ``smoke/bow``).

    Looked up in lfabench's ``conf/``, plugin packages' config folders (``search_paths``; read from the installed
    packages' entry points when not given) and ``extra_paths`` (``file://`` or ``pkg://`` search paths given as
    ``hydra.searchpath=[...]``).
    """
    options = set()
    search_paths = config_search_paths() if search_paths is None else search_paths
    for path in [f"pkg://{CONFIG_PACKAGE}", *search_paths, *extra_paths]:
        try:
            if path.startswith("pkg://"):
                folder = resources.files(path[len("pkg://"):]) / group
            else:
                folder = Path(path[len("file://"):] if path.startswith("file://") else path) / group
            options |= set(_yaml_names(folder))
        except (ModuleNotFoundError, FileNotFoundError, NotADirectoryError):
            continue
    return options


def _yaml_names(folder, prefix: str = ""):
    """``name`` of every ``name.yaml`` under ``folder``, nested ones as ``sub/name`` (Hydra's option syntax)."""
    for entry in folder.iterdir():
        if entry.is_dir():
            yield from _yaml_names(entry, f"{prefix}{entry.name}/")
        elif entry.name.endswith(".yaml"):
            yield prefix + entry.name[:-5]


def config_options(group: str, extra_paths: list[str] = (), search_paths: list[str] | None = None) -> list[str]:
    """Every option of a config group: yaml files (:func:`yaml_options`) plus every registered plugin name."""
    reg = get_registry()
    # an ambiguous name is an option too: using it is then the error that names its claimants
    return sorted(yaml_options(group, extra_paths, search_paths) | set(reg.names(group))
                  | set(reg.ambiguous_names(group)))


def searchpath_overrides(argv: list[str]) -> list[str]:
    """The folders of a ``hydra.searchpath=[a,b]`` override on the command line, if any."""
    for arg in argv:
        key, _, value = arg.lstrip("+").partition("=")
        if key == "hydra.searchpath":
            return [v.strip().strip("'\"") for v in value.strip("[]").split(",") if v.strip()]
    return []


def check_one_mode(argv: list[str]) -> None:
    """Refuse, in one line naming them, a command line that selects two of Hydra's modes (``-m --cfg job``: Hydra
    prints one job's config or runs a sweep, not both)."""
    given = {MODE_FLAGS[flag]: flag for flag in (a.split("=", 1)[0] for a in argv) if flag in MODE_FLAGS}
    if len(given) > 1:
        named = " and ".join(sorted(given.values()))
        raise SystemExit(f"lfabench run: {named} cannot be combined: Hydra takes one of --run, --multirun (-m), --cfg, "
                         f"--info and --shell-completion per command (to see a sweep's settings, print one setting's "
                         f"config without -m)")


def check_group_overrides(argv: list[str], search_paths: list[str] | None = None) -> None:
    """Fail early, with the available options and the closest match, on an unknown plugin name.

    Understands ``group=a`` and sweeps ``group=a,b``; other override syntaxes are
    left to Hydra. ``search_paths``: as for :func:`yaml_options`.
    """
    extra_paths = searchpath_overrides(argv)
    for arg in argv:
        if arg.startswith("-") or "=" not in arg:
            continue
        key, _, value = arg.lstrip("+~").partition("=")
        if key not in KINDS or any(ch in value for ch in "()[]{}$*"):
            continue
        available = config_options(key, extra_paths, search_paths)
        qualified = set(get_registry().qualified_names(key))  # accepted, not listed (one per plugin)
        for name in filter(None, (v.strip() for v in value.split(","))):
            if name not in available and name not in qualified:
                raise SystemExit("lfabench run: " + unknown_message(key, name, available))


def task(cfg) -> None:
    """One Hydra job: skip it when another process is running it or when it is complete (resume), else
    run it; module-level so that launchers running jobs in other processes (joblib, submitit, Ray) can
    pickle it by reference."""
    from hydra.core.hydra_config import HydraConfig

    from ..resume import claim_run

    logging.getLogger("faiss.loader").setLevel(logging.WARNING)
    quiet_console()
    run_dir = HydraConfig.get().runtime.output_dir
    with claim_run(run_dir) as holder:
        if holder is not None:  # a second sweep into the same folder: the first one is computing this run
            print(f"lfabench run: skipped, in progress in {holder}: {run_dir} (that process writes its record)",
                  flush=True)
            return
        _claimed_task(cfg, run_dir)


def _claimed_task(cfg, run_dir: str) -> None:
    """:func:`task` once this process holds ``run_dir``'s claim."""
    from omegaconf import OmegaConf

    from ..dataset import DatasetNotFoundError
    from ..isolation import RunInterrupted
    from ..resume import complete_record, record_mismatch, run_setting
    from ..run import run_benchmark

    config = OmegaConf.to_container(cfg, resolve=True)
    setting = run_setting(cfg)
    done = None if cfg.get("force", False) else complete_record(run_dir, setting, config.get("seed"))
    changed = record_mismatch(done, config) if done is not None else None
    if changed is not None:  # same setting and seed, but other data or threads: not this run's result
        print(f"lfabench run: not resuming {run_dir}/result.json, {changed}: running again (the earlier "
              f"record is kept as result.previous-*.json)", flush=True)
    elif done is not None:  # resuming a sweep: this configuration and seed already has its result
        print(f"lfabench run: skipped, complete record at {run_dir}/result.json (force=true reruns it)",
              flush=True)
        return
    # what the record redacts against: every run-level key as written (an ``${oc.env:...}`` anywhere in the config
    # is recorded as written), the plugins as their setting
    written = {k: v for k, v in OmegaConf.to_container(cfg, resolve=False).items() if k != "hydra"}
    from contextlib import nullcontext

    from .progress import TerminalProgress, wanted
    from .summary import VERBOSE_ENV

    progress = TerminalProgress() if wanted(verbose=os.environ.get(VERBOSE_ENV) == "1") else None
    try:
        with progress if progress is not None else nullcontext():
            record = run_benchmark(config, run_dir, setting={**written, **setting},
                                   time_limit_s=cfg.get("time_limit"), isolate=cfg.get("isolate", "none"),
                                   on_stage=progress.on_stage if progress is not None else None)
    except BaseException as exc:  # a plugin's SystemExit/KeyboardInterrupt or the time limit ends this run only
        if isinstance(exc, RunInterrupted):
            # the user's Ctrl-C or a kill stops the sweep, whatever continue_on_error says (SystemExit is no
            # Exception: Hydra launches no further job)
            print(f"lfabench run: stopped: {exc}; the record {run_dir}/result.json says status=interrupted",
                  file=sys.stderr, flush=True)
            raise SystemExit(exc.exit_status) from None
        if isinstance(exc, DatasetNotFoundError):
            # Absent data fails every job of a sweep alike: stop at the first, whatever continue_on_error says.
            # Hydra records an Exception and launches the next job; SystemExit is not one, so it ends the sweep.
            print(f"lfabench run: stopped before any other run: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
        user_error = isinstance(exc, USER_ERRORS)
        if not cfg.get("continue_on_error", False) and not user_error:
            raise
        from ..run import RecordNotSavedError

        print(f"lfabench run FAILED: {exc}" if isinstance(exc, RecordNotSavedError) else
              f"lfabench run FAILED: {exc}\n  (the record {run_dir}/result.json keeps the traceback)"
              if user_error else
              f"lfabench run FAILED ({type(exc).__name__}: {exc}); record in {run_dir}/result.json",
              file=sys.stderr)
        if user_error and os.environ.get(DEBUG_ENV):  # `lfabench --debug run ...`: the traceback too
            traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
        if user_error and not cfg.get("continue_on_error", False):
            # one clear message, no traceback nor Hydra's HYDRA_FULL_ERROR hint: the user can fix this
            raise SystemExit(2) from None
        return
    print(format_result(record), flush=True)


# A launcher's worker imports this module when it unpickles ``task``, before its first job: from then on it
# ends with the sweep (a no-op in the sweep's own process and outside sweeps; lfabench.cli.orphans).
exit_with_sweep()


def main(argv: list[str], own_process: bool = False) -> None:
    """Run Hydra on ``argv`` (overrides and Hydra flags, exactly as Hydra takes them).

    ``own_process``: the process ends with this command (the ``lfabench`` executable), whose caller turned the
    cyclic garbage collector off for the start-up (:func:`lfabench.cli.main`). What the start-up loaded (the
    modules, the plugin registry: about 80,000 objects, alive until the process ends) is then frozen out of the
    collector's generations and the collector turned back on, so that neither the collections of the run nor the
    interpreter's at exit traverse it again (``gc.freeze``; ``docs/performance.md``, "Start-up"). An in-process
    caller keeps its collector as it was.
    """
    import hydra

    argv = strip_verbose(argv)
    if any(a in HELP_FLAGS for a in argv):  # lfabench's page; Hydra's own stays at --hydra-help
        print(help_text(), end="")
        return
    check_one_mode(argv)
    # read once: the check and the registration both look in the plugin packages' config folders
    search_paths = config_search_paths()
    check_group_overrides(argv, search_paths)
    mark_sweep_process()
    register_configs(searchpath_overrides(argv), search_paths)
    if own_process:
        gc.freeze()
        gc.enable()

    from ..isolation import exit_despite_threads

    sys.argv = ["lfabench"] + list(argv)
    try:
        hydra.main(config_path=f"pkg://{CONFIG_PACKAGE}", config_name=PRIMARY_CONFIG, version_base="1.3")(task)()
    except SystemExit as exc:
        # a plugin's forgotten non-daemon thread must not keep the process alive after the records are written
        exit_despite_threads(exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1))
        raise
    exit_despite_threads(0)
