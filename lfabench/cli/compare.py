"""``lfabench compare``: mean ± std over seeds per method and paired p-values against the best.

Reads run records only (``result.json``). For every (dataset, descriptor,
evaluator, metric), each method (aggregator setting, labelled as in the
leaderboard) gets its mean ± sample std over seeds and the p-value of the board's
paired test against the best method (highest mean), pairing runs by seed over the
seeds both have: the corrected resampled t-test for k-NN on seeded splits, the
per-query randomization test for retrieval, else the exact Wilcoxon signed-rank test
(:mod:`lfabench.leaderboard.separation`). One (method, seed) is one value however many records it has: identical repeats count once,
repeats that disagree are averaged and counted in ``conflicts`` (:func:`lfabench.recordset.dedupe_runs`).
An invalid record (:func:`lfabench.record.validate_record`) refuses the comparison, naming the file and field.
"""

from __future__ import annotations

import sys
from pathlib import Path


def compare_table(run_paths) -> "pd.DataFrame":
    """One row per (dataset, descriptor, evaluator, metric, method): rank, mean, std, seeds, p_vs_best, n_pairs and
    ``p_holm``, the p Holm-adjusted over the tests of its (dataset, descriptor, evaluator, metric) section."""
    from ..evaluation.multiple import holm, tied_ranks
    from ..leaderboard.statistics import score_keys, summarize
    from ..recordset import load_records, records_frame

    df, _ = records_frame(load_records(run_paths))
    summary = summarize(df)
    keys = ["dataset", "descriptor", "evaluator", "metric"]
    cols = keys + ["aggregator", "rank", "mean", "std", "n_seeds", "seeds", "conflicts", "best", "diff", "diff_ci_low",
                   "diff_ci_high", "test", "p_vs_best", "p_holm", "n_pairs"]
    for _, idx in summary.groupby(keys).groups.items():  # within a section: ties share a rank (exact counts)
        summary.loc[idx, "rank"] = tied_ranks(score_keys(summary.loc[idx]))
        summary.loc[idx, "p_holm"] = holm(summary.loc[idx, "p_vs_best"].to_numpy(dtype=float))
    summary = summary.sort_values(keys + ["rank", "aggregator"])
    return summary[cols].rename(columns={"aggregator": "method"}).reset_index(drop=True)


def to_markdown(table) -> str:
    import pandas as pd

    from ..leaderboard.cells import holm_cell, p_cell, rank_cell, score_cell, verdict

    if table.empty:
        return "_No successful run records found._"
    parts = []
    for (dataset, descriptor, evaluator, metric), tab in table.groupby(
            ["dataset", "descriptor", "evaluator", "metric"], sort=True):
        parts += [f"## {dataset} — {descriptor} — {evaluator} — {metric}", ""]
        shown = pd.DataFrame({
            "rank": [rank_cell(r) for r in tab["rank"]],
            "method": tab["method"].values,
            metric: [score_cell(m, s, n) for m, s, n in zip(tab["mean"], tab["std"], tab["n_seeds"])],
            "seeds": tab["n_seeds"].values,
            "p vs best (pairs)": [p_cell(p, n, b) for b, p, n in zip(tab["best"], tab["p_vs_best"], tab["n_pairs"])],
            "Holm p": [holm_cell(p, b) for p, b in zip(tab["p_holm"], tab["best"])],
            "vs best": [verdict(p, n, b) for p, n, b in zip(tab["p_holm"], tab["n_pairs"], tab["best"])],
        })
        parts += [shown.to_markdown(index=False), ""]
    parts.append("rank: 1 = best, equal means sharing the mean of their ranks (ratios of counts compared exactly); "
                 "p: the paired test against the best method over shared seeds (k-NN on seeded splits: Nadeau and "
                 "Bengio's corrected resampled t-test; retrieval: the per-query randomization test; otherwise the "
                 "exact Wilcoxon signed-rank test, shown from 6 pairs on); Holm p: adjusted by Holm's method over "
                 "the tests of the section; \"not separated\" is the absence of evidence, not evidence of equality.")
    conflicted = table[table["conflicts"] > 0] if "conflicts" in table else table.iloc[:0]
    for _, row in conflicted.iterrows():
        parts.append(f"warning: {row['method']} on {row['dataset']}/{row['metric']}: repeated records of "
                     f"{int(row['conflicts'])} seed(s) disagree (averaged); see `lfabench leaderboard`.")
    return "\n".join(parts)


def _cmd_compare(args) -> int:
    from ..recordset import DEFAULT_RUN_ROOTS

    paths = args.run_dirs or [p for p in DEFAULT_RUN_ROOTS if Path(p).is_dir()]
    if not paths:
        print(f"lfabench compare: no run directories given and none of {', '.join(DEFAULT_RUN_ROOTS)} exists here",
              file=sys.stderr)
        return 2
    try:
        table = compare_table(paths)
    except (FileNotFoundError, ValueError) as exc:  # ValueError: invalid records, each named (never averaged in)
        print(f"lfabench compare: {exc}", file=sys.stderr)
        return 2
    if args.metric:
        table = table[table["metric"].isin(args.metric)]
    print(to_markdown(table))
    if args.csv:
        Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(args.csv, index=False)
        print(f"wrote {args.csv}")
    return 0


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("compare", help="mean ± std over seeds and paired p-values vs the best",
                              description="Compare methods from run records, one table per (dataset, descriptor, "
                                          "evaluator, metric): rank, mean ± std over seeds, the board's paired test "
                                          "against the best (chosen by protocol: docs/leaderboard-statistics.md) and "
                                          "its Holm adjustment. Markdown on stdout; --csv writes the numbers.")
    p.add_argument("run_dirs", nargs="*", help="run directories or result.json files (default: ./lfabench_runs "
                                               "and ./lfabench_multirun)")
    p.add_argument("--metric", action="append", help="only this metric (repeatable)")
    p.add_argument("--csv", help="also write the table to this CSV file")
    p.set_defaults(func=_cmd_compare)
