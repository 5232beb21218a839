"""Leaderboards generated from run records only (``result.json`` files), never edited by hand.

Each successful record contributes one row per metric. Rows are grouped by
(dataset, descriptor, aggregator, evaluator, metric) *and* by setting: runs whose
resolved configs differ in anything but the seed are different settings, shown
as ``aggregator[param=value, ...]`` with the parameters the setting changed from the
plugin's default (``t1[max_iter=50]``), or, for descriptor parameters, as
``descriptor[param=value, ...]`` (another task). A label is fixed by its row's own
setting, never by which other rows share the board, so one setting reads the same on
every board and across tasks.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import json
import math
import re
from fractions import Fraction
from pathlib import Path
from typing import Iterable

import pandas as pd

from ..evaluation.multiple import holm, tied_ranks
from ..evaluation.significance import exact_mean, significance_by_group
from ..plugin import KINDS, default_params
from ..provenance import recorded_machine, recorded_revision, recorded_version
from ..record import RESULT_FILE, plugin_setting, read_record
from ..registry import get_plugin
from ..evaluation.paired_tests import DEFAULT_BOOTSTRAP, DEFAULT_PERMUTATIONS
from .cells import (ALPHA, MIN_PAIRS_FOR_P, diff_cell, holm_cell, number_cell, p_cell, plain_p_cell, rank_cell,
                    score_cell, verdict)
from .directions import metric_sign
from .markdown import md_code, md_frame, md_text
from .separation import SIGN_FLIP, T_TEST, WILCOXON, UnitScores, letter_display, run_table_tests

DEFAULT_RUN_ROOTS = ("lfabench_runs", "lfabench_multirun")
GROUP_COLUMNS = ["dataset", "descriptor", "aggregator", "evaluator", "metric"]


def find_records(paths: Iterable[Path | str]) -> list[Path]:
    """Every ``result.json`` at or under the given files/directories, sorted."""
    found = set()
    for p in map(Path, paths):
        if p.is_file() and p.name == RESULT_FILE:
            found.add(p.resolve())
        elif p.is_dir():
            found.update(q.resolve() for q in p.rglob(RESULT_FILE))
        else:
            raise FileNotFoundError(f"no run record or run directory at {p}")
    return sorted(found)


def _setting(record: dict) -> dict:
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
def _default_values(kind: str, name: str) -> dict[str, str] | None:
    """The plugin's keyword defaults as labels compare values: one entry per leaf, nested options flattened
    to dotted keys (``solver.max_iter``; a dataclass default is read as its fields), each value as JSON
    (keys sorted); None when the plugin is not installed here. A parameter the plugin has removed is a default at
    the value its ``removed_params`` names (the behaviour every run has now), so a record written before keeps its
    label."""
    try:
        factory = get_plugin(kind, name)
    except LookupError:  # records of a plugin this environment lacks: no parameter is known to be a default
        return None
    return {**_leaves("", getattr(factory, "removed_params", None) or {}), **_leaves("", default_params(factory))}


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
            if known is not None and param in known and value == known[param]:
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


def dedupe_runs(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (setting, seed, metric), wherever its records lie.

    Repeats of one configuration and seed (a sweep rerun after it was killed, a copy of a
    results folder) count once: identical repeats collapse to one value; repeats that disagree
    are kept as their mean (so no seed weighs more than another) and flagged in ``conflict``.
    ``n_records`` says how many records each row stands for.
    """
    if df.empty:
        return df.assign(n_records=pd.Series(dtype=int), conflict=pd.Series(dtype=bool))
    keys = GROUP_COLUMNS + ["setting", "seed"]
    for col in ("peak_rss_mb", "output_dim", "lfabench_version", "git_revision", "finished_at", "transform_s",
                "hardware"):
        if col not in df:
            df = df.assign(**{col: None})
    if "fit_cache_untimed" not in df:
        df = df.assign(fit_cache_untimed=False)
    if "non_default" not in df:
        df = df.assign(non_default=[()] * len(df))
    if "exact" not in df:
        df = df.assign(exact=None)
    for col in ("predictions", "n_train", "n_test"):
        if col not in df:
            df = df.assign(**{col: None})
    g = df.groupby(keys, sort=False, dropna=False)
    out = g.agg(value=("value", "mean"), lo=("value", "min"), hi=("value", "max"), n_records=("value", "size"),
                params=("params", "first"), non_default=("non_default", "first"), fit_s=("fit_s", "mean"),
                transform_s=("transform_s", "mean"),
                fit_cache_untimed=("fit_cache_untimed", "max"),
                peak_rss_mb=("peak_rss_mb", "max"), output_dim=("output_dim", "first"),
                lfabench_version=("lfabench_version", "first"), git_revision=("git_revision", "first"),
                hardware=("hardware", _distinct_text),
                finished_at=("finished_at", "max"),
                exact=("exact", exact_mean),
                predictions=("predictions", "first"), n_train=("n_train", "first"), n_test=("n_test", "first"),
                path=("path", lambda p: ";".join(sorted(set(p))))).reset_index()
    out["conflict"] = (out["hi"] - out["lo"]) > 1e-9 * (1.0 + out["hi"].abs())
    return out.drop(columns=["lo", "hi"])


