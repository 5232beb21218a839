"""The paper's exact model (plain simplex, ``max_support=None``): how its support and J evolve.

Issue 12 asks whether the exact model converges at paper scale (Fifteen Scene SIFT-90,
N = 316k, d̄ = 4096) within the paper's 1,023 s. Two measurements answer it:

* ``--trajectory``: the paper-scale fit, one CSV row per outer iteration (J, relative change,
  non-zeros of C per column, working-set size, wall and CPU seconds), stopped after
  ``--max-iter`` iterations or ``--budget`` CPU seconds;
* ``--converged``: fits run to convergence (relative change of J < tol) on nested random subsets
  of the training images (N from a few thousand descriptors up), recording the support of the
  solution (non-zeros per column and in all): how the optimum's size grows with N.

    flock /tmp/lfabench-bench.lock .venv/bin/python benchmarks/prolfa_exact.py --trajectory --converged
    .venv/bin/python benchmarks/prolfa_exact.py --trajectory --init cancelling --max-iter 200   # from the cancelling start
    .venv/bin/python benchmarks/prolfa_exact.py --trajectory --start benchmarks/gpu_pack/start_capped_seed0.npz

``--start FILE`` continues from a saved ``C`` (``prolfa_gpu.py pack-start``: the capped model's solution) instead
of the seeded start, and saves the final ``C`` beside the trajectory (``..._C.npz``, for ``prolfa_stationarity.py``).

Rows go to ``benchmarks/out/prolfa_exact_{trajectory,converged}.csv`` (rewritten after every row).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from common import (
    OUT,
    fit_from_start,
    images_holding,
    one_nn_accuracy,
    save_selection,
    scene15_sift,
    selection_on_problem_rows,
    write_rows,
)

from lfabench_plugins.aggregators.prolfa import SolverOptions
from lfabench_plugins.aggregators.prolfa.plugin import ProLFA
from lfabench_plugins.evaluators.splits import stratified_split


class IterationLog(logging.Handler):
    """Collects the solver's per-iteration log records (``prolfa iter ...``) as dicts."""

    def __init__(self, n_prototypes: int, csv_path=None):
        super().__init__(level=logging.DEBUG)
        self.rows, self.n_prototypes, self.csv_path = [], n_prototypes, csv_path
        self.c0 = time.process_time()

    def emit(self, record):
        if not str(record.msg).startswith("prolfa iter") or len(record.args) != 10:
            return            # not the per-iteration line (e.g. the "search more rows" notice)
        it, J, rel, _admm, _s, _t, nnz, ws, searched, elapsed = record.args
        self.rows.append({"iteration": it, "J": J, "relative_change": rel, "nnz": nnz,
                          "nnz_per_column": round(nnz / self.n_prototypes, 2), "working_set": ws,
                          "searched": bool(searched.strip()), "wall_s": round(elapsed, 2),
                          "cpu_s": round(time.process_time() - self.c0, 2)})
        if self.csv_path:
            write_rows(self.rows, self.csv_path)
        print(self.rows[-1], flush=True)


def fit(bags, y, n_prototypes, max_iter, csv_path=None, init="one_hot", start=None):
    logger = logging.getLogger("lfabench_plugins.aggregators.prolfa")
    handler = IterationLog(n_prototypes, csv_path)
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    # cBCD on the exact model (the deprecated backend="sparse"; pairwise Frank-Wolfe is that model's solver):
    # this script studies why cBCD stalls there
    est = ProLFA(n_prototypes=n_prototypes, max_support=None, random_state=0,
                 solver=SolverOptions(max_iter=max_iter, init=init, backend="sparse"))
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(bags, y) if start is None else fit_from_start(est, bags, y, start)
    finally:
        logger.removeHandler(handler)
    return est, time.perf_counter() - t0, time.process_time() - c0, handler.rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trajectory", action="store_true", help="paper-scale fit, one row per outer iteration")
    ap.add_argument("--max-iter", type=int, default=40, help="outer iterations of the paper-scale trajectory")
    ap.add_argument("--converged", action="store_true", help="fits to convergence on nested subsets")
    ap.add_argument("--n", type=int, nargs="*", default=[5_000, 10_000, 20_000, 40_000])
    ap.add_argument("--dbar", type=int, default=256, help="d̄ of the --converged fits")
    ap.add_argument("--init", default="one_hot", help="the solver's start for --trajectory: one_hot or cancelling")
    ap.add_argument("--start", default=None, help="--trajectory from this saved C instead (continuation)")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    bags, labels = scene15_sift(90)
    train_idx, test_idx = stratified_split(labels, 0.2, 0)
    train, y = bags.subset(train_idx), labels[train_idx]
    if args.converged:
        rows = []
        for n in args.n:
            sub, y_sub = images_holding(train, y, n)
            est, wall, cpu, it_rows = fit(sub, y_sub, args.dbar, 2000)
            nnz = np.diff(est.selection_.tocsc().indptr)
            rows.append({"N": int(sub.n_descriptors), "n_prototypes": args.dbar,
                         "iterations": est.n_iter_, "converged": bool(est.converged_), "J": it_rows[-1]["J"],
                         "nnz": int(nnz.sum()), "nnz_per_column_mean": round(float(nnz.mean()), 2),
                         "nnz_per_column_max": int(nnz.max()), "wall_s": round(wall, 1), "cpu_s": round(cpu, 1)})
            print(rows[-1], flush=True)
            write_rows(rows, OUT / "prolfa_exact_converged.csv")
    if args.trajectory:
        suffix = "_continued" if args.start else "" if args.init == "one_hot" else f"_{args.init}"
        est, wall, cpu, _ = fit(train, y, 4096, args.max_iter, OUT / f"prolfa_exact_trajectory{suffix}.csv", args.init,
                                args.start)
        save_selection(OUT / f"prolfa_exact_trajectory{suffix}_C.npz", selection_on_problem_rows(est, train, y),
                       est.objective_history_[-1])
        acc = one_nn_accuracy(est.transform(train), y, est.transform(bags.subset(test_idx)), labels[test_idx])
        print({"init": est.fit_info_["start"], "iterations": est.n_iter_, "converged": bool(est.converged_),
               "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "accuracy_1nn": round(acc, 2)}, flush=True)


if __name__ == "__main__":
    main()
