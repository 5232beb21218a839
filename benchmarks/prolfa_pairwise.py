"""The paper's exact model (``max_support=None``) at paper scale by block pairwise Frank-Wolfe (issue 12, target 2).

Fits ProLFA with ``backend="pairwise_fw"`` on the Scene-15 SIFT-90 training split (80/20, the evaluator's
seeded split), d̄ = 4,096, the plugin's defaults otherwise, from the seeded one-hot start (or ``--start FILE``,
a saved C), and writes one CSV row per exact search: J, the Frank-Wolfe gap (absolute and relative to J), the
support, the working-set width, wall and CPU seconds. The stopping rule is ``gap_tol`` (the FW gap at most that
fraction of J), or ``--max-iter`` searches. At the end: the gap recomputed independently of the solver
(:func:`~lfabench_plugins.aggregators.prolfa.problem.frank_wolfe_gap`, one dense pass), J recomputed by
``objective``, held-out 1-NN, peak RSS; the final C is saved for ``prolfa_stationarity.py``.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/prolfa_pairwise.py [--gap-tol 1e-3] [--seed 0]

Rows go to ``benchmarks/out/prolfa_pairwise_seed{S}.csv`` (rewritten after every search), the end figures to
``benchmarks/out/prolfa_pairwise_summary.csv`` (one row per seed and start).
"""

from __future__ import annotations

import argparse
import csv
import logging
import resource
import sys
import time
import warnings

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from common import (
    OUT,
    fit_from_start,
    fit_problem,
    one_nn_accuracy,
    save_selection,
    scene15_sift,
    selection_on_problem_rows,
    write_rows,
)

from lfabench_plugins.aggregators.prolfa import objective
from lfabench_plugins.aggregators.prolfa import SolverOptions
from lfabench_plugins.aggregators.prolfa.plugin import ProLFA
from lfabench_plugins.aggregators.prolfa.problem import frank_wolfe_gap
from lfabench_plugins.evaluators.splits import stratified_split


class SearchLog(logging.Handler):
    """One row per exact search, from the solver's ``prolfa pairwise iter`` log lines (with CPU seconds)."""

    def __init__(self, csv_path):
        super().__init__(level=logging.DEBUG)
        self.rows, self.csv_path, self.c0 = [], csv_path, time.process_time()

    def emit(self, record):
        if not str(record.msg).startswith("prolfa pairwise iter"):
            return
        it, J, gap, rel, nnz, K, wall = record.args
        cpu = time.process_time() - self.c0
        self.rows.append({"search": it, "J": round(J, 4), "fw_gap": round(gap, 4), "fw_gap_over_J": float(f"{rel:.4g}"),
                          "nnz_per_column": round(nnz / 4096, 2), "working_set_width": K, "wall_s": round(wall, 1),
                          "cpu_s": round(cpu, 1)})
        write_rows(self.rows, self.csv_path)
        print(self.rows[-1], flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gap-tol", type=float, default=1e-3)
    ap.add_argument("--max-iter", type=int, default=10_000, help="searches at most")
    ap.add_argument("--search-every", type=int, default=None, help="pairwise steps per search (plugin default)")
    ap.add_argument("--start", default=None, help="continue from this saved C instead of the one-hot start")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    bags, labels = scene15_sift(90)
    train_idx, test_idx = stratified_split(labels, 0.2, args.seed)
    train, y = bags.subset(train_idx), labels[train_idx]
    name = (f"prolfa_pairwise_seed{args.seed}" + ("_continued" if args.start else "")
            + (f"_every{args.search_every}" if args.search_every else ""))
    extra = {"search_every": args.search_every} if args.search_every else {}
    est = ProLFA(n_prototypes=4096, max_support=None, random_state=args.seed,
                 solver=SolverOptions(gap_tol=args.gap_tol, max_iter=args.max_iter), **extra)
    logger = logging.getLogger("lfabench_plugins.aggregators.prolfa")
    handler = SearchLog(OUT / f"{name}.csv")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(train, y) if args.start is None else fit_from_start(est, train, y, args.start)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    logger.removeHandler(handler)
    pb, _, reps = fit_problem(est, train, y)                  # the fit's problem, rebuilt once for the checks
    C = selection_on_problem_rows(est, train, y, reps)
    save_selection(OUT / f"{name}_C.npz", C, est.objective_history_[-1])
    t1 = time.process_time()
    gap = float(frank_wolfe_gap(pb, C, est.projection_).sum())
    J = objective(pb, C, est.projection_)
    check_s = time.process_time() - t1
    acc = one_nn_accuracy(est.transform(train), y, est.transform(bags.subset(test_idx)), labels[test_idx])
    summary = {"seed": args.seed, "start": est.fit_info_["start"], "searches": est.n_iter_, "converged": bool(est.converged_),
           "J_solver": round(float(est.objective_history_[-1]), 4), "J_objective": round(J, 4),
           "fw_gap_solver": round(est.fit_info_["frank_wolfe_gap"], 4), "fw_gap_recomputed": round(gap, 4),
           "fw_gap_over_J": float(f"{gap / J:.4g}"), "nnz_per_column_mean": round(C.nnz / 4096, 1),
           "nnz_per_column_max": est.fit_info_["nnz_per_column_max"], "fit_wall_s": round(wall, 1),
           "fit_cpu_s": round(cpu, 1), "check_cpu_s": round(check_s, 1), "accuracy_1nn": round(acc, 2),
           "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}
    print(summary, flush=True)
    # one row per seed and start in the summary CSV (a rerun replaces its own row)
    path = OUT / "prolfa_pairwise_summary.csv"
    rows = list(csv.DictReader(path.open())) if path.exists() else []
    rows = [r for r in rows if (r["seed"], r["start"]) != (str(args.seed), summary["start"])] + [summary]
    write_rows(sorted(rows, key=lambda r: (str(r["start"]), int(r["seed"]))), path)


if __name__ == "__main__":
    main()
