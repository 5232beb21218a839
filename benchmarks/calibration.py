"""The false-positive rate of the board's tests under a true null (A/A comparisons), by simulation.

    python benchmarks/calibration.py                 # 2,000 simulations per test, alpha = 0.05
    python benchmarks/calibration.py --n-sims 1000 --seed 1
    python benchmarks/calibration.py --n-sims 1000 --board-records leaderboards/copies/records
    python benchmarks/calibration.py --n-sims 2000 --design-grid   # the corrected t under its own null, 4 settings

Each simulation draws data where the two "methods" are the same method under two labels, runs the test the
board uses, and counts p < alpha. A calibrated test rejects about alpha of the time; the count of rejections is
binomial, so with 2,000 simulations a rate within 0.05 ± 0.01 is what a calibrated test gives.

* ``corrected t`` (k-NN on repeated seeded splits, :func:`lfabench.evaluation.corrected_resampled_ttest`): each
  simulation draws a data set from a population (three Gaussian classes, 300 samples) and scores both labels on
  6 seeded stratified 80/20 splits shared by both, 1-NN accuracy; the test over the 6 paired accuracies. Three
  null models (:func:`ttest_null_pvalues`): one randomized method under two labels (a random projection per run,
  as a codebook follows the seed), two methods of equal population accuracy with and without that randomness;
  the last, its own null, over :data:`DESIGN_GRID` (:func:`design_null_rates`); the exact rate when the seeds'
  differences are independent (:func:`randomized_aa_rate`).
* ``McNemar`` (per-sample, stratified over 6 seeds, :func:`lfabench.evaluation.mcnemar_exact_p`): per seed 300
  test samples, each with its own difficulty (a Beta(2, 2) probability of being right) that both labels share;
  each label right or wrong independently with that probability.
* ``sign flip`` (per-query, :func:`lfabench.evaluation.sign_flip_pvalues`): 200 queries on 6 seeds; each
  query's differences share a query effect (exponential, so heavy-tailed), vary per seed, and the query's sign
  is a coin flip (the two labels are exchangeable per query); 999 draws of signs per test.
* ``bootstrap`` (:func:`lfabench.evaluation.bootstrap_mean_ci`): the same null data; how often the 95 %
  interval of the mean difference excludes 0 (its coverage error; 500 resamples).
"""

from __future__ import annotations

import argparse

import numpy as np

from lfabench.evaluation import bootstrap_mean_ci, corrected_resampled_ttest, mcnemar_exact_p, sign_flip_pvalues

ALPHA = 0.05


#: The corrected t-test's null models (see the module docstring): how the two labels' runs differ.
SCENARIOS = ("one randomized method", "equal methods, randomized", "equal methods, deterministic")