#: Appended to the method of a row from records published although unclean (dirty tree, provenance missing).
UNCLEAN_MARK = " (unclean record)"


class InvalidRecords(ValueError):
    """Records that fail :func:`lfabench.record.validate_record`, each named with its file and field."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__(f"{len(problems)} invalid run record(s), refused (fix or remove them):\n"
                         + "\n".join(f"  {p}" for p in problems))


#: The error types of a run that ended because its method is not applicable to the protocol (its criterion is
#: undefined for the annotation it is given, :class:`lfabench.aggregate.UndefinedCriterionError`): a finding about
#: the method, shown as a not-applicable row of its table with the reason, never a number.
NOT_APPLICABLE_ERRORS = ("UndefinedCriterionError",)


def records_frame(record_paths: Iterable[Path]) -> tuple[pd.DataFrame, list[dict]]:
    """One row per (successful record, metric); also returns the failed records (a not-applicable one,
    :data:`NOT_APPLICABLE_ERRORS`, with its :func:`setting_columns`, ``seed`` and ``reason``).

    Raises :class:`InvalidRecords` naming every record that is not valid (unreadable, unknown format,
    a metric of the wrong type, not finite or out of range): none is ever averaged in."""
    rows, failed, invalid = [], [], []
    for path in record_paths:
        try:
            rec = read_record(path)  # the one validation (lfabench.record.validate_record)
        except ValueError as exc:
            invalid.append(str(exc))
            continue
        if rec.get("status") != "ok":
            err = rec.get("error") or {}
            entry = {"path": str(path), "status": rec.get("status"),
                     "error": f"{err.get('type', '')}: {err.get('message', '')}"}
            if err.get("type") in NOT_APPLICABLE_ERRORS:  # a row of its table, shown as not applicable
                entry.update(reason=str(err.get("message") or ""), seed=rec.get("seed"), **setting_columns(rec))
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
    if invalid:  # never counted, never skipped in silence: the board is not built
        raise InvalidRecords(invalid)
    return pd.DataFrame(rows), failed


def setting_columns(rec: dict) -> dict:
    """What names a record's setting on a board, for any status: the plugin of each kind (``dataset``,
    ``descriptor``, ``aggregator``, ``evaluator``), ``params`` (the flattened parameters shown), ``non_default``
    and ``setting`` (the id of the resolved setting)."""
    cfg = rec.get("config") or {}
    setting = _setting(rec)
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


def _with_params(name: str, params: dict, keys: list[str], prefix: str) -> str:
    """``name[key=value, ...]`` for ``keys`` (``prefix`` dropped from each), or ``name`` without keys."""
    if not keys:
        return name
    shown = ", ".join(f"{k.removeprefix(prefix)}={params[k]}" for k in keys)
    return f"{name}[{shown}]"


def _is_descriptor_param(key: str) -> bool:
    return key.startswith("descriptor.")


def _descriptor_labels(df: pd.DataFrame) -> pd.Series:
    """``descriptor`` plus the descriptor parameters its setting sets away from the plugin's default.

    Runs on one descriptor with other parameters (image size, keypoint cap) are another task: a
    method is ranked and tested only against methods on the same descriptors, and each of its rows
    keeps the method's own name.
    """
    return pd.Series([_with_params(d, p, [k for k in nd if _is_descriptor_param(k)], "descriptor.")
                      for d, p, nd in zip(df["descriptor"].astype(str), df["params"], df["non_default"])],
                     index=df.index, dtype=object)


def _aggregator_labels(df: pd.DataFrame) -> pd.Series:
    """``aggregator`` plus the other parameters (aggregator's, evaluator's) its setting sets away from their
    plugins' defaults; descriptor parameters are in the descriptor's label (:func:`_descriptor_labels`)."""
    return pd.Series([_with_params(a, p, [k for k in nd if not _is_descriptor_param(k)], "aggregator.")
                      for a, p, nd in zip(df["aggregator"].astype(str), df["params"], df["non_default"])],
                     index=df.index, dtype=object)


def labelled(df: pd.DataFrame) -> pd.DataFrame:
    """The records frame with ``descriptor`` and ``aggregator`` replaced by the leaderboard's labels: the plugin's
    name and the parameters its setting changed from the plugin's default, so a label depends on the row's own
    setting only and one setting reads the same on every board.

    Two settings of one table that differ only where no label looks (e.g. one writes a default out, the other
    leaves it unset) would read alike: their labels get the setting's id (``bow{6461e290d7}``), which is also
    fixed by the setting alone.
    """
    if df.empty:
        return df
    df = df.assign(descriptor=_descriptor_labels(df), aggregator=_aggregator_labels(df))
    keys = ["dataset", "descriptor", "evaluator", "metric", "aggregator"]
    clash = df.groupby(keys, dropna=False)["setting"].transform("nunique") > 1
    if clash.any():
        df.loc[clash, "aggregator"] = [f"{a}{{{s}}}" for a, s in zip(df.loc[clash, "aggregator"],
                                                                     df.loc[clash, "setting"])]
    return df


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """Mean, std (ddof=1; NaN for one seed: unknown, not zero), distinct seeds and runs per cell, and costs.

    Every (setting, seed) counts once (:func:`dedupe_runs`): ``n_runs`` is the number of records
    read, ``conflicts`` the number of seeds whose repeated records disagree.

    Costs per cell: ``fit_s_mean``, ``transform_s_mean`` (seconds), ``peak_rss_mb_max`` (MiB, the
    largest over the runs) and ``output_dim``. Provenance: ``paths`` (the records, ``;``-separated),
    ``git_revisions`` and ``lfabench_versions`` (distinct values).

    ``best``: every setting whose mean equals the highest of its table (dataset, descriptor, evaluator, metric:
    :data:`TABLE_COLUMNS`). ``test``, ``diff``, ``diff_ci_low``, ``diff_ci_high``, ``p_vs_best``, ``n_pairs``,
    ``p_per_sample`` and ``letters``: the table's tests against its best and between every pair
    (:mod:`lfabench.leaderboard.separation`: the corrected resampled t-test for k-NN on seeded splits, the
    per-query randomization test and the paired t over seeds for retrieval, else the exact Wilcoxon), the
    difference row - best in the metric's units with its 95 % interval, McNemar's per-sample p (k-NN, conditional)
    and the letter display. ``p_holm``: ``p_vs_best`` Holm-adjusted over the tests of the table
    (:func:`lfabench.evaluation.multiple.holm`). ``p_wilcoxon``: the exact Wilcoxon p against the best over the
    shared seeds (NaN below :data:`~lfabench.leaderboard.cells.MIN_PAIRS_FOR_P` pairs), the paper's test.

    ``exact_mean``: the mean as an exact fraction where the evaluator declares the metric a percentage of a
    count (:func:`exact_score`; None elsewhere); ``rank``: the row's rank in its table (1 = best), from the
    exact mean where there is one, equal means sharing the mean of their ranks (Demšar 2006).
    """
    if df.empty:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    df = labelled(dedupe_runs(df))  # one value per (setting, seed), wherever its records lie
    g = df.groupby(GROUP_COLUMNS + ["setting"], sort=True)
    out = g.agg(mean=("value", "mean"), std=("value", "std"), n_seeds=("seed", "nunique"),
                n_runs=("n_records", "sum"), conflicts=("conflict", "sum"), fit_s_mean=("fit_s", "mean"),
                fit_s_lower_bound=("fit_cache_untimed", "max"), transform_s_mean=("transform_s", "mean"),
                peak_rss_mb_max=("peak_rss_mb", "max"), output_dim=("output_dim", "max")).reset_index()
    out["exact_mean"] = g["exact"].agg(exact_mean).values
    out.loc[out["n_seeds"] < 2, "std"] = float("nan")  # one seed: the spread is unknown, not zero
    out["conflicts"] = out["conflicts"].astype(int)
    out["seeds"] = g["seed"].apply(lambda s: ",".join(map(str, sorted(set(s))))).values
    out["paths"] = g["path"].apply(  # relative to the working directory: a committed board names no machine
        lambda s: ";".join(sorted({_shown_path(Path(q)) for v in s for q in v.split(";")}))).values
    out["git_revisions"] = g["git_revision"].apply(_distinct).values
    out["lfabench_versions"] = g["lfabench_version"].apply(_distinct).values
    out["hardware"] = g["hardware"].apply(_distinct_text).values
    keys = ["dataset", "descriptor", "evaluator", "metric"]
    sig = significance_by_group(_signed(df), keys, method="setting", exact="exact")
    out = out.merge(sig[keys + ["setting", "best", "p_vs_best", "n_pairs"]].rename(columns={"p_vs_best": "p_wilcoxon"}),
                    on=keys + ["setting"], how="left")
    out.loc[out["n_pairs"].fillna(0) < MIN_PAIRS_FOR_P, "p_wilcoxon"] = float("nan")
    for col in ("rank", "p_vs_best", "p_holm", "diff", "diff_ci_low", "diff_ci_high", "p_per_sample"):
        out[col] = float("nan")
    out["test"], out["letters"] = "", ""
    units = UnitScores()
    for table_key, idx in out.groupby(TABLE_COLUMNS).groups.items():
        out.loc[idx, "rank"] = tied_ranks(score_keys(out.loc[idx]))
        _separate(out, idx, df, dict(zip(TABLE_COLUMNS, table_key)), units)
    out = out.sort_values(TABLE_COLUMNS + ["rank", "descriptor", "aggregator"], key=_metrics_in_number_order)
    return out[SUMMARY_COLUMNS].reset_index(drop=True)


def _signed(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with every score of a lower-is-better metric negated (:func:`~.directions.metric_sign`), so that the
    best of a table is its highest score, as :func:`~lfabench.evaluation.significance_by_group` takes it (two-sided
    p-values are unchanged by the sign); ``df`` itself when every metric is higher-is-better."""
    if df.empty:
        return df
    signs = _signs(df)
    if all(sign > 0 for sign in signs):
        return df
    return df.assign(value=[v * sign for v, sign in zip(df["value"], signs)],
                     exact=[None if x is None else x * sign for x, sign in zip(df["exact"], signs)])


