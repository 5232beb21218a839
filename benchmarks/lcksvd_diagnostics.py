"""Why LC-KSVD2 is near chance on Fifteen Scene SIFT-90 at the paper's T = 30: measurements.

For one seed's split (the benchmark's: ``stratified_split(labels, 0.2, seed)``) and each training
sparsity T in ``--fit-sparsity``, fits ``lcksvd2`` with the benchmark's settings, then codes every
descriptor on the initial (per-class K-SVD) and the LC-KSVD2 dictionary with OMP at the same T and
reports, per (dictionary, T):

- code statistics: relative reconstruction error ``||y - x D||^2 / ||y||^2``, median and 99th
  percentile of ``|x_k|`` over non-zeros, ``max_k |x_k|`` per descriptor (median over descriptors),
  condition number of the Gram matrix of the chosen atoms (median over 2,000 descriptors);
- dictionary statistics: mutual coherence ``max_{k != l} |d_k . d_l|``;
- pooled vectors: 1-NN accuracy for max-|x| pooling (the plugin's), mean-|x| (sum) pooling,
  signed mean pooling, and max pooling of the positive and negative parts separately ([2K]),
  each L2-normalised; the mean cosine between pooled vectors of two different images (how much
  images differ after pooling) and the number of distinct classes the 1-NN predicts.

Usage (about 10 min on one core)::

    flock /tmp/lfabench-bench.lock .venv/bin/python benchmarks/lcksvd_diagnostics.py --seed 0 --fit-sparsity 30 5

Prints one table; writes ``benchmarks/out/lcksvd_diagnostics_seed<seed>.csv``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import OUT, scene15_sift
from supervised_scene15 import SUPERVISED

from lfabench.evaluation import knn_predict
from lfabench.registry import get_plugin
from lfabench_plugins.aggregators.normalization import l2_normalize
from lfabench_plugins.aggregators.omp import batch_omp
from lfabench_plugins.evaluators.splits import stratified_split


def codes_of(Y: np.ndarray, D: np.ndarray, T: int, chunk: int = 20_000) -> np.ndarray:
    """[n, K] OMP codes of the L2-normalised descriptors (float32 to bound memory)."""
    out = np.empty((Y.shape[0], D.shape[0]), dtype=np.float32)
    for s in range(0, Y.shape[0], chunk):
        out[s:s + chunk] = batch_omp(l2_normalize(Y[s:s + chunk].astype(np.float64)), D, T)
    return out


def pooled(X: np.ndarray, offsets: np.ndarray) -> dict[str, np.ndarray]:
    starts = offsets[:-1]
    counts = np.diff(offsets)[:, None]
    A = np.abs(X)
    return {"max|x|": np.maximum.reduceat(A, starts, axis=0),
            "mean|x|": np.add.reduceat(A, starts, axis=0) / counts,
            "mean x": np.add.reduceat(X, starts, axis=0) / counts,
            "max x+|x-": np.hstack([np.maximum.reduceat(np.maximum(X, 0), starts, axis=0),
                                    np.maximum.reduceat(np.maximum(-X, 0), starts, axis=0)])}


def gram_condition(Y: np.ndarray, D: np.ndarray, X: np.ndarray, n: int, rng) -> float:
    rows = rng.choice(Y.shape[0], size=min(n, Y.shape[0]), replace=False)
    conds = []
    for i in rows:
        S = np.flatnonzero(X[i])
        if S.size:
            conds.append(np.linalg.cond(D[S] @ D[S].T))
    return float(np.median(conds))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fit-sparsity", type=int, nargs="+", default=[30, 5])
    args = ap.parse_args(argv)
    bags, labels = scene15_sift()
    if np.any(bags.counts == 0):
        raise SystemExit("an image without descriptors: pooling below assumes none")
    train, test = stratified_split(labels, 0.2, args.seed)
    Yall = bags.descriptors
    rng = np.random.default_rng(args.seed)
    pair_a, pair_b = rng.integers(0, bags.n_samples, 5000), rng.integers(0, bags.n_samples, 5000)
    keep = pair_a != pair_b
    rows = []
    for T in args.fit_sparsity:
        settings = {**SUPERVISED["lcksvd2"], "sparsity": T}
        est = get_plugin("aggregator", "lcksvd2")(random_state=args.seed, **settings)
        t0 = time.perf_counter()
        est.fit(bags.subset(train), labels[train])
        fit_s = time.perf_counter() - t0
        for name, D in (("start", est.initial_dictionary_), ("lcksvd2", est.dictionary_)):
            G = D @ D.T
            coherence = float(np.max(np.abs(G - np.diag(np.diag(G)))))
            X = codes_of(Yall, D, T)
            Yn = l2_normalize(Yall.astype(np.float64))
            sample = rng.choice(Yall.shape[0], 20_000, replace=False)
            resid = float(np.mean(np.sum((Yn[sample] - X[sample].astype(np.float64) @ D) ** 2, axis=1)))
            nz = np.abs(X[X != 0])
            base = {"fit_sparsity": T, "dictionary": name, "fit_s": fit_s, "coherence": coherence,
                    "rel_residual": resid, "median_abs_coef": float(np.median(nz)),
                    "p99_abs_coef": float(np.percentile(nz, 99)),
                    "median_max_abs_coef": float(np.median(np.abs(X).max(axis=1))),
                    "median_gram_cond": gram_condition(Yn, D, X, 2000, rng)}
            for pool, Z in pooled(X, bags.offsets).items():
                Z = l2_normalize(Z.astype(np.float64))
                cos = float(np.mean(np.sum(Z[pair_a[keep]] * Z[pair_b[keep]], axis=1)))
                pred = knn_predict(Z[train], labels[train], Z[test], k=1, metric="euclidean")
                rows.append({**base, "pooling": pool, "accuracy": 100.0 * float(np.mean(pred == labels[test])),
                             "mean_cos_between_images": cos, "n_pred_classes": int(np.unique(pred).size),
                             "nan_rows": int(np.isnan(Z).any(axis=1).sum())})
                print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in rows[-1].items()}, flush=True)
            del X
    df = pd.DataFrame(rows)
    OUT.mkdir(parents=True, exist_ok=True)
    df.to_csv(OUT / f"lcksvd_diagnostics_seed{args.seed}.csv", index=False, float_format="%.4f")
    print(df.to_string(index=False, float_format=lambda v: f"{v:.4g}"))


if __name__ == "__main__":
    main()
