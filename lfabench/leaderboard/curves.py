"""The paper's curves, drawn wherever the records support one.

A *parameter curve* (the labelled-proportion, lambda1, d̄ and k curves): within one (dataset,
descriptor, evaluator, metric, aggregator), settings that differ in exactly one numeric parameter,
with at least :data:`MIN_POINTS` values of it: mean ± std over seeds against that parameter.
A *convergence curve*: every record whose ``fit_info`` holds a ``training_curve`` (the objective
per iteration, :meth:`lfabench.aggregate.Aggregator.record_info`), one line per run.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from ..recordset import RecordSet, labelled
from .plot import label_slug, pyplot, save_png, slug

MIN_POINTS = 3
KEYS = ["dataset", "descriptor", "evaluator", "metric", "aggregator"]


def _number(text):
    try:
        value = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def parameter_curves(df: pd.DataFrame) -> list[tuple[tuple, str, dict[str, pd.DataFrame]]]:
    """``(keys, parameter, {line label: points})`` per curve; points: ``x, mean, std, n_runs`` sorted by x.

    For each numeric parameter, the settings that agree on every other parameter form one line when
    they give it at least :data:`MIN_POINTS` values; the lines of one parameter share a plot, labelled
    by the other parameters that tell them apart (e.g. the k-NN distance on a k curve). Records of
    several sweeps pooled together therefore still give each sweep's curve.
    """
    curves = []
    if df.empty:
        return curves
    for keys, grp in df.groupby(KEYS, sort=True):
        settings = grp.drop_duplicates("setting")
        names = sorted({k for p in settings["params"] for k in p})
        varying = [k for k in names if len({p.get(k) for p in settings["params"]}) > 1]
        for param in varying:
            xs = grp["params"].map(lambda p: _number(p.get(param)))
            numeric = grp[xs.notna()]  # settings without a number for it are on no curve of it
            if numeric.empty:
                continue
            rest = numeric["params"].map(lambda p: json.dumps({k: p.get(k) for k in varying if k != param},
                                                              sort_keys=True))
            part = numeric.assign(x=xs[xs.notna()].astype(float), rest=rest)
            lines = {}
            for other, line in part.groupby("rest", sort=True):
                points = line.groupby("x")["value"].agg(["mean", "std", "count"]).reset_index()
                if len(points) >= MIN_POINTS:
                    lines[other] = points.rename(columns={"count": "n_runs"})
            if lines:
                curves.append((keys, param, _line_labels(lines)))
    return curves


def _line_labels(lines: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Label each line by the other parameters that differ between the lines of one plot."""
    others = {key: json.loads(key) for key in lines}
    differ = sorted({k for o in others.values() for k in o if len({json.dumps(v.get(k)) for v in others.values()}) > 1})
    return {", ".join(f"{k.split('.')[-1]}={others[key].get(k)}" for k in differ): points
            for key, points in lines.items()}


def plot_curves(df: pd.DataFrame, records: RecordSet, out_dir: Path, name: str) -> list[Path]:
    """Write ``<name>-curve-...png`` per parameter curve and ``<name>-convergence-...png`` (the training curves of
    ``records``, the set ``df`` was built from); returns the paths."""
    plt = pyplot()
    paths = []
    for (dataset, descriptor, evaluator, metric, aggregator), param, lines in parameter_curves(df):
        fig, ax = plt.subplots(figsize=(6, 4))
        xs = pd.concat([points["x"] for points in lines.values()])
        for label, points in lines.items():
            ax.errorbar(points["x"], points["mean"], yerr=points["std"].fillna(0), fmt="o-", capsize=3,
                        label=label or None)
        if (xs > 0).all() and xs.max() / xs.min() >= 20:
            ax.set_xscale("log")
        if any(lines):
            ax.legend(fontsize="small")
        ax.set_xlabel(param)
        ax.set_ylabel(f"{metric} (mean ± std over seeds)")
        ax.set_title(f"{aggregator} on {dataset} ({descriptor}, {evaluator})")
        ax.grid(alpha=0.3)
        paths.append(save_png(fig, out_dir / f"{slug(name, dataset, label_slug(descriptor), aggregator, param, 'curve')}.png"))
    paths += _convergence(df, records, out_dir, name, plt)
    return paths


def _convergence(df: pd.DataFrame, records: RecordSet, out_dir: Path, name: str, plt) -> list[Path]:
    if df.empty:
        return []
    paths = []
    runs = labelled(df.drop_duplicates("path"))  # one plot per setting, named as in the tables
    for (dataset, descriptor, aggregator), grp in runs.groupby(["dataset", "descriptor", "aggregator"], sort=True):
        lines = []
        for path, seed in zip(grp["path"], grp["seed"]):
            curve = (records.record(path).get("fit_info") or {}).get("training_curve")
            if isinstance(curve, list) and len(curve) > 1:
                lines.append((seed, np.asarray(curve, dtype=float)))
        if not lines:
            continue
        fig, ax = plt.subplots(figsize=(6, 4))
        for seed, curve in lines:
            ax.plot(np.arange(1, curve.size + 1), curve, alpha=0.7, label=f"seed {seed}")
        ax.set_xlabel("iteration")
        ax.set_ylabel("objective (training_curve)")
        ax.set_title(f"{aggregator} convergence on {dataset} ({descriptor})")
        ax.legend(fontsize="small")
        ax.grid(alpha=0.3)
        # named by task and setting digest, never by the settings themselves (label_slug): short and stable
        paths.append(save_png(fig, out_dir / f"{slug(name, dataset, label_slug(descriptor), label_slug(aggregator), 'convergence')}.png"))
    return paths
