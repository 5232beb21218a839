"""The one frame of a set of records: one row per (record a board keeps, metric), with the row's setting.

Rows are grouped by (dataset, descriptor, aggregator, evaluator, metric) *and* by setting: runs whose resolved
configs differ in anything but the seed (and the parameters a record lists as ignored) are different settings
(:func:`row_setting`, its digest in ``setting``). ``params`` holds the setting's parameters as a label shows
them and ``non_default`` those whose value is not the plugin's default (:func:`~.row_labels.labelled` names rows
by them). Beside the score: the exact value of a percentage of a count (:func:`exact_score`), the costs
(:func:`fit_cost`, memory, output size) and where the run came from (versions, revision, :func:`hardware`).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Iterable

import pandas as pd

from ..plugin import KINDS, default_params
from ..provenance import recorded_machine, recorded_revision, recorded_version
from ..record import plugin_setting
from ..registry import get_plugin
from .load import RecordSet, finished, not_applicable, not_counted_entry

#: The columns that name a row's task, method and metric (with ``setting`` and ``seed``: one run's score).
GROUP_COLUMNS = ["dataset", "descriptor", "aggregator", "evaluator", "metric"]


def row_setting(record: dict) -> dict:
    """The plugin configs before interpolation (``${seed}`` literal): runs sharing it differ only by seed.

    Parameters the record lists as ``ignored_params`` (e.g. the evaluator's ``labelled_fraction`` for an
    unsupervised aggregator) are left out: they could not change the run, so they must not split its rows.
    """
    setting = copy.deepcopy(plugin_setting(record.get("setting") or record["config"]))
    for dotted in record.get("ignored_params") or ():
        kind, _, param = dotted.partition(".")
        ((setting.get(kind) or {}).get("params") or {}).pop(param, None)
    return setting


def _flatten(prefix: str, params: dict) -> dict[str, str]:
    out = {}
    for k, v in (params or {}).items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(key + ".", v))
        else:
            out[key] = json.dumps(v) if not isinstance(v, str) else v
    return out


def _shown_params(setting_params: dict, resolved: dict | None) -> dict:
    """The parameters a label shows: resolved values, never an interpolation such as ``${seed}``.

    A parameter that follows the run's seed (``${seed}``) differs between the runs of one setting,
    so it is shown as ``seed``; any other interpolation is shown with the value it resolved to.
    """
    out = {}
    for key, value in (setting_params or {}).items():
        if isinstance(value, dict):
            out[key] = _shown_params(value, (resolved or {}).get(key) if isinstance(resolved, dict) else None)
        elif isinstance(value, str) and "${" in value:
            out[key] = "seed" if value.strip() == "${seed}" else (resolved or {}).get(key, value)
        else:
            out[key] = value
    return out


#: Plugin kinds whose parameters set away from the default are shown in labels (a dataset's are where its
#: files lie, not a setting of the method).
SETTING_KINDS = ("descriptor", "aggregator", "evaluator")


@functools.lru_cache(maxsize=None)
def _default_values(kind: str, name: str) -> dict[str, set[str]] | None:
    """The plugin's keyword defaults as labels compare values: the values of each leaf that label as its default,
    nested options flattened to dotted keys (``solver.max_iter``; a dataclass default is read as its fields), each
    value as JSON (keys sorted); None when the plugin is not installed here. A parameter the plugin has removed is
    a default at the value its ``removed_params`` names (the behaviour every run has now), and a value its
    ``equivalent_defaults`` names (an earlier default that computes the same to rounding) labels as the default
    too, so a record written before keeps its label."""
    try:
        factory = get_plugin(kind, name)
    except LookupError:  # records of a plugin this environment lacks: no parameter is known to be a default
        return None
    values: dict[str, set[str]] = {}
    for source in (getattr(factory, "removed_params", None) or {}, getattr(factory, "equivalent_defaults", None) or {},
                   default_params(factory)):
        for key, value in _leaves("", source).items():
            values.setdefault(key, set()).add(value)
    return values


def _leaves(prefix: str, value) -> dict[str, str]:
    """``{dotted key: JSON text}`` of every leaf of ``value`` (dicts and dataclasses opened); a leaf JSON cannot
    show (an object) is left out, so any value a config sets there differs from the default."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            out.update(_leaves(f"{prefix}{key}.", item))
        return out
    try:
        return {prefix[:-1]: value if isinstance(value, str) else json.dumps(value, sort_keys=True)}
    except TypeError:
        return {}


