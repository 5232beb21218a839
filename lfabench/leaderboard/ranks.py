"""The overall view across datasets: each method's mean rank over the tasks it was run on (as MTEB does).

A task is one (dataset, descriptor, evaluator, metric) table; within it, settings are ranked by
mean score (1 = best, ties share the mean of their ranks). A method is an aggregator label (with
the parameters that tell its settings apart), so ``bow`` on Scene-15 and on Oxford5k is one method.
Mean ranks over different numbers of tasks are not comparable, so the count is shown and methods
run on more tasks come first.
"""

from __future__ import annotations

import pandas as pd

from .markdown import md_frame

TASK_COLUMNS = ["dataset", "descriptor", "evaluator", "metric"]


def rank_table(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per method: ``method, mean_rank, n_tasks`` and the rank in every task (NaN where not run)."""
    if summary.empty:
        return pd.DataFrame(columns=["method", "mean_rank", "n_tasks"])
    ranked = summary.assign(rank=summary.groupby(TASK_COLUMNS)["mean"].rank(ascending=False, method="average"),
                            task=summary[TASK_COLUMNS].astype(str).agg(" / ".join, axis=1))
    # one method can have several rows in a task only through different settings, which are different labels
    wide = ranked.pivot_table(index="aggregator", columns="task", values="rank", aggfunc="min")
    out = pd.DataFrame({"method": wide.index, "mean_rank": wide.mean(axis=1).values,
                        "n_tasks": wide.notna().sum(axis=1).values})
    out = pd.concat([out.reset_index(drop=True), wide.reset_index(drop=True)], axis=1)
    return out.sort_values(["n_tasks", "mean_rank", "method"], ascending=[False, True, True]).reset_index(drop=True)


def rank_markdown(summary: pd.DataFrame) -> str:
    """The overall view as a Markdown section (empty string without records)."""
    table = rank_table(summary)
    if table.empty:
        return ""
    shown = table.copy()
    shown["mean_rank"] = [f"{v:.2f}" for v in shown["mean_rank"]]
    for col in shown.columns[3:]:
        shown[col] = ["—" if pd.isna(v) else f"{v:g}" for v in shown[col]]
    align = ["left"] + ["right"] * (len(shown.columns) - 1)
    return "\n".join(["## Overall: mean rank across tasks", "",
                      "Rank of each method within every (dataset / descriptor / evaluator / metric) table "
                      "(1 = best mean), averaged over the tasks it was run on; methods on more tasks first.", "",
                      md_frame(shown.rename(columns={"mean_rank": "mean rank", "n_tasks": "tasks"}))
                      .to_markdown(index=False, colalign=align, disable_numparse=True), ""])
