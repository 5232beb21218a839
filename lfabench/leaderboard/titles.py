"""What a board is about, in words: its title and each task's heading, from the plugins' own descriptions.

Nothing here is written per board: a dataset is named by the first phrase of its plugin's description
(``"Fifteen Scene Categories (Lazebnik 2006): 4,485 images, ..."`` -> ``Fifteen Scene Categories``), a
protocol by the first clause of its evaluator's description with parenthetical remarks dropped
(``"k-NN classification accuracy (%) on a seeded stratified 80/20 split, or ..."`` -> ``k-NN classification
accuracy on a seeded stratified 80/20 split``), and the seeds are counted in the records. A plugin this
environment lacks (records of a third-party plugin) is named by its plugin name.
"""

from __future__ import annotations

import functools
import re

import pandas as pd

from ..registry import get_registry


@functools.lru_cache(maxsize=None)
def _description(kind: str, name: str) -> str:
    try:
        return get_registry().get_spec(kind, name).description or ""
    except LookupError:
        return ""


def own_descriptor(dataset: str) -> str | None:
    """The descriptor the dataset's declared protocol composes by default (``PluginSpec.protocol.descriptor``,
    e.g. ``sift`` for Fifteen Scene); None for a dataset without one or a plugin this environment lacks."""
    try:
        protocol = getattr(get_registry().get_spec("dataset", str(dataset)), "protocol", None)
    except LookupError:
        return None
    return getattr(protocol, "descriptor", None)


def dataset_title(name: str) -> str:
    """The dataset's name in words: its plugin description up to the first ``(``, ``:`` or ``,``."""
    first = re.split(r" ?\(|:|,", _description("dataset", str(name)), maxsplit=1)[0].strip()
    return first or str(name)


def dataset_descriptions(datasets) -> dict[str, str]:
    """``{dataset: its plugin's whole description, without a closing full stop nor a leading "<dataset>: "}`` for
    each distinct dataset name, sorted; a plugin this environment lacks maps to ``""`` (the board then names it
    only)."""
    return {str(name): without_own_name(str(name), _description("dataset", str(name))).rstrip(". ")
            for name in sorted({str(d) for d in datasets})}


def evaluator_descriptions(evaluators) -> dict[str, str]:
    """``{evaluator: its plugin's whole description, without a closing full stop}`` for each distinct evaluator
    name, sorted: what a board's protocol measures and how (e.g. the retrieval evaluator's AP rule); a plugin this
    environment lacks maps to ``""``."""
    return {str(name): _description("evaluator", str(name)).rstrip(". ")
            for name in sorted({str(e) for e in evaluators})}


def without_own_name(name: str, description: str) -> str:
    """``description`` without a leading ``"<name>: "`` (a folder registered under a name of its own is described
    so, which keeps its name as its title), so that ``<name>: <description>`` does not say the name twice."""
    prefix = f"{name}: "
    return description[len(prefix):] if description.startswith(prefix) else description


def protocol_title(evaluator: str) -> str:
    """The evaluator's protocol in words: its description without parentheticals, up to its first comma."""
    text = re.sub(r"\s*\([^()]*\)", "", _description("evaluator", str(evaluator)))
    first = text.split(",", 1)[0].strip()
    return first or str(evaluator)


def seeds_phrase(seed_cells) -> str:
    """``6 seeds`` when every table has the same number of seeds, ``1-6 seeds`` otherwise (from ``seeds`` cells
    such as ``"0,1,2"``)."""
    counts = sorted({len([s for s in str(cell).split(",") if s != ""]) for cell in seed_cells})
    if not counts:
        return "no seeds"
    n = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
    return f"{n} seed" + ("" if counts == [1] else "s")


#: Datasets a multi-task title names one by one; more are counted.
TITLE_DATASETS = 3


def board_title(summary: pd.DataFrame) -> str:
    """One line: ``<dataset>: <protocol>, <n> seeds`` for a board of one dataset and one evaluator; otherwise the
    dataset in words (one) or the datasets' plugin names (up to :data:`TITLE_DATASETS`, else counted), the
    evaluators by name and the seeds (``Fifteen Scene Categories: knn, logreg; 6 seeds``); each task's protocol is
    then in its table's heading, each dataset in the descriptions below the title. ``lfabench leaderboard`` for a
    board without rows."""
    if summary.empty:
        return "lfabench leaderboard"
    pairs = summary.groupby(["dataset", "evaluator"], sort=True)
    if pairs.ngroups == 1:
        (dataset, evaluator), rows = next(iter(pairs))
        return f"{dataset_title(dataset)}: {protocol_title(evaluator)}, {seeds_phrase(rows['seeds'])}"
    datasets = sorted({str(d) for d in summary["dataset"]})
    named = (dataset_title(datasets[0]) if len(datasets) == 1 else ", ".join(datasets)
             if len(datasets) <= TITLE_DATASETS else f"{len(datasets)} datasets")
    evaluators = ", ".join(sorted({str(e) for e in summary["evaluator"]}))
    return f"{named}: {evaluators}; {seeds_phrase(summary['seeds'])}"


def task_heading(tab: pd.DataFrame, metric: str, with_dataset: bool = True) -> str:
    """One table's heading: ``<dataset> · <descriptor> · <evaluator> <metric>``; without the dataset where the
    page's title names the only one (``with_dataset=False``)."""
    dataset, descriptor, evaluator = (str(tab[c].iloc[0]) for c in ("dataset", "descriptor", "evaluator"))
    head = f"{descriptor} · {evaluator} {metric}"
    return f"{dataset_title(dataset)} · {head}" if with_dataset else head


def evaluator_settings(records: pd.DataFrame) -> dict[str, str]:
    """``{evaluator: "k=1, metric=euclidean, ..."}``: the evaluator parameters its records set (those that are
    one value across the board; ``several`` for one that varies), from the records frame's ``params``."""
    out = {}
    if records.empty:
        return out
    for evaluator, rows in records.groupby("evaluator", sort=True):
        values: dict[str, set] = {}
        for params in rows["params"]:
            for key, value in (params or {}).items():
                if key.startswith("evaluator."):
                    values.setdefault(key.removeprefix("evaluator."), set()).add(str(value))
        out[str(evaluator)] = ", ".join(f"{k}={next(iter(v)) if len(v) == 1 else 'several'}"
                                        for k, v in sorted(values.items()))
    return out
