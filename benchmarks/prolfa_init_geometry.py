"""Why the cancelling start classifies worse: the same class information, another Euclidean geometry.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/prolfa_init_geometry.py [--n-descriptors 100000]

Fits ProLFA (d̄ = 4096, plugin defaults) from the one-hot and from the cancelling start on the Scene-15
SIFT-90 training images of the seed-0 split (a nested random subset holding ``--n-descriptors``
descriptors; 0 = all), and scores the held-out images by 1-NN on the ProLFA vectors: raw (the benchmark's
protocol), after per-feature standardisation, and after shrinkage LDA fitted on the training vectors (the
best linear map: what a linear read-out of the same vectors can reach). Also prints J, the mean vector norm
and the spread of the vectors' covariance spectrum (share of the top 10 eigenvalues, participation ratio).
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings

import numpy as np
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from common import one_nn_accuracy, scene15_split

from lfabench_plugins.aggregators.prolfa import SolverOptions
from lfabench_plugins.aggregators.prolfa.plugin import ProLFA


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-descriptors", type=int, default=100_000, help="0: all training descriptors")
    args = ap.parse_args()
    train, y, test, y_test = scene15_split(args.n_descriptors)
    for init in ("one_hot", "cancelling"):
        est = ProLFA(n_prototypes=4096, random_state=0, solver=SolverOptions(init=init))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(train, y)
        F, F_test = est.transform(train), est.transform(test)
        spectrum = np.clip(np.linalg.eigvalsh(np.cov(F.T)), 0, None)[::-1]
        mean, sd = F.mean(axis=0), F.std(axis=0) + 1e-12
        lda = LinearDiscriminantAnalysis(solver="eigen", shrinkage="auto").fit(F, y)
        print(json.dumps({
            "init": est.fit_info_["start"], "N": int(train.n_descriptors), "iterations": int(est.n_iter_),
            "J": round(float(est.objective_history_[-1]), 2),
            "1nn_raw": round(one_nn_accuracy(F, y, F_test, y_test), 2),
            "1nn_standardised": round(one_nn_accuracy((F - mean) / sd, y, (F_test - mean) / sd, y_test), 2),
            "1nn_after_lda": round(one_nn_accuracy(lda.transform(F), y, lda.transform(F_test), y_test), 2),
            "mean_vector_norm": round(float(np.linalg.norm(F, axis=1).mean()), 4),
            "top10_variance_share": round(float(spectrum[:10].sum() / spectrum.sum()), 3),
            "participation_ratio": round(float(spectrum.sum() ** 2 / (spectrum ** 2).sum()), 2)}), flush=True)


if __name__ == "__main__":
    main()
