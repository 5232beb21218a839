"""Where a committed board's ranking agrees or disagrees with the paper's, pair by pair, with p-values.

Reads a board's per-seed CSV (``<name>-runs.csv``, written by ``lfabench leaderboard`` from the records)
and the paper's numbers (``lfabench/leaderboard/paper_results.csv``). For every paper table the board
covers (dataset, descriptor, metric) it prints:

* Kendall's tau-b between the paper's and lfabench's orders of the methods both have (ties, e.g. two
  methods with the same correct count, are ties, not reversals: lfabench's means are compared exactly
  from the CSV's ``exact`` column where the metric is a ratio of counts), with its two-sided p;
* for every pair of those methods, in the paper's order (``a`` above ``b`` in the paper): the paper's
  difference, lfabench's mean difference over the seeds both have, the paired two-sided exact Wilcoxon
  signed-rank p (:func:`lfabench.evaluation.paired_wilcoxon_p`; "n/a" below 6 pairs, where it cannot
  reach 0.05), that p Holm-adjusted over the table's pairs, and a verdict: ``same order`` (same sign),
  ``tie`` (exactly equal means), ``reversed`` (opposite sign, Holm p < 0.05) or ``reversed, n.s.``
  (opposite sign, not significant at 0.05 after Holm: not evidence either way).

A method with several settings is represented by the one with the most seeds (then the best mean), as
in the board's "Paper vs lfabench" section.

Usage::

    .venv/bin/python benchmarks/paper_ranking.py leaderboards/scene15/scene15-runs.csv [--markdown]
"""

from __future__ import annotations

import argparse
import itertools
from fractions import Fraction

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from lfabench.evaluation import holm, paired_wilcoxon_p, tied_ranks
from lfabench.leaderboard.paper import EVALUATOR_OF, _base, paper_results

MIN_PAIRS = 6


def _exact(cell, value) -> Fraction:
    """The CSV's exact fraction where it has one, else the float (as the fraction it exactly is)."""
    return Fraction(cell) if isinstance(cell, str) and cell else Fraction(float(value))


def per_method(runs: pd.DataFrame) -> pd.DataFrame:
    """One setting per base method (most seeds, then best mean): rows (method, seed, value, exact)."""
    runs = runs.assign(method=runs["aggregator"].map(_base))  # the board's label without its [settings]
    exact = runs["exact"] if "exact" in runs else pd.Series([None] * len(runs), index=runs.index)
    runs = runs.assign(exact=[_exact(e, v) for e, v in zip(exact, runs["value"])])
    stats = runs.groupby(["method", "setting"])["value"].agg(["count", "mean"]).reset_index()
    chosen = stats.sort_values(["count", "mean"], ascending=False).drop_duplicates("method")
    keep = runs.merge(chosen[["method", "setting"]], on=["method", "setting"])
    return keep.groupby(["method", "seed"], as_index=False).agg(
        value=("value", "mean"), exact=("exact", lambda e: sum(e, Fraction(0)) / len(e)))


def compare(runs: pd.DataFrame, paper: pd.DataFrame) -> tuple[list[dict], list[dict]]:
    """(one summary row per covered paper table, one row per method pair)."""
    tables, pairs = [], []
    for (dataset, descriptor, metric), rows in paper.groupby(["dataset", "descriptor", "metric"], sort=True):
        if metric not in EVALUATOR_OF:
            continue
        sub = runs[(runs["dataset"] == dataset) & (runs["descriptor"] == descriptor) & (runs["metric"] == metric)
                   & (runs["evaluator"] == EVALUATOR_OF[metric])]
        if sub.empty:
            continue
        scores = per_method(sub)
        means = scores.groupby("method")["exact"].agg(lambda e: sum(e, Fraction(0)) / len(e))
        both = rows[rows["method"].isin(means.index)].sort_values("value", ascending=False)
        if len(both) < 2:
            continue
        # ranks from the exact means: an exact tie stays a tie (tau-b counts it as neither order)
        ours = tied_ranks(list(means[both["method"]]))
        tau, tau_p = kendalltau(-both["value"].to_numpy(), ours, variant="b")
        table = f"{dataset} / {descriptor} / {metric}"
        tables.append({"table": table, "methods": len(both), "kendall_tau_b": tau, "tau_p": tau_p})
        paper_value = both.set_index("method")["value"]
        found = []
        for a, b in itertools.combinations(both["method"], 2):
            sa = scores[scores["method"] == a].set_index("seed")
            sb = scores[scores["method"] == b].set_index("seed")
            shared = sa.index.intersection(sb.index)
            diff = (sum(sa.loc[shared, "exact"] - sb.loc[shared, "exact"], Fraction(0)) / len(shared)
                    if len(shared) else None)
            p = (paired_wilcoxon_p(sa.loc[shared, "value"].to_numpy(), sb.loc[shared, "value"].to_numpy())
                 if len(shared) >= MIN_PAIRS else float("nan"))
            found.append((a, b, diff, len(shared), p))
        adjusted = holm([p for *_, p in found])
        for (a, b, diff, n, p), p_holm in zip(found, adjusted):
            if diff is None:
                verdict = "no shared seeds"
            elif diff > 0:
                verdict = "same order"
            elif diff == 0:
                verdict = "tie"
            else:
                verdict = "reversed" if np.isfinite(p_holm) and p_holm < 0.05 else "reversed, n.s."
            pairs.append({"table": table, "paper above": a, "paper below": b,
                          "paper diff": round(float(paper_value[a] - paper_value[b]), 2),
                          "lfabench diff": None if diff is None else round(float(diff), 2), "pairs": n,
                          "p": "n/a" if not np.isfinite(p) else f"{p:.4f}",
                          "p (Holm)": "n/a" if not np.isfinite(p_holm) else f"{p_holm:.4f}", "verdict": verdict})
    return tables, pairs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs_csv", help="a board's <name>-runs.csv")
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables")
    args = parser.parse_args(argv)
    tables, pairs = compare(pd.read_csv(args.runs_csv), paper_results())
    if not tables:
        print("the board covers no paper table with two or more of the paper's methods")
        return
    t, p = pd.DataFrame(tables), pd.DataFrame(pairs)
    counts = p.groupby(["table", "verdict"]).size().unstack(fill_value=0)
    if args.markdown:
        print(t.to_markdown(index=False, floatfmt=".3f"), "\n")
        print(counts.to_markdown(), "\n")
        print(p.to_markdown(index=False))
    else:
        print(t.to_string(index=False, float_format=lambda v: f"{v:.3f}"), "\n")
        print(counts.to_string(), "\n")
        print(p.to_string(index=False))


if __name__ == "__main__":
    main()
