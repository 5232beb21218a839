"""Which building blocks give other bits with 2 threads than with 1: each pool at one and at two threads, in turn.

    python benchmarks/thread_sums.py [--rows 100000]

Real Fifteen Scene SIFT-90 descriptors when ``../shared/data/scene15`` (or ``$LFABENCH_SHARED_DATA``) is there (the
array cache keeps them), else Gaussian rows of the same shape. For each block the same call runs with the pool
it uses at 1 and then at 2 threads (threadpoolctl; FAISS's OpenBLAS follows OpenMP's count, so FAISS's calls set
both), and the line says whether the outputs are the same bytes, how many elements differ, and the wall seconds
of each. Blocks: numpy's OpenBLAS GEMM on the shapes the aggregators use and on random shapes whose inner
dimension is or is not a multiple of 16, matrix-vector products, symmetric eigensolvers and the SVD (LAPACK),
FAISS's flat search (distances and labels) and k-means. Then the same FAISS search split into row ranges, each
range at one thread, against one call: the form :func:`lfabench.threads.map_row_blocks` uses.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def descriptors(rows: int) -> tuple[np.ndarray, str]:
    root = Path(os.environ.get("LFABENCH_SHARED_DATA", REPO.parent / "shared" / "data")) / "scene15"
    if root.is_dir():
        from lfabench.registry import get_registry

        reg = get_registry()
        dataset = reg.get_spec("dataset", "scene15").factory(root=str(root), strict=True)
        bags = reg.get_spec("descriptor", "sift").factory(max_keypoints=90).describe(dataset, progress=False,
                                                                                     cache=True)
        X = np.ascontiguousarray(bags.descriptors[:rows], dtype=np.float32)
        return X, f"Fifteen Scene SIFT-90, first {X.shape[0]} of {bags.n_descriptors} descriptors"
    rng = np.random.default_rng(0)
    return (np.abs(rng.standard_normal((rows, 128))) * 30).astype(np.float32), f"{rows} Gaussian rows"


def compare(controller, name: str, fn, apis: tuple[str, ...] = ("blas",)) -> None:
    results, seconds = [], []
    for threads in (1, 2):
        limits = {"blas": 1, "openmp": 1} | {api: threads for api in apis}
        with controller.limit(limits=limits):
            start = time.perf_counter()
            results.append(np.asarray(fn()))
            seconds.append(time.perf_counter() - start)
    a, b = results
    differ = int(np.sum(a != b)) if a.shape == b.shape else -1
    print(f"{name:58s} {'same' if differ == 0 else f'DIFFERS ({differ} of {a.size})':>24s}"
          f"  1 thread {seconds[0]:6.2f} s  2 threads {seconds[1]:6.2f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    import faiss
    import scipy.linalg
    from threadpoolctl import ThreadpoolController

    from lfabench.threads import _preload

    _preload()
    controller = ThreadpoolController()
    X, what = descriptors(args.rows)
    print(f"data: {what}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    rng = np.random.default_rng(0)
    C = X[rng.choice(X.shape[0], 256, replace=False)].copy()
    X64 = X.astype(np.float64)
    compare(controller, f"numpy sgemm X @ C.T ({X.shape[0]} x 256 x 128)", lambda: X @ C.T)
    compare(controller, f"numpy dgemm X @ C.T ({X.shape[0]} x 256 x 128)", lambda: X64 @ C.T.astype(np.float64))
    compare(controller, f"numpy dgemm X.T @ X (128 x 128, inner {X.shape[0]})", lambda: X64.T @ X64)
    for m, n, k in ((3000, 500, 200), (333, 777, 129), (3000, 500, 192), (1000, 1000, 128)):
        for dtype in (np.float32, np.float64):
            A, B = (rng.standard_normal(s).astype(dtype) for s in ((m, k), (n, k)))
            compare(controller, f"numpy {np.dtype(dtype).name} A @ B.T ({m} x {n} x {k})", lambda: A @ B.T)
    v = X64[:, 0].copy()
    compare(controller, "numpy dgemv X.T @ v", lambda: X64.T @ v)
    G = X64[:20_000].T @ X64[:20_000]
    compare(controller, "numpy eigh (128 x 128)", lambda: np.linalg.eigh(G)[1])
    compare(controller, "scipy eigh (128 x 128)", lambda: scipy.linalg.eigh(G)[1])
    compare(controller, "numpy svd (20000 x 128)", lambda: np.linalg.svd(X64[:20_000], full_matrices=False)[2])
    omp = ("blas", "openmp")
    compare(controller, "faiss.knn L2 to 256 centres: distances", lambda: faiss.knn(X, C, 1)[0], omp)
    compare(controller, "faiss.knn L2 to 256 centres: labels", lambda: faiss.knn(X, C, 1)[1], omp)

    def kmeans():
        km = faiss.Kmeans(X.shape[1], 64, niter=20, seed=2, max_points_per_centroid=X.shape[0],
                          min_points_per_centroid=1)
        km.train(X)
        return km.centroids

    compare(controller, "faiss.Kmeans (64 centres, 20 iterations)", kmeans, omp)
    with controller.limit(limits=1):
        whole = faiss.knn(X, C, 1)
        for step in (4096, 32_768):
            parts = [faiss.knn(X[i:i + step], C, 1) for i in range(0, X.shape[0], step)]
            same = all(np.array_equal(np.concatenate([p[j] for p in parts]), whole[j]) for j in (0, 1))
            print(f"faiss.knn in ranges of {step} rows, one thread each, against one call: "
                  f"{'same' if same else 'DIFFERS'}", flush=True)


if __name__ == "__main__":
    main()