def _separate(out: pd.DataFrame, idx, runs: pd.DataFrame, key: dict, units: UnitScores) -> None:
    """The table's tests (:mod:`lfabench.leaderboard.separation`) written into its summary rows ``idx``."""
    rows = out.loc[idx]
    best_rows = rows[rows["best"].fillna(False).astype(bool)]
    if best_rows.empty:
        return
    best = sorted(best_rows["setting"])[0]  # tied best: the first in setting order is the reference
    mask = pd.Series(True, index=runs.index)
    for col, value in key.items():
        mask &= runs[col] == value
    tests = run_table_tests(runs.loc[mask, ["setting", "seed", "value", "n_train", "n_test", "predictions"]],
                            best, key["metric"], units)
    out.loc[idx, "test"] = tests.test
    for i in idx:
        name = out.at[i, "setting"]
        if bool(out.at[i, "best"]):
            out.at[i, "diff"] = 0.0
            continue
        out.at[i, "diff"] = tests.diff.get(name, float("nan"))
        out.at[i, "diff_ci_low"], out.at[i, "diff_ci_high"] = tests.ci.get(name, (float("nan"), float("nan")))
        out.at[i, "p_vs_best"] = tests.p.get(name, float("nan"))
        out.at[i, "p_per_sample"] = tests.p_per_sample.get(name, float("nan"))
        out.at[i, "n_pairs"] = tests.n_pairs.get(name, out.at[i, "n_pairs"])
    out.loc[idx, "p_holm"] = holm(out.loc[idx, "p_vs_best"].to_numpy(dtype=float))
    order = out.loc[idx].sort_values(["rank", "aggregator"])["setting"].tolist()
    separated = {frozenset(pair) for pair, p in tests.pairwise_holm.items() if p < ALPHA}
    untested = [pair for pair, p in tests.pairwise_holm.items() if not p == p]
    if not untested and len(order) > 1:
        letters = letter_display(order, separated)
        out.loc[idx, "letters"] = [letters[out.at[i, "setting"]] for i in idx]


