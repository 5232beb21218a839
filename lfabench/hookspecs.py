"""The lfabench plugin contract: four pluggy hooks, one per plugin kind.

A plugin module (built-in or third-party) implements any of these hooks and is
registered through the ``lfabench`` entry-point group::

    # pyproject.toml of a third-party package
    [project.entry-points.lfabench]
    my_aggregators = "my_package.lfabench_plugin"

    # my_package/lfabench_plugin.py
    from lfabench import PluginSpec, hookimpl

    @hookimpl
    def lfabench_aggregators():
        return [PluginSpec("my_agg", MyAggregator, "one-line description")]

Each hook takes no argument and returns a list of :class:`~lfabench.plugin.PluginSpec`
(name, factory, one-line description, default config). It must not import
heavy optional dependencies at module import time: import them inside the
factory, so a missing extra is reported when the plugin is used, with a clear
message, instead of hiding the plugin.

What each kind's factory must build:

* **aggregator** — a scikit-learn style estimator (see :class:`lfabench.aggregate.Aggregator`):
  hyper-parameters are ``__init__`` arguments, ``fit(bags, y=None) -> self``,
  ``transform(bags) -> ndarray (m, D)``, fitted state ends in ``_``, ``random_state``
  makes it reproducible.
* **descriptor** — a :class:`lfabench.describe.Descriptor`: ``describe(dataset) -> Bags``
  (local features for every sample of the dataset).
* **dataset** — a callable returning a :class:`lfabench.dataset.Dataset` (samples, labels,
  task, ground truth, fingerprint).
* **evaluator** — a :class:`lfabench.evaluate.Evaluator`: ``split(dataset, seed)`` draws the
  protocol's fit/evaluation split, ``evaluate(features, dataset, split) -> dict`` returns metrics.
"""

from __future__ import annotations

import pluggy

PROJECT_NAME = "lfabench"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec
def lfabench_aggregators():
    """Return a list of ``PluginSpec`` whose factories build aggregators."""


@hookspec
def lfabench_descriptors():
    """Return a list of ``PluginSpec`` whose factories build descriptor extractors."""


@hookspec
def lfabench_datasets():
    """Return a list of ``PluginSpec`` whose factories build datasets."""


@hookspec
def lfabench_evaluators():
    """Return a list of ``PluginSpec`` whose factories build evaluators."""
