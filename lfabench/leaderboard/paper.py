""""Paper vs lfabench": the ProLFA paper's own numbers beside what the records measured, with ranks in both.

The paper's numbers are data (``paper_results.csv`` beside this module, transcribed with its source
cited in its header). A paper row is shown when the records have its (dataset, descriptor, metric)
table; a method the records lack there reads "not run". Ranks are among the methods present in both,
so they compare like with like (1 = best; for ``aggregation_time_s``, the fastest). Where several
settings of a method were run, the one with the most seeds (then the best mean) stands for it.
"""

from __future__ import annotations

from importlib import resources

import pandas as pd

from .cells import score_cell

#: paper metric -> the evaluator that reports it; time is compared with fit + transform seconds.
EVALUATOR_OF = {"accuracy": "knn", "mAP": "retrieval"}
TIME = "aggregation_time_s"
CAVEAT = ("The paper used images at original resolution; the shared Scene-15 copy is 200x200, so lfabench's "
          "numbers on it compare methods with each other, not with the paper's absolute values.")


def paper_results() -> pd.DataFrame:
    """The paper's numbers: ``dataset, descriptor, method, metric, value``."""
    with resources.files(__package__).joinpath("paper_results.csv").open() as fh:
        return pd.read_csv(fh, comment="#")


def _base(label: str) -> str:
    return str(label).split("[", 1)[0]


def _descriptor_settings(summary: pd.DataFrame, dataset: str, descriptor: str) -> list[str]:
    """The records' descriptor labels on ``dataset`` whose descriptor is the paper's (``sift``,
    ``sift[long_side=300]``...): each descriptor setting gets its own block beside the paper's numbers."""
    on = summary[summary["dataset"] == dataset]["descriptor"].astype(str)
    return sorted({label for label in on if _base(label) == descriptor})


def _measured(summary: pd.DataFrame, dataset: str, descriptor: str, metric: str) -> pd.DataFrame:
    """One row per method (base aggregator name) with ``value`` (score or seconds) for this table;
    ``descriptor`` is a descriptor label of the records."""
    score_metric = "accuracy" if metric == TIME else metric
    rows = summary[(summary["dataset"] == dataset) & (summary["descriptor"] == descriptor)
                   & (summary["metric"] == score_metric)]
    if metric != TIME:
        rows = rows[rows["evaluator"] == EVALUATOR_OF.get(metric, rows["evaluator"])]
    rows = rows.assign(method=rows["aggregator"].map(_base),
                       value=(rows["fit_s_mean"].fillna(0) + rows["transform_s_mean"].fillna(0))
                       if metric == TIME else rows["mean"])
    rows = rows.sort_values(["n_seeds", "mean"], ascending=[False, False]).drop_duplicates("method")
    return rows.set_index("method")


def paper_table(summary: pd.DataFrame, paper: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per paper number whose table the records have: the paper's value and rank, lfabench's, and
    the difference (lfabench - paper)."""
    paper = paper_results() if paper is None else paper
    columns = ["dataset", "descriptor", "metric", "method", "paper", "paper rank", "lfabench", "seeds",
               "lfabench rank", "lfabench - paper"]
    out = []
    for (dataset, paper_descriptor, metric), rows in paper.groupby(["dataset", "descriptor", "metric"], sort=True):
        for descriptor in _descriptor_settings(summary, dataset, paper_descriptor):
            out += _rows(rows, _measured(summary, dataset, descriptor, metric), dataset, descriptor, metric)
    table = pd.DataFrame(out, columns=columns)
    return table.astype({"paper rank": "Int64", "lfabench rank": "Int64"})  # ranks stay integers beside "not run"


def _rows(rows: pd.DataFrame, measured: pd.DataFrame, dataset: str, descriptor: str, metric: str) -> list[list]:
    """The table's rows for one paper table (``rows``) beside one descriptor label's measurements."""
    if measured.empty:
        return []
    out = []
    both = rows[rows["method"].isin(measured.index)]
    ascending = metric == TIME
    paper_rank = both.set_index("method")["value"].rank(ascending=ascending, method="min")
    ours_rank = measured.loc[both["method"], "value"].rank(ascending=ascending, method="min")
    for _, r in rows.sort_values("value", ascending=ascending).iterrows():
        m = r["method"]
        if m in measured.index:
            got = measured.loc[m]
            shown = (f"{got['value']:.1f} s" if metric == TIME
                     else score_cell(got["mean"], got["std"], got["n_seeds"]))
            out.append([dataset, descriptor, metric, m, r["value"], int(paper_rank[m]), shown,
                        int(got["n_seeds"]), int(ours_rank[m]), round(float(got["value"]) - r["value"], 2)])
        else:
            out.append([dataset, descriptor, metric, m, r["value"], None, "not run", 0, None, None])
    return out


def paper_markdown(summary: pd.DataFrame) -> str:
    """The section for the Markdown board (empty string when no record matches a paper table)."""
    table = paper_table(summary)
    if table.empty:
        return ""
    shown = table.astype(object).where(table.notna(), "—")
    align = ["left"] * 4 + ["right"] * 6
    return "\n".join(["## Paper vs lfabench", "",
                      "The ProLFA paper's numbers (`lfabench/leaderboard/paper_results.csv`, transcribed from "
                      "`shared/docs/protocols.md`) beside lfabench's; ranks among the methods present in both "
                      "(time: fastest first). " + CAVEAT, "",
                      shown.to_markdown(index=False, colalign=align, disable_numparse=True), ""])
