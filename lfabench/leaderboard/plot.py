"""Leaderboard plots: one horizontal bar chart (mean ± std over seeds) per (dataset, evaluator, metric)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from ..storage import atomic_write


def plot_tables(summary: pd.DataFrame, out_dir: Path, name: str) -> list[Path]:
    """Write ``<name>-<dataset>-<evaluator>-<metric>.png`` for every table; returns the paths."""
    if summary.empty:
        return []
    import matplotlib

    matplotlib.use("Agg")  # files only; never needs a display
    import matplotlib.pyplot as plt

    paths = []
    for (dataset, evaluator, metric), tab in summary.groupby(["dataset", "evaluator", "metric"], sort=True):
        tab = tab.iloc[::-1]  # best at the top
        labels = [f"{a} ({d}, n={n})" for a, d, n in zip(tab["aggregator"], tab["descriptor"], tab["n_seeds"])]
        fig, ax = plt.subplots(figsize=(8, 0.45 * len(tab) + 1.2))
        ax.barh(labels, tab["mean"], xerr=tab["std"], color="#4c72b0", capsize=3)
        ax.set_xlabel(f"{metric} (mean ± std over seeds)")
        ax.set_title(f"{dataset} — {evaluator}")
        fig.tight_layout()
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{name}-{dataset}-{evaluator}-{metric}")
        path = out_dir / f"{slug}.png"
        with atomic_write(path, "wb") as fh:
            fig.savefig(fh, format="png", dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths
