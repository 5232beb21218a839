"""How one leaderboard cell reads: a score with its spread, a p-value, a cost.

Each rule here exists because a reader was misled by the previous one:

* one seed has no spread: ``83.00 ± 0.00`` claimed a certainty nobody measured, so a one-seed
  cell says the spread is unknown;
* the two-sided exact Wilcoxon test on ``n`` non-zero paired differences cannot give p below
  ``2 / 2**n`` (``1`` for one pair, ``0.5`` for two, ``0.0625`` for five): below
  :data:`MIN_PAIRS_FOR_P` pairs any p is uninformative whatever the gap, so it is not shown;
* a table holds many tests against its best rows: a raw p below 0.05 among them is expected by
  chance, so the Holm-adjusted p stands beside it and decides what the text says (:func:`verdict`);
* a test that does not reject says nothing about equality: "not separated" (from the best, at the
  table's level after Holm), never "level with" or "no different"; the cell is one word, the level and the
  correction are stated once under the table;
* a p alone does not say how far apart two methods are: the difference from the best stands beside it with
  its 95 % interval, in the metric's units (:func:`diff_cell`);
* equal scores share a rank (``7.5`` for two at 7-8), as in Demšar (2006).
"""

from __future__ import annotations

import math

import pandas as pd

#: The fewest paired seeds at which the exact two-sided Wilcoxon test can reach p < 0.05 (2/2**6 = 0.03125).
MIN_PAIRS_FOR_P = 6
P_NOT_AVAILABLE = "n/a (too few paired seeds)"
ONE_SEED = "(1 seed: spread unknown)"


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or pd.isna(value)


def score_cell(mean: float, std: float, n_seeds: int) -> str:
    """``mean ± std`` over seeds; with one seed the spread is unknown, and says so."""
    if int(n_seeds) < 2 or _missing(std):
        return f"{mean:.2f} {ONE_SEED}"
    return f"{mean:.2f} ± {std:.2f}"


def p_cell(p: float, n_pairs, best) -> str:
    """``best`` for the best setting; the p-value and its pairs; ``n/a (...)`` below the useful number of pairs."""
    if not _missing(best) and bool(best):
        return "best"
    if _missing(n_pairs) or int(n_pairs) == 0:
        return "— (no shared seeds)"
    if int(n_pairs) < MIN_PAIRS_FOR_P or _missing(p):
        return P_NOT_AVAILABLE
    return f"{p:.4g} ({int(n_pairs)})"


#: The level every generated statement about significance uses.
ALPHA = 0.05


def holm_cell(p_holm: float, best) -> str:
    """The Holm-adjusted p of a row (``—`` for a best row and where no p is shown)."""
    if (not _missing(best) and bool(best)) or _missing(p_holm):
        return "—"
    return f"{p_holm:.4g}"


#: The "vs best" words: a separation only where the Holm-adjusted p is below :data:`ALPHA`, never equality.
BELOW, NOT_SEPARATED = "below", "not separated"


def verdict(p_holm: float, n_pairs, best) -> str:
    """What the test against the best says, in one word that claims no more than it shows: ``below`` where the
    Holm-adjusted p is below :data:`ALPHA`, ``not separated`` otherwise (the absence of evidence)."""
    if not _missing(best) and bool(best):
        return "best"
    if _missing(p_holm) or _missing(n_pairs):
        return "not tested"
    return BELOW if p_holm < ALPHA else NOT_SEPARATED


def diff_cell(diff: float, low: float, high: float, best) -> str:
    """The mean difference from the best (row - best, in the metric's units) with its 95 % interval where known:
    ``-9.57 [-12.61, -6.53]``; ``—`` for a best row and where nothing is paired."""
    if (not _missing(best) and bool(best)) or _missing(diff):
        return "—"
    if _missing(low) or _missing(high):
        return f"{diff:+.2f}"
    return f"{diff:+.2f} [{low:+.2f}, {high:+.2f}]"


def plain_p_cell(p: float) -> str:
    """A p-value, or ``—`` where none was computed."""
    if _missing(p):
        return "—"
    return "< 1e-300" if p == 0.0 else f"{p:.2g}"  # a binomial tail below the smallest double


def rank_cell(rank) -> str:
    """A rank; a tie shows the mean of the ranks it spans (``7.5``)."""
    return "—" if _missing(rank) else f"{float(rank):g}"


def number_cell(value, fmt: str = "{:.2f}") -> str:
    """A number, or ``—`` where no record gave one."""
    return "—" if _missing(value) else fmt.format(value)
