"""Why DBoWs scores below its own start on Fifteen Scene SIFT-90: the LDA criterion on training vs held-out images.

For seed 0's 80/20 split, fits DBoWs with ``max_iter`` = 0 (the seeded k-means soft BoW it starts from),
10 and 50 (the benchmark's setting), and reports, for each: the trace-ratio criterion
``J = tr(S_w) / tr(S_b)`` (lower is better) on the training histograms and on the held-out ones,
and 1-NN accuracy on the held-out images.

    .venv/bin/python benchmarks/dbows_diagnostics.py [--iters 0 10 50]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from common import one_nn_accuracy, scene15_sift

from lfabench_plugins.aggregators.dbows import DBoWs, lda_trace_ratio
from lfabench_plugins.aggregators.supervised import class_indicator
from lfabench_plugins.evaluators.splits import stratified_split


def criterion(S: np.ndarray, y: np.ndarray) -> float:
    return lda_trace_ratio(S, class_indicator(y, len(y)))[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, nargs="+", default=[0, 10, 50])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    bags, labels = scene15_sift(90)
    tr, te = stratified_split(labels, 0.2, args.seed)
    train, test = bags.subset(tr), bags.subset(te)
    print("| max_iter | J on training images | J on held-out images | held-out 1-NN | fit s |\n|---|---|---|---|---|")
    for it in args.iters:
        est = DBoWs(max_iter=it, random_state=args.seed)
        t0 = time.perf_counter()
        est.fit(train, labels[tr])
        seconds = time.perf_counter() - t0
        S_tr, S_te = est.transform(train), est.transform(test)
        acc = one_nn_accuracy(S_tr, labels[tr], S_te, labels[te])
        print(f"| {it} | {criterion(S_tr, labels[tr]):.4f} | {criterion(S_te, labels[te]):.4f} | {acc:.2f} % | "
              f"{seconds:.0f} |", flush=True)


if __name__ == "__main__":
    main()
