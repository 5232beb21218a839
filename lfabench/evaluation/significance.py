"""Paired significance over seeds: the two-sided exact Wilcoxon signed-rank test.

lfabench's protocols draw their splits from the seed only, so two methods run
with the same seeds are scored on identical splits and their per-seed scores
are *paired*. :func:`paired_wilcoxon_p` is
``scipy.stats.wilcoxon(a, b, zero_method="wilcox", alternative="two-sided",
method="exact").pvalue``:

* **zero differences** (both methods score the same on a seed) are dropped, so
  ``n`` shrinks (Wilcoxon's original rule); with every difference zero scipy
  gives ``p = 1``;
* ties among ``|differences|`` get mid-ranks; the exact null distribution is then
  approximate, and scipy keeps it conservative (rounding the statistic);
* with ``n = 6`` non-zero differences the smallest possible p is ``2/64 = 0.03125``;
* no pair at all gives NaN.

:func:`compare_to_best` applies it to a table of per-seed scores: each method
against the best one (highest mean; every lfabench metric is higher-is-better),
pairing by seed over the seeds both have. Where the scores are ratios of counts, an
exact column (:class:`fractions.Fraction` per run) decides which mean is highest, so
two methods with equal counts are both best rather than split by float rounding.
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np

__all__ = ["paired_wilcoxon_p", "compare_to_best", "significance_by_group", "exact_mean"]


def paired_wilcoxon_p(scores_a, scores_b) -> float:
    """Two-sided exact Wilcoxon signed-rank p-value of paired scores ``a[i]`` vs ``b[i]`` (see module doc)."""
    a = np.asarray(scores_a, dtype=np.float64)
    b = np.asarray(scores_b, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"paired scores must be two 1-D arrays of equal length, got shapes {a.shape} and {b.shape}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("paired scores must be finite")
    if a.size == 0:
        return float("nan")
    from scipy.stats import wilcoxon

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        result = wilcoxon(a, b, zero_method="wilcox", alternative="two-sided", method="exact")
    return float(result.pvalue)


def exact_mean(values) -> Fraction | None:
    """The exact mean of :class:`~fractions.Fraction` scores; None when any is missing (no exact score known)."""
    values = list(values)
    if not values or any(not isinstance(v, Fraction) for v in values):
        return None
    return sum(values, Fraction(0)) / len(values)


def _order_keys(per_seed_value, per_seed_exact) -> "pd.Series":
    """Each method's mean as an exactly comparable number: the exact mean where every run has one, else the
    float mean (as the Fraction it exactly is)."""
    import pandas as pd

    means = per_seed_value.groupby(level=0).mean()
    if per_seed_exact is None:
        return pd.Series({m: Fraction(float(v)) for m, v in means.items()}, dtype=object)
    exact = per_seed_exact.groupby(level=0).agg(exact_mean)
    return pd.Series({m: exact[m] if exact[m] is not None else Fraction(float(v)) for m, v in means.items()},
                     dtype=object)


def compare_to_best(scores: "pd.DataFrame", method: str = "method", seed: str = "seed",
                    value: str = "value", exact: str | None = None) -> "pd.DataFrame":
    """Mean ± std over seeds per method and the paired Wilcoxon p-value against the best method.

    ``scores`` has one row per (method, seed) run; several runs of one (method,
    seed) are averaged first. ``exact`` names an optional column of exact scores
    (:class:`fractions.Fraction`, or None where unknown) that decides the order of the means.
    Returns one row per method, best first, with columns
    ``method, mean, std`` (ddof=1; 0 for one seed), ``n_seeds, best`` (bool: every method whose mean
    equals the highest), ``p_vs_best`` (NaN for a best method and where no seed is shared) and
    ``n_pairs`` (seeds shared with the best; for tied best methods, the first in name order is the reference).
    """
    import pandas as pd

    columns = [method, "mean", "std", "n_seeds", "best", "p_vs_best", "n_pairs"]
    if scores.empty:
        return pd.DataFrame(columns=columns)
    per_seed = scores.groupby([method, seed], sort=True)[value].mean()
    per_seed_exact = (scores.groupby([method, seed], sort=True)[exact].agg(exact_mean)
                      if exact is not None and exact in scores else None)
    table = per_seed.groupby(level=0).agg(["mean", "std", "size"]).rename(columns={"size": "n_seeds"})
    table["std"] = table["std"].fillna(0.0)
    keys = _order_keys(per_seed, per_seed_exact)
    table["_key"] = [keys[m] for m in table.index]
    table = table.iloc[sorted(range(len(table)), key=lambda i: -table["_key"].iloc[i])]  # stable: name order
    top = table["_key"].iloc[0]
    tied_best = [m for m in table.index if table.loc[m, "_key"] == top]
    table = table.drop(columns="_key")
    best = table.index[0]
    best_scores = per_seed.loc[best]
    p_values, n_pairs = [], []
    for name in table.index:
        mine = per_seed.loc[name]
        shared = mine.index.intersection(best_scores.index)
        n_pairs.append(int(shared.size))
        if name in tied_best or shared.size == 0:
            p_values.append(float("nan"))
        else:
            p_values.append(paired_wilcoxon_p(mine.loc[shared].to_numpy(), best_scores.loc[shared].to_numpy()))
    out = table.reset_index().rename(columns={table.index.name or "index": method})
    out["best"] = out[method].isin(tied_best)
    out["p_vs_best"] = p_values
    out["n_pairs"] = n_pairs
    return out[columns]


def significance_by_group(scores: "pd.DataFrame", group_columns: list[str], method: str = "method",
                          seed: str = "seed", value: str = "value", exact: str | None = None) -> "pd.DataFrame":
    """:func:`compare_to_best` within each group of ``group_columns`` (e.g. dataset, descriptor, evaluator, metric).

    Returns the group columns, ``method`` and ``mean, std, n_seeds, best, p_vs_best, n_pairs``.
    """
    import pandas as pd

    parts = []
    for key, grp in scores.groupby(group_columns, sort=True):
        table = compare_to_best(grp, method=method, seed=seed, value=value, exact=exact)
        for col, v in zip(group_columns, key if isinstance(key, tuple) else (key,)):
            table.insert(0, col, v)
        parts.append(table)
    if not parts:
        return pd.DataFrame(columns=list(group_columns) + [method, "mean", "std", "n_seeds", "best", "p_vs_best",
                                                             "n_pairs"])
    out = pd.concat(parts, ignore_index=True)
    return out[list(group_columns) + [c for c in out.columns if c not in group_columns]]
