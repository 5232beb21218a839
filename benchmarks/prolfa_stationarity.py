"""How stationary is each ProLFA solution? The Frank-Wolfe gap of J at saved selections (issue 12, target 2).

A solver's stopping rule (relative change of J below ``tol``) says when it stopped, not how close it stopped to
a stationary point of the paper's model. This script measures that independently of any solver: for each saved
``C`` of the Scene-15 seed-0 problem (SIFT-90, d̄ = 4,096, the plugin's defaults) it takes the optimal ``W``
(the exact W-step), J, and the Frank-Wolfe gap of ``J(., W)`` on the simplex
(:func:`~lfabench_plugins.aggregators.prolfa.problem.frank_wolfe_gap`: the sum over columns of
``<g_j, c_j> - min_i g_ij``; zero exactly at a first-order stationary point of the exact model).

Inputs: ``.npz`` selections (``benchmarks/common.save_selection``: ``prolfa_gpu.py pack-start``,
``prolfa_exact.py --trajectory --start``) or fitted ``.joblib`` estimators (``prolfa_gpu.py fit``).

``--calibrate``: what gap a fit that the CPU solver calls converged leaves, on a problem small enough to run
to tight tolerances (300 random training images of the seed-0 split, N = 26,379, d̄ = 256; the capped model at
tol 1e-4, 1e-6 and 1e-8, the exact model at 1e-4 and 1e-6: at 1e-8 it ran for over 30 CPU minutes without
stopping), so the paper-scale gaps can be read against it. ``--pairwise``: the same problem's exact model by
``backend="pairwise_fw"``, stopped by the gap itself (``gap_tol`` 1e-2, 1e-3, 1e-4).

    .venv/bin/python benchmarks/prolfa_stationarity.py FILE [FILE ...] --out benchmarks/results/prolfa_stationarity.csv
    .venv/bin/python benchmarks/prolfa_stationarity.py --calibrate --out benchmarks/results/prolfa_stationarity_calibration.csv
    .venv/bin/python benchmarks/prolfa_stationarity.py --calibrate --pairwise \
        --out benchmarks/results/prolfa_stationarity_calibration_pairwise.csv
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import fit_problem, load_selection, write_rows
from prolfa_gpu import N_PROTOTYPES, SEED, _load_pack


def _selection(path: Path, reps: np.ndarray):
    """``(C, J saved)`` with rows = the problem's distinct descriptors."""
    if path.suffix == ".joblib":
        import joblib

        est = joblib.load(path)
        return est.selection_.tocsr()[reps].tocsc(), float(est.objective_history_[-1])
    return load_selection(path)


def calibrate(out: Path, n_images: int = 300, n_prototypes: int = 256, pairwise: bool = False) -> None:
    import warnings

    from common import scene15_sift

    from lfabench_plugins.aggregators.prolfa import fit_prolfa
    from lfabench_plugins.aggregators.prolfa import SolverOptions
    from lfabench_plugins.aggregators.prolfa.plugin import ProLFA
    from lfabench_plugins.aggregators.prolfa.problem import frank_wolfe_gap
    from lfabench_plugins.evaluators.splits import stratified_split

    bags, labels = scene15_sift(90)
    train_idx, _ = stratified_split(labels, 0.2, SEED)
    keep = np.sort(np.random.default_rng(SEED).permutation(train_idx)[:n_images])
    train, y = bags.subset(keep), labels[keep]
    rows = []
    # --pairwise: the exact model by its solver, pairwise Frank-Wolfe, whose rule is the gap itself (gap_tol);
    # otherwise cBCD, on the plain simplex by the deprecated backend="sparse"
    settings = ((None, (1e-2, 1e-3, 1e-4)),) if pairwise else ((4, (1e-4, 1e-6, 1e-8)), (None, (1e-4, 1e-6)))
    for max_support, tols in settings:
        for tol in tols:
            rule = (dict(gap_tol=tol) if pairwise else
                    dict(tol=tol, backend="sparse") if max_support is None else dict(tol=tol))
            est = ProLFA(n_prototypes=n_prototypes, random_state=SEED, max_support=max_support,
                         solver=SolverOptions(max_iter=5000, **rule))
            pb, _, _ = fit_problem(est, train, y)
            t0 = time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = fit_prolfa(pb, est._check_params())
            cpu = time.process_time() - t0
            gap = frank_wolfe_gap(pb, res.selection, res.projection)
            J = res.objective_history[-1]
            rows.append({"N": pb.n_descriptors, "n_prototypes": n_prototypes, "max_support": max_support,
                         "backend": est.backend, "rule": "gap_tol" if pairwise else "tol", "tol": tol,
                         "iterations": res.n_iter, "converged": res.converged, "J": round(J, 4),
                         "fw_gap": round(float(gap.sum()), 4), "fw_gap_over_J": float(f"{gap.sum() / J:.3g}"),
                         "nnz_per_column_mean": round(res.selection.nnz / n_prototypes, 1), "cpu_s": round(cpu, 1)})
            print(rows[-1], flush=True)
            out.parent.mkdir(parents=True, exist_ok=True)
            write_rows(rows, out)


def main() -> None:
    from lfabench_plugins.aggregators.prolfa import objective
    from lfabench_plugins.aggregators.prolfa.plugin import ProLFA
    from lfabench_plugins.aggregators.prolfa.problem import frank_wolfe_gap
    from lfabench_plugins.aggregators.prolfa.wstep import solve_w

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--out", type=Path, default=HERE / "out" / "prolfa_stationarity.csv")
    ap.add_argument("--calibrate", action="store_true", help="converged fits on a 26k-descriptor subset instead")
    ap.add_argument("--pairwise", action="store_true", help="with --calibrate: the exact model by backend=pairwise_fw")
    args = ap.parse_args()
    if args.calibrate:
        return calibrate(args.out, pairwise=args.pairwise_fw)
    bags, y = _load_pack()
    pb, _, reps = fit_problem(ProLFA(n_prototypes=N_PROTOTYPES, random_state=SEED), bags, y)
    rows = []
    for path in args.files:
        C, J_saved = _selection(path, reps)
        t0 = time.process_time()
        P = pb.prototypes(C)
        W = solve_w(pb, P)
        J = objective(pb, C, W, P)
        gap = frank_wolfe_gap(pb, C, W)
        nnz = np.diff(C.indptr)
        rows.append({"selection": path.name, "J_saved": round(J_saved, 4), "J": round(J, 4),
                     "nnz_per_column_mean": round(float(nnz.mean()), 1), "nnz_per_column_max": int(nnz.max()),
                     "fw_gap": round(float(gap.sum()), 3), "fw_gap_over_J": float(f"{gap.sum() / J:.3g}"),
                     "fw_gap_column_max": round(float(gap.max()), 4),
                     "columns_gap_above_1e-3": int((gap > 1e-3).sum()), "cpu_s": round(time.process_time() - t0, 1)})
        print(rows[-1], flush=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        write_rows(rows, args.out)


if __name__ == "__main__":
    main()
