"""Why does the face-step fit end above the fit without it at d̄ = 8,192? Each solver continued from the other's end.

``docs/prolfa-performance.md`` ("Scaling law"): on the seed-0 split's nested 100k-descriptor subset, at d̄ = 8,192
(twice the paper's), the default solver (face step) stops at a J about 1 % above the solver without it, even at a
tighter ``tol``. This script fits both from the seeded one-hot start, then continues each from the other's
solution (:func:`common.fit_from_start`), and splits every end point's J into its parts (fit loss and
exclusivity, from ``fit_info_``) and counts the distinct descriptors the 4 x d̄ support slots use.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/prolfa_basins.py [--dbar 8192] [--n 100000] --out prolfa_basins

Resumable: each fit saves its selection under ``benchmarks/out/`` and is skipped when that file exists; the CSV
``benchmarks/out/<out>.csv`` is rewritten after every fit.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    OUT,
    fit_from_start,
    one_nn_accuracy,
    save_selection,
    scene15_split,
    selection_on_problem_rows,
    write_rows,
)

from lfabench_plugins.aggregators.prolfa import SolverOptions  # noqa: E402
from lfabench_plugins.aggregators.prolfa.plugin import ProLFA  # noqa: E402

#: ``(name, face_step, start)``: the two solvers from the one-hot start, then each from the other's end point.
FITS = [("face", True, None), ("without_face", False, None),
        ("face_then_without", False, "face"), ("without_then_face", True, "without_face")]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dbar", type=int, default=8192)
    ap.add_argument("--n", type=int, default=100_000, help="descriptors of the seed-0 split's nested subset")
    ap.add_argument("--out", default="prolfa_basins")
    args = ap.parse_args(argv)
    train, y, test, y_test = scene15_split(args.n, 0)
    OUT.mkdir(parents=True, exist_ok=True)
    table = OUT / f"{args.out}.csv"
    rows = list(csv.DictReader(open(table))) if table.exists() else []
    for name, face, start in FITS:
        saved = OUT / f"{args.out}_{name}.npz"
        start_path = None if start is None else OUT / f"{args.out}_{start}.npz"
        if saved.exists() and any(r["fit"] == name for r in rows):
            print(f"{name}: done before ({saved}); delete it to refit")
            continue
        rows = [r for r in rows if r["fit"] != name]
        est = ProLFA(n_prototypes=args.dbar, random_state=0, solver=SolverOptions(face_step=face))
        t0 = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(train, y) if start_path is None else fit_from_start(est, train, y, start_path)
        cpu = time.process_time() - t0
        C = est.selection_.tocsc()
        info = est.fit_info_
        J = float(est.objective_history_[-1])
        rows.append(dict(
            fit=name, face_step=face, start=start or "one_hot", iterations=est.n_iter_,
            start_J=round(float(est.objective_history_[0]), 4),
            J=round(J, 4), fit_loss=round(info["fit_loss"], 4), exclusivity=round(info["exclusivity"], 4),
            lambda1_exclusivity=round(est.lambda1 * info["exclusivity"], 4),
            support_slots=int(C.nnz), distinct_support_rows=int(np.unique(C.indices).size),
            accuracy_1nn=round(one_nn_accuracy(est.transform(train), y, est.transform(test), y_test), 2),
            cpu_seconds=round(cpu, 1)))
        print(rows[-1], flush=True)
        save_selection(saved, selection_on_problem_rows(est, train, y), J)
        write_rows(rows, table)


if __name__ == "__main__":
    main()