#: Interpolations through which a plugin follows the run (its seed, its cache policy: a cached fit gives the
#: same arrays), as ``lfabench run`` writes them into every plugin config: not a setting of the method.
RUN_LEVEL = ("${seed}", "${cache}")


def _non_default(setting: dict, config: dict, shown: dict[str, str]) -> tuple[str, ...]:
    """The flattened keys (``kind.param``, as in ``shown``) of the setting's parameters that a label shows:
    those whose resolved value is not the plugin's default.

    Fixed by the record alone (never by which other records share a board): a value that follows the run's
    seed or cache policy (:data:`RUN_LEVEL`) is not a setting of the method; any other interpolation (a sweep's
    ``${k}``) is compared by the value it resolved to (``config``); a parameter whose default is unknown (the plugin is not installed here, or its signature
    has no JSON default for it) is shown, since nothing shows it is the default.
    """
    keys = []
    for kind in SETTING_KINDS:
        spec = setting.get(kind) or {}
        if not spec.get("name"):
            continue
        known = _default_values(kind, spec["name"])
        resolved = _leaves("", (config.get(kind) or {}).get("params") or {})
        for param, value in _leaves("", spec.get("params") or {}).items():
            if value.strip() in RUN_LEVEL:
                continue
            if "${" in value:
                value = resolved.get(param, value)
            if known is not None and value in known.get(param, ()):
                continue
            key = f"{kind}.{param}"
            keys += [k for k in shown if k == key or k.startswith(key + ".")]
    return tuple(sorted(keys))


@functools.lru_cache(maxsize=None)
def evaluator_declares(name: str) -> tuple[str | None, dict[str, str]]:
    """``(primary_metric, count_metrics)`` that the evaluator plugin ``name`` declares
    (:class:`lfabench.evaluate.Evaluator`); ``(None, {})`` when it is not installed here."""
    try:
        factory = get_plugin("evaluator", name)
    except LookupError:
        return None, {}
    return getattr(factory, "primary_metric", None), dict(getattr(factory, "count_metrics", None) or {})


def exact_score(rec: dict, metric: str, value) -> Fraction | None:
    """The metric as an exact fraction ``100 * count / n`` where the evaluator declares it a percentage of a
    count (``count_metrics``) and the record's ``split`` holds ``n``; None otherwise.

    The count is recovered from the float (``round(value * n / 100)``) and kept only if it gives the float
    back to within rounding: a value that is no such ratio (a hand edit, another protocol) keeps its float.
    """
    field = evaluator_declares(((rec.get("config") or {}).get("evaluator") or {}).get("name") or "")[1].get(metric)
    n = (rec.get("split") or {}).get(field) if field else None
    if not isinstance(n, int) or isinstance(n, bool) or n <= 0 or isinstance(value, bool) \
            or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    count = round(value * n / 100.0)
    if not 0 <= count <= n or abs(100.0 * count / n - value) > 1e-9 * max(1.0, abs(value)):
        return None
    return Fraction(100 * count, n)


#: Appended to the method of a row from records published although unclean (dirty tree, provenance missing).
UNCLEAN_MARK = " (unclean record)"


def records_frame(records: RecordSet | Iterable[Path | str]) -> tuple[pd.DataFrame, list[dict]]:
    """One row per (record that :func:`~.load.finished`, metric) of ``records`` (a :class:`~.load.RecordSet`, or
    record files, read here); also returns every other record (:func:`~.load.not_counted_entry`), a
    not-applicable one (:func:`~.load.not_applicable`) with its :func:`setting_columns`, ``seed`` and ``reason``.

    Files that are not valid records raise :class:`~.load.InvalidRecords` naming every one (unreadable, unknown
    format, a metric of the wrong type, not finite or out of range): none is ever averaged in."""
    if not isinstance(records, RecordSet):
        records = RecordSet.read(records)
    rows, failed = [], []
    for path, rec in records:
        if not finished(rec):
            entry = not_counted_entry(path, rec)
            if not_applicable(rec):  # a row of its table, shown as not applicable
                entry.update(reason=str((rec.get("error") or {}).get("message") or ""), seed=rec.get("seed"),
                             **setting_columns(rec))
            failed.append(entry)
            continue
        setting_cols = setting_columns(rec)
        base = {kind: setting_cols[kind] for kind in KINDS}
        setting_id, params = setting_cols["setting"], setting_cols["params"]
        fit_s, untimed = fit_cost(rec)
        split = rec.get("split") or {}
        sizes = {k: split[k] if isinstance(split.get(k), int) and not isinstance(split.get(k), bool)
                 and split[k] > 0 else None for k in ("n_train", "n_test")}
        pred = rec.get("predictions")
        pred_file = str(pred.get("file") or "") if isinstance(pred, dict) else ""
        # a plain file name beside the record, never a path that leaves its folder
        pred_path = str(Path(path).parent / pred_file) if pred_file and Path(pred_file).name == pred_file else None
        non_default = setting_cols["non_default"]
        for metric, value in rec["metrics"].items():
            rows.append({**base, "metric": metric, "value": value, "exact": exact_score(rec, metric, value),
                         "seed": rec["seed"], "setting": setting_id,
                         "params": params, "non_default": non_default, "fit_s": fit_s,
                         "fit_cache_untimed": untimed,
                         "transform_s": rec["timings_s"].get("transform"), "path": str(path),
                         "predictions": pred_path, **sizes,
                         **_provenance(rec)})
    return pd.DataFrame(rows), failed