def ttest_null_pvalues(n_sims: int, seed: int = 0, scenario: str = SCENARIOS[0], n: int = 300, dim: int = 4,
                       proj: int = 2, k: int = 6, classes: int = 3) -> np.ndarray:
    """Corrected resampled t-test p-values of A/A comparisons on ``k`` repeated seeded stratified 80/20 splits of
    one data set per simulation (``n`` samples, ``classes`` Gaussian classes, balanced), 1-NN accuracy.

    ``scenario``: ``one randomized method`` — both labels are 1-NN after a random projection of the same
    ``dim`` features to ``proj`` dimensions, redrawn for every run (a method whose codebook follows the seed, under
    two labels); ``equal methods, randomized`` — the labels see two different feature sets drawn alike (the same
    class centres, independent noise: equal accuracy in the population, not on one data set), each randomly
    projected per run; ``equal methods, deterministic`` — the same two feature sets without projection (a
    data set's advantage for one label persists on every split).
    """
    if scenario not in SCENARIOS:
        raise ValueError(f"scenario must be one of {SCENARIOS}, got {scenario!r}")
    rng = np.random.default_rng(seed)
    y = np.arange(n) % classes
    per = n // classes
    n_test = classes * (per // 5)
    out = np.empty(n_sims)
    for s in range(n_sims):
        centers = rng.normal(0.0, 1.0, (classes, dim))
        first = centers[y] + rng.normal(0.0, 1.0, (n, dim))
        views = (first, first) if scenario == SCENARIOS[0] else (first, centers[y] + rng.normal(0.0, 1.0, (n, dim)))
        acc = np.empty((2, k))
        for split in range(k):
            order = np.lexsort((rng.random(n), y))  # class by class, random within: a stratified split
            test = np.zeros(n, dtype=bool)
            test[order.reshape(classes, per)[:, :per // 5].ravel()] = True
            for label, x in enumerate(views):
                z = x if scenario == SCENARIOS[2] else x @ rng.normal(0.0, 1.0, (dim, proj))
                d = ((z[test, None, :] - z[None, ~test, :]) ** 2).sum(-1)
                acc[label, split] = 100.0 * np.mean(y[~test][d.argmin(1)] == y[test])
        out[s] = corrected_resampled_ttest(acc[0], acc[1], n_train=n - n_test, n_test=n_test).p
    return out


#: Settings of the corrected t's own null (deterministic methods, a population): ``(n samples, feature dim)``.
DESIGN_GRID = ((300, 4), (300, 16), (600, 4), (600, 16))


def design_null_rates(n_sims: int, seed: int = 0) -> dict[tuple[int, int], float]:
    """The corrected t's rejection rate at :data:`ALPHA` under the null it is built for (Nadeau and Bengio: two
    deterministic methods of equal population accuracy, a new data set per simulation), over
    :data:`DESIGN_GRID`: how far its fixed correlation ``n_test / n`` is from the one a data set gives."""
    return {(n, dim): float(np.mean(ttest_null_pvalues(n_sims, seed, SCENARIOS[2], n=n, dim=dim) < ALPHA))
            for n, dim in DESIGN_GRID}


def randomized_aa_rate(k: int = 6, test_over_train: float = 0.25) -> float:
    """The corrected t's exact rejection rate at :data:`ALPHA` when the ``k`` seeds' differences are independent
    (one randomized method under two labels, normal differences): the statistic is the plain paired t shrunk by
    ``sqrt((1/k) / (1/k + test_over_train))``, so it rejects where ``|T_{k-1}|`` exceeds the critical value
    divided by that factor."""
    from scipy import stats

    shrink = np.sqrt((1.0 / k) / (1.0 / k + test_over_train))
    return float(2.0 * stats.t.sf(stats.t.ppf(1.0 - ALPHA / 2.0, k - 1) / shrink, k - 1))


def mcnemar_null_pvalues(n_sims: int, seed: int = 0, n_test: int = 300, k: int = 6) -> np.ndarray:
    """Stratified exact McNemar p-values of A/A per-sample outcomes (module docstring)."""
    rng = np.random.default_rng(seed)
    out = np.empty(n_sims)
    for s in range(n_sims):
        p_right = rng.beta(2.0, 2.0, (k, n_test))
        a, b = rng.random((k, n_test)) < p_right, rng.random((k, n_test)) < p_right
        out[s] = mcnemar_exact_p((a & ~b).sum(axis=1), (~a & b).sum(axis=1))
    return out


def _query_null(rng, n_sims: int, n_queries: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(query sums over the seeds (queries, sims), per-(seed, query) differences (sims, seeds, queries))``."""
    effect = rng.exponential(10.0, (n_sims, 1, n_queries))
    per_seed = effect + rng.normal(0.0, 5.0, (n_sims, k, n_queries))
    diffs = per_seed * rng.choice([-1.0, 1.0], (n_sims, 1, n_queries))
    return diffs.sum(axis=1).T, diffs


def sign_flip_null_pvalues(n_sims: int, seed: int = 0, n_queries: int = 200, k: int = 6,
                           n_permutations: int = 999) -> np.ndarray:
    """Sign-flip p-values of A/A per-query differences (module docstring), one column per simulation."""
    rng = np.random.default_rng(seed)
    sums, _ = _query_null(rng, n_sims, n_queries, k)
    return sign_flip_pvalues(sums, n_permutations=n_permutations, seed=seed + 1)


def bootstrap_null_misses(n_sims: int, seed: int = 0, n_queries: int = 200, k: int = 6,
                          n_resamples: int = 500) -> np.ndarray:
    """Whether each simulation's 95 % bootstrap interval of the mean difference excludes 0 (module docstring)."""
    rng = np.random.default_rng(seed)
    sums, _ = _query_null(rng, n_sims, n_queries, k)
    low, high = bootstrap_mean_ci(sums, np.full(n_queries, float(k)), n_resamples=n_resamples, seed=seed + 1)
    return (low > 0) | (high < 0)


def rates(n_sims: int, seed: int = 0) -> dict[str, float]:
    """The rejection rate at :data:`ALPHA` of every test under its null."""
    return {**{f"corrected t ({s})": float(np.mean(ttest_null_pvalues(n_sims, seed, s) < ALPHA)) for s in SCENARIOS},
            "McNemar": float(np.mean(mcnemar_null_pvalues(n_sims, seed) < ALPHA)),
            "sign flip": float(np.mean(sign_flip_null_pvalues(n_sims, seed) < ALPHA)),
            "bootstrap interval": float(np.mean(bootstrap_null_misses(n_sims, seed)))}


def board_aa(records, metric: str = "mAP", n_permutations: int = 999) -> "pd.DataFrame":
    """A/A on a retrieval board's own records: each method's seeds split into two halves of 3 (every split that
    keeps seed 0 in the first: 10 per method), the halves paired in seed order and compared as two methods by
    the per-query sign flip alone and by the board's rule (the larger p of it and the paired t over the seeds).
    The two halves are one method: every rejection is a false positive. Returns one row per comparison."""
    import itertools

    import pandas as pd

    from lfabench.evaluation import paired_t_p
    from lfabench.leaderboard.separation import UnitScores
    from lfabench.recordset import dedupe_runs, labelled, load_records, records_frame

    df = labelled(dedupe_runs(records_frame(load_records([records]))[0]))
    df = df[df["metric"] == metric]
    units, rows = UnitScores(), []
    for (descriptor, method), runs in df.groupby(["descriptor", "aggregator"]):
        runs = runs.set_index("seed").sort_index()
        scores = {s: units.get(runs.loc[s, "predictions"])[0][1][metric] for s in runs.index}
        seeds = sorted(scores)
        for first in itertools.combinations(seeds, len(seeds) // 2):
            if seeds[0] not in first:
                continue
            second = [s for s in seeds if s not in first]
            sums = sum(scores[s] for s in first) - sum(scores[s] for s in second)
            query_p = float(sign_flip_pvalues(sums, n_permutations=n_permutations)[0])
            seed_p = paired_t_p([float(np.mean(scores[s])) for s in first], [float(np.mean(scores[s])) for s in second])
            rows.append({"descriptor": descriptor, "method": method, "first": first, "sign flip": query_p,
                         "board rule": max(query_p, seed_p)})
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n-sims", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--design-grid", action="store_true",
                        help="also the corrected t under its own null over DESIGN_GRID (a few minutes)")
    parser.add_argument("--board-records", help="also the A/A on a retrieval board's records (e.g. "
                                                "leaderboards/copies/records): one method's seeds in two halves")
    args = parser.parse_args(argv)
    print(f"A/A simulations: {args.n_sims} per test, alpha = {ALPHA}")
    for name, rate in rates(args.n_sims, args.seed).items():
        se = np.sqrt(ALPHA * (1 - ALPHA) / args.n_sims)
        print(f"{name:>44}: false-positive rate {rate:.4f} (a calibrated test: {ALPHA} ± {2 * se:.4f}, 2 s.e.)")
    print(f"{'corrected t, independent seeds (exact)':>44}: {randomized_aa_rate():.4f}")
    if args.design_grid:
        for (n, dim), rate in design_null_rates(args.n_sims, args.seed).items():
            print(f"{f'corrected t, own null, n={n}, dim={dim}':>44}: false-positive rate {rate:.4f}")
    if args.board_records:
        aa = board_aa(args.board_records)
        print(f"A/A on {args.board_records}: {len(aa)} comparisons of one method's seed halves")
        for column in ("sign flip", "board rule"):
            print(f"{column:>44}: false-positive rate {float(np.mean(aa[column] < ALPHA)):.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
