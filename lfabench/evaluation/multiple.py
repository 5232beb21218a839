"""Many comparisons at once: Holm's adjustment, tie-aware ranks, Friedman's test and Nemenyi's critical difference.

* :func:`holm` — Holm's (1979) step-down adjustment of a family of p-values (family-wise error rate);
* :func:`tied_ranks` — ranks with ties sharing the mean of their ranks (Demšar 2006, Sec. 3.2.2), from any
  exactly comparable scores (e.g. :class:`fractions.Fraction`, so that two ratios of equal counts tie);
* :func:`friedman_test` — Friedman's chi-square and Iman & Davenport's F over a (tasks x methods) matrix
  of within-task ranks (Demšar 2006, Sec. 3.2.2), with the usual correction for ties;
* :func:`nemenyi_cd` — the critical difference of mean ranks of the Nemenyi post-hoc test
  (Demšar 2006, Sec. 3.2.2): ``CD = q_alpha sqrt(k (k + 1) / (6 N))``, ``q_alpha`` the studentized range
  quantile (infinite degrees of freedom) divided by ``sqrt(2)``.

Reference: J. Demšar, "Statistical Comparisons of Classifiers over Multiple Data Sets", JMLR 7 (2006) 1-30.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

__all__ = ["holm", "tied_ranks", "FriedmanResult", "friedman_test", "nemenyi_q", "nemenyi_cd"]


def holm(p_values) -> np.ndarray:
    """Holm-adjusted p-values, in the input's order.

    With the ``m`` finite p-values sorted ascending, ``p_(1) <= ... <= p_(m)``, the adjusted value is
    ``max_{j <= i} min(1, (m - j + 1) p_(j))``; rejecting where it is below alpha controls the
    family-wise error rate at alpha. NaN entries are not tests: they stay NaN and do not count in ``m``.
    """
    p = np.asarray(p_values, dtype=np.float64).reshape(-1)
    out = np.full(p.shape, np.nan)
    tested = np.flatnonzero(np.isfinite(p))
    if tested.size == 0:
        return out
    if (p[tested] < 0).any() or (p[tested] > 1).any():
        raise ValueError(f"p-values must lie in [0, 1], got {p[tested].min()}..{p[tested].max()}")
    order = tested[np.argsort(p[tested], kind="stable")]
    m = order.size
    stepped = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out[order] = np.maximum.accumulate(stepped)
    return out


def tied_ranks(scores: Sequence, higher_is_better: bool = True) -> np.ndarray:
    """Ranks ``1..n`` (1 = best), equal scores sharing the mean of the ranks they span (``7.5`` for a pair at 7-8).

    ``scores`` are compared exactly as given (``==`` and ``<``): pass :class:`fractions.Fraction` values to
    compare ratios of counts without float rounding. Returns float64 ranks in the input's order.
    """
    from scipy.stats import rankdata

    values = list(scores)
    distinct = sorted(set(values))
    code = {v: i for i, v in enumerate(distinct)}  # exact order -> integers, so rankdata sees exact ties
    codes = np.array([code[v] for v in values], dtype=np.int64)
    return rankdata(-codes if higher_is_better else codes, method="average").astype(np.float64)


@dataclass(frozen=True)
class FriedmanResult:
    """Friedman's test over ``n_tasks`` blocks and ``n_methods`` treatments.

    ``chi2``/``p_chi2``: Friedman's statistic, chi-square with ``k - 1`` degrees of freedom;
    ``f``/``p_f``: Iman & Davenport's ``F_F = (N - 1) chi2 / (N (k - 1) - chi2)``, F with ``(k - 1)``
    and ``(k - 1)(N - 1)`` degrees of freedom (Demšar recommends it: chi2 is conservative);
    ``mean_ranks``: each method's mean rank, in the input's column order.
    """

    chi2: float
    p_chi2: float
    f: float
    p_f: float
    n_tasks: int
    n_methods: int
    mean_ranks: np.ndarray


def friedman_test(ranks) -> FriedmanResult:
    """Friedman's test on ``ranks``, a ``(N tasks, k methods)`` matrix of within-task ranks (ties averaged).

    ``chi2 = (12 / (N k (k + 1)) sum_j S_j^2 - 3 N (k + 1)) / C`` with ``S_j`` the rank sum of method ``j``
    and ``C = 1 - sum (t^3 - t) / (N k (k^2 - 1))`` over every group of ``t`` tied ranks within a task
    (``C = 1`` without ties, where this is Demšar's eq. ``12N/(k(k+1)) [sum R_j^2 - k(k+1)^2/4]``).
    Needs ``N >= 2`` and ``k >= 2``; every row must be a ranking of ``1..k``.
    """
    from scipy.stats import chi2 as chi2_dist, f as f_dist

    r = np.asarray(ranks, dtype=np.float64)
    if r.ndim != 2 or r.shape[0] < 2 or r.shape[1] < 2:
        raise ValueError(f"Friedman's test needs a (tasks >= 2, methods >= 2) rank matrix, got shape {r.shape}")
    n, k = r.shape
    if not np.allclose(r.sum(axis=1), k * (k + 1) / 2):
        raise ValueError("each task's ranks must be a ranking of 1..k (ties averaged)")
    ties = 0.0
    for row in r:
        _, counts = np.unique(row, return_counts=True)
        ties += float((counts ** 3 - counts).sum())
    correction = 1.0 - ties / (n * k * (k * k - 1))
    sums = r.sum(axis=0)
    if correction <= 0:  # every task ties every method: no evidence of any difference
        chi2 = 0.0
    else:
        chi2 = float((12.0 / (n * k * (k + 1)) * (sums ** 2).sum() - 3.0 * n * (k + 1)) / correction)
    chi2 = max(chi2, 0.0)
    denominator = n * (k - 1) - chi2
    f = math.inf if denominator <= 0 else (n - 1) * chi2 / denominator
    p_f = 0.0 if math.isinf(f) else float(f_dist.sf(f, k - 1, (k - 1) * (n - 1)))
    return FriedmanResult(chi2=chi2, p_chi2=float(chi2_dist.sf(chi2, k - 1)), f=float(f), p_f=p_f,
                          n_tasks=n, n_methods=k, mean_ranks=r.mean(axis=0))


def nemenyi_q(n_methods: int, alpha: float = 0.05) -> float:
    """Nemenyi's ``q_alpha`` for ``k`` methods: the studentized range's ``1 - alpha`` quantile (``k`` groups,
    infinite degrees of freedom) over ``sqrt(2)`` (Demšar 2006, Table 5a: 2.343 for k = 3 at alpha = 0.05)."""
    from scipy.stats import studentized_range

    if int(n_methods) < 2:
        raise ValueError(f"Nemenyi's test compares at least 2 methods, got {n_methods}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    return float(studentized_range.ppf(1.0 - alpha, int(n_methods), np.inf) / math.sqrt(2.0))


def nemenyi_cd(n_methods: int, n_tasks: int, alpha: float = 0.05) -> float:
    """The critical difference ``q_alpha sqrt(k (k + 1) / (6 N))``: two methods whose mean ranks over the same
    ``N`` tasks differ by at least this much differ significantly at ``alpha`` (Nemenyi, all pairs)."""
    if int(n_tasks) < 1:
        raise ValueError(f"the critical difference needs at least one task, got {n_tasks}")
    k = int(n_methods)
    return nemenyi_q(k, alpha) * math.sqrt(k * (k + 1) / (6.0 * int(n_tasks)))
