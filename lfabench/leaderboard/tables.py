"""Leaderboards generated from run records only (``result.json`` files), never edited by hand.

Each successful record contributes one row per metric. Rows are grouped by
(dataset, descriptor, aggregator, evaluator, metric) *and* by setting: runs whose
resolved configs differ in anything but the seed are different settings, shown
as ``aggregator[param=value, ...]`` with the parameters that tell them apart, or,
for descriptor parameters, as ``descriptor[param=value, ...]`` (another task). A label
also shows every parameter set away from its plugin's default (``t1[max_iter=50]``),
so a row run at a reduced size says so even when it is the method's only setting.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from pathlib import Path
from typing import Iterable

import pandas as pd

from ..evaluation.significance import significance_by_group
from ..plugin import KINDS, default_params
from ..record import RESULT_FILE, plugin_setting, read_record
from ..registry import get_plugin
from .cells import MIN_PAIRS_FOR_P, number_cell, p_cell, score_cell

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
def _default_values(kind: str, name: str) -> dict[str, str]:
    """The plugin's keyword defaults as labels show values (JSON); empty when the plugin is not installed here."""
    try:
        factory = get_plugin(kind, name)
    except LookupError:  # records of a plugin this environment lacks: no parameter is known to be non-default
        return {}
    out = {}
    for key, value in default_params(factory).items():
        try:
            out[key] = value if isinstance(value, str) else json.dumps(value)
        except TypeError:  # a default JSON cannot show (an object) is not compared
            continue
    return out


