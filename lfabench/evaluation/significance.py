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
pairing by seed over the seeds both have.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["paired_wilcoxon_p", "compare_to_best", "significance_by_group"]


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


def compare_to_best(scores: "pd.DataFrame", method: str = "method", seed: str = "seed",
                    value: str = "value") -> "pd.DataFrame":
    """Mean ± std over seeds per method and the paired Wilcoxon p-value against the best method.

    ``scores`` has one row per (method, seed) run; several runs of one (method,
    seed) are averaged first. Returns one row per method, best first, with columns
    ``method, mean, std`` (ddof=1; 0 for one seed), ``n_seeds, best`` (bool),
    ``p_vs_best`` (NaN for the best itself and where no seed is shared) and
    ``n_pairs`` (seeds shared with the best).
    """
    import pandas as pd

    columns = [method, "mean", "std", "n_seeds", "best", "p_vs_best", "n_pairs"]
    if scores.empty:
        return pd.DataFrame(columns=columns)
    per_seed = scores.groupby([method, seed], sort=True)[value].mean()
    table = per_seed.groupby(level=0).agg(["mean", "std", "size"]).rename(columns={"size": "n_seeds"})
    table["std"] = table["std"].fillna(0.0)
    table = table.sort_values("mean", ascending=False, kind="stable")
    best = table.index[0]
    best_scores = per_seed.loc[best]
    p_values, n_pairs = [], []
    for name in table.index:
        mine = per_seed.loc[name]
        shared = mine.index.intersection(best_scores.index)
        n_pairs.append(int(shared.size))
        if name == best or shared.size == 0:
            p_values.append(float("nan"))
        else:
            p_values.append(paired_wilcoxon_p(mine.loc[shared].to_numpy(), best_scores.loc[shared].to_numpy()))
    out = table.reset_index().rename(columns={table.index.name or "index": method})
    out["best"] = out[method] == best
    out["p_vs_best"] = p_values
    out["n_pairs"] = n_pairs
    return out[columns]


def significance_by_group(scores: "pd.DataFrame", group_columns: list[str], method: str = "method",
                          seed: str = "seed", value: str = "value") -> "pd.DataFrame":
    """:func:`compare_to_best` within each group of ``group_columns`` (e.g. dataset, descriptor, evaluator, metric).

    Returns the group columns, ``method`` and ``mean, std, n_seeds, best, p_vs_best, n_pairs``.
    """
    import pandas as pd

    parts = []
    for key, grp in scores.groupby(group_columns, sort=True):
        table = compare_to_best(grp, method=method, seed=seed, value=value)
        for col, v in zip(group_columns, key if isinstance(key, tuple) else (key,)):
            table.insert(0, col, v)
        parts.append(table)
    if not parts:
        return pd.DataFrame(columns=list(group_columns) + [method, "mean", "std", "n_seeds", "best", "p_vs_best",
                                                             "n_pairs"])
    out = pd.concat(parts, ignore_index=True)
    return out[list(group_columns) + [c for c in out.columns if c not in group_columns]]
