"""FV encoding, old against new, on a Fifteen Scene DAISY subset at the ``fv`` plugin's defaults (K = 64
components, PCA to 64 dimensions): the former loop over components of sparse pooling products against
``fisher_encode``'s stacked GEMM per padded batch, timed alternately on the same projected descriptors, with
the largest difference of the raw vectors. Also prints the encoding's floor: ``4 N K d`` operations of its
GEMM (plus ``4 N K d`` of the posteriors' GEMM) at this machine's float64 GEMM rate. Run it with
``OMP_NUM_THREADS=1`` on a machine shared with other work: a threaded BLAS waiting for a descheduled thread
turns the small GEMMs of both paths into noise.

    OMP_NUM_THREADS=1 python benchmarks/fv_encode.py --per-class 40 --repeats 3
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from scipy.special import logsumexp

from lfabench_plugins.aggregators.fv import FisherVector, fisher_encode


def gmm_posteriors_by_terms(X, weights, means, variances):
    """The former posteriors: the Mahalanobis terms as two GEMMs, scipy's logsumexp."""
    prec = 1.0 / variances
    maha = (X * X) @ prec.T - 2.0 * X @ (means * prec).T + np.sum(means * means * prec, axis=1)
    log_p = np.log(weights) - 0.5 * np.sum(np.log(variances), axis=1) - 0.5 * maha
    return np.exp(log_p - logsumexp(log_p, axis=1, keepdims=True))


def fisher_encode_by_component(bags, X, weights, means, variances):
    """The former implementation: per GMM component, two sparse pooling products over all descriptors."""
    X = np.asarray(X, dtype=np.float64)
    K, d = means.shape
    m = bags.n_samples
    Q = gmm_posteriors_by_terms(X, weights, means, variances)
    P = bags.pooling_matrix(mean=False, dtype=np.float64)
    n = np.maximum(bags.counts, 1).astype(np.float64)[:, None]
    S0 = np.asarray(P @ Q)
    sigma = np.sqrt(variances)
    U = np.empty((m, K, d))
    V = np.empty((m, K, d))
    for k in range(K):
        qX = Q[:, k:k + 1] * X
        S1 = np.asarray(P @ qX)
        S2 = np.asarray(P @ (qX * X))
        s0 = S0[:, k:k + 1]
        U[:, k] = (S1 - s0 * means[k]) / sigma[k] / (n * np.sqrt(weights[k]))
        V[:, k] = (((S2 - 2.0 * means[k] * S1 + s0 * means[k] ** 2) / variances[k] - s0)
                   / (n * np.sqrt(2.0 * weights[k])))
    return np.concatenate([U.reshape(m, K * d), V.reshape(m, K * d)], axis=1)


def gemm_rate(n: int = 2048, dtype=np.float64, repeats: int = 5) -> float:
    """Best GFLOP/s of an ``n x n x n`` numpy matmul over ``repeats`` tries."""
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(n, n)).astype(dtype), rng.normal(size=(n, n)).astype(dtype)
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        A @ B
        best = min(best, time.perf_counter() - t)
    return 2 * n ** 3 / best / 1e9


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-class", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)

    from scene15_daisy import scene15_daisy_subset  # benchmarks/ is the script's folder

    bags, _ = scene15_daisy_subset(args.per_class, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fv = FisherVector(random_state=0).fit(bags)
    X = fv.project(bags.descriptors)
    N, (K, d) = len(X), fv.means_.shape
    print(f"DAISY subset: {bags.n_samples} images, {N} descriptors; K={K}, d'={d}")
    times = {"old": [], "new": []}
    for r in range(args.repeats):
        for which in (("old", "new") if r % 2 == 0 else ("new", "old")):
            t = time.perf_counter()
            F = (fisher_encode_by_component if which == "old" else fisher_encode)(
                bags, X, fv.weights_, fv.means_, fv.variances_)
            times[which].append(time.perf_counter() - t)
            if which == "old":
                F_old = F
            else:
                F_new = F
    old, new = np.median(times["old"]), np.median(times["new"])
    print(f"encoding (median of {args.repeats}): old {old:.3f} s, new {new:.3f} s, speed-up {old / new:.2f}x; "
          f"max |F_new - F_old| = {np.abs(F_new - F_old).max():.2e} (max |F| {np.abs(F_old).max():.2e})")
    rate = gemm_rate()
    flops = 4 * N * K * d + 4 * N * K * d
    print(f"float64 GEMM rate {rate:.1f} GFLOP/s: floor {flops / rate / 1e9:.3f} s "
          f"({flops / 1e9:.2f} GFLOP); new at {new / (flops / rate / 1e9):.1f}x the floor")


if __name__ == "__main__":
    main()
