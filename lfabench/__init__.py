"""lfabench: the open benchmark for local feature aggregation.

Public API (stable):

* :class:`Bags` — per-sample sets of local descriptors (CSR layout);
* :func:`get_plugin` — the class/factory of a plugin by kind and name;
* :class:`PluginSpec`, :data:`hookimpl` — what a plugin module declares;
* :class:`Aggregator` (:mod:`lfabench.aggregate`) — the estimator API aggregators follow.
"""


from ._version import __version__
from .aggregate import Aggregator
from .bags import Bags
from .hookspecs import hookimpl
from .plugin import KINDS, PluginSpec
from .registry import get_plugin, get_registry

__all__ = ["Aggregator", "Bags", "get_plugin", "get_registry", "PluginSpec", "hookimpl", "KINDS", "__version__"]
