"""Which settings of a table the data separate: tests against the best and between every pair, from the per-seed
scores and the stored predictions.

The test follows the table's protocol (:func:`table_test`):

* ``corrected t`` — runs whose records state ``split.n_train`` and ``split.n_test`` (k-NN on repeated seeded
  splits): Nadeau & Bengio's corrected resampled t-test over the seeds both settings have
  (:func:`lfabench.evaluation.corrected_resampled_ttest`), its 95 % interval as the interval of the difference.
  Beside it, where both settings' predictions are stored, McNemar's exact test on the per-sample outcomes, the
  discordant counts summed over the shared seeds (:func:`lfabench.evaluation.mcnemar_exact_p`): a conditional
  view (these fitted models on these test samples), shown as such and never deciding a verdict.
* ``sign flip + seed t`` — runs with ``retrieval`` predictions: the per-query scores of the table's metric
  (:func:`lfabench.evaluation.per_unit_scores`), the paired randomization test on per-query differences
  (:func:`lfabench.evaluation.sign_flip_pvalues`). The queries are the units: each seed is a stratum holding a
  difference per query, and a query's differences over the seeds flip together (the same query on another
  seed is the same topic, not a new one); the statistic is the mean difference over every (seed, query), the
  difference of the means on the board. That test is conditional on the fits: two runs of one method on other
  seeds differ per query too, and on the copies board it rejects such A/A pairs far above alpha. So the
  p is the larger of it and the plain paired t over the seeds (:func:`lfabench.evaluation.paired_t_p`: the fits'
  variation on the fixed queries), an intersection-union test: a pair is separated only when both the queries
  and the fits say so. Its interval: the two-way bootstrap over seeds and queries
  (:func:`lfabench.evaluation.two_way_bootstrap_ci`); with one seed, the bootstrap over queries
  (:func:`lfabench.evaluation.bootstrap_mean_ci`) and the sign flip alone. Fixed seeds, so a rebuild writes the
  same bytes (the bounds rounded to 10 significant digits, beyond any BLAS's summation order).
* ``wilcoxon`` — anything else: the paired exact Wilcoxon signed-rank test over the seeds (no interval).

The p against the best is Holm-adjusted over the table's tests against the best; the pairwise p over every
pair of the table, from which :func:`letter_display` groups the settings (two settings sharing a letter are
not separated at alpha).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
import pandas as pd

from ..evaluation.multiple import holm
from ..evaluation.paired_tests import (bootstrap_mean_ci, corrected_resampled_ttest, mcnemar_exact_p, paired_t_p,
                                       sign_flip_pvalues, two_way_bootstrap_ci)
from ..evaluation.predictions import per_unit_scores
from ..evaluation.significance import paired_wilcoxon_p
from ..record import load_predictions

#: The level every generated statement about separation uses.
ALPHA = 0.05
#: Names of the tests as the board's CSV states them (``test`` column).
T_TEST, SIGN_FLIP, WILCOXON = "corrected t", "sign flip + seed t", "wilcoxon"
#: The fewest paired seeds each test is shown from: the t-test needs a variance; the sign flip's units are the
#: queries; the exact Wilcoxon cannot reach 0.05 below 6 pairs (2/2**6 = 0.03125).
MIN_PAIRS = {T_TEST: 2, SIGN_FLIP: 1, WILCOXON: 6}
#: The seed of every randomization and bootstrap draw: a rebuild from the same records writes the same bytes.
RNG_SEED = 0


class UnitScores:
    """Per-unit scores of stored predictions, each file read once per board build."""

    def __init__(self):
        self._cache: dict[str, tuple[np.ndarray, dict[str, np.ndarray]] | None] = {}

    def get(self, path) -> tuple[np.ndarray, dict[str, np.ndarray]] | None:
        if not isinstance(path, str) or not path:
            return None
        if path not in self._cache:
            try:
                arrays = load_predictions(path)
                self._cache[path] = (per_unit_scores(arrays), str(np.asarray(arrays["kind"])))
            except (ValueError, KeyError, OSError):
                self._cache[path] = None
        return self._cache[path]


@dataclass
class TableTests:
    """One table's tests: per setting against the best, and every pair's p (Holm over the pairs)."""

    test: str
    diff: dict = field(default_factory=dict)
    ci: dict = field(default_factory=dict)
    p: dict = field(default_factory=dict)
    p_per_sample: dict = field(default_factory=dict)
    n_pairs: dict = field(default_factory=dict)
    pairwise_holm: dict = field(default_factory=dict)


def _per_seed(runs: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {s: g.set_index("seed").sort_index() for s, g in runs.groupby("setting", sort=True)}


def table_test(runs: pd.DataFrame, units: UnitScores, metric: str) -> str:
    """The test of a table (module docstring) from its runs (one row per setting and seed)."""
    if runs.empty:
        return WILCOXON
    if {"n_train", "n_test"} <= set(runs) and runs["n_train"].notna().all() and runs["n_test"].notna().all():
        return T_TEST
    if "predictions" in runs:
        loaded = [units.get(p) for p in runs["predictions"]]
        if all(x is not None and x[1] == "retrieval" and metric in x[0][1] for x in loaded):
            return SIGN_FLIP
    return WILCOXON


def _pair_units(units: UnitScores, a: pd.DataFrame, b: pd.DataFrame, seeds, metric: str):
    """Per seed: the ids both runs scored and the two score vectors on them (same order)."""
    out = []
    for s in seeds:
        la, lb = units.get(a.loc[s, "predictions"]), units.get(b.loc[s, "predictions"])
        if la is None or lb is None or metric not in la[0][1] or metric not in lb[0][1]:
            return None
        (ia, sa), (ib, sb) = (la[0][0], la[0][1][metric]), (lb[0][0], lb[0][1][metric])
        if not np.array_equal(ia, ib):
            common, xa, xb = np.intersect1d(ia, ib, assume_unique=False, return_indices=True)
            ia, sa, sb = common, sa[xa], sb[xb]
        out.append((s, ia, sa, sb))
    return out


def _query_sums(per_seed_units, universe: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each query's difference summed over the seeds that have it, and how many seeds do, over ``universe``."""
    sums, counts = np.zeros(universe.size), np.zeros(universe.size)
    for _, ids, sa, sb in per_seed_units:
        at = np.searchsorted(universe, ids)
        np.add.at(sums, at, sa - sb)
        np.add.at(counts, at, 1.0)
    return sums, counts


