"""ann-benchmarks-style trade-off plots: score against cost, one point per method setting (a colour per
method), the Pareto front marked and named.

Two costs: aggregation time (fit + transform, seconds, mean over runs) and output dimension. A
method is on the Pareto front when no other method of the same table is at least as good on both
axes and better on one (higher score, lower cost).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .plot import pyplot, save_png, score_range, slug, task_slug

COSTS = {"time": ("aggregation time (s, fit + transform; log scale)", lambda t: t["fit_s_mean"].fillna(0)
                  + t["transform_s_mean"].fillna(0)),
         "dim": ("output dimension (log scale)", lambda t: t["output_dim"].astype(float))}


def pareto_front(cost, score) -> np.ndarray:
    """Boolean mask of the points no other point dominates (lower-or-equal cost and higher-or-equal score,
    one of them strictly)."""
    cost, score = np.asarray(cost, dtype=float), np.asarray(score, dtype=float)
    keep = np.ones(cost.size, dtype=bool)
    for i in range(cost.size):
        dominated = (cost <= cost[i]) & (score >= score[i]) & ((cost < cost[i]) | (score > score[i]))
        keep[i] = not dominated.any()
    return keep


def plot_tradeoffs(summary: pd.DataFrame, out_dir: Path, name: str) -> dict[str, list[Path]]:
    """Write ``<name>-<task>-<time|dim>.png`` (:func:`~lfabench.leaderboard.plot.task_slug`); returns
    ``{table title: paths}``. Points are named by their short labels (:mod:`lfabench.leaderboard.labels`)."""
    from .labels import short_labels
    from .tables import table_groups
    from .titles import task_heading

    plt = pyplot()
    plots: dict[str, list[Path]] = {}
    short = short_labels(summary["aggregator"]) if not summary.empty else {}
    for title, metric, tab in table_groups(summary):
        for cost_name, (xlabel, cost_of) in COSTS.items():
            cost = cost_of(tab)
            ok = cost.notna() & (cost > 0)
            if not ok.any():
                continue  # records without this cost (e.g. older ones without output_dim)
            t, x = tab[ok], cost[ok].to_numpy()
            y = t["mean"].to_numpy()
            front = pareto_front(x, y)
            fig, ax = plt.subplots(figsize=(7.5, 4.5))
            methods = t["aggregator"].map(lambda label: str(label).split("[", 1)[0]).to_numpy()
            for i, method in enumerate(sorted(set(methods))):  # one colour per method, its settings as points
                mine = methods == method
                ax.scatter(x[mine], y[mine], color=plt.get_cmap("tab10")(i % 10), zorder=2, label=method)
            ax.scatter(x[front], y[front], s=140, facecolors="none", edgecolors="#c44e52", linewidths=1.5,
                       zorder=3, label="Pareto front")
            order = np.argsort(x[front])
            ax.step(x[front][order], y[front][order], where="post", color="#c44e52", alpha=0.6)
            # name the front's points (and every point when few): labels of dominated crowds only hide data
            named = front | (len(x) <= 12)
            for xi, yi, lab in zip(x[named], y[named], t["aggregator"][named]):
                ax.annotate(short[lab], (xi, yi), textcoords="offset points", xytext=(4, 4), fontsize=7)
            ax.set_xscale("log")
            ax.set_ylim(*score_range(y, y))
            ax.set_xlabel(xlabel)
            ax.set_ylabel(f"{metric} (mean over seeds)")
            ax.set_title(f"{task_heading(tab, metric)} vs {cost_name}")
            ax.grid(alpha=0.3)
            ax.legend(fontsize="small", loc="center left", bbox_to_anchor=(1.01, 0.5))
            path = save_png(fig, out_dir / f"{slug(name, task_slug(tab, metric), cost_name)}.png")
            plots.setdefault(title, []).append(path)
    return plots
