"""lfabench: the open benchmark for local feature aggregation.

Public API (stable):

* :class:`Bags` — per-sample sets of local descriptors (CSR layout);
* :func:`get_plugin` — the class/factory of a plugin by kind and name;
* :class:`PluginSpec`, :data:`hookimpl` — what a plugin module declares;
* :class:`Aggregator` (:mod:`lfabench.aggregate`) — the estimator API aggregators follow.

Each name is imported from its module on first use (PEP 562), so ``import lfabench`` and every command that
needs none of them (``lfabench --help``) load no NumPy; ``from lfabench import Bags`` reads as before.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING

from ._version import __version__

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time each name comes from __getattr__
    from .aggregate import Aggregator
    from .bags import Bags
    from .hookspecs import hookimpl
    from .plugin import KINDS, PluginSpec
    from .registry import get_plugin, get_registry

#: Public name -> the module that defines it.
_HOME = {"Aggregator": "aggregate", "Bags": "bags", "hookimpl": "hookspecs", "KINDS": "plugin",
         "PluginSpec": "plugin", "get_plugin": "registry", "get_registry": "registry"}

__all__ = ["Aggregator", "Bags", "get_plugin", "get_registry", "PluginSpec", "hookimpl", "KINDS", "__version__"]


def __getattr__(name: str):
    """A public name, imported from its module at first read; a submodule (``lfabench.registry``), imported."""
    home = _HOME.get(name)
    if home is not None:
        value = getattr(importlib.import_module(f".{home}", __name__), name)
        globals()[name] = value  # later reads skip this function
        return value
    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f".{name}", __name__)  # as when importing lfabench loaded every module
    raise AttributeError(f"module 'lfabench' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
