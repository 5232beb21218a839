"""Why the capped fit's tail is slow, and what the face step changes: J and support changes per outer iteration.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/prolfa_support_changes.py [--n-descriptors 100000]

Fits ProLFA (d̄ = 4096, plugin defaults) with ``face_step=False`` and ``True`` on the Scene-15 SIFT-90
training images of the seed-0 split (a nested random subset holding ``--n-descriptors`` descriptors;
0 = all) and records, after every outer iteration, J, how many of the d̄ columns changed their support
(the set of descriptors they hold) since the previous iteration, and the iteration's wall time. Writes
``benchmarks/out/prolfa_support_changes.csv`` (one row per fit and iteration) and prints one summary line
per fit (iterations, final J, CPU seconds of the fit, held-out 1-NN).

It observes each iteration through the solver's ``objective`` (called once per outer iteration, on the
accepted ``C``), which this script wraps; the fit itself is unchanged.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from common import OUT, one_nn_accuracy, scene15_split, write_rows

from lfabench_plugins.aggregators.prolfa import SolverOptions, cbcd
from lfabench_plugins.aggregators.prolfa.plugin import ProLFA


def observed_fit(est, bags, y):
    """``est.fit(bags, y)``, returning one dict per outer iteration (0 = the start): J, support changes, seconds."""
    rows, state = [], {"supports": None, "t": time.perf_counter()}
    objective = cbcd.objective

    def watch(pb, C, W, P=None):
        J = objective(pb, C, W, P)
        C = C.tocsc()
        supports = [C.indices[C.indptr[j]:C.indptr[j + 1]].tobytes() for j in range(C.shape[1])]
        prev = state["supports"]
        now = time.perf_counter()
        rows.append({"iteration": len(rows), "J": J, "nnz": int(C.nnz), "seconds": round(now - state["t"], 3),
                     "support_changes": "" if prev is None else sum(a != b for a, b in zip(supports, prev))})
        state["supports"], state["t"] = supports, now
        return J

    cbcd.objective = watch
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(bags, y)
    finally:
        cbcd.objective = objective
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-descriptors", type=int, default=100_000, help="0: all training descriptors")
    ap.add_argument("--dbar", type=int, default=4096)
    args = ap.parse_args()
    train, y, test, y_test = scene15_split(args.n_descriptors)
    out = []
    for face in (False, True):
        est = ProLFA(n_prototypes=args.dbar, random_state=0, solver=SolverOptions(face_step=face))
        t0 = time.process_time()
        rows = observed_fit(est, train, y)
        cpu = time.process_time() - t0
        out += [{"face_step": face, **r} for r in rows]
        write_rows(out, OUT / "prolfa_support_changes.csv")
        acc = one_nn_accuracy(est.transform(train), y, est.transform(test), y_test)
        print(json.dumps({"face_step": face, "N": int(train.n_descriptors), "iterations": int(est.n_iter_),
                          "J": round(float(est.objective_history_[-1]), 2), "fit_cpu_s": round(cpu, 1),
                          "1nn": round(acc, 2)}), flush=True)


if __name__ == "__main__":
    main()
