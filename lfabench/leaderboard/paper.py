""""Paper vs lfabench": the ProLFA paper's own numbers beside what the records measured, with ranks in both.

The paper's numbers are data (``paper_results.csv`` beside this module, transcribed with its source
cited in its header). A paper row is shown when the records have its (dataset, descriptor, metric)
table with at least one of the paper's methods in it; a paper method the records lack there reads "not run".
A dataset built to stand in for the paper's (:data:`STAND_INS`: the copies board for the search table's Oxford5k
and Holidays) is set beside each of those tables, its rows labelled ``<paper dataset> (stand-in: <dataset>)``:
the images differ, so its ranks are compared with the paper's, never its values.
Ranks are among the methods present in both, so they compare like with like (1 = best; for
``aggregation_time_s``, the fastest; equal values share the mean of their ranks, lfabench's compared exactly
where the metric is a ratio of counts). Where several settings of a method were run, the one with the most
seeds (then the best mean) stands for it, a setting under the paper's annotation rule before one annotating whole
groups (``labelled_unit=class``, used only where the rule leaves the method undefined; its cell says so).

Times are shown side by side with the hardware that measured them, never subtracted: the paper timed
one core of another machine, so a difference would mix the methods with the machines.

Agreement of the two orders: Kendall's tau-b (ties counted as ties, not as reversals) with its
two-sided p, Holm-adjusted over the section's tables; a non-significant tau is stated as such, never
as "unrelated" or "the same".
"""

from __future__ import annotations

from importlib import resources

import numpy as np
import pandas as pd

from ..evaluation.multiple import holm, tied_ranks
from .cells import ALPHA, score_cell
from .labels import plugin_name
from .statistics import score_keys

#: paper metric -> the evaluator that reports it; time is compared with fit + transform seconds.
EVALUATOR_OF = {"accuracy": "knn", "mAP": "retrieval"}
TIME = "aggregation_time_s"
#: Where the paper's times were measured (its experimental section: "one 2.3 GHz Xeon core").
PAPER_HARDWARE = "one 2.3 GHz Xeon core"
CAVEAT = ("The paper used images at original resolution; the shared Scene-15 copy is 200x200, so lfabench's "
          "numbers on it compare methods with each other, not with the paper's absolute values.")
#: The paper's own test, kept here so lfabench's numbers and the paper's are compared by the paper's rule: the
#: paired two-sided exact Wilcoxon signed-rank test over the seeds (6 pairs: smallest p 0.03125), against the best
#: of lfabench's table, unadjusted as the paper reports it (the board's own tests are in its tables).
WILCOXON_COLUMN = "lfabench Wilcoxon p vs best (the paper's test)"
#: The label part of a retrieval setting that annotates whole classes (groups) instead of the paper's per-class rule.
WHOLE_GROUPS = "labelled_unit=class"
#: A board dataset -> the paper's datasets it stands in for (the paper's table of each is printed beside it).
STAND_INS = {"copy_detection": ("oxford5k", "holidays")}
STAND_IN_CAVEAT = ("The copies board stands in for the paper's search datasets: copies of Fifteen Scene photographs, "
                   "not Oxford5k nor Holidays photographs (docs/retrieval.md), so only the orders of the methods are "
                   "compared with the paper's, never the values.")
COLUMNS = ["dataset", "descriptor", "metric", "method", "paper", "paper rank", "lfabench", "seeds", "lfabench rank",
           WILCOXON_COLUMN, "paper hardware", "lfabench hardware"]


def _wilcoxon_cell(row) -> str:
    """The exact Wilcoxon p of a measured row against its table's best (``best`` for the best; ``—`` untested)."""
    if bool(row.get("best", False)):
        return "best"
    p = row.get("p_wilcoxon")
    return "—" if p is None or pd.isna(p) else f"{p:.4g}"


def paper_results() -> pd.DataFrame:
    """The paper's numbers: ``dataset, descriptor, method, metric, value``."""
    with resources.files(__package__).joinpath("paper_results.csv").open() as fh:
        return pd.read_csv(fh, comment="#")


def _descriptor_settings(summary: pd.DataFrame, dataset: str, descriptor: str) -> list[str]:
    """The records' descriptor labels on ``dataset`` whose descriptor is the paper's (``sift``,
    ``sift[long_side=300]``...): each descriptor setting gets its own block beside the paper's numbers."""
    on = summary[summary["dataset"] == dataset]["descriptor"].astype(str)
    return sorted({label for label in on if plugin_name(label) == descriptor})