def run_table_tests(runs: pd.DataFrame, best: str, metric: str, units: UnitScores) -> TableTests:
    """Every test of one table: ``runs`` has one row per (setting, seed) with ``value`` and, where known,
    ``n_train``, ``n_test`` and ``predictions`` (the path of the run's predictions file)."""
    test = table_test(runs, units, metric)
    result = TableTests(test=test)
    per_seed = _per_seed(runs)
    settings = sorted(per_seed)
    sizes = (float(runs["n_train"].astype(float).mean()), float(runs["n_test"].astype(float).mean())) \
        if test == T_TEST else None
    pairs = list(combinations(settings, 2))
    pair_p: dict[tuple[str, str], float] = {}
    flips: list[tuple[tuple[str, str], np.ndarray, np.ndarray]] = []
    seed_t: dict[tuple[str, str], float] = {}
    for a, b in pairs:
        seeds = per_seed[a].index.intersection(per_seed[b].index)
        va, vb = per_seed[a].loc[seeds, "value"].to_numpy(float), per_seed[b].loc[seeds, "value"].to_numpy(float)
        if len(seeds) < MIN_PAIRS[test]:
            pair_p[a, b] = math.nan
            continue
        if test == T_TEST:
            pair_p[a, b] = corrected_resampled_ttest(va, vb, *sizes).p
        elif test == WILCOXON:
            pair_p[a, b] = paired_wilcoxon_p(va, vb)
        else:
            units_ab = _pair_units(units, per_seed[a], per_seed[b], seeds, metric)
            if units_ab is None:
                pair_p[a, b] = math.nan
                continue
            universe = np.unique(np.concatenate([u[1] for u in units_ab]))
            sums, counts = _query_sums(units_ab, universe)
            flips.append(((a, b), sums, counts))
            seed_t[a, b] = paired_t_p(va, vb)
    if flips:  # one draw of signs and of resamples for the whole table, per distinct set of queries
        by_universe: dict[int, list] = {}
        for item in flips:
            by_universe.setdefault(item[1].size, []).append(item)
        for items in by_universe.values():
            x = np.column_stack([s for _, s, _ in items])
            for (key, _, _), p in zip(items, sign_flip_pvalues(x, seed=RNG_SEED)):
                seed_p = seed_t[key]  # the fits' variation over the seeds: NaN with one seed (not measured)
                pair_p[key] = float(p) if seed_p != seed_p else max(float(p), seed_p)
    # against the best: the same tests, signed as row - best, with an interval
    for name in settings:
        if name == best:
            continue
        seeds = per_seed[name].index.intersection(per_seed[best].index)
        result.n_pairs[name] = len(seeds)
        key = (name, best) if (name, best) in pair_p else (best, name)
        result.p[name] = pair_p.get(key, math.nan)
        vr, vb = per_seed[name].loc[seeds, "value"].to_numpy(float), per_seed[best].loc[seeds, "value"].to_numpy(float)
        result.diff[name] = float(np.mean(vr - vb)) if len(seeds) else math.nan
        result.ci[name] = (math.nan, math.nan)
        if test == T_TEST and len(seeds) >= 2:
            r = corrected_resampled_ttest(vr, vb, *sizes)
            result.ci[name] = (r.ci_low, r.ci_high)
            result.p_per_sample[name] = _mcnemar(units, per_seed[name], per_seed[best], seeds, metric)
    if test == SIGN_FLIP:
        _bootstrap_intervals(result, units, per_seed, best, metric)
    adjusted = holm([pair_p[k] for k in pairs]) if pairs else []
    result.pairwise_holm = dict(zip(pairs, adjusted))
    return result


