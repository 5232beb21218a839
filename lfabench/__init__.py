"""lfabench: the open benchmark for local feature aggregation.

Public API (stable):

* :class:`Bags` — per-sample sets of local descriptors (CSR layout);
* :func:`get_plugin` — the class/factory of a plugin by kind and name;
* :class:`PluginSpec`, :data:`hookimpl` — what a plugin module declares;
* :class:`Aggregator` (:mod:`lfabench.aggregate`) — the estimator API aggregators follow.
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

from .aggregate import Aggregator
from .bags import Bags
from .hookspecs import hookimpl
from .plugin import KINDS, PluginSpec
from .registry import get_plugin, get_registry

try:
    __version__ = _version("lfabench")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

__all__ = ["Aggregator", "Bags", "get_plugin", "get_registry", "PluginSpec", "hookimpl", "KINDS", "__version__"]
