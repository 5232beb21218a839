"""The critical-difference diagram of Demšar (2006, Fig. 1): mean ranks on one axis, the Nemenyi CD beside it.

Each method hangs from its mean rank (1 = best, on the left); the better half is labelled on the left, the
rest on the right. A thick bar joins every maximal run of methods whose mean ranks span less than the
critical difference: methods under one bar are not significantly different at the CD's level (Nemenyi),
which does not make them equal. The caption states Friedman's result, since Demšar makes the post-hoc
comparison only after Friedman's test rejects.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from .plot import pyplot, save_png


def cliques(mean_ranks: Mapping[str, float], cd: float) -> list[list[str]]:
    """Maximal runs of consecutive methods (by mean rank) whose mean ranks differ by less than ``cd``; runs of
    one method are left out (a bar over one method says nothing)."""
    order = sorted(mean_ranks, key=lambda m: (mean_ranks[m], m))
    runs = []
    for i, first in enumerate(order):
        j = i
        while j + 1 < len(order) and mean_ranks[order[j + 1]] - mean_ranks[first] < cd:
            j += 1
        run = order[i:j + 1]
        if len(run) > 1 and not any(set(run) <= set(r) for r in runs):
            runs.append(run)
    return runs


def plot_cd(mean_ranks: Mapping[str, float], cd: float, path: Path | str, caption: str = "") -> Path:
    """Draw the diagram of ``mean_ranks`` (method -> mean rank over the same tasks) with critical difference
    ``cd`` into the PNG ``path``; returns ``path``."""
    plt = pyplot()
    order = sorted(mean_ranks, key=lambda m: (mean_ranks[m], m))
    k = len(order)
    lo, hi = 1, max(k, 2)
    left, right = order[:(k + 1) // 2], order[(k + 1) // 2:]
    groups = cliques(mean_ranks, cd)
    rows = max(len(left), len(right))
    height = 1.4 + 0.28 * rows + 0.12 * len(groups)
    fig, ax = plt.subplots(figsize=(9.0, height))
    ax.set_xlim(lo - 0.5 - 0.35 * (hi - lo), hi + 0.5 + 0.35 * (hi - lo))
    top = 0.0
    ax.set_ylim(-(0.5 + 0.3 * rows + 0.15 * len(groups)), 0.9)
    ax.axis("off")
    ax.plot([lo, hi], [top, top], color="black", lw=1)
    for r in range(lo, hi + 1):
        ax.plot([r, r], [top, top + 0.08], color="black", lw=1)
        ax.text(r, top + 0.12, str(r), ha="center", va="bottom", fontsize=9)
    # the critical difference, to scale, above the axis
    if cd <= hi - lo:
        ax.plot([lo, lo + cd], [top + 0.55, top + 0.55], color="black", lw=1.5)
        for x in (lo, lo + cd):
            ax.plot([x, x], [top + 0.5, top + 0.6], color="black", lw=1)
        ax.text(lo + cd / 2, top + 0.62, f"CD = {cd:.2f}", ha="center", va="bottom", fontsize=9)
    else:
        ax.text(lo, top + 0.55, f"CD = {cd:.2f} (wider than the whole axis)", ha="left", va="bottom", fontsize=9)
    bar_y = [-(0.12 + 0.15 * i) for i in range(len(groups))]
    for y, run in zip(bar_y, groups):
        ax.plot([mean_ranks[run[0]] - 0.05, mean_ranks[run[-1]] + 0.05], [y, y], color="black", lw=3,
                solid_capstyle="round")
    first_label = -(0.3 + 0.15 * len(groups))
    for i, m in enumerate(left):
        y = first_label - 0.3 * i
        x = mean_ranks[m]
        ax.plot([x, x, lo - 0.2], [top, y, y], color="0.35", lw=0.8)
        ax.text(lo - 0.25, y, f"{m} ({x:.2f})", ha="right", va="center", fontsize=8.5)
    for i, m in enumerate(reversed(right)):
        y = first_label - 0.3 * i
        x = mean_ranks[m]
        ax.plot([x, x, hi + 0.2], [top, y, y], color="0.35", lw=0.8)
        ax.text(hi + 0.25, y, f"({x:.2f}) {m}", ha="left", va="center", fontsize=8.5)
    if caption:
        ax.set_title(caption, fontsize=9, loc="left")
    return save_png(fig, Path(path))
