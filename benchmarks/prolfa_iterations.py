"""ProLFA's iterations between candidate searches: their cost, their floor, and what ``admm_patience`` saves.

    OMP_NUM_THREADS=1 python benchmarks/prolfa_iterations.py [--descriptor sift] [--seed 0] [--dbar 4096]

Fits ProLFA on the ``knn`` evaluator's split of Fifteen Scene (``suite/cases.py``'s ``split_bags``; the array
cache keeps the descriptors) twice in this process, with ADMM on every outer iteration (``admm_patience=None``,
Algorithm 2 as written) and with the default (``admm_patience=1``), and prints for each: CPU seconds of the
fit, of its exact searches and of the iterations between them; the floor of those iterations
(``suite/floors.py``: two passes over the working set's float64 rows per C-step trial and one gather per
iteration, at this machine's copy bandwidth, ``suite/rates.py``); the iterations, C-step trials, ADMM runs
skipped, the final J and the 1-NN accuracy on the split's test images.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from suite.cases import one_nn_accuracy, split_bags  # noqa: E402
from suite.floors import Scale, floor_seconds, ops  # noqa: E402
from suite.rates import machine_rates  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--descriptor", default="sift", choices=["sift", "daisy"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dbar", type=int, default=4096)
    args = parser.parse_args(argv)
    from lfabench_plugins.aggregators.prolfa import SolverOptions
    from lfabench_plugins.aggregators.prolfa.plugin import ProLFA

    train, fit_labels, y_train, test, y_test = split_bags("scene15", args.descriptor)
    scale = Scale.of(train, test, len(np.unique(y_train)))
    with threadpool_limits(1):
        rates = machine_rates()
        print(f"{rates['machine']['cpu_model']}: copy {rates['copy']:.1f} GB/s, float32 GEMM "
              f"{rates['gemm_float32']:.1f} GFLOP/s (one thread)")
        for patience in (None, 1):
            est = ProLFA(n_prototypes=args.dbar, random_state=args.seed, solver=SolverOptions(admm_patience=patience))
            t = time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                train_z = est.fit_transform(train, fit_labels)
            fit_s = time.process_time() - t
            info = est.fit_info_
            between = [op for op in ops("prolfa", est.get_params(), scale, "fit", searches=info["searches"],
                                        c_trials=info["c_trials"], working_set_entries=info["working_set_entries"],
                                        n_iter=info["n_iter"]) if "between" in op.what]
            between_s = info["seconds"] - info["search_s"]   # wall seconds of the solver, one thread
            floor = floor_seconds(between, rates)
            acc = one_nn_accuracy(train_z, y_train, est.transform(test), y_test)
            print(f"admm_patience={patience}: fit {fit_s:.1f} CPU s; solver {info['seconds']:.1f} s = searches "
                  f"{info['search_s']:.1f} s ({info['searches']}) + between {between_s:.1f} s (floor {floor:.2f} s, "
                  f"{between_s / floor:.1f}x); {info['n_iter']} iterations, {info['c_trials']} C-step trials, "
                  f"ADMM skipped on {info['admm_skipped']}; J {info['training_curve'][-1]:.4f}; 1-NN {acc:.2f} %",
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