def setting_columns(rec: dict) -> dict:
    """What names a record's setting on a board, for any status: the plugin of each kind (``dataset``,
    ``descriptor``, ``aggregator``, ``evaluator``), ``params`` (the flattened parameters shown), ``non_default``
    and ``setting`` (the id of the resolved setting)."""
    cfg = rec.get("config") or {}
    setting = row_setting(rec)
    base = {kind: (cfg.get(kind) or {}).get("name") for kind in KINDS}
    if (rec.get("publication") or {}).get("unclean"):  # published with --allow-unclean-records: marked
        base["aggregator"] = f"{base['aggregator']}{UNCLEAN_MARK}"
    params = {}
    for kind in KINDS:
        shown = _shown_params((setting.get(kind) or {}).get("params") or {}, (cfg.get(kind) or {}).get("params"))
        params.update(_flatten(f"{kind}.", shown))
    return {**base, "params": params, "non_default": _non_default(setting, cfg, params),
            "setting": hashlib.sha1(json.dumps(setting, sort_keys=True).encode()).hexdigest()[:10]}


def fit_cost(rec: dict) -> tuple[float | None, bool]:
    """``(seconds, untimed)``: what fitting cost this run, counting fitted arrays it reused from the cache.

    A run that reused a cached codebook (GMM, dictionary...) only loaded it, so its ``timings_s.fit`` omits what
    fitting it costs; the record's ``fit_cache`` says how long computing each reused entry took
    (``fit_seconds``), which is added. ``untimed`` is True when a reused entry predates that field: the
    seconds are then a lower bound.
    """
    fit = rec["timings_s"].get("fit")
    hits = [e for e in rec.get("fit_cache") or [] if e.get("hit")]
    untimed = any(e.get("fit_seconds") is None for e in hits)
    if fit is None:
        return None, untimed
    return fit + sum(e["fit_seconds"] for e in hits if e.get("fit_seconds") is not None), untimed


def _aggregation_memory(rec: dict) -> float | None:
    """Peak resident memory (MiB) sampled while the aggregator fitted and transformed.

    Not the record's process-wide ``peak_rss_mb``: in a sweep, one process runs every job, so that
    peak only grows from job to job and would charge a method for its predecessors.
    """
    by_stage = [v for k, v in (rec.get("peak_rss_mb_by_stage") or {}).items() if k in ("fit", "transform")]
    return max(by_stage) if by_stage else rec.get("peak_rss_mb")


def hardware(rec: dict) -> str:
    """Where a record was timed, in words: the CPU model and logical CPU count it states
    (:func:`~lfabench.provenance.recorded_machine`)."""
    machine = recorded_machine(rec)
    model = machine["cpu_model"] or "CPU model not recorded"
    count = machine["cpu_count"]
    return f"{model}, {count} logical CPUs" if count else str(model)


def _provenance(rec: dict) -> dict:
    """Per-record columns beside the score: cost (memory, output size) and where the run came from."""
    return {"peak_rss_mb": _aggregation_memory(rec), "output_dim": rec.get("output_dim"), "hardware": hardware(rec),
            "lfabench_version": recorded_version(rec), "git_revision": recorded_revision(rec),
            "finished_at": rec.get("finished_at")}


__all__ = ["GROUP_COLUMNS", "RUN_LEVEL", "SETTING_KINDS", "UNCLEAN_MARK", "evaluator_declares", "exact_score",
           "fit_cost", "hardware", "records_frame", "row_setting", "setting_columns"]
