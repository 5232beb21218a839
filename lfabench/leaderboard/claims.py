"""The paper's search claim, tested on a board: Semi-ProLFA against ProLFA and against each fully supervised method.

The ProLFA paper's search table (Oxford5k and Holidays mAP) reports Semi-ProLFA above every fully supervised
method, ProLFA included, and tests it with the exact Wilcoxon over six seeds. On a retrieval board this section
states what the board's own data say of the same claim: for each table (dataset, descriptor, retrieval metric
that ranks the protocol) and each Semi-ProLFA setting in it, every setting of a fully supervised aggregator
(``supervised`` and not ``semi_supervised``, :func:`lfabench.annotation.fully_supervised`) is compared with that
Semi-ProLFA setting on their shared seeds by the table's own test (:func:`~.separation.run_table_tests` with
Semi-ProLFA as the reference: for retrieval the per-query sign-flip test and the paired t over the seeds, the
larger p; the two-way bootstrap interval), Holm-adjusted over the comparisons of that Semi-ProLFA setting.

``diff`` is Semi-ProLFA minus the method, in the metric's units, so a positive difference is the paper's
direction; the verdict states a separation only where the Holm-adjusted p is below alpha, never equality.
"""

from __future__ import annotations

import math

import pandas as pd

from ..annotation import fully_supervised
from ..evaluation.multiple import holm
from ..registry import get_plugin
from .cells import ALPHA, diff_cell, holm_cell, number_cell
from .labels import plugin_name
from .markdown import md_frame
from .ranks import primary_metric
from .separation import UnitScores, run_table_tests

#: The method the claim is about and the protocol it is made on.
REFERENCE, EVALUATOR = "semi_prolfa", "retrieval"
COLUMNS = ["dataset", "descriptor", "metric", "reference", "method", "reference_mean", "method_mean", "n_pairs",
           "diff", "diff_ci_low", "diff_ci_high", "test", "p", "p_holm", "verdict"]
ABOVE, BELOW, NOT_SEPARATED = "Semi-ProLFA above", "Semi-ProLFA below", "not separated"


def _is_fully_supervised(name: str) -> bool:
    """Whether the installed aggregator ``name`` is fully supervised (an aggregator not installed here is not
    classified, so it is left out rather than guessed)."""
    try:
        return fully_supervised(get_plugin("aggregator", name))
    except (LookupError, KeyError, ValueError):
        return False


def _verdict(diff: float, p_holm: float) -> str:
    if diff != diff or p_holm != p_holm:
        return "not tested"
    if p_holm >= ALPHA:
        return NOT_SEPARATED
    return ABOVE if diff > 0 else BELOW


def claim_table(runs: pd.DataFrame, summary: pd.DataFrame, units: UnitScores | None = None) -> pd.DataFrame:
    """One row per (table, Semi-ProLFA setting, fully supervised setting) of a retrieval board (:data:`COLUMNS`).

    ``runs``: the labelled, deduplicated records frame (one row per setting, seed and metric; ``setting``,
    ``seed``, ``value``, ``predictions``); ``summary``: the board's summary (means, seeds). Empty when no table
    has both a Semi-ProLFA setting and a fully supervised one."""
    units = UnitScores() if units is None else units
    out = []
    on = summary[summary["evaluator"].map(lambda e: plugin_name(e) == EVALUATOR)]
    for (dataset, descriptor, evaluator), task in on.groupby(["dataset", "descriptor", "evaluator"], sort=True):
        metric = primary_metric(str(evaluator), task["metric"])
        rows = task[task["metric"] == metric]
        bases = rows["aggregator"].map(plugin_name)
        references = rows[bases == REFERENCE]
        others = rows[bases.map(lambda b: b != REFERENCE and _is_fully_supervised(b))]
        if references.empty or others.empty:
            continue
        mask = ((runs["dataset"] == dataset) & (runs["descriptor"] == descriptor) & (runs["evaluator"] == evaluator)
                & (runs["metric"] == metric))
        for _, ref in references.sort_values("aggregator").iterrows():
            wanted = [ref["setting"], *others["setting"]]
            table_runs = runs.loc[mask & runs["setting"].isin(wanted),
                                  ["setting", "seed", "value", "n_train", "n_test", "predictions"]]
            tests = run_table_tests(table_runs, ref["setting"], metric, units)
            block = []
            for _, other in others.sort_values("aggregator").iterrows():
                name = other["setting"]
                # run_table_tests signs its differences row - reference; the claim reads reference - row
                low, high = tests.ci.get(name, (math.nan, math.nan))
                block.append([dataset, descriptor, metric, ref["aggregator"], other["aggregator"], ref["mean"],
                              other["mean"], tests.n_pairs.get(name, 0), -tests.diff.get(name, math.nan), -high,
                              -low, tests.test, tests.p.get(name, math.nan)])
            adjusted = holm([r[-1] for r in block])
            out += [r + [p_holm, _verdict(r[8], p_holm)] for r, p_holm in zip(block, adjusted)]
    return pd.DataFrame(out, columns=COLUMNS)


def claim_markdown(table: pd.DataFrame, short: dict[str, str] | None = None) -> str:
    """The board's section on the claim (empty string when :func:`claim_table` found nothing to compare);
    ``short``: the board's short label of each aggregator label (its legend gives the full settings)."""
    if table.empty:
        return ""
    short = short or {}
    shown = pd.DataFrame({
        "descriptor": table["descriptor"], "metric": table["metric"],
        "Semi-ProLFA": [short.get(a, a) for a in table["reference"]],
        "method": [short.get(a, a) for a in table["method"]],
        "Semi-ProLFA score": [number_cell(m) for m in table["reference_mean"]],
        "method score": [number_cell(m) for m in table["method_mean"]],
        "pairs": table["n_pairs"].astype(int),
        "Semi-ProLFA − method [95 % CI]": [diff_cell(d, lo, hi, False) for d, lo, hi in
                                           zip(table["diff"], table["diff_ci_low"], table["diff_ci_high"])],
        "p": [holm_cell(p, False) for p in table["p"]], "Holm p": [holm_cell(p, False) for p in table["p_holm"]],
        "verdict": table["verdict"]})
    counts = table["verdict"].value_counts()
    said = ", ".join(f"{int(counts.get(v, 0))} {v}" for v in (ABOVE, BELOW, NOT_SEPARATED) if counts.get(v, 0))
    return "\n".join([
        "## The paper's search claim: Semi-ProLFA against the fully supervised methods", "",
        "The paper's search table reports Semi-ProLFA above ProLFA and above every fully supervised baseline. "
        "Each row compares one fully supervised setting of a table with its Semi-ProLFA setting on their shared "
        "seeds by the table's own test (per-query sign flip and paired t over the seeds, the larger p; two-way "
        "bootstrap 95 % interval), Holm over the rows of one Semi-ProLFA setting at "
        f"alpha={ALPHA:g}. The difference is Semi-ProLFA − method (positive: the paper's direction). "
        f"Of {len(table)} comparisons: {said}. A method whose criterion is undefined under the annotation is "
        "listed with the board's not-applicable rows, not here.", "",
        md_frame(shown).to_markdown(index=False, disable_numparse=True), ""])