def metric_order(metric: str) -> tuple:
    """Sort key of a metric's name with its numbers compared as numbers: ``precision@5`` before ``precision@10``."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", metric) if part)


def _metrics_in_number_order(column: pd.Series) -> pd.Series:
    """``sort_values`` key: the ``metric`` column by :func:`metric_order`, every other column as it is."""
    if column.name != "metric":
        return column
    order = {m: i for i, m in enumerate(sorted(set(column), key=metric_order))}
    return column.map(order)


#: One table of the board (and the family of its Holm-adjusted tests): one task (dataset x descriptor x
#: evaluator) and one of its metrics, so SIFT and DAISY rows are ranked each on their own, as their p-values are.
TABLE_COLUMNS = ["dataset", "descriptor", "evaluator", "metric"]


def score_keys(rows: pd.DataFrame) -> list[Fraction]:
    """Each summary row's mean as an exactly comparable number, higher = better: ``exact_mean`` where known, else the
    float mean; negated for a metric its evaluator declares lower-is-better (:func:`~.directions.metric_sign`)."""
    keys = [e if isinstance(e, Fraction) else Fraction(float(m)) for e, m in zip(rows["exact_mean"], rows["mean"])]
    return [sign * key for sign, key in zip(_signs(rows), keys)] if "evaluator" in rows else keys


def _signs(rows: pd.DataFrame) -> list[int]:
    """Each row's :func:`~.directions.metric_sign` (``1`` higher-is-better, ``-1`` lower-is-better), from its
    ``evaluator`` and ``metric``."""
    return [metric_sign(e, m) for e, m in zip(rows["evaluator"], rows["metric"])]


SUMMARY_COLUMNS = GROUP_COLUMNS + ["setting", "rank", "mean", "exact_mean", "std", "n_seeds", "n_runs", "conflicts",
                                   "seeds", "fit_s_mean", "fit_s_lower_bound", "transform_s_mean", "peak_rss_mb_max",
                                   "output_dim", "best", "diff", "diff_ci_low", "diff_ci_high", "test", "p_vs_best",
                                   "p_holm", "n_pairs", "p_per_sample", "p_wilcoxon", "letters", "paths", "git_revisions",
                                   "lfabench_versions", "hardware"]


def _distinct_text(values) -> str:
    """The distinct texts, ``; ``-joined (a hardware description holds commas)."""
    return "; ".join(sorted({t for v in values if v is not None and not pd.isna(v) for t in str(v).split("; ")}))


def _distinct(values: pd.Series) -> str:
    return ",".join(sorted({str(v) for v in values if v is not None and not pd.isna(v)}))


INTRO = ("Generated by `lfabench leaderboard` from run records only; mean ± sample std over seeds (one seed: the "
         "spread is unknown); rank: within the table, 1 = best, equal means sharing the mean of their ranks (where "
         "the metric is a percentage of a count, e.g. k-NN accuracy, the counts are compared exactly); diff vs best: "
         "the mean of the per-seed differences from the best setting of the same table (row - best, in the metric's "
         "units) with its 95 % interval; p: the paired test against that best, chosen by the protocol (k-NN on "
         "repeated seeded splits: Nadeau and Bengio's corrected resampled t-test over the seeds; retrieval: the "
         "larger p of the randomization test on per-query differences and the paired t-test over the seeds, with a "
         "bootstrap interval over seeds and queries; otherwise the "
         "exact Wilcoxon signed-rank test over the seeds), the paired seeds in brackets; Holm p: that p adjusted by "
         "Holm's method over all the tests of the table; \"vs best\": below where the Holm p is below "
         f"alpha={ALPHA:g}, otherwise not separated (the absence of evidence, not evidence of equality); groups: "
         "settings sharing a letter are not separated by the same test, Holm over every pair of the table; McNemar "
         "p (per sample, conditional): the exact McNemar test on the per-sample outcomes of the stored predictions, "
         "a view of these fitted models on these test samples that decides nothing; "
         "times are means over runs, a fit time counting what fitting a codebook (GMM, "
         "dictionary) reused from the cache cost when it was computed; `*`: some runs reused one stored before "
         "lfabench recorded that cost, so their fit time is a lower bound; memory: the largest resident memory "
         "sampled during fit and transform; `descriptor[...]`, `method[...]`: the parameters a setting changed "
         "from the plugin's default, so a setting reads the same on every board (a method's short label on the "
         "page stands for its full label, which the legend and the CSV files give).")


def significance_line(tab: pd.DataFrame) -> str:
    """What the table's tests show, in words that claim no more than they do: which test, how many settings it
    separates from the best (Holm-adjusted p below alpha), which are not separated, and what the groups mean."""
    tested = tab[tab["p_holm"].notna()]
    if tested.empty:
        return ("No setting of this table has enough seeds paired with its best: no difference is tested.")
    m = len(tested)
    below = int((tested["p_holm"] < ALPHA).sum())
    seeds = sorted({int(n) for n in tested["n_pairs"]})
    n = f"{seeds[0]} paired seeds" if len(seeds) == 1 else f"{seeds[0]}-{seeds[-1]} paired seeds"
    test = next((t for t in tab["test"] if t), WILCOXON) if "test" in tab else WILCOXON
    head = {T_TEST: f"Test against the best: Nadeau and Bengio's corrected resampled t-test over the {n} (the "
                    "variance of the per-seed differences times 1/k + n_test/n_train, k - 1 degrees of freedom); "
                    "the difference column is row - best with that test's 95 % interval",
            SIGN_FLIP: "Test against the best: the larger p of two paired tests, so that a separation holds for "
                       "both the queries and the fits: the randomization (sign-flip) test on per-query differences "
                       f"over the {n} ({DEFAULT_PERMUTATIONS:,} draws, so no p is below "
                       f"{1 / (DEFAULT_PERMUTATIONS + 1):.2g}; a query's differences on every seed flip together), "
                       "and the paired t-test over the seeds; the difference column is row - best with a two-way "
                       f"percentile bootstrap 95 % interval over seeds and queries ({DEFAULT_BOOTSTRAP:,} resamples)",
            WILCOXON: f"Test against the best: the paired two-sided exact Wilcoxon signed-rank test over the {n}"}[test]
    text = (f"{head}. Holm over the {m} tests of this table at alpha={ALPHA:g}: {below} of {m} settings are below "
            f"the best; ")
    kept = tested[tested["p_holm"] >= ALPHA]
    text += (f"{m - below} are not separated from it ({', '.join(md_text(a) for a in kept['aggregator'])}), which "
             "does not show that they are equal." if len(kept) else "none is left unseparated.")
    if "letters" in tab and tab["letters"].astype(str).str.len().gt(0).all():
        text += (" Groups: two settings sharing a letter are not separated by the same test with Holm over all "
                 f"{len(tab) * (len(tab) - 1) // 2} pairs of the table.")
    if "p_per_sample" in tab and tab["p_per_sample"].notna().any():
        text += (" McNemar p (per sample, conditional): McNemar's exact test on the per-sample outcomes, the "
                 "discordant counts summed over the seeds; conditional on these fitted models and test samples, it "
                 "decides nothing here.")
    if test == WILCOXON:
        floor = 2.0 / 2 ** max(seeds)  # the exact two-sided test's smallest p with that many non-zero pairs
        if floor * m >= ALPHA:
            text += (f" With {max(seeds)} paired seeds the exact test's smallest p is {floor:.4g}, so after Holm's "
                     f"correction over {m} tests no difference could reach significance: more seeds are needed.")
    return text


#: Displayed columns that hold numbers (right-aligned), besides the score column.
NUMERIC_COLUMNS = ("rank", "seeds", "runs", "fit time (s)", "transform time (s)", "peak memory (MiB)",
                   "output dim", "Holm p")


def table_groups(summary: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame]]:
    """``(title, metric, rows of summary)`` per table (:data:`TABLE_COLUMNS`: dataset, descriptor, evaluator,
    metric; within a dataset its own protocol's descriptor first (:func:`~.titles.own_descriptor`: SIFT on Fifteen
    Scene), then the others by name; metrics in :func:`metric_order`, so precision@5 comes before precision@10),
    best first; the title names all four (``digits — patches — knn — accuracy``)."""
    from .titles import own_descriptor

    def order(group):
        dataset, descriptor, evaluator, metric = group[0]
        return (dataset, str(descriptor).split("[")[0] != own_descriptor(dataset), descriptor, evaluator,
                metric_order(metric))

    groups = sorted(summary.groupby(TABLE_COLUMNS, sort=True), key=order)
    return [(f"{dataset} — {descriptor} — {evaluator} — {metric}", metric, tab)
            for (dataset, descriptor, evaluator, metric), tab in groups]


def display_table(tab: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The shown cells of one table's summary rows (see :mod:`lfabench.leaderboard.cells`)."""
    return pd.DataFrame({
        "rank": [rank_cell(r) for r in tab["rank"]],
        "descriptor": tab["descriptor"].values,
        "aggregator": tab["aggregator"].values,
        metric: [score_cell(m, s, n) for m, s, n in zip(tab["mean"], tab["std"], tab["n_seeds"])],
        "seeds": tab["n_seeds"].values,
        "runs": tab["n_runs"].values,
        **({"repeats disagree (seeds)": tab["conflicts"].values}
           if "conflicts" in tab and tab["conflicts"].sum() else {}),
        "fit time (s)": [_lower_bound_mark(number_cell(v), low) for v, low in
                         zip(tab["fit_s_mean"], tab["fit_s_lower_bound"])],
        "transform time (s)": [number_cell(v) for v in tab["transform_s_mean"]],
        "peak memory (MiB)": [number_cell(v, "{:.0f}") for v in tab["peak_rss_mb_max"]],
        "output dim": [number_cell(v, "{:.0f}") for v in tab["output_dim"]],
        "diff vs best [95 % CI]": [diff_cell(d, lo, hi, b) for d, lo, hi, b in
                                   zip(tab["diff"], tab["diff_ci_low"], tab["diff_ci_high"], tab["best"])],
        "p vs best (pairs)": [p_cell(p, n, b) for p, n, b in zip(tab["p_vs_best"], tab["n_pairs"], tab["best"])],
        "Holm p": [holm_cell(p, b) for p, b in zip(tab["p_holm"], tab["best"])],
        "vs best": [verdict(p, n, b) for p, n, b in zip(tab["p_holm"], tab["n_pairs"], tab["best"])],
        **({"groups": tab["letters"].values} if "letters" in tab and tab["letters"].astype(str).str.len().gt(0).all()
           else {}),
        **({"McNemar p (per sample, conditional)": [plain_p_cell(p) for p in tab["p_per_sample"]]}
           if "p_per_sample" in tab and tab["p_per_sample"].notna().any() else {}),
    })


