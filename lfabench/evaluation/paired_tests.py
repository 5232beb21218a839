"""Paired tests with power: what separates two methods run on the same splits or the same queries.

* :func:`corrected_resampled_ttest` — the corrected resampled t-test of Nadeau & Bengio ("Inference for the
  generalization error", Machine Learning 52, 2003, eq. for the corrected resampled t) for ``k`` repeated random
  train/test splits: the per-split differences' variance is inflated by ``1/k + n_test/n_train`` instead of
  ``1/k`` because overlapping training sets make the splits' scores correlated; ``k - 1`` degrees of freedom.
  Its interval is ``mean ± t_{1-alpha/2, k-1} sqrt((1/k + n_test/n_train) var)``.
* :func:`mcnemar_exact_p` — McNemar's exact test on the discordant counts of paired per-sample outcomes
  (Dietterich, "Approximate statistical tests for comparing supervised classification learning algorithms",
  Neural Computation 10, 1998), stratified over splits by summing the counts: conditional on each split's
  number of discordant samples, under the null each goes either way with probability 1/2, so the pooled count
  is binomial(total, 1/2). Conditional on the fitted models: it says whether these fits differ on these
  samples, not whether the methods would on new training sets.
* :func:`sign_flip_pvalues`, :func:`bootstrap_mean_ci` — the paired randomization (sign-flip) test and the
  percentile bootstrap interval of a mean paired difference over units (queries), the tests information
  retrieval uses for topic-level comparisons (Smucker, Allan & Carterette, "A comparison of statistical
  significance tests for information retrieval evaluation", CIKM 2007). Monte Carlo with a fixed seed, so a
  rerun gives the same bytes; columns are several comparisons sharing one draw of signs (or resamples).
  Both are conditional on the fitted runs: they treat the queries as the sample, not the fits.
* :func:`paired_t_p`, :func:`two_way_bootstrap_ci` — the other source of variation of a retrieval board: the
  fits, which differ by seed on one fixed set of queries (a plain paired t over seeds), and an interval that
  resamples seeds and queries together.

Every function is pure and takes plain arrays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["PairedDifference", "corrected_resampled_ttest", "paired_t_p", "mcnemar_exact_p", "sign_flip_pvalues",
           "bootstrap_mean_ci", "two_way_bootstrap_ci", "DEFAULT_PERMUTATIONS", "DEFAULT_BOOTSTRAP"]

#: Monte Carlo sizes of the randomization test and of the bootstrap: the smallest p the test can give is
#: ``1 / (DEFAULT_PERMUTATIONS + 1) = 0.0002``, below 0.05 / 28 (Holm over every pair of 8 methods).
DEFAULT_PERMUTATIONS = 4999
DEFAULT_BOOTSTRAP = 2000


@dataclass(frozen=True)
class PairedDifference:
    """A mean paired difference ``diff`` (``a - b``), its ``1 - alpha`` interval and the two-sided ``p`` of the
    test of a zero difference; ``statistic`` is the test's (t for the t-test), ``n`` the number of pairs."""

    diff: float
    ci_low: float
    ci_high: float
    p: float
    statistic: float
    n: int


