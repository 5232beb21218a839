"""What a plugin declares: :class:`PluginSpec`."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

KINDS = ("aggregator", "descriptor", "dataset", "evaluator")


@dataclass(frozen=True)
class DatasetProtocol:
    """A dataset's own protocol: what ``lfabench run dataset=<name>`` composes unless told otherwise.

    Parameters
    ----------
    task : {"classification", "retrieval"}
        What the dataset's samples are scored on; an evaluator of another task is refused before any
        work. A dataset whose task is a parameter (``synthetic``'s ``task``) is read from that parameter.
    descriptor, evaluator : str, optional
        The plugin names the run composes when the command line (or a preset) names none
        (``oxford5k``: ``sift`` and ``retrieval``).
    max_keypoints : dict, optional
        The per-image cap of a descriptor on this dataset, ``{descriptor name: cap}``
        (the paper: 300 DAISY on Oxford5k and Holidays, 150 on Fifteen Scene and VOC; 90 SIFT everywhere).
        Composed as ``descriptor.params.max_keypoints`` when that descriptor is chosen; an explicit
        ``descriptor.params.max_keypoints=...`` still wins.
    """

    task: str
    descriptor: str | None = None
    evaluator: str | None = None
    max_keypoints: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.task not in ("classification", "retrieval"):
            raise ValueError(f"protocol task must be 'classification' or 'retrieval', got {self.task!r}")
        bad = {k: v for k, v in self.max_keypoints.items() if not isinstance(v, int) or isinstance(v, bool) or v < 1}
        if bad:
            raise ValueError(f"protocol max_keypoints must map descriptor names to caps >= 1, got {bad}")

    def task_for(self, params: dict | None) -> str:
        """The task of the dataset built with ``params`` (a ``task`` parameter overrides the declared one)."""
        task = (params or {}).get("task", self.task)
        return task if isinstance(task, str) else self.task


def default_params(factory: Callable, opt_in: tuple[str, ...] = ()) -> dict[str, Any]:
    """The keyword defaults of ``factory``'s signature (a class's ``__init__``).

    Parameters without a default are left out; ``*args``/``**kwargs`` are ignored. ``opt_in`` names
    parameters to leave out too: a plugin passes the result as ``PluginSpec.defaults`` so that a parameter
    added later stays out of the default config, and every existing run keeps its setting key.
    """
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):
        return {}
    out = {}
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.default is p.empty or p.name in opt_in:
            continue
        out[p.name] = p.default
    return out


@dataclass
class PluginSpec:
    """One plugin: its name, the factory that builds it, a one-line description and its defaults.

    Parameters
    ----------
    name : str
        The name users type (``aggregator=<name>``). Lower-case, no spaces.
    factory : callable
        A class or function; called with the plugin's config as keyword arguments.
    description : str
        One line shown by ``lfabench plugins``.
    defaults : dict, optional
        The default config. When omitted, the keyword defaults of ``factory``.
    kind : str
        Filled in by the registry from the hook that returned the spec.
    sources : list, optional
        Datasets only: the downloads ``lfabench data fetch NAME`` takes
        (:class:`lfabench.download.Resource`: URL, file name, checksum, where to extract).
    manual : str, optional
        Datasets only: how to get the data by hand when it cannot be downloaded.
    protocol : DatasetProtocol, optional
        Datasets only: the task, natural descriptor, evaluator and per-image caps that a run composes
        by default (:class:`DatasetProtocol`).
    """

    name: str
    factory: Callable
    description: str
    defaults: dict[str, Any] | None = None
    kind: str = ""
    sources: list = field(default_factory=list, compare=False)
    manual: str = field(default="", compare=False)
    protocol: DatasetProtocol | None = field(default=None, compare=False)
    # Filled in by the registry: where the plugin comes from.
    distribution: str = field(default="", compare=False)
    version: str = field(default="", compare=False)
    module: str = field(default="", compare=False)

    def __post_init__(self):
        if not self.name or not isinstance(self.name, str) or any(c.isspace() for c in self.name):
            raise ValueError(f"plugin name must be a non-empty string without spaces, got {self.name!r}")
        if not callable(self.factory):
            raise TypeError(f"plugin {self.name!r}: factory must be callable, got {self.factory!r}")
        if self.defaults is None:
            self.defaults = default_params(self.factory)
        self.description = " ".join(str(self.description).split())
