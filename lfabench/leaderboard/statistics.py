"""A board's statistics: one summary row per setting of each table, from the records' one frame.

Per table (one task and one metric, :data:`TABLE_COLUMNS`): mean and spread over seeds, ranks (exact where
the metric is a percentage of a count), the costs, and the tests against the best and between every pair
(:mod:`lfabench.leaderboard.separation`); the statistics and their wording: ``docs/leaderboard-statistics.md``.
"""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

import pandas as pd

from ..evaluation.multiple import holm, tied_ranks
from ..evaluation.significance import exact_mean, significance_by_group
from ..recordset import GROUP_COLUMNS, dedupe_runs, distinct_text, labelled, shown_path
from .cells import ALPHA, MIN_PAIRS_FOR_P
from .directions import metric_sign
from .separation import UnitScores, letter_display, run_table_tests


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """Mean, std (ddof=1; NaN for one seed: unknown, not zero), distinct seeds and runs per cell, and costs.

    Every (setting, seed) counts once (:func:`dedupe_runs`): ``n_runs`` is the number of records
    read, ``conflicts`` the number of seeds whose repeated records disagree.

    Costs per cell: ``fit_s_mean``, ``transform_s_mean`` (seconds), ``peak_rss_mb_max`` (MiB, the
    largest over the runs) and ``output_dim``. Provenance: ``paths`` (the records, ``;``-separated),
    ``git_revisions`` and ``lfabench_versions`` (distinct values).

    ``best``: every setting whose mean equals the highest of its table (dataset, descriptor, evaluator, metric:
    :data:`TABLE_COLUMNS`). ``test``, ``diff``, ``diff_ci_low``, ``diff_ci_high``, ``p_vs_best``, ``n_pairs``,
    ``p_per_sample`` and ``letters``: the table's tests against its best and between every pair
    (:mod:`lfabench.leaderboard.separation`: the corrected resampled t-test for k-NN on seeded splits, the
    per-query randomization test and the paired t over seeds for retrieval, else the exact Wilcoxon), the
    difference row - best in the metric's units with its 95 % interval, McNemar's per-sample p (k-NN, conditional)
    and the letter display. ``p_holm``: ``p_vs_best`` Holm-adjusted over the tests of the table
    (:func:`lfabench.evaluation.multiple.holm`). ``p_wilcoxon``: the exact Wilcoxon p against the best over the
    shared seeds (NaN below :data:`~lfabench.leaderboard.cells.MIN_PAIRS_FOR_P` pairs), the paper's test.

    ``exact_mean``: the mean as an exact fraction where the evaluator declares the metric a percentage of a
    count (:func:`lfabench.recordset.exact_score`; None elsewhere); ``rank``: the row's rank in its table (1 = best),
    from the exact mean where there is one, equal means sharing the mean of their ranks (Demšar 2006).
    """
    if df.empty:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    df = labelled(dedupe_runs(df))  # one value per (setting, seed), wherever its records lie
    g = df.groupby(GROUP_COLUMNS + ["setting"], sort=True)
    out = g.agg(mean=("value", "mean"), std=("value", "std"), n_seeds=("seed", "nunique"),
                n_runs=("n_records", "sum"), conflicts=("conflict", "sum"), fit_s_mean=("fit_s", "mean"),
                fit_s_lower_bound=("fit_cache_untimed", "max"), transform_s_mean=("transform_s", "mean"),
                peak_rss_mb_max=("peak_rss_mb", "max"), output_dim=("output_dim", "max")).reset_index()
    out["exact_mean"] = g["exact"].agg(exact_mean).values
    out.loc[out["n_seeds"] < 2, "std"] = float("nan")  # one seed: the spread is unknown, not zero
    out["conflicts"] = out["conflicts"].astype(int)
    out["seeds"] = g["seed"].apply(lambda s: ",".join(map(str, sorted(set(s))))).values
    out["paths"] = g["path"].apply(  # relative to the working directory: a committed board names no machine
        lambda s: ";".join(sorted({shown_path(Path(q)) for v in s for q in v.split(";")}))).values
    out["git_revisions"] = g["git_revision"].apply(_distinct).values
    out["lfabench_versions"] = g["lfabench_version"].apply(_distinct).values
    out["hardware"] = g["hardware"].apply(distinct_text).values
    keys = ["dataset", "descriptor", "evaluator", "metric"]
    sig = significance_by_group(_signed(df), keys, method="setting", exact="exact")
    out = out.merge(sig[keys + ["setting", "best", "p_vs_best", "n_pairs"]].rename(columns={"p_vs_best": "p_wilcoxon"}),
                    on=keys + ["setting"], how="left")
    out.loc[out["n_pairs"].fillna(0) < MIN_PAIRS_FOR_P, "p_wilcoxon"] = float("nan")
    for col in ("rank", "p_vs_best", "p_holm", "diff", "diff_ci_low", "diff_ci_high", "p_per_sample"):
        out[col] = float("nan")
    out["test"], out["letters"] = "", ""
    units = UnitScores()
    for table_key, idx in out.groupby(TABLE_COLUMNS).groups.items():
        out.loc[idx, "rank"] = tied_ranks(score_keys(out.loc[idx]))
        _separate(out, idx, df, dict(zip(TABLE_COLUMNS, table_key)), units)
    out = out.sort_values(TABLE_COLUMNS + ["rank", "descriptor", "aggregator"], key=_metrics_in_number_order)
    return out[SUMMARY_COLUMNS].reset_index(drop=True)


