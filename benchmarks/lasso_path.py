"""SC's lasso codes against another revision's, alternately in one process, on real data.

    OMP_NUM_THREADS=1 python benchmarks/lasso_path.py [--against REV] [--descriptors sift daisy] [--repeats 3]
        [--rows 40000] [--fit]

On the ``knn`` evaluator's seed-0 split of the shared Fifteen Scene copy (``suite/cases.py``'s ``split_bags``):
``SparseCoding(random_state=0)`` (K = 256 atoms, alpha = 0.15) is fitted once with the working tree's code, then
``lasso_codes`` of ``plugins/aggregators/lasso.py`` at ``REV`` (read with ``git show``, default ``HEAD``) and of
the working tree code the first ``rows`` test descriptors (L2-normalised, as SC codes them) on that dictionary,
alternately, on one BLAS thread. Printed: CPU seconds of each (best of ``repeats``), their ratio, how many rows
the path certified and how many went to ``sparse_encode``, and whether the codes are the same bits. ``--fit`` also
fits ``SparseCoding(random_state=0)`` and transforms the test images with each revision's ``lasso_codes``
(patched into ``sc.py`` and ``lasso_dictionary.py``), once each, and compares the dictionaries and features.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from revisions import cpu, module_at  # noqa: E402
from suite.cases import split_bags  # noqa: E402


def compare_codes(old, X: np.ndarray, D: np.ndarray, alpha: float, repeats: int) -> None:
    from lfabench_plugins.aggregators import lasso

    for module in (old, lasso):                                     # compile and warm outside the timing
        module.lasso_codes(X[:64], D, alpha)
    t_old = t_new = np.inf
    for _ in range(repeats):
        s, before = cpu(lambda: old.lasso_codes(X, D, alpha))
        t_old = min(t_old, s)
        stats = lasso.LassoStats()
        s, after = cpu(lambda: lasso.lasso_codes(X, D, alpha, stats=stats))
        t_new = min(t_new, s)
    print(f"  lasso codes of {len(X):,} test descriptors {t_old:7.2f} s -> {t_new:7.2f} s ({t_old / t_new:.2f}x); "
          f"certified by the path {stats.n_exact:,}, sparse_encode {stats.n_fallback:,}; "
          f"rows with other bits {int((before != after).any(axis=1).sum()):,}")


def compare_fits(old, bags) -> None:
    """SC's fit and its transform of the test images with ``old``'s ``lasso_codes`` and the working tree's."""
    from lfabench_plugins.aggregators import lasso, lasso_dictionary, sc

    train, labels, _, test, _ = bags
    results = {}
    for name, codes in (("before", old.lasso_codes), ("after", lasso.lasso_codes)):
        sc.lasso_codes, lasso_dictionary.lasso_codes = codes, codes
        try:
            est = sc.SparseCoding(random_state=0)
            fit_s, _ = cpu(lambda: est.fit(train, labels))
            transform_s, features = cpu(lambda: est.transform(test))
        finally:
            sc.lasso_codes, lasso_dictionary.lasso_codes = lasso.lasso_codes, lasso.lasso_codes
        results[name] = (fit_s, transform_s, est.dictionary_, features)
    (fb, tb, Db, Fb), (fa, ta, Da, Fa) = results["before"], results["after"]
    print(f"  SparseCoding fit {fb:7.2f} s -> {fa:7.2f} s ({fb / fa:.2f}x); transform of the test images "
          f"{tb:.2f} s -> {ta:.2f} s ({tb / ta:.2f}x); dictionary same bits: {np.array_equal(Db, Da)}, "
          f"features same bits: {np.array_equal(Fb, Fa)} ({int((Fb != Fa).any(axis=1).sum())} images differ)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", default="HEAD", help="the revision whose lasso.py is timed and compared")
    parser.add_argument("--descriptors", nargs="+", default=["sift", "daisy"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rows", type=int, default=40_000, help="test descriptors coded per timing")
    parser.add_argument("--fit", action="store_true", help="also SC's fit and transform with each revision's codes")
    args = parser.parse_args(argv)
    from lfabench_plugins.aggregators.normalization import l2_normalize
    from lfabench_plugins.aggregators.sc import SparseCoding

    old = module_at(args.against, "plugins/aggregators/lasso.py", "lfabench_plugins.aggregators")
    with threadpool_limits(1):
        for descriptor in args.descriptors:
            try:
                bags = split_bags("scene15", descriptor)
            except NotImplementedError as exc:
                print(f"{descriptor}: skipped ({exc})")
                continue
            train, labels, _, test, _ = bags
            est = SparseCoding(random_state=0).fit(train, labels)
            X = l2_normalize(np.asarray(test.descriptors[:args.rows], dtype=np.float64))
            print(f"{descriptor} (K = {est.dictionary_.shape[0]}, alpha = {est.alpha}; lasso.py {args.against} -> "
                  f"working tree)")
            compare_codes(old, X, est.dictionary_, float(est.alpha), args.repeats)
            if args.fit:
                compare_fits(old, bags)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
