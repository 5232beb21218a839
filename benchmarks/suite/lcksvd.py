"""LC-KSVD2's stages at the paper's settings, each beside its floor (``docs/performance.md``, LC-KSVD2).

K = 450 atoms, T = 30, 30,000 training descriptors of the ``knn`` evaluator's seed-0 split of Fifteen Scene
(SIFT-90: d = 128; DAISY-150: d = 200). A fit is 15 x 20 per-class K-SVD iterations, 20 K-SVD iterations
on all 30,000 descriptors and 50 on the stacked signals (p = d + K + C); a transform is OMP of every
descriptor. ``time_*`` times one of each stage (one thread, as a run's default ``threads: 1``);
``track_floor_*`` gives that stage's floor in seconds: its dominant operations (:func:`omp_flop`,
:func:`ksvd_iteration_flop`) at the GEMM rate measured in the same setup.
"""

from __future__ import annotations

import time

import numpy as np
from threadpoolctl import threadpool_limits

from lfabench_plugins.aggregators.lcksvd import ridge_transform
from lfabench_plugins.aggregators.normalization import l2_normalize
from lfabench_plugins.aggregators.omp import batch_omp, ksvd, normalize_atoms

from .cases import split_bags

K, T, C, N_TRAIN = 450, 30, 15, 30_000


def omp_flop(n: int, d: int, n_atoms: int = K, sparsity: int = T) -> float:
    """Operations of Batch-OMP on n signals: the GEMM ``Y D^T`` (2 n d K) and, per signal, the Cholesky
    column ``G[:, k] - V w`` of each step (2 t K at step t) plus the correlation update (2 K)."""
    return 2.0 * n * d * n_atoms + n * n_atoms * sparsity * (sparsity + 1)


def ksvd_iteration_flop(n: int, d: int, p: int, n_atoms: int = K, sparsity: int = T) -> float:
    """One K-SVD iteration: OMP codes, then the atom updates (two passes over each code's descriptor rows,
    the other atoms' rows twice per atom) and the residual norms (a p-row per non-zero)."""
    return omp_flop(n, d, n_atoms, sparsity) + 4.0 * n * sparsity * d + 4.0 * n_atoms * n_atoms * p \
        + 2.0 * n * sparsity * p


def gemm_rate(size: int = 1024) -> float:
    """FLOP/s of a float64 square matmul on one thread, best of 3."""
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(size, size)), rng.normal(size=(size, size))
    best = np.inf
    with threadpool_limits(1):
        for _ in range(3):
            start = time.perf_counter()
            a @ b
            best = min(best, time.perf_counter() - start)
    return 2.0 * size ** 3 / best


class LcksvdStages:
    """One iteration of each LC-KSVD2 stage at the paper's settings, and its floor."""

    params = [["sift", "daisy"]]
    param_names = ["descriptor"]
    timeout = 1800
    number = 1
    repeat = 1
    rounds = 1

    def setup(self, descriptor):
        train, labels, _, test, _ = split_bags("scene15", descriptor)
        rng = np.random.default_rng(0)
        per_descriptor = np.asarray(labels)[train.sample_index()]
        rows = np.sort(rng.choice(train.n_descriptors, size=N_TRAIN, replace=False))
        self.Y = l2_normalize(train.descriptors[rows].astype(np.float64))
        self.labels = per_descriptor[rows]
        atom_class = np.repeat(np.arange(C), K // C)
        self.D0 = np.vstack([self.Y[rng.choice(np.flatnonzero(self.labels == c), K // C, replace=False)]
                             for c in range(C)])
        X0 = batch_omp(self.Y, self.D0, T)
        Q = (self.labels[:, None] == atom_class[None, :]).astype(np.float64)
        H = np.eye(C)[self.labels]
        self.class_rows = np.hstack([4.0 * (atom_class[None, :] == np.arange(C)[:, None]), 2.0 * np.eye(C)])
        self.D_new0 = np.hstack([self.D0, 4.0 * ridge_transform(X0, Q), 2.0 * ridge_transform(X0, H)])
        self.Yc = self.Y[self.labels == 0]
        self.test = l2_normalize(test.descriptors.astype(np.float64))
        self.D = normalize_atoms(self.D0)
        self.rate = gemm_rate()

    def time_class_init_iteration(self, descriptor):
        with threadpool_limits(1):
            ksvd(self.Yc, self.Yc[:K // C], T, 1, progress=False)

    def time_all_iteration(self, descriptor):
        with threadpool_limits(1):
            ksvd(self.Y, self.D0, T, 1, progress=False)

    def time_stacked_iteration(self, descriptor):
        with threadpool_limits(1):
            ksvd(self.Y, self.D_new0, T, 1, progress=False, class_rows=self.class_rows, labels=self.labels)

    def time_transform_test_set(self, descriptor):
        with threadpool_limits(1):
            batch_omp(self.test, self.D, T)

    def track_floor_all_iteration(self, descriptor):
        d = self.Y.shape[1]
        return ksvd_iteration_flop(N_TRAIN, d, d) / self.rate

    def track_floor_stacked_iteration(self, descriptor):
        return ksvd_iteration_flop(N_TRAIN, self.Y.shape[1], self.D_new0.shape[1]) / self.rate

    def track_floor_transform_test_set(self, descriptor):
        return omp_flop(self.test.shape[0], self.test.shape[1]) / self.rate

    track_floor_all_iteration.unit = track_floor_stacked_iteration.unit = "s"
    track_floor_transform_test_set.unit = "s"
