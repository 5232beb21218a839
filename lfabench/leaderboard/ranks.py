"""The overall view across datasets: each method's mean rank over the tasks it was run on, and whether the ranks
differ more than chance would make them (Friedman's test, Nemenyi's critical difference; Demšar 2006).

A task is one (dataset, descriptor, evaluator) table scored by the evaluator's primary metric
(:attr:`lfabench.evaluate.Evaluator.primary_metric`): a protocol that reports several metrics (retrieval's
mAP and precision@k) counts once; its other metrics are shown in their tables, not ranked. Within a task,
settings are ranked by mean score (1 = best), compared exactly where the metric is a ratio of counts, equal
means sharing the mean of their ranks. A method is an aggregator label (fixed by its own setting), so
``bow`` on Scene-15 and on Oxford5k is one method. One evaluator per dataset is ranked (the dataset's own
protocol where its records have it): a dataset scored by two protocols counts once. Mean ranks over different
numbers of tasks are not comparable, so the count is shown and methods run on more tasks come first.

Friedman's test and the critical difference need every method on every task: they use the methods run on
all tasks (re-ranked among themselves), and say which were left out.
"""

from __future__ import annotations

import pandas as pd

from ..evaluation.multiple import FriedmanResult, friedman_test, nemenyi_cd, nemenyi_q, tied_ranks
from ..registry import get_registry
from .cells import ALPHA
from .markdown import md_code, md_frame
from ..recordset import evaluator_declares
from .statistics import score_keys

TASK_COLUMNS = ["dataset", "descriptor", "evaluator"]


def primary_metric(evaluator: str, metrics) -> str | None:
    """The metric that ranks ``evaluator``'s tasks: the one it declares; for an evaluator not installed here (or
    declaring none) its only metric, and None when it has several (nothing is ranked rather than a guess)."""
    declared = evaluator_declares(str(evaluator))[0]
    metrics = sorted(set(metrics))
    if declared is not None:
        return declared if declared in metrics else None
    return metrics[0] if len(metrics) == 1 else None


def dataset_protocol_evaluator(dataset: str) -> str | None:
    """The evaluator of the dataset plugin's declared protocol (``DatasetProtocol.evaluator``); None when the plugin
    is not installed here or declares none."""
    try:
        protocol = get_registry().get_spec("dataset", str(dataset)).protocol
    except LookupError:
        return None
    return getattr(protocol, "evaluator", None)


def primary_evaluators(summary: pd.DataFrame) -> dict[str, str]:
    """``{dataset: evaluator}``: the one evaluator whose tables rank methods on each dataset, so that scoring one
    dataset with two protocols does not count it twice: the dataset's own protocol where its records have it, else
    the evaluator that scored the most methods there (then the first by name)."""
    out = {}
    for dataset, rows in summary.groupby("dataset", sort=True):
        counts = rows.groupby("evaluator")["aggregator"].nunique()
        own = dataset_protocol_evaluator(dataset)
        out[str(dataset)] = own if own in counts.index else sorted(counts.index, key=lambda e: (-counts[e], str(e)))[0]
    return out


