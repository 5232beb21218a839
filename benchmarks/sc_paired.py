"""SC's accuracy with each lasso solver, paired by seed: the ``sc`` plugin at its defaults with ``lasso="cd"``
(scikit-learn's coordinate descent, the old path) and ``lasso="homotopy"`` (the default), on the same
Fifteen Scene DAISY subset and the ``knn`` evaluator's seeded 80/20 stratified split, scored by 1-NN
accuracy (the paper's protocol). Prints one row per seed (accuracies, fit and transform seconds) and the
mean paired difference; the rows go to ``benchmarks/out/sc_paired_<per-class>.csv``.

    python benchmarks/sc_paired.py --per-class 40 --seeds 0 1 2
    python benchmarks/sc_paired.py --per-class 10 --seeds 0 1 2 --param dict_iter=3    # a smaller check

``--param KEY=VALUE`` (repeatable) changes a plugin parameter for both solvers.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from lfabench_plugins.aggregators.sc import SparseCoding
from lfabench_plugins.evaluators.splits import stratified_split


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-class", type=int, default=40)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--param", action="append", default=[], help="KEY=VALUE: an sc parameter for both")
    args = ap.parse_args(argv)

    from common import OUT, one_nn_accuracy, parse_param, write_rows  # benchmarks/ is the script's folder

    params = dict(parse_param(p) for p in args.param)
    from scene15_daisy import scene15_daisy_subset

    bags, labels = scene15_daisy_subset(args.per_class, 0)
    print(f"DAISY subset: {bags.n_samples} images, {bags.n_descriptors} descriptors")
    OUT.mkdir(parents=True, exist_ok=True)
    rows = []
    for seed in args.seeds:
        tr, te = stratified_split(labels, 0.2, seed)
        row = {"seed": seed, "n_train": len(tr), "n_test": len(te), **params}
        for lasso in ("cd", "homotopy") if seed % 2 == 0 else ("homotopy", "cd"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                sc = SparseCoding(lasso=lasso, random_state=seed, **params).fit(bags.subset(tr), labels[tr])
                t1 = time.perf_counter()
                F_tr, F_te = sc.transform(bags.subset(tr)), sc.transform(bags.subset(te))
                t2 = time.perf_counter()
            row[f"acc_{lasso}"] = one_nn_accuracy(F_tr, labels[tr], F_te, labels[te])
            row[f"fit_s_{lasso}"], row[f"transform_s_{lasso}"] = round(t1 - t0, 2), round(t2 - t1, 2)
        row["diff"] = row["acc_homotopy"] - row["acc_cd"]
        rows.append(row)
        write_rows(rows, OUT / f"sc_paired_{args.per_class}.csv")
        print(row, flush=True)
    d = np.array([r["diff"] for r in rows])
    print(f"accuracy homotopy - cd over {len(d)} seeds: mean {d.mean():+.2f} points, "
          f"min {d.min():+.2f}, max {d.max():+.2f}")


if __name__ == "__main__":
    main()
