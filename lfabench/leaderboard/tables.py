"""Leaderboards generated from run records only (``result.json`` files), never edited by hand.

Each successful record contributes one row per metric. Rows are grouped by
(dataset, descriptor, aggregator, evaluator, metric) *and* by setting: runs whose
resolved configs differ in anything but the seed are different settings, shown
as ``aggregator[param=value, ...]`` with the parameters that tell them apart.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path
from typing import Iterable

import pandas as pd

from ..evaluation.significance import significance_by_group
from ..plugin import KINDS
from ..record import RESULT_FILE, plugin_setting, read_record
from ..storage import write_text_atomic

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
    """The plugin configs before interpolation (``${seed}`` literal): runs sharing it differ only by seed."""
    return plugin_setting(record.get("setting") or record["config"])


def _flatten(prefix: str, params: dict) -> dict[str, str]:
    out = {}
    for k, v in (params or {}).items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(key + ".", v))
        else:
            out[key] = json.dumps(v) if not isinstance(v, str) else v
    return out


def records_frame(record_paths: Iterable[Path]) -> tuple[pd.DataFrame, list[dict]]:
    """One row per (successful record, metric); also returns the failed/unreadable records."""
    rows, failed = [], []
    for path in record_paths:
        try:
            rec = read_record(path)
        except ValueError as exc:
            warnings.warn(str(exc))
            failed.append({"path": str(path), "status": "unreadable", "error": str(exc)})
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
        params = {}
        for kind in KINDS:
            params.update(_flatten(f"{kind}.", (setting.get(kind) or {}).get("params") or {}))
        for metric, value in rec["metrics"].items():
            rows.append({**base, "metric": metric, "value": value, "seed": rec["seed"], "setting": setting_id,
                         "params": params, "fit_s": rec["timings_s"].get("fit"),
                         "transform_s": rec["timings_s"].get("transform"), "path": str(path)})
    return pd.DataFrame(rows), failed


def _labels(df: pd.DataFrame) -> pd.Series:
    """``aggregator`` plus the parameters that distinguish its settings within a (dataset, descriptor, evaluator)."""
    labels = pd.Series(df["aggregator"].astype(str), index=df.index)
    for _, grp in df.groupby(["dataset", "descriptor", "evaluator", "aggregator"]):
        settings = grp.drop_duplicates("setting")
        if len(settings) < 2:
            continue
        keys = sorted({k for p in settings["params"] for k in p})
        varying = [k for k in keys if len({p.get(k) for p in settings["params"]}) > 1]
        for idx, row in grp.iterrows():
            shown = ", ".join(f"{k.split('.', 1)[1] if k.startswith('aggregator.') else k}={row['params'].get(k)}"
                              for k in varying)
            labels[idx] = f"{row['aggregator']}[{shown}]"
    return labels


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """Mean, std (ddof=1; 0 for one seed), number of distinct seeds and runs per cell.

    ``p_vs_best``/``n_pairs``: the paired two-sided exact Wilcoxon p-value of each setting
    against the best one of its (dataset, descriptor, evaluator, metric), over the seeds
    both have (:func:`lfabench.evaluation.significance.compare_to_best`).
    """
    if df.empty:
        return pd.DataFrame(columns=GROUP_COLUMNS + ["setting", "mean", "std", "n_seeds", "n_runs", "seeds",
                                                     "fit_s_mean", "best", "p_vs_best", "n_pairs"])
    df = df.assign(aggregator=_labels(df))
    g = df.groupby(GROUP_COLUMNS + ["setting"], sort=True)
    out = g.agg(mean=("value", "mean"), std=("value", "std"), n_seeds=("seed", "nunique"),
                n_runs=("value", "size"), fit_s_mean=("fit_s", "mean")).reset_index()
    out["std"] = out["std"].fillna(0.0)
    out["seeds"] = g["seed"].apply(lambda s: ",".join(map(str, sorted(set(s))))).values
    keys = ["dataset", "descriptor", "evaluator", "metric"]
    sig = significance_by_group(df, keys, method="setting")[keys + ["setting", "best", "p_vs_best", "n_pairs"]]
    out = out.merge(sig, on=keys + ["setting"], how="left")
    return out.sort_values(["dataset", "evaluator", "metric", "mean"], ascending=[True, True, True, False])


INTRO = ("Generated by `lfabench leaderboard` from run records only; mean ± sample std over seeds; p: paired "
         "two-sided exact Wilcoxon signed-rank test against the best setting of the same descriptor, "
         "over the seeds both have.")


def display_tables(summary: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """One ``(title, table)`` per (dataset, evaluator, metric): rows = descriptor x aggregator, best first."""
    tables = []
    for (dataset, evaluator, metric), tab in summary.groupby(["dataset", "evaluator", "metric"], sort=True):
        shown = pd.DataFrame({
            "rank": range(1, len(tab) + 1),
            "descriptor": tab["descriptor"].values,
            "aggregator": tab["aggregator"].values,
            metric: [f"{m:.2f} ± {s:.2f}" for m, s in zip(tab["mean"], tab["std"])],
            "seeds": tab["n_seeds"].values,
            "runs": tab["n_runs"].values,
            "fit time (s)": [f"{v:.2f}" for v in tab["fit_s_mean"]],
            "p vs best (pairs)": [_p_cell(p, n, b)
                                  for p, n, b in zip(tab["p_vs_best"], tab["n_pairs"], tab["best"])],
        })
        tables.append((f"{dataset} — {evaluator} — {metric}", shown))
    return tables


def to_markdown(summary: pd.DataFrame, failed: list[dict]) -> str:
    """The leaderboard as Markdown: one table per (dataset, evaluator, metric), then the uncounted records."""
    parts = ["# lfabench leaderboard", "", INTRO, ""]
    if summary.empty:
        parts.append("_No successful run records found._")
    for title, shown in display_tables(summary):
        parts += [f"## {title}", "", shown.to_markdown(index=False), ""]
    if failed:
        parts += [f"_{len(failed)} run record(s) not counted (failed or unreadable):_", ""]
        parts += [f"- `{f['path']}`: {f['status']} — {f['error']}" for f in failed] + [""]
    return "\n".join(parts)


def to_html(summary: pd.DataFrame, failed: list[dict]) -> str:
    """The same tables as a standalone HTML page (cells escaped)."""
    import html

    body = [f"<h1>lfabench leaderboard</h1><p>{html.escape(INTRO)}</p>"]
    if summary.empty:
        body.append("<p><em>No successful run records found.</em></p>")
    for title, shown in display_tables(summary):
        body += [f"<h2>{html.escape(title)}</h2>", shown.to_html(index=False, escape=True, border=0)]
    if failed:
        items = "".join(f"<li><code>{html.escape(f['path'])}</code>: {html.escape(str(f['status']))} — "
                        f"{html.escape(f['error'])}</li>" for f in failed)
        body.append(f"<p>{len(failed)} run record(s) not counted (failed or unreadable):</p><ul>{items}</ul>")
    style = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
             "th,td{padding:4px 10px;border-bottom:1px solid #ddd;text-align:left}")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>lfabench leaderboard</title>"
            f"<style>{style}</style></head><body>{''.join(body)}</body></html>\n")


def _p_cell(p: float, n_pairs, best: bool) -> str:
    """``best`` for the best setting of its (dataset, descriptor, evaluator, metric), ``—`` without shared seeds."""
    if pd.notna(best) and bool(best):
        return "best"
    return "—" if pd.isna(p) else f"{p:.4g} ({int(n_pairs)})"


def build_leaderboard(run_paths: Iterable[Path | str], out_dir: Path | str = "leaderboards",
                      name: str = "leaderboard") -> dict[str, Path]:
    """Read records under ``run_paths``; write ``<name>.md``, ``.csv``, ``.html`` and one ``.png`` plot per table."""
    records = find_records(run_paths)
    df, failed = records_frame(records)
    summary = summarize(df)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"markdown": out_dir / f"{name}.md", "csv": out_dir / f"{name}.csv", "html": out_dir / f"{name}.html"}
    write_text_atomic(paths["markdown"], to_markdown(summary, failed))
    write_text_atomic(paths["csv"], summary.to_csv(index=False))
    write_text_atomic(paths["html"], to_html(summary, failed))
    from .plot import plot_tables

    paths["plots"] = plot_tables(summary, out_dir, name)
    return paths