def _measured(summary: pd.DataFrame, dataset: str, descriptor: str, metric: str) -> pd.DataFrame:
    """One row per method (base aggregator name) with ``value`` (score or seconds) and ``key`` (the exactly
    comparable score, or the seconds) for this table; ``descriptor`` is a descriptor label of the records."""
    score_metric = "accuracy" if metric == TIME else metric
    rows = summary[(summary["dataset"] == dataset) & (summary["descriptor"] == descriptor)
                   & (summary["metric"] == score_metric)]
    if metric != TIME:
        rows = rows[rows["evaluator"] == EVALUATOR_OF.get(metric, rows["evaluator"])]
    seconds = rows["fit_s_mean"].fillna(0) + rows["transform_s_mean"].fillna(0)
    rows = rows.assign(method=rows["aggregator"].map(plugin_name), value=seconds if metric == TIME else rows["mean"],
                       key=list(seconds) if metric == TIME else score_keys(rows))
    # the paper's annotation rule stands for a method; whole annotated groups only where the rule left it no row
    rows = rows.assign(whole_groups=rows["aggregator"].astype(str).str.contains(WHOLE_GROUPS, regex=False))
    rows = rows.sort_values(["whole_groups", "n_seeds", "mean"], ascending=[True, False, False])
    return rows.drop_duplicates("method").set_index("method")


def _measured_datasets(dataset: str) -> list[tuple[str, str]]:
    """``(records' dataset, label)`` for a paper dataset: itself, then every dataset standing in for it."""
    stand_ins = [d for d, targets in STAND_INS.items() if dataset in targets]
    return [(dataset, dataset)] + [(d, f"{dataset} (stand-in: {d})") for d in sorted(stand_ins)]


def _blocks(summary: pd.DataFrame, paper: pd.DataFrame):
    """``(dataset label, records' dataset, descriptor label, metric, paper rows, measured rows)`` for every paper
    table the records
    have (or have a stand-in for) with at least one of the paper's methods in it (a table of other methods only,
    e.g. a third-party plugin on Fifteen Scene, has nothing to compare with the paper)."""
    for (dataset, paper_descriptor, metric), rows in paper.groupby(["dataset", "descriptor", "metric"], sort=True):
        for measured_dataset, label in _measured_datasets(dataset):
            for descriptor in _descriptor_settings(summary, measured_dataset, paper_descriptor):
                measured = _measured(summary, measured_dataset, descriptor, metric)
                if measured.index.isin(rows["method"]).any():
                    yield label, measured_dataset, descriptor, metric, rows, measured


def _ranks(rows: pd.DataFrame, measured: pd.DataFrame, metric: str) -> tuple[pd.Series, pd.Series]:
    """The paper's and lfabench's ranks among the methods in both (1 = best; ties share the mean rank)."""
    both = [m for m in rows["method"] if m in measured.index]
    higher = metric != TIME
    paper = rows.set_index("method").loc[both, "value"]
    return (pd.Series(tied_ranks(list(paper), higher), index=both),
            pd.Series(tied_ranks(list(measured.loc[both, "key"]), higher), index=both))


