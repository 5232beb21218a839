"""Run the battery of a *registered* plugin, by kind and name, with no wiring of its own.

Like scikit-learn's common tests over every estimator, :func:`plugin_checks` builds a plugin
from its defaults, shrunk to the tiny check data by :func:`small_params` (codebook sizes,
iteration counts and sample counts capped, ``random_state=0``), then overridden by what the
plugin declares in its factory's ``conformance`` attribute::

    class MyAggregator(Aggregator):
        conformance = {"params": {"n_words": 4},
                       "expected_failures": {"check_subset_consistency": "normalises over the batch"}}

Every plugin also gets :func:`~lfabench.testing.params.check_param_validation` (each parameter declared, an
invalid value refused by the command line's check, its constructor and ``fit`` in the same words).

A plugin the battery cannot build here (an optional extra missing, a mandatory parameter it cannot
choose, a real dataset absent) raises :class:`~lfabench.testing.core.CheckSkip` with the reason.
"""

from __future__ import annotations

import inspect
from typing import Any

from ..plugin import PluginSpec
from ..registry import get_registry
from .aggregators import aggregator_checks
from .core import Case, CheckResult, CheckSkip, bind, hints, run_cases
from .data import make_check_bags
from .datasets import dataset_checks
from .descriptors import descriptor_checks
from .evaluators import evaluator_checks
from .params import check_param_validation

#: Size-like parameters capped for the check data (24 samples, ~450 descriptors of dimension 8).
SIZE_CAPS = {"n_clusters": 8, "n_components": 4, "pca_components": 6, "n_atoms": 10, "n_prototypes": 8,
             "n_anchors": 4, "n_neighbors": 3, "n_samples": 60, "samples_per_class": 10}
#: Iteration counts capped so the battery stays fast (convergence is each plugin's own tests' business).
ITERATION_CAPS = {"max_iter": 20, "kmeans_iter": 10, "gmm_iter": 20, "dict_iter": 3, "sinkhorn_iter": 10}


def small_params(spec: PluginSpec) -> dict[str, Any]:
    """The plugin's defaults shrunk for the check data, then its declared ``conformance["params"]``."""
    params = dict(spec.defaults or {})
    for name, value in list(params.items()):
        if isinstance(value, bool) or not isinstance(value, int):
            continue
        cap = SIZE_CAPS.get(name, ITERATION_CAPS.get(name))
        if cap is not None:
            params[name] = min(value, cap)
    if "random_state" in params:
        params["random_state"] = 0
    if params.get("cache") is True:
        params["cache"] = False  # never touch the user's cache from a check
    params.update(hints(spec.factory).get("params", {}))
    return params


def _mandatory(spec: PluginSpec, params: dict) -> list[str]:
    try:
        sig = inspect.signature(spec.factory)
    except (TypeError, ValueError):
        return []
    return [p.name for p in sig.parameters.values()
            if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name not in params]


def plugin_checks(kind: str, name: str | PluginSpec, select=None, skip=()) -> list[Case]:
    """The ``kind`` battery bound to the registered plugin ``name`` (or a :class:`PluginSpec`)."""
    spec = name if isinstance(name, PluginSpec) else get_registry().get_spec(kind, name)
    declared = hints(spec.factory)
    if declared.get("skip"):
        raise CheckSkip(f"{kind} {spec.name!r} declares that the common battery cannot run it: {declared['skip']}")
    params = small_params(spec)
    missing = _mandatory(spec, params)
    if missing:
        raise CheckSkip(f"{kind} {spec.name!r} has mandatory parameter(s) {', '.join(missing)} the battery cannot "
                        f"choose; declare them in its factory's conformance['params']")
    xfail = declared.get("expected_failures", {})
    param_check = "check_param_validation"
    own = {k: v for k, v in xfail.items() if k != param_check}
    battery = dict(select=None if select is None else [n for n in select if n != param_check],
                   skip=[n for n in skip if n != param_check], expected_failures=own)
    if kind == "dataset":
        cases = dataset_checks(spec.factory, params, name=spec.name, **battery)
    else:
        try:
            instance = spec.factory(**params)
        except ImportError as exc:
            raise CheckSkip(f"{kind} {spec.name!r} needs an optional dependency that is not installed: {exc}") from exc
        builders = {"aggregator": aggregator_checks, "descriptor": descriptor_checks, "evaluator": evaluator_checks}
        if kind not in builders:
            raise ValueError(f"unknown plugin kind {kind!r}")
        cases = builders[kind](instance, **battery)
    fit_data = make_check_bags() if kind == "aggregator" else (None, None)
    return cases + bind(kind, (check_param_validation,), (kind, spec.name, spec.factory, params, *fit_data),
                        select=None if select is None else [n for n in select if n == param_check],
                        skip=[n for n in skip if n == param_check],
                        expected_failures={k: v for k, v in xfail.items() if k == param_check})


def check_plugin(kind: str, name: str, select=None, skip=()) -> list[CheckResult]:
    """Run the battery on a registered plugin: one :class:`CheckResult` per check (a skip is one result)."""
    try:
        cases = plugin_checks(kind, name, select=select, skip=skip)
    except CheckSkip as exc:
        return [CheckResult("(all checks)", "skip", str(exc))]
    return run_cases(cases)