def _lower_bound_mark(cell: str, lower_bound) -> str:
    """``cell`` with ``*`` when the time it shows is only a lower bound (see :func:`fit_cost`)."""
    return cell + "*" if bool(lower_bound) and cell != "—" else cell


def display_tables(summary: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """One ``(title, table)`` per table (dataset, descriptor, evaluator, metric): one row per method, best first."""
    return [(title, display_table(tab, metric)) for title, metric, tab in table_groups(summary)]


def markdown_table(shown: pd.DataFrame) -> str:
    """GitHub Markdown with numbers right-aligned (the score column included), text left-aligned."""
    score = shown.columns[3]
    align = ["right" if c in NUMERIC_COLUMNS or c == score else "left" for c in shown.columns]
    return md_frame(shown).to_markdown(index=False, colalign=align, disable_numparse=True)


def provenance_line(tab: pd.DataFrame, command: str | None) -> str:
    """Which command made a table and from which records (Markdown)."""
    paths = sorted({p for cell in tab["paths"] for p in cell.split(";") if p})
    folders = sorted({_shown_path(Path(p).parent.parent) for p in paths})
    made = f"Made by {md_code(command)}" if command else "Made by `lfabench leaderboard`"
    return (f"{made} from {len(paths)} record(s) (`result.json`) under: "
            + ", ".join(md_code(f) for f in folders) + ".")


def _shown_path(path: Path) -> str:
    """Relative to the working directory when under it (committed boards must not name a machine's home)."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def to_markdown(summary: pd.DataFrame, failed: list[dict], command: str | None = None,
                extra_sections: list[str] = (), plots: dict[str, list[Path]] | None = None,
                title: str | None = None, settings: dict[str, str] | None = None) -> str:
    """The board as Markdown, in the order a reader needs it.

    The title (``title``; default: :func:`lfabench.leaderboard.titles.board_title`), each dataset's plugin
    description (what the data is, e.g. a copies board's attacks), the protocol ``settings``, then per table
    (one task: dataset x descriptor x evaluator, and one metric) its heading, its table with short method labels
    (:mod:`lfabench.leaderboard.labels`), what its tests show, and its plots (``plots``: PNG files per table
    title, embedded by file name: they lie beside the Markdown); then ``extra_sections`` (the overall ranks,
    the paper), the legend of the labels, the records not counted, and, folded away in ``<details>``, how to
    read the cells and where every table came from (commands, records, revisions, environments).
    """
    from .labels import legend, short_labels
    from .not_applicable import for_task, not_applicable_frame, not_applicable_markdown
    from .titles import board_title, dataset_descriptions, evaluator_descriptions, task_heading

    plots = plots or {}
    not_applicable = not_applicable_frame(failed)
    short = short_labels(summary["aggregator"]) if not summary.empty else {}
    parts = [f"# {md_text(title or board_title(summary))}", ""]
    if not summary.empty:
        parts += ["Data: " + "; ".join(md_text(name) + (f": {md_text(text)}" if text else "")
                                       for name, text in dataset_descriptions(summary["dataset"]).items()) + ".", ""]
        parts += ["Protocol: " + "; ".join(md_text(name) + (f": {md_text(text)}" if text else "")
                                           for name, text in evaluator_descriptions(summary["evaluator"]).items())
                  + ".", ""]
    if settings:
        parts += ["Protocol settings: " + "; ".join(f"{md_code(e)}: {md_code(v)}" for e, v in settings.items()
                                                  if v) + ".", ""]
    parts += ["Methods are shown by short labels; the [legend](#labels) gives each one's full settings. How to "
              "read the cells and where every number came from: the notes at the end.", ""]
    if summary.empty:
        parts.append("_No successful run records found._")
    provenance = []
    for table_title, metric, tab in table_groups(summary):
        heading = task_heading(tab, metric, with_dataset=summary["dataset"].nunique() > 1)
        shown = display_table(tab.assign(aggregator=tab["aggregator"].map(short)), metric)
        parts += [f"## {md_text(heading)}", "", markdown_table(shown), "", significance_line(tab), ""]
        na = not_applicable_markdown(for_task(not_applicable, *tab.iloc[0][["dataset", "descriptor", "evaluator"]]))
        parts += [na, ""] if na else []
        parts += [f"![{md_text(heading)}: {md_text(p.stem)}]({Path(p).name})" for p in plots.get(table_title, [])]
        parts += [""] if plots.get(table_title) else []
        provenance += [f"- {md_text(heading)}: " + provenance_line(tab, command)]
    parts += list(extra_sections)
    if plots.get(""):
        parts += ["## Plots across tasks", ""] + [f"![{md_text(Path(p).stem)}]({Path(p).name})" for p in plots[""]] + [""]
    if short:
        parts += ["## Labels", "", "Each short label and the settings it stands for: the parameters the setting "
                  "changed from the plugin's default.", "",
                  md_frame(legend(short)).to_markdown(index=False, disable_numparse=True), ""]
    failed = [f for f in failed if "reason" not in f]  # the not-applicable ones are under their tables
    if failed:
        parts += [f"_{len(failed)} run record(s) not counted (failed or unreadable):_", ""]
        parts += [f"- {md_code(f['path'])}: {md_text(f['status'])} — {md_text(f['error'])}" for f in failed] + [""]
    parts += ["<details><summary>How to read these tables</summary>", "", INTRO, "", "</details>", ""]
    if provenance:
        revisions = sorted({v for cell in summary.get("git_revisions", ()) for v in str(cell).split(",") if v})
        versions = sorted({v for cell in summary.get("lfabench_versions", ()) for v in str(cell).split(",") if v})
        machines = sorted({v for cell in summary.get("hardware", ()) for v in str(cell).split("; ") if v})
        parts += ["<details><summary>Provenance: commands, records, revisions, environments</summary>", "",
                  *provenance, "",
                  "- lfabench versions: " + (", ".join(md_text(v) for v in versions) or "unknown"),
                  "- git revisions: " + (", ".join(md_text(v) for v in revisions) or "unknown"),
                  "- hardware: " + ("; ".join(md_text(v) for v in machines) or "not recorded"), "",
                  "</details>", ""]
    return "\n".join(parts)
