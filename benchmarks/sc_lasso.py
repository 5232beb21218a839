"""SC's lasso, old against new, at the paper's scale on a Fifteen Scene DAISY subset: scikit-learn's coordinate
descent (``sparse_encode(algorithm="lasso_cd")``, the ``sc`` plugin's ``lasso="cd"``) against the batched
homotopy (``lasso_codes``, ``lasso="homotopy"``, the default), on the same descriptors and dictionary.

* Dictionary: the ``sc`` plugin at its defaults (K = 256 atoms, alpha = 0.15, at most 50,000 training
  descriptors, 10 passes) fitted on the subset's DAISY descriptors (``--dict-lasso`` picks the solver that
  learns it; cached in ``$LFABENCH_CACHE``).
* Codes: ``--descriptors`` seeded descriptors of the subset, L2-normalised as the plugin codes them, in
  chunks of ``--chunk`` timed old, new, old, new... (alternating, so a change in the machine's load hits both).
* Reported: each solver's seconds and descriptors per second, the speed-up, and per descriptor the objective
  ``P(u) = 1/2 ||x - D^T u||^2 + alpha ||u||_1`` of both (``P_new - P_old``: its largest and smallest), the
  duality gaps (the new solver certifies ``<= 1e-8``), the codes' largest difference where the coordinate
  descent converged, and how often it stopped at ``max_iter`` instead.
* ``--fit-descriptors N`` also times the dictionary learning (``MiniBatchDictionaryLearning`` against
  ``HomotopyDictionaryLearning``, plugin defaults) on N descriptors, alternating old and new ``--fit-repeats``
  times.

Example (the figures in docs/performance.md)::

    python benchmarks/sc_lasso.py --per-class 40 --descriptors 20000 --chunk 2000 --fit-descriptors 10000
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from lfabench_plugins.aggregators.lasso import LassoStats, lasso_codes, lasso_duality_gap, lasso_objective
from lfabench_plugins.aggregators.sc import SparseCoding


def _old_codes(X, D, alpha):
    from sklearn.decomposition import sparse_encode
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return sparse_encode(X, D, algorithm="lasso_cd", alpha=alpha, max_iter=1000)


def compare_codes(X, D, alpha, chunk):
    """Time both solvers on ``X`` chunk by chunk, alternating; return the codes and the seconds of each."""
    old, new = np.empty((len(X), len(D))), np.empty((len(X), len(D)))
    t_old = t_new = 0.0
    stats = LassoStats()
    for i, lo in enumerate(range(0, len(X), chunk)):
        hi = min(lo + chunk, len(X))
        # alternate which solver goes first, too
        for which in (("old", "new") if i % 2 == 0 else ("new", "old")):
            t = time.perf_counter()
            if which == "old":
                old[lo:hi] = _old_codes(X[lo:hi], D, alpha)
                t_old += time.perf_counter() - t
            else:
                new[lo:hi] = lasso_codes(X[lo:hi], D, alpha, stats=stats)
                t_new += time.perf_counter() - t
        print(f"  {hi:>7} descriptors: old {t_old:8.2f} s, new {t_new:7.2f} s", flush=True)
    return old, new, t_old, t_new, stats


def compare_fit(bags_descriptors, repeats, seed):
    """Seconds of the dictionary learning at the plugin's defaults, old and new alternating."""
    from lfabench.bags import Bags

    bags = Bags(bags_descriptors, [0, len(bags_descriptors)])
    times = {"cd": [], "homotopy": []}
    for r in range(repeats):
        for lasso in (("cd", "homotopy") if r % 2 == 0 else ("homotopy", "cd")):
            t = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                SparseCoding(lasso=lasso, random_state=seed).fit(bags)
            times[lasso].append(time.perf_counter() - t)
            print(f"  fit {lasso:>8}: {times[lasso][-1]:.2f} s", flush=True)
    return times


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-class", type=int, default=40, help="images per class in the DAISY subset")
    ap.add_argument("--descriptors", type=int, default=20000, help="descriptors coded by both solvers")
    ap.add_argument("--chunk", type=int, default=2000)
    ap.add_argument("--dict-lasso", default="homotopy", choices=("homotopy", "cd"))
    ap.add_argument("--fit-descriptors", type=int, default=0, help="also time the dictionary learning on N")
    ap.add_argument("--fit-repeats", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    from scene15_daisy import scene15_daisy_subset  # benchmarks/ is the script's folder

    bags, _ = scene15_daisy_subset(args.per_class, args.seed)
    print(f"DAISY subset: {bags.n_samples} images, {bags.n_descriptors} descriptors")
    t = time.perf_counter()
    sc = SparseCoding(lasso=args.dict_lasso, cache=True, random_state=args.seed).fit(bags)
    print(f"dictionary (plugin defaults, lasso={args.dict_lasso}): {time.perf_counter() - t:.1f} s "
          f"(cached after the first run)")
    D, alpha = sc.dictionary_, float(sc.alpha)
    rng = np.random.default_rng(args.seed + 1)
    pick = rng.choice(bags.n_descriptors, min(args.descriptors, bags.n_descriptors), replace=False)
    X = sc._prepare(bags.descriptors[np.sort(pick)])

    old, new, t_old, t_new, stats = compare_codes(X, D, alpha, args.chunk)
    gap_old, gap_new = lasso_duality_gap(X, D, old, alpha), lasso_duality_gap(X, D, new, alpha)
    dP = lasso_objective(X, D, new, alpha) - lasso_objective(X, D, old, alpha)
    converged = gap_old <= 1e-8
    du = np.abs(new - old).max(axis=1)
    n = len(X)
    print(f"codes of {n} descriptors (K={len(D)}, alpha={alpha}):")
    print(f"  old (sparse_encode lasso_cd): {t_old:.2f} s, {n / t_old:.0f} descriptors/s")
    print(f"  new (lasso_codes homotopy):   {t_new:.2f} s, {n / t_new:.0f} descriptors/s "
          f"({stats.n_exact} certified by the path, {stats.n_fallback} via sparse_encode)")
    print(f"  speed-up: {t_old / t_new:.2f}x")
    print(f"  P_new - P_old: max {dP.max():.3e}, min {dP.min():.3e}")
    print(f"  duality gap: new max {gap_new.max():.3e}; old max {gap_old.max():.3e}, "
          f"old above 1e-8 on {100 * (1 - converged.mean()):.1f}% (stopped at max_iter)")
    print(f"  |u_new - u_old| max: {du[converged].max() if converged.any() else float('nan'):.3e} where old "
          f"converged, {du.max():.3e} overall; same supports on {100 * ((new != 0) == (old != 0)).all(1).mean():.1f}%")
    print(f"  nonzeros per code: mean {(new != 0).sum(1).mean():.2f}, max {(new != 0).sum(1).max()}")

    if args.fit_descriptors:
        sample = bags.descriptors[np.sort(rng.choice(bags.n_descriptors, args.fit_descriptors, replace=False))]
        times = compare_fit(sample, args.fit_repeats, args.seed)
        old_s, new_s = np.median(times["cd"]), np.median(times["homotopy"])
        print(f"dictionary learning on {args.fit_descriptors} descriptors (median of {args.fit_repeats}): "
              f"old {old_s:.2f} s, new {new_s:.2f} s, speed-up {old_s / new_s:.2f}x")


if __name__ == "__main__":
    main()