def ranked_rows(summary: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The summary rows of the primary metric of each task, with ``task`` and ``task_rank``; also the evaluators
    whose metrics were not ranked (no primary metric known). Only each dataset's primary evaluator
    (:func:`primary_evaluators`) is ranked: a second protocol on the same data is shown, not counted again."""
    keep, unranked = [], []
    primary = primary_evaluators(summary) if not summary.empty else {}
    summary = summary[[primary.get(str(d)) == str(e) for d, e in zip(summary["dataset"], summary["evaluator"])]]
    for evaluator, rows in summary.groupby("evaluator", sort=True):
        metric = primary_metric(evaluator, rows["metric"])
        if metric is None:
            unranked.append(str(evaluator))
            continue
        keep.append(rows[rows["metric"] == metric])
    if not keep:
        return summary.iloc[:0].assign(task=pd.Series(dtype=str), task_rank=pd.Series(dtype=float)), unranked
    rows = pd.concat(keep)
    rows = rows.assign(task=rows[TASK_COLUMNS + ["metric"]].astype(str).agg(" / ".join, axis=1),
                       task_rank=float("nan"))
    for _, idx in rows.groupby(TASK_COLUMNS).groups.items():
        rows.loc[idx, "task_rank"] = tied_ranks(score_keys(rows.loc[idx]))
    return rows, unranked


def rank_table(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per method: ``method, mean_rank, n_tasks`` and the rank in every task (NaN where not run)."""
    if summary.empty:
        return pd.DataFrame(columns=["method", "mean_rank", "n_tasks"])
    rows, _ = ranked_rows(summary)
    if rows.empty:
        return pd.DataFrame(columns=["method", "mean_rank", "n_tasks"])
    # labels are unique within a task (lfabench.recordset.labelled), so each cell holds one rank
    wide = rows.pivot_table(index="aggregator", columns="task", values="task_rank", aggfunc="first")
    out = pd.DataFrame({"method": wide.index, "mean_rank": wide.mean(axis=1).values,
                        "n_tasks": wide.notna().sum(axis=1).values})
    out = pd.concat([out.reset_index(drop=True), wide.reset_index(drop=True)], axis=1)
    return out.sort_values(["n_tasks", "mean_rank", "method"], ascending=[False, True, True]).reset_index(drop=True)


def complete_block(summary: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """``(ranks, left_out)``: a (tasks x methods) matrix of ranks among the methods run on every task (each
    task re-ranked among them, ties averaged), and the methods left out for missing a task."""
    rows, _ = ranked_rows(summary)
    if rows.empty:
        return pd.DataFrame(), []
    tasks = sorted(rows["task"].unique())
    counts = rows.groupby("aggregator")["task"].nunique()
    methods = sorted(counts.index[counts == len(tasks)])
    left_out = sorted(counts.index[counts < len(tasks)])
    matrix = pd.DataFrame(index=tasks, columns=methods, dtype=float)
    for task, grp in rows[rows["aggregator"].isin(methods)].groupby("task"):
        matrix.loc[task, list(grp["aggregator"])] = tied_ranks(score_keys(grp))
    return matrix, left_out


def friedman(summary: pd.DataFrame) -> tuple[FriedmanResult, float, pd.DataFrame, list[str]] | None:
    """Friedman's test and Nemenyi's CD at :data:`~lfabench.leaderboard.cells.ALPHA` over the complete block
    (:func:`complete_block`): ``(result, cd, ranks, left_out)``; None with fewer than 2 tasks or 2 methods."""
    matrix, left_out = complete_block(summary)
    if matrix.shape[0] < 2 or matrix.shape[1] < 2:
        return None
    result = friedman_test(matrix.to_numpy())
    return result, nemenyi_cd(matrix.shape[1], matrix.shape[0], ALPHA), matrix, left_out


def cd_plot(summary: pd.DataFrame, path) -> "Path | None":
    """Draw the critical-difference diagram of :func:`friedman` into ``path``; None (nothing written) without a
    test."""
    from .cd_diagram import plot_cd

    found = friedman(summary)
    if found is None:
        return None
    r, cd, matrix, _ = found
    from .labels import short_labels

    short = short_labels(summary["aggregator"])  # the page's labels; its legend gives the settings
    verdict = "rejects" if r.p_f < ALPHA else "does not reject"
    caption = (f"Mean rank over N = {r.n_tasks} tasks, k = {r.n_methods} methods; Friedman (Iman-Davenport) "
               f"p = {r.p_f:.3g}: {verdict} at alpha={ALPHA:g}.\nBars: not significantly different at "
               f"alpha={ALPHA:g} (Nemenyi, CD = {cd:.2f}).")
    return plot_cd(dict(zip((short.get(m, m) for m in matrix.columns), r.mean_ranks)), cd, path, caption)


def friedman_text(summary: pd.DataFrame, diagram: str | None = None) -> str:
    """The generated paragraph on Friedman's test and the critical difference (Markdown); empty without a test."""
    found = friedman(summary)
    if found is None:
        return ""
    r, cd, matrix, left_out = found
    n, k = r.n_tasks, r.n_methods
    rejects = r.p_f < ALPHA
    text = [f"Friedman's test (Demšar 2006) over the {n} tasks and the {k} methods run on all of them (ranked "
            "among themselves, so their mean ranks here can differ from the table's): "
            f"chi2_F = {r.chi2:.3f} ({k - 1} df, p = {r.p_chi2:.3g}); Iman-Davenport F_F = {r.f:.3f} "
            f"({k - 1} and {(k - 1) * (n - 1)} df, p = {r.p_f:.3g}). "
            + (f"At alpha={ALPHA:g} the methods' ranks differ more than chance would make them."
               if rejects else
               f"At alpha={ALPHA:g} this does not show that the methods' ranks differ; it does not show that they "
               "are equal either.")]
    text.append(f"Nemenyi's critical difference: CD = {cd:.3f} (q_{ALPHA:g} = {nemenyi_q(k, ALPHA):.3f}, k = {k}, "
                f"N = {n}): two methods whose mean ranks over these tasks differ by less than CD are not "
                f"significantly different at alpha={ALPHA:g} (Nemenyi)"
                + ("" if rejects else "; Demšar makes this post-hoc comparison only after Friedman's test rejects, "
                   "so it is shown for scale") + ".")
    if n <= 10 or k <= 5:
        text.append(f"With N = {n} tasks and k = {k} methods the chi-square approximation is rough (Demšar: "
                    "N > 10 and k > 5); F_F is the less conservative of the two.")
    if left_out:
        text.append("Left out for missing a task: " + ", ".join(md_code(m) for m in left_out) + ".")
    if diagram:
        text.append(f"Critical-difference diagram: `{diagram}`.")
    return " ".join(text)


def rank_markdown(summary: pd.DataFrame, diagram: str | None = None) -> str:
    """The overall view as a Markdown section (empty string without records)."""
    table = rank_table(summary)
    if table.empty:
        return ""
    from .labels import short_labels

    _, unranked = ranked_rows(summary)
    shown = table.copy()
    short = short_labels(summary["aggregator"])  # the page's labels; its legend gives the settings
    shown["method"] = [short.get(m, m) for m in shown["method"]]
    shown["mean_rank"] = [f"{v:.2f}" for v in shown["mean_rank"]]
    for col in shown.columns[3:]:
        shown[col] = ["—" if pd.isna(v) else f"{v:g}" for v in shown[col]]
    align = ["left"] + ["right"] * (len(shown.columns) - 1)
    intro = ("Rank of each method within every (dataset / descriptor / evaluator) table by the evaluator's primary "
             "metric (1 = best mean; equal means share the mean of their ranks; the other metrics are shown in "
             "their tables, not ranked), averaged over the tasks it was run on; methods on more tasks first.")
    if unranked:
        intro += (" Not ranked (the evaluator declares no primary metric and reports several): "
                  + ", ".join(md_code(e) for e in unranked) + ".")
    primary = primary_evaluators(summary)
    second = sorted({(str(d), str(e)) for d, e in zip(summary["dataset"], summary["evaluator"])
                     if primary.get(str(d)) != str(e)})
    if second:
        intro += (" One protocol per dataset is ranked (the dataset's own, else the one that scored the most methods): "
                  + "; ".join(f"{md_code(d)} by {md_code(primary[d])}, not {md_code(e)}" for d, e in second) + ".")
    parts = ["## Overall: mean rank across tasks", "", intro, "",
             md_frame(shown.rename(columns={"mean_rank": "mean rank", "n_tasks": "tasks"}))
             .to_markdown(index=False, colalign=align, disable_numparse=True), ""]
    test = friedman_text(summary, diagram)
    if test:
        parts += [test, ""]
    return "\n".join(parts)