def paper_table(summary: pd.DataFrame, paper: pd.DataFrame | None = None,
                not_applicable: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per paper number whose table the records have: the paper's value and rank, lfabench's, and for
    times the hardware of each (never their difference). ``not_applicable``
    (:func:`~lfabench.leaderboard.not_applicable.not_applicable_frame`): a paper method with no measured row
    whose runs there were not applicable reads "not applicable", not "not run"."""
    paper = paper_results() if paper is None else paper
    out = []
    for dataset, measured_dataset, descriptor, metric, rows, measured in _blocks(summary, paper):
        undefined = set()
        if not_applicable is not None and not not_applicable.empty:
            on = not_applicable[(not_applicable["dataset"] == measured_dataset)
                                & (not_applicable["descriptor"] == descriptor)]
            undefined = set(on["aggregator"].map(plugin_name))
        out += _rows(rows, measured, dataset, descriptor, metric, undefined)
    return pd.DataFrame(out, columns=COLUMNS)


def _rows(rows: pd.DataFrame, measured: pd.DataFrame, dataset: str, descriptor: str, metric: str,
          undefined: set[str] = frozenset()) -> list[list]:
    """The table's rows for one paper table (``rows``) beside one descriptor label's measurements; ``undefined``:
    the methods whose runs there were not applicable."""
    out = []
    paper_rank, ours_rank = _ranks(rows, measured, metric)
    for _, r in rows.sort_values("value", ascending=metric == TIME).iterrows():
        m = r["method"]
        hardware = [PAPER_HARDWARE, None] if metric == TIME else [None, None]
        if m in measured.index:
            got = measured.loc[m]
            shown = (f"{got['value']:.1f} s" if metric == TIME
                     else score_cell(got["mean"], got["std"], got["n_seeds"]))
            if bool(got.get("whole_groups", False)):
                shown += " (whole groups annotated)"
            if metric == TIME:
                hardware[1] = got.get("hardware") or "not recorded"
            out.append([dataset, descriptor, metric, m, r["value"], paper_rank[m], shown,
                        int(got["n_seeds"]), ours_rank[m], "—" if metric == TIME else _wilcoxon_cell(got), *hardware])
        else:
            missing = "not applicable" if m in undefined and metric != TIME else "not run"
            out.append([dataset, descriptor, metric, m, r["value"], None, missing, 0, None, "—", *hardware])
    return out


def agreement(summary: pd.DataFrame, paper: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per paper table the records cover: Kendall's tau-b between the paper's and lfabench's ranks of the methods
    in both, its two-sided p, the p Holm-adjusted over the tables, and the pairs tied in either order."""
    from scipy.stats import kendalltau

    paper = paper_results() if paper is None else paper
    out = []
    for dataset, _, descriptor, metric, rows, measured in _blocks(summary, paper):
        paper_rank, ours_rank = _ranks(rows, measured, metric)
        n = len(paper_rank)
        if n < 3:  # two methods give tau = +-1 with p = 1: nothing to say
            continue
        tau, p = kendalltau(paper_rank.to_numpy(), ours_rank.to_numpy(), variant="b")
        i, j = np.triu_indices(n, 1)
        ties = int((ours_rank.to_numpy()[i] == ours_rank.to_numpy()[j]).sum())
        out.append({"dataset": dataset, "descriptor": descriptor, "metric": metric, "methods": n, "tau_b": tau,
                    "p": p, "lfabench ties": ties})
    table = pd.DataFrame(out, columns=["dataset", "descriptor", "metric", "methods", "tau_b", "p", "lfabench ties"])
    table["p_holm"] = holm(table["p"].to_numpy(dtype=float)) if len(table) else []
    return table


def agreement_sentence(row) -> str:
    """What one tau-b says, in words that claim no more than it shows."""
    ties = (f"; {row['lfabench ties']} pair(s) tied in lfabench count as ties, not reversals"
            if row["lfabench ties"] else "")
    head = (f"{row['dataset']} / {row['descriptor']} / {row['metric']}, {row['methods']} methods in both: Kendall's "
            f"tau-b = {row['tau_b']:.3f}, two-sided p = {row['p']:.3g} (Holm over the section's tables: "
            f"{row['p_holm']:.3g}){ties}. ")
    if row["p_holm"] < ALPHA:
        direction = "agrees with" if row["tau_b"] > 0 else "reverses"
        return head + f"lfabench's order significantly {direction} the paper's at alpha={ALPHA:g} (Holm)."
    return head + (f"Not significant at alpha={ALPHA:g} (Holm): with {row['methods']} methods this shows neither "
                   "agreement with the paper's order nor its absence.")


def paper_markdown(summary: pd.DataFrame, not_applicable: pd.DataFrame | None = None) -> str:
    """The section for the Markdown board (empty string when no record matches a paper table)."""
    table = paper_table(summary, not_applicable=not_applicable)
    if table.empty:
        return ""
    shown = table.astype(object).where(table.notna(), "—")
    for col in ("paper rank", "lfabench rank"):
        shown[col] = [v if v == "—" else f"{float(v):g}" for v in shown[col]]
    align = ["left"] * 4 + ["right"] * 6 + ["left"] * 2
    parts = ["## Paper vs lfabench", "",
             "The ProLFA paper's numbers (`lfabench/leaderboard/paper_results.csv`, transcribed from "
             "the paper's tables) beside lfabench's; ranks among the methods present in both (time: fastest "
             "first; equal values share the mean of their ranks). Times (lfabench: fit + transform seconds) are "
             "shown beside the hardware that measured them and not subtracted: they come from different machines. "
             "The last score column applies the paper's own test to lfabench's runs: the paired two-sided exact "
             "Wilcoxon signed-rank test over the seeds against the best of lfabench's table, unadjusted as the paper "
             "reports it (with 6 seeds no p is below 0.03125; the board's tables above give the tests with power). "
             + (STAND_IN_CAVEAT if table["dataset"].str.contains("stand-in").any() else CAVEAT), "",
             shown.to_markdown(index=False, colalign=align, disable_numparse=True), ""]
    tau = agreement(summary)
    if not tau.empty:
        parts += ["Agreement of the orders:", ""] + [f"- {agreement_sentence(r)}" for _, r in tau.iterrows()] + [""]
    return "\n".join(parts)
