"""How one leaderboard cell reads: a score with its spread, a p-value, a cost.

Each rule here exists because a reader was misled by the previous one:

* one seed has no spread: ``83.00 ± 0.00`` claimed a certainty nobody measured, so a one-seed
  cell says the spread is unknown;
* the two-sided exact Wilcoxon test on ``n`` non-zero paired differences cannot give p below
  ``2 / 2**n`` (``1`` for one pair, ``0.5`` for two, ``0.0625`` for five): below
  :data:`MIN_PAIRS_FOR_P` pairs any p is uninformative whatever the gap, so it is not shown.
"""

from __future__ import annotations

import math

import pandas as pd

#: The fewest paired seeds at which the exact two-sided Wilcoxon test can reach p < 0.05 (2/2**6 = 0.03125).
MIN_PAIRS_FOR_P = 6
P_NOT_AVAILABLE = f"n/a (needs {MIN_PAIRS_FOR_P} paired seeds)"
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


def number_cell(value, fmt: str = "{:.2f}") -> str:
    """A number, or ``—`` where no record gave one."""
    return "—" if _missing(value) else fmt.format(value)
