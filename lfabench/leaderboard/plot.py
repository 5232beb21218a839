"""Leaderboard plots, one per table (dataset, descriptor, evaluator, metric): mean ± std over seeds and every
seed's score, methods by their short labels (:mod:`lfabench.leaderboard.labels`).

A dot plot, not bars: the axis spans the scores (a 90–97 spread stays visible instead of starting
at 0, which bars would need to be honest); each seed is a small grey point beside its mean, so the
per-seed spread is seen, not summarised. The figure grows with the longest label and the file is
cut to its content, so long labels squeeze nothing and no axis label is clipped.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pandas as pd

from ..storage import atomic_write


def pyplot():
    """matplotlib's pyplot on the file-only Agg backend (imported at the first plot, never at start-up)."""
    import matplotlib

    matplotlib.use("Agg")  # files only; never needs a display
    import matplotlib.pyplot as plt

    return plt


#: Longest stem a plot gets: with its suffix and the atomic writer's temporary prefix it stays under the
#: 255 bytes a file name may have.
MAX_SLUG = 150


def slug(*parts: str) -> str:
    """A file-name-safe stem; a longer one (a record's long metric or dataset name) is cut, with a hash
    of the whole so that two long names never share a file."""
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", "-".join(parts))
    if len(stem) <= MAX_SLUG:
        return stem
    return stem[:MAX_SLUG - 13] + "-" + hashlib.sha256(stem.encode()).hexdigest()[:12]


def label_slug(label: str) -> str:
    """A label's part of a file name, without its settings: the plugin name alone, or, for a label with
    parameters or a setting id (``sift[max_keypoints=90]``, ``bow{6461e290d7}``), the plugin name and a 6-hex
    digest of the whole label, so the name stays short, stable for one setting, and distinct between two."""
    label = str(label)
    base = re.split(r"[\[{]", label, maxsplit=1)[0]
    return base if base == label else f"{base}-{hashlib.sha256(label.encode()).hexdigest()[:6]}"


def task_slug(tab: pd.DataFrame, metric: str) -> str:
    """A table's part of its plots' file names: dataset, descriptor (:func:`label_slug`), evaluator and metric."""
    return "-".join([str(tab["dataset"].iloc[0]), label_slug(tab["descriptor"].iloc[0]),
                     str(tab["evaluator"].iloc[0]), str(metric)])


def _no_math(text: str) -> str:
    return re.sub(r"(?<!\\)\$", r"\\$", str(text))


def plain_text(fig) -> None:
    """Every text of ``fig`` drawn as written: a ``$`` (in a metric, dataset or method name a record holds)
    is escaped, never parsed as matplotlib mathtext, which would fail the whole board on ``$\\frac{$``.

    Titles, axis labels, legends, annotations and fixed tick labels (the method names) are escaped; tick
    labels that a formatter makes while drawing (the ``10^k`` of a log axis) keep their mathtext.
    """
    from matplotlib.text import Text
    from matplotlib.ticker import FixedFormatter

    ticks = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            formatter = axis.get_major_formatter()
            if isinstance(formatter, FixedFormatter):
                formatter.seq = [_no_math(s) for s in formatter.seq]
            ticks |= {id(t) for t in axis.get_ticklabels(which="both")}
    for text in fig.findobj(Text):
        if id(text) not in ticks and "$" in text.get_text():
            text.set_text(_no_math(text.get_text()))


def save_png(fig, path: Path) -> Path:
    """Write ``fig`` atomically (its texts as written: :func:`plain_text`), cut to its content (nothing
    clipped), and close it."""
    plain_text(fig)
    with atomic_write(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=110, bbox_inches="tight")
    pyplot().close(fig)
    return path


def score_range(lows, highs) -> tuple[float, float]:
    """An axis range around the data with a small margin (never forced to include 0)."""
    lo, hi = float(min(lows)), float(max(highs))
    pad = max((hi - lo) * 0.08, abs(hi) * 0.005, 0.5)
    return lo - pad, hi + pad


def plot_tables(summary: pd.DataFrame, out_dir: Path, name: str,
                per_seed: pd.DataFrame | None = None) -> dict[str, list[Path]]:
    """Write ``<name>-<task>-scores.png`` per table (:func:`task_slug`); returns ``{table title: [path]}``.

    ``per_seed``: the records frame with the leaderboard's labels (one row per run and metric, with
    ``setting``, ``seed``, ``value``); its scores are drawn as points beside each mean.
    """
    from .labels import short_labels
    from .tables import table_groups
    from .titles import task_heading

    plots: dict[str, list[Path]] = {}
    if summary.empty:
        return plots
    plt = pyplot()
    short = short_labels(summary["aggregator"])
    for title, metric, tab in table_groups(summary):
        dataset, descriptor, evaluator = tab["dataset"].iloc[0], tab["descriptor"].iloc[0], tab["evaluator"].iloc[0]
        tab = tab.iloc[::-1]  # best at the top
        labels = [f"{short[a]} (n={n})" for a, n in zip(tab["aggregator"], tab["n_seeds"])]
        longest = max(len(lab) for lab in labels)
        fig, ax = plt.subplots(figsize=(5 + 0.075 * longest, 0.4 * len(tab) + 1.3))
        ys = list(range(len(tab)))
        std = tab["std"].fillna(0.0)
        lows, highs = list(tab["mean"] - std), list(tab["mean"] + std)
        if per_seed is not None and not per_seed.empty:
            seeds = per_seed[(per_seed["dataset"] == dataset) & (per_seed["evaluator"] == evaluator)
                             & (per_seed["descriptor"] == descriptor) & (per_seed["metric"] == metric)]
            for y, setting in zip(ys, tab["setting"]):
                values = seeds.loc[seeds["setting"] == setting, "value"]
                ax.scatter(values, [y - 0.18] * len(values), s=12, color="#888888", zorder=2,
                           label="one seed" if y == 0 else None)
                lows += list(values)
                highs += list(values)
        ax.errorbar(tab["mean"], ys, xerr=std, fmt="o", color="#4c72b0", capsize=3, zorder=3,
                    label="mean ± std (no bar: one seed)")
        ax.set_yticks(ys, labels)
        ax.set_xlim(*score_range(lows, highs))
        ax.grid(axis="x", alpha=0.3)
        ax.set_xlabel(f"{metric} (mean ± std over seeds; grey: each seed)")
        ax.set_title(task_heading(tab, metric))
        ax.legend(loc="lower right", fontsize="small")
        path = save_png(fig, out_dir / f"{slug(name, task_slug(tab, metric), 'scores')}.png")
        plots.setdefault(title, []).append(path)
    return plots