def _non_default(setting: dict) -> tuple[str, ...]:
    """The flattened keys (``kind.param``) of the setting's parameters whose value is not the plugin's default.

    Values that follow the seed (``${seed}``) are the seed, not a setting; a parameter the plugin's signature
    does not name (or has no default for) is not compared.
    """
    keys = []
    for kind in SETTING_KINDS:
        spec = setting.get(kind) or {}
        known = _default_values(kind, spec.get("name")) if spec.get("name") else {}
        for param, value in (spec.get("params") or {}).items():
            if param not in known or isinstance(value, dict) or (isinstance(value, str) and "${" in value):
                continue
            if (value if isinstance(value, str) else json.dumps(value)) != known[param]:
                keys.append(f"{kind}.{param}")
    return tuple(keys)


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
    for col in ("peak_rss_mb", "output_dim", "lfabench_version", "git_revision", "finished_at", "transform_s"):
        if col not in df:
            df = df.assign(**{col: None})
    if "fit_cache_untimed" not in df:
        df = df.assign(fit_cache_untimed=False)
    if "non_default" not in df:
        df = df.assign(non_default=[()] * len(df))
    g = df.groupby(keys, sort=False, dropna=False)
    out = g.agg(value=("value", "mean"), lo=("value", "min"), hi=("value", "max"), n_records=("value", "size"),
                params=("params", "first"), non_default=("non_default", "first"), fit_s=("fit_s", "mean"),
                transform_s=("transform_s", "mean"),
                fit_cache_untimed=("fit_cache_untimed", "max"),
                peak_rss_mb=("peak_rss_mb", "max"), output_dim=("output_dim", "first"),
                lfabench_version=("lfabench_version", "first"), git_revision=("git_revision", "first"),
                finished_at=("finished_at", "max"),
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


def records_frame(record_paths: Iterable[Path]) -> tuple[pd.DataFrame, list[dict]]:
    """One row per (successful record, metric); also returns the failed records.

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
            failed.append({"path": str(path), "status": rec.get("status"),
                           "error": f"{err.get('type', '')}: {err.get('message', '')}"})
            continue
        cfg = rec["config"]
        setting = _setting(rec)
        setting_id = hashlib.sha1(json.dumps(setting, sort_keys=True).encode()).hexdigest()[:10]
        base = {kind: (cfg.get(kind) or {}).get("name") for kind in KINDS}
        if (rec.get("publication") or {}).get("unclean"):  # published with --allow-unclean-records: marked
            base["aggregator"] = f"{base['aggregator']}{UNCLEAN_MARK}"
        params = {}
        for kind in KINDS:
            shown = _shown_params((setting.get(kind) or {}).get("params") or {}, (cfg.get(kind) or {}).get("params"))
            params.update(_flatten(f"{kind}.", shown))
        fit_s, untimed = fit_cost(rec)
        non_default = _non_default(setting)
        for metric, value in rec["metrics"].items():
            rows.append({**base, "metric": metric, "value": value, "seed": rec["seed"], "setting": setting_id,
                         "params": params, "non_default": non_default, "fit_s": fit_s,
                         "fit_cache_untimed": untimed,
                         "transform_s": rec["timings_s"].get("transform"), "path": str(path),
                         **_provenance(rec)})
    if invalid:  # never counted, never skipped in silence: the board is not built
        raise InvalidRecords(invalid)
    return pd.DataFrame(rows), failed


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


def _provenance(rec: dict) -> dict:
    """Per-record columns beside the score: cost (memory, output size) and where the run came from."""
    return {"peak_rss_mb": _aggregation_memory(rec), "output_dim": rec.get("output_dim"),
            "lfabench_version": rec.get("lfabench_version"), "git_revision": rec.get("git_revision"),
            "finished_at": rec.get("finished_at")}


#: How a label shows a parameter that a record's config does not set (the plugin's default applied).
UNSET = "default"


def _shown_keys(settings: pd.DataFrame, keep) -> list[str]:
    """The parameter keys (those ``keep`` accepts) a group's labels show: those whose value differs between its
    settings' ``params``, and those any of its settings sets away from the plugin's default (``non_default``)."""
    params = settings["params"]
    keys = sorted({k for p in params for k in p if keep(k)})
    varying = {k for k in keys if len({p.get(k) for p in params}) > 1}
    changed = {k for changed_keys in settings.get("non_default", ()) for k in changed_keys if keep(k)}
    return sorted(varying | changed)


def _with_params(name: str, params: dict, keys: list[str], prefix: str) -> str:
    """``name[key=value, ...]`` for ``keys`` (``prefix`` dropped from each), or ``name`` without keys."""
    if not keys:
        return name
    shown = ", ".join(f"{k.removeprefix(prefix)}={params.get(k, UNSET)}" for k in keys)
    return f"{name}[{shown}]"


def _is_descriptor_param(key: str) -> bool:
    return key.startswith("descriptor.")


def _descriptor_labels(df: pd.DataFrame) -> pd.Series:
    """``descriptor`` plus the descriptor parameters that tell its settings apart within a dataset, or that
    its settings set away from the plugin's default.

    Runs on one descriptor with other parameters (image size, keypoint cap) are another task: a
    method is ranked and tested only against methods on the same descriptors, and each of its rows
    keeps the method's own name.
    """
    labels = pd.Series(df["descriptor"].astype(str), index=df.index)
    for _, grp in df.groupby(["dataset", "descriptor"]):
        shown = _shown_keys(grp.drop_duplicates("setting"), _is_descriptor_param)
        for idx, row in grp.iterrows():
            labels[idx] = _with_params(row["descriptor"], row["params"], shown, "descriptor.")
    return labels


def _aggregator_labels(df: pd.DataFrame) -> pd.Series:
    """``aggregator`` plus the other parameters that distinguish its settings within a (dataset, descriptor label,
    evaluator) or that its settings set away from their plugins' defaults; descriptor parameters are in the
    descriptor's label (:func:`_descriptor_labels`)."""
    labels = pd.Series(df["aggregator"].astype(str), index=df.index)
    for _, grp in df.groupby(["dataset", "descriptor", "evaluator", "aggregator"]):
        shown = _shown_keys(grp.drop_duplicates("setting"), lambda k: not _is_descriptor_param(k))
        for idx, row in grp.iterrows():
            labels[idx] = _with_params(row["aggregator"], row["params"], shown, "aggregator.")
    return labels


def labelled(df: pd.DataFrame) -> pd.DataFrame:
    """The records frame with ``descriptor`` and ``aggregator`` replaced by the leaderboard's labels (the
    parameters that tell their settings apart or differ from the plugin's default; a parameter a record does not
    set shows as ``default``)."""
    if df.empty:
        return df
    df = df.assign(descriptor=_descriptor_labels(df))
    return df.assign(aggregator=_aggregator_labels(df))


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """Mean, std (ddof=1; NaN for one seed: unknown, not zero), distinct seeds and runs per cell, and costs.

    Every (setting, seed) counts once (:func:`dedupe_runs`): ``n_runs`` is the number of records
    read, ``conflicts`` the number of seeds whose repeated records disagree.

    Costs per cell: ``fit_s_mean``, ``transform_s_mean`` (seconds), ``peak_rss_mb_max`` (MiB, the
    largest over the runs) and ``output_dim``. Provenance: ``paths`` (the records, ``;``-separated),
    ``git_revisions`` and ``lfabench_versions`` (distinct values).

    ``p_vs_best``/``n_pairs``: the paired two-sided exact Wilcoxon p-value of each setting
    against the best one of its (dataset, descriptor, evaluator, metric), over the seeds
    both have (:func:`lfabench.evaluation.significance.compare_to_best`); NaN with fewer than
    :data:`~lfabench.leaderboard.cells.MIN_PAIRS_FOR_P` pairs, where the exact test cannot reach 0.05.
    """
    if df.empty:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    df = labelled(dedupe_runs(df))  # one value per (setting, seed), wherever its records lie
    g = df.groupby(GROUP_COLUMNS + ["setting"], sort=True)
    out = g.agg(mean=("value", "mean"), std=("value", "std"), n_seeds=("seed", "nunique"),
                n_runs=("n_records", "sum"), conflicts=("conflict", "sum"), fit_s_mean=("fit_s", "mean"),
                fit_s_lower_bound=("fit_cache_untimed", "max"), transform_s_mean=("transform_s", "mean"),
                peak_rss_mb_max=("peak_rss_mb", "max"), output_dim=("output_dim", "max")).reset_index()
    out.loc[out["n_seeds"] < 2, "std"] = float("nan")  # one seed: the spread is unknown, not zero
    out["conflicts"] = out["conflicts"].astype(int)
    out["seeds"] = g["seed"].apply(lambda s: ",".join(map(str, sorted(set(s))))).values
    out["paths"] = g["path"].apply(  # relative to the working directory: a committed board names no machine
        lambda s: ";".join(sorted({_shown_path(Path(q)) for v in s for q in v.split(";")}))).values
    out["git_revisions"] = g["git_revision"].apply(_distinct).values
    out["lfabench_versions"] = g["lfabench_version"].apply(_distinct).values
    keys = ["dataset", "descriptor", "evaluator", "metric"]
    sig = significance_by_group(df, keys, method="setting")[keys + ["setting", "best", "p_vs_best", "n_pairs"]]
    out = out.merge(sig, on=keys + ["setting"], how="left")
    out.loc[out["n_pairs"].fillna(0) < MIN_PAIRS_FOR_P, "p_vs_best"] = float("nan")
    out = out.sort_values(["dataset", "evaluator", "metric", "mean"], ascending=[True, True, True, False])
    return out[SUMMARY_COLUMNS]


SUMMARY_COLUMNS = GROUP_COLUMNS + ["setting", "mean", "std", "n_seeds", "n_runs", "conflicts", "seeds", "fit_s_mean",
                                   "fit_s_lower_bound", "transform_s_mean", "peak_rss_mb_max", "output_dim", "best",
                                   "p_vs_best", "n_pairs", "paths", "git_revisions", "lfabench_versions"]


def _distinct(values: pd.Series) -> str:
    return ",".join(sorted({str(v) for v in values if v is not None and not pd.isna(v)}))


INTRO = ("Generated by `lfabench leaderboard` from run records only; mean ± sample std over seeds (one seed: the "
         "spread is unknown); p: paired two-sided exact Wilcoxon signed-rank test against the best setting of "
         f"the same descriptor, over the seeds both have, shown from {MIN_PAIRS_FOR_P} pairs on (with fewer the "
         "test cannot reach 0.05); times are means over runs, a fit time counting what fitting a codebook (GMM, "
         "dictionary) reused from the cache cost when it was computed; `*`: some runs reused one stored before "
         "lfabench recorded that cost, so their fit time is a lower bound; memory: the largest resident memory "
         "sampled during fit and transform; `descriptor[...]`, `method[...]`: the parameters that tell settings apart "
         "or that a setting changed from the plugin's default (`default`: the record's config does not set it, so "
         "the plugin's default applied).")

#: Displayed columns that hold numbers (right-aligned), besides the score column.
NUMERIC_COLUMNS = ("rank", "seeds", "runs", "fit time (s)", "transform time (s)", "peak memory (MiB)",
                   "output dim")


def table_groups(summary: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame]]:
    """``(title, metric, rows of summary)`` per (dataset, evaluator, metric), best first."""
    return [(f"{dataset} — {evaluator} — {metric}", metric, tab)
            for (dataset, evaluator, metric), tab in summary.groupby(["dataset", "evaluator", "metric"], sort=True)]