def _mcnemar(units: UnitScores, row: pd.DataFrame, best: pd.DataFrame, seeds, metric: str) -> float:
    """McNemar's exact p on the per-sample outcomes of ``row`` and ``best`` (discordant counts summed over the
    seeds); NaN without both runs' predictions for every seed."""
    if "predictions" not in row:
        return math.nan
    paired = _pair_units(units, row, best, seeds, metric)
    if paired is None:
        return math.nan
    n10 = sum(int(np.count_nonzero((sa > 0) & (sb == 0))) for _, _, sa, sb in paired)
    n01 = sum(int(np.count_nonzero((sa == 0) & (sb > 0))) for _, _, sa, sb in paired)
    return mcnemar_exact_p(n10, n01)


def _bootstrap_intervals(result: TableTests, units: UnitScores, per_seed: dict, best: str, metric: str) -> None:
    """Each row's interval of its mean difference from the best: the two-way bootstrap over seeds and queries
    where every paired seed scored the same queries and there are two seeds or more, else the bootstrap over
    queries."""
    rows = []
    for name in result.diff:
        seeds = per_seed[name].index.intersection(per_seed[best].index)
        paired = _pair_units(units, per_seed[name], per_seed[best], seeds, metric) if len(seeds) else None
        if paired is None:
            continue
        if len(paired) >= 2 and all(np.array_equal(paired[0][1], u[1]) for u in paired):
            low, high = two_way_bootstrap_ci(np.stack([sa - sb for _, _, sa, sb in paired]), seed=RNG_SEED,
                                             alpha=ALPHA)
            result.ci[name] = (_stable(low), _stable(high))
            continue
        universe = np.unique(np.concatenate([u[1] for u in paired]))
        rows.append((name, universe, *_query_sums(paired, universe)))
    by_units: dict[tuple, list] = {}
    for item in rows:  # one draw of resamples per set of queries and seed counts
        by_units.setdefault((item[1].tobytes(), item[3].tobytes()), []).append(item)
    for items in by_units.values():
        sums = np.column_stack([s for _, _, s, _ in items])
        low, high = bootstrap_mean_ci(sums, items[0][3], seed=RNG_SEED, alpha=ALPHA)
        for (name, *_), lo, hi in zip(items, low, high):
            result.ci[name] = (_stable(lo), _stable(hi))


def _stable(value) -> float:
    """A bootstrap bound rounded to 10 significant digits: its resampled means are sums a BLAS may order
    differently on another machine or thread count, which moves the last bits, and a rebuild must write the
    same bytes; the bound's own Monte Carlo error is far above that digit."""
    return float(f"{float(value):.10g}")


def letter_display(order: list[str], separated: set[frozenset]) -> dict[str, str]:
    """A compact letter display (Piepho, "An algorithm for a letter-based representation of all-pairwise
    comparisons", J. Comput. Graph. Stat. 13, 2004: insert and absorb): two settings share a letter exactly when
    they are not ``separated``. Letters run ``a, b, ...`` from the group holding the first of ``order`` (the best);
    more groups than 26 letters: no display (empty strings)."""
    groups: list[set[str]] = [set(order)]
    for pair in sorted(separated, key=lambda p: sorted(order.index(x) for x in p)):
        i, j = tuple(pair)
        split: list[set[str]] = []
        for g in groups:
            if i in g and j in g:
                split += [g - {j}, g - {i}]
            else:
                split.append(g)
        kept: list[set[str]] = []
        for k, g in enumerate(split):
            if any(g < h or (g == h and m < k) for m, h in enumerate(split) if m != k):
                continue  # absorbed: a group inside another says nothing more
            kept.append(g)
        groups = kept
    groups = [g for g in groups if g]
    if len(groups) > 26:
        return {s: "" for s in order}
    position = {s: i for i, s in enumerate(order)}
    groups.sort(key=lambda g: sorted(position[s] for s in g))
    letters = {s: "" for s in order}
    for letter, g in zip("abcdefghijklmnopqrstuvwxyz", groups):
        for s in g:
            letters[s] += letter
    return letters
