"""Rows a board shows as not applicable: settings whose every run ended because the method's criterion is undefined
for the protocol's annotation (:class:`lfabench.aggregate.UndefinedCriterionError`, raised before any descriptor
is extracted), with the reason the method gave. Such a row has no number, never a silent one: it is listed under
each table of its task (dataset, descriptor, evaluator), by its full label, with its seeds and reason, and its
records stay on the board (published and verified like any other)."""

from __future__ import annotations

import pandas as pd

from ..recordset import labelled
from ..recordset.find import shown_path
from .markdown import md_code, md_text

#: The sentence above a table's not-applicable rows (Markdown and HTML).
INTRO = ("Not applicable (no number: the method's criterion is undefined for the annotation this protocol gives it, so "
         "each run stopped before extraction; its records are on the board):")
COLUMNS = ["dataset", "descriptor", "aggregator", "evaluator", "setting", "seeds", "reason", "paths"]


def not_applicable_frame(failed: list[dict]) -> pd.DataFrame:
    """One row per not-applicable setting (:data:`COLUMNS`) from the failed records of
    :func:`~lfabench.recordset.records_frame` (those it gave a ``reason``), labelled as the board labels
    its rows; ``seeds`` comma-separated, ``reason`` the distinct messages joined by `` / ``, ``paths`` the records
    relative to the working directory (as the summary's: a committed board names no machine's folders)."""
    rows = [f for f in failed if "reason" in f]
    if not rows:
        return pd.DataFrame(columns=COLUMNS)
    df = labelled(pd.DataFrame(rows).assign(metric=""))
    out = []
    for key, group in df.groupby(["dataset", "descriptor", "aggregator", "evaluator", "setting"], sort=True):
        seeds = sorted({int(s) for s in group["seed"] if s is not None})
        reasons = list(dict.fromkeys(str(r) for r in group["reason"]))
        paths = ";".join(sorted(shown_path(p) for p in group["path"]))
        out.append([*key, ",".join(map(str, seeds)), " / ".join(reasons), paths])
    return pd.DataFrame(out, columns=COLUMNS)


def for_task(frame: pd.DataFrame, dataset, descriptor, evaluator) -> pd.DataFrame:
    """The not-applicable rows of one task (a board table's dataset, descriptor label and evaluator)."""
    if frame.empty:
        return frame
    return frame[(frame["dataset"] == dataset) & (frame["descriptor"] == descriptor)
                 & (frame["evaluator"] == evaluator)]


def not_applicable_markdown(rows: pd.DataFrame) -> str:
    """The lines under a table naming its not-applicable settings (empty string when there are none)."""
    if rows.empty:
        return ""
    items = [f"- {md_code(r['aggregator'])} (seeds {md_text(r['seeds'])}): {md_text(r['reason'])}"
             for _, r in rows.iterrows()]
    return "\n".join([INTRO, "", *items])