def corrected_resampled_ttest(scores_a, scores_b, n_train: int, n_test: int, alpha: float = 0.05
                              ) -> PairedDifference:
    """Nadeau & Bengio's corrected resampled t-test of ``a - b`` over ``k`` paired random splits.

    ``t = mean(d) / sqrt((1/k + n_test/n_train) var(d))`` with ``var`` of ddof 1, two-sided p from Student's t
    with ``k - 1`` degrees of freedom, interval ``mean(d) ± t_{1-alpha/2,k-1} sqrt((1/k + n_test/n_train) var(d))``.
    Fewer than 2 pairs: p and interval NaN. Every difference equal: the variance is 0, p = 1 when they are 0
    (and the interval is that point), else p = 0 (the statistic is infinite).
    """
    from scipy.stats import t as t_dist

    a = np.asarray(scores_a, dtype=np.float64)
    b = np.asarray(scores_b, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"paired scores must be two 1-D arrays of equal length, got shapes {a.shape} and {b.shape}")
    if not (float(n_train) > 0 and float(n_test) > 0):
        raise ValueError(f"n_train and n_test must be positive, got {n_train} and {n_test}")
    d = a - b
    k = d.size
    mean = float(d.mean()) if k else math.nan
    if k < 2:
        return PairedDifference(mean, math.nan, math.nan, math.nan, math.nan, k)
    var = float(d.var(ddof=1))
    se = math.sqrt((1.0 / k + n_test / n_train) * var)
    if se == 0.0:
        return PairedDifference(mean, mean, mean, 1.0 if mean == 0.0 else 0.0,
                                0.0 if mean == 0.0 else math.copysign(math.inf, mean), k)
    t = mean / se
    half = float(t_dist.ppf(1.0 - alpha / 2.0, k - 1)) * se
    return PairedDifference(mean, mean - half, mean + half, float(2.0 * t_dist.sf(abs(t), k - 1)), t, k)


def paired_t_p(scores_a, scores_b) -> float:
    """The two-sided p of the plain paired t-test (``scipy.stats.ttest_rel``): ``t = mean(d) / sqrt(var(d) / k)``,
    ``k - 1`` degrees of freedom. For runs that differ only by their random state on one fixed test set (the
    seeds of a retrieval board: same queries, same database), where the differences are independent. Fewer than
    2 pairs: NaN; every difference equal: 1 when they are 0, else 0."""
    from scipy.stats import t as t_dist

    d = np.asarray(scores_a, dtype=np.float64) - np.asarray(scores_b, dtype=np.float64)
    if d.ndim != 1:
        raise ValueError(f"paired scores must be 1-D, got shape {d.shape}")
    k = d.size
    if k < 2:
        return math.nan
    se = math.sqrt(float(d.var(ddof=1)) / k)
    if se == 0.0:
        return 1.0 if float(d.mean()) == 0.0 else 0.0
    return float(2.0 * t_dist.sf(abs(float(d.mean()) / se), k - 1))


def mcnemar_exact_p(n_10, n_01) -> float:
    """Two-sided exact McNemar p from the discordant counts (``a`` right where ``b`` is wrong, and the reverse),
    summed over strata when arrays are given: ``min(1, 2 P[X <= min(n_10, n_01)])``, X ~ binomial(n_10 + n_01,
    1/2); 1 without discordant samples."""
    from scipy.stats import binom

    n10 = int(np.sum(n_10))
    n01 = int(np.sum(n_01))
    if n10 < 0 or n01 < 0:
        raise ValueError(f"discordant counts must be non-negative, got {n10} and {n01}")
    n = n10 + n01
    if n == 0:
        return 1.0
    return float(min(1.0, 2.0 * binom.cdf(min(n10, n01), n, 0.5)))


def _columns(values) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or not np.isfinite(x).all():
        raise ValueError(f"expected finite (units,) or (units, comparisons) values, got shape {x.shape}")
    return x