def _signed(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with every score of a lower-is-better metric negated (:func:`~.directions.metric_sign`), so that the
    best of a table is its highest score, as :func:`~lfabench.evaluation.significance_by_group` takes it (two-sided
    p-values are unchanged by the sign); ``df`` itself when every metric is higher-is-better."""
    if df.empty:
        return df
    signs = _signs(df)
    if all(sign > 0 for sign in signs):
        return df
    return df.assign(value=[v * sign for v, sign in zip(df["value"], signs)],
                     exact=[None if x is None else x * sign for x, sign in zip(df["exact"], signs)])


def _separate(out: pd.DataFrame, idx, runs: pd.DataFrame, key: dict, units: UnitScores) -> None:
    """The table's tests (:mod:`lfabench.leaderboard.separation`) written into its summary rows ``idx``."""
    rows = out.loc[idx]
    best_rows = rows[rows["best"].fillna(False).astype(bool)]
    if best_rows.empty:
        return
    best = sorted(best_rows["setting"])[0]  # tied best: the first in setting order is the reference
    mask = pd.Series(True, index=runs.index)
    for col, value in key.items():
        mask &= runs[col] == value
    tests = run_table_tests(runs.loc[mask, ["setting", "seed", "value", "n_train", "n_test", "predictions"]],
                            best, key["metric"], units)
    out.loc[idx, "test"] = tests.test
    for i in idx:
        name = out.at[i, "setting"]
        if bool(out.at[i, "best"]):
            out.at[i, "diff"] = 0.0
            continue
        out.at[i, "diff"] = tests.diff.get(name, float("nan"))
        out.at[i, "diff_ci_low"], out.at[i, "diff_ci_high"] = tests.ci.get(name, (float("nan"), float("nan")))
        out.at[i, "p_vs_best"] = tests.p.get(name, float("nan"))
        out.at[i, "p_per_sample"] = tests.p_per_sample.get(name, float("nan"))
        out.at[i, "n_pairs"] = tests.n_pairs.get(name, out.at[i, "n_pairs"])
    out.loc[idx, "p_holm"] = holm(out.loc[idx, "p_vs_best"].to_numpy(dtype=float))
    order = out.loc[idx].sort_values(["rank", "aggregator"])["setting"].tolist()
    separated = {frozenset(pair) for pair, p in tests.pairwise_holm.items() if p < ALPHA}
    untested = [pair for pair, p in tests.pairwise_holm.items() if not p == p]
    if not untested and len(order) > 1:
        letters = letter_display(order, separated)
        out.loc[idx, "letters"] = [letters[out.at[i, "setting"]] for i in idx]


def metric_order(metric: str) -> tuple:
    """Sort key of a metric's name with its numbers compared as numbers: ``precision@5`` before ``precision@10``."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", metric) if part)


def _metrics_in_number_order(column: pd.Series) -> pd.Series:
    """``sort_values`` key: the ``metric`` column by :func:`metric_order`, every other column as it is."""
    if column.name != "metric":
        return column
    order = {m: i for i, m in enumerate(sorted(set(column), key=metric_order))}
    return column.map(order)


#: One table of the board (and the family of its Holm-adjusted tests): one task (dataset x descriptor x
#: evaluator) and one of its metrics, so SIFT and DAISY rows are ranked each on their own, as their p-values are.
TABLE_COLUMNS = ["dataset", "descriptor", "evaluator", "metric"]


def score_keys(rows: pd.DataFrame) -> list[Fraction]:
    """Each summary row's mean as an exactly comparable number, higher = better: ``exact_mean`` where known, else the
    float mean; negated for a metric its evaluator declares lower-is-better (:func:`~.directions.metric_sign`)."""
    keys = [e if isinstance(e, Fraction) else Fraction(float(m)) for e, m in zip(rows["exact_mean"], rows["mean"])]
    return [sign * key for sign, key in zip(_signs(rows), keys)] if "evaluator" in rows else keys


def _signs(rows: pd.DataFrame) -> list[int]:
    """Each row's :func:`~.directions.metric_sign` (``1`` higher-is-better, ``-1`` lower-is-better), from its
    ``evaluator`` and ``metric``."""
    return [metric_sign(e, m) for e, m in zip(rows["evaluator"], rows["metric"])]


SUMMARY_COLUMNS = GROUP_COLUMNS + ["setting", "rank", "mean", "exact_mean", "std", "n_seeds", "n_runs", "conflicts",
                                   "seeds", "fit_s_mean", "fit_s_lower_bound", "transform_s_mean", "peak_rss_mb_max",
                                   "output_dim", "best", "diff", "diff_ci_low", "diff_ci_high", "test", "p_vs_best",
                                   "p_holm", "n_pairs", "p_per_sample", "p_wilcoxon", "letters", "paths", "git_revisions",
                                   "lfabench_versions", "hardware"]


def _distinct(values: pd.Series) -> str:
    return ",".join(sorted({str(v) for v in values if v is not None and not pd.isna(v)}))


__all__ = ["SUMMARY_COLUMNS", "TABLE_COLUMNS", "metric_order", "score_keys", "summarize"]