def display_table(tab: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The shown cells of one table's summary rows (see :mod:`lfabench.leaderboard.cells`)."""
    return pd.DataFrame({
        "rank": range(1, len(tab) + 1),
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
        "p vs best (pairs)": [p_cell(p, n, b) for p, n, b in zip(tab["p_vs_best"], tab["n_pairs"], tab["best"])],
    })


def _lower_bound_mark(cell: str, lower_bound) -> str:
    """``cell`` with ``*`` when the time it shows is only a lower bound (see :func:`fit_cost`)."""
    return cell + "*" if bool(lower_bound) and cell != "—" else cell


def display_tables(summary: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """One ``(title, table)`` per (dataset, evaluator, metric): rows = descriptor x aggregator, best first."""
    return [(title, display_table(tab, metric)) for title, metric, tab in table_groups(summary)]


def markdown_table(shown: pd.DataFrame) -> str:
    """GitHub Markdown with numbers right-aligned (the score column included), text left-aligned."""
    score = shown.columns[3]
    align = ["right" if c in NUMERIC_COLUMNS or c == score else "left" for c in shown.columns]
    return shown.to_markdown(index=False, colalign=align, disable_numparse=True)


def provenance_line(tab: pd.DataFrame, command: str | None) -> str:
    """Which command made a table and from which records (Markdown)."""
    paths = sorted({p for cell in tab["paths"] for p in cell.split(";") if p})
    folders = sorted({_shown_path(Path(p).parent.parent) for p in paths})
    made = f"Made by `{command}`" if command else "Made by `lfabench leaderboard`"
    return (f"{made} from {len(paths)} record(s) (`result.json`) under: "
            + ", ".join(f"`{f}`" for f in folders) + ".")


def _shown_path(path: Path) -> str:
    """Relative to the working directory when under it (committed boards must not name a machine's home)."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def to_markdown(summary: pd.DataFrame, failed: list[dict], command: str | None = None,
                extra_sections: list[str] = ()) -> str:
    """The leaderboard as Markdown: one table per (dataset, evaluator, metric), then the uncounted records."""
    parts = ["# lfabench leaderboard", "", INTRO, ""]
    if summary.empty:
        parts.append("_No successful run records found._")
    for title, metric, tab in table_groups(summary):
        parts += [f"## {title}", "", markdown_table(display_table(tab, metric)), "", provenance_line(tab, command), ""]
    parts += list(extra_sections)
    if failed:
        parts += [f"_{len(failed)} run record(s) not counted (failed or unreadable):_", ""]
        parts += [f"- `{f['path']}`: {f['status']} — {f['error']}" for f in failed] + [""]
    return "\n".join(parts)