def sign_flip_pvalues(unit_sums, n_permutations: int = DEFAULT_PERMUTATIONS, seed: int = 0) -> np.ndarray:
    """Two-sided paired randomization test of a zero mean difference, per column of ``unit_sums``.

    ``unit_sums`` is ``(units,)`` or ``(units, comparisons)``: each unit's difference (or the sum of its
    differences over the strata it appears in, e.g. one query over every seed: the unit's signs flip together).
    Under the null each unit's difference is symmetric about 0. The statistic is ``|sum|``; ``n_permutations``
    draws of independent signs (one draw shared by every column, from ``numpy.random.default_rng(seed)``), and
    ``p = (1 + #{|T*| >= |T|}) / (n_permutations + 1)`` (Phipson & Smyth 2010: never 0; a valid test for any
    number of draws). A column of zeros has p = 1.
    """
    x = _columns(unit_sums)
    if int(n_permutations) < 1:
        raise ValueError(f"n_permutations must be >= 1, got {n_permutations}")
    n_units, m = x.shape
    observed = np.abs(x.sum(axis=0))
    tolerance = 1e-9 * np.abs(x).sum(axis=0)  # the same sum in another order must count as reaching it
    rng = np.random.default_rng(seed)
    exceed = np.zeros(m, dtype=np.int64)
    total = x.sum(axis=0)
    done, block = 0, max(1, min(int(n_permutations), 2 ** 24 // max(1, n_units)))
    while done < n_permutations:
        rows = min(block, int(n_permutations) - done)
        bits = np.unpackbits(rng.integers(0, 256, size=(rows, (n_units + 7) // 8), dtype=np.uint8),
                             axis=1, count=n_units).astype(np.float64)
        flipped = np.abs(2.0 * (bits @ x) - total)          # sum of s_i x_i with s_i = 2 bit_i - 1
        exceed += (flipped >= observed - tolerance).sum(axis=0)
        done += rows
    p = (1.0 + exceed) / (int(n_permutations) + 1.0)
    p[~np.any(x != 0.0, axis=0)] = 1.0
    return p


def bootstrap_mean_ci(unit_sums, unit_counts=None, n_resamples: int = DEFAULT_BOOTSTRAP, seed: int = 0,
                      alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval of the mean difference ``sum(unit_sums) / sum(unit_counts)`` per column.

    Units are resampled with replacement (``n_resamples`` draws shared by every column, from
    ``numpy.random.default_rng(seed)``); ``unit_counts`` (default 1 each) is how many differences each unit's sum
    holds (a query present in every seed: the number of seeds), so the resampled statistic is a ratio of sums.
    Returns ``(low, high)``: the ``alpha/2`` and ``1 - alpha/2`` quantiles (numpy's linear rule).
    """
    x = _columns(unit_sums)
    n_units, m = x.shape
    counts = np.ones(n_units) if unit_counts is None else np.asarray(unit_counts, dtype=np.float64)
    if counts.shape != (n_units,) or (counts <= 0).any():
        raise ValueError("unit_counts must be one positive count per unit")
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(n_units, np.full(n_units, 1.0 / n_units), size=int(n_resamples)).astype(np.float64)
    means = (weights @ x) / (weights @ counts)[:, None]
    low, high = np.quantile(means, [alpha / 2.0, 1.0 - alpha / 2.0], axis=0)
    return low, high


def two_way_bootstrap_ci(differences, n_resamples: int = DEFAULT_BOOTSTRAP, seed: int = 0,
                         alpha: float = 0.05) -> tuple[float, float]:
    """Percentile interval of the mean of a ``(seeds, queries)`` matrix of paired differences, resampling the seeds
    and the queries independently (the crossed two-way bootstrap: both the fits and the topics vary; it counts
    the interaction twice, so it errs wide). ``numpy.random.default_rng(seed)``: the same draws for every call."""
    d = np.asarray(differences, dtype=np.float64)
    if d.ndim != 2 or not d.size or not np.isfinite(d).all():
        raise ValueError(f"expected a finite (seeds, queries) matrix, got shape {d.shape}")
    n_s, n_q = d.shape
    rng = np.random.default_rng(seed)
    w_s = rng.multinomial(n_s, np.full(n_s, 1.0 / n_s), size=int(n_resamples)).astype(np.float64)
    w_q = rng.multinomial(n_q, np.full(n_q, 1.0 / n_q), size=int(n_resamples)).astype(np.float64)
    means = np.einsum("bq,bq->b", w_s @ d, w_q) / (n_s * n_q)
    low, high = np.quantile(means, [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(low), float(high)
