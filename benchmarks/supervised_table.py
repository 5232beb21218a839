"""The Scene-15 SIFT-90 results table (Markdown) from the per-seed rows of ``supervised_scene15.py``.

One line per method: 1-NN accuracy mean ± std (ddof = 1) over the finished seeds and which seeds,
mean training time (``fit_s``, the plugin's ``fit`` on the training split), the paper's number
(``supervised_scene15.PAPER``), and for the six supervised methods their unsupervised starting
point's accuracy on the same seeds, the mean paired difference, and the paired two-sided exact Wilcoxon signed-rank p of method
vs start (:func:`lfabench.evaluation.paired_wilcoxon_p`), computed only with at least 6 paired
seeds ("n/a" below that: with 5 pairs the smallest possible p is 2/32 = 0.0625).

Usage::

    .venv/bin/python benchmarks/supervised_table.py [benchmarks/results/supervised_scene15_runs.csv]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from supervised_scene15 import PAPER, SUPERVISED

from lfabench.evaluation import paired_wilcoxon_p

ROOT = Path(__file__).resolve().parent.parent
UNSUPERVISED = ["bow", "vlad", "fv", "sc", "temb", "dm", "gamma_democratic"]
MIN_PAIRS = 6


def mean_std(a: pd.Series) -> str:
    if len(a) == 0:
        return "—"
    std = float(np.std(a, ddof=1)) if len(a) > 1 else float("nan")
    return f"{a.mean():.2f} ± {std:.2f}" if np.isfinite(std) else f"{a.mean():.2f}"


def seeds_of(a: pd.Series) -> str:
    return ",".join(str(int(s)) for s in sorted(a.index)) or "—"


def table(runs: pd.DataFrame) -> str:
    acc = {m: g.set_index("seed")["accuracy"] for m, g in runs.groupby("method")}
    fit = {m: g["fit_s"].mean() for m, g in runs.groupby("method")}
    header = ("| method | kind | seeds | 1-NN acc. % (mean ± std) | fit s (mean) | start acc. % (same seeds) "
              "| method − start (mean) | Wilcoxon p vs start | paper % |")
    lines = [header, "|---|---|---|---|---|---|---|---|---|"]
    for m in list(SUPERVISED) + ["prolfa"] + UNSUPERVISED:
        a = acc.get(m, pd.Series(dtype=float))
        paper = f"{PAPER[m]:.2f}" if m in PAPER else "—"
        fit_s = f"{fit[m]:.0f}" if m in fit and np.isfinite(fit[m]) else "—"
        start, diff, p = "", "", ""
        if m in SUPERVISED:
            b = acc.get(f"{m}_start", pd.Series(dtype=float))
            shared = a.index.intersection(b.index)
            start = mean_std(b[shared])
            diff = f"{(a[shared] - b[shared]).mean():+.2f}" if len(shared) else "—"
            p = (f"{paired_wilcoxon_p(a[shared].to_numpy(), b[shared].to_numpy()):.4f}"
                 if len(shared) >= MIN_PAIRS else f"n/a ({len(shared)} pairs)")
        kind = "supervised" if m in SUPERVISED else ("ProLFA" if m == "prolfa" else "unsupervised")
        lines.append(f"| {m} | {kind} | {seeds_of(a)} | {mean_std(a)} | {fit_s} | {start} | {diff} | {p} | {paper} |")
    return "\n".join(lines)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    path = Path(argv[0]) if argv else ROOT / "benchmarks" / "results" / "supervised_scene15_runs.csv"
    print(table(pd.read_csv(path)))


if __name__ == "__main__":
    main()
