"""ProLFA's exact candidate search against its floor: where a search's time goes beyond ``2 N d d̄``.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/search_floor.py [--n 316030] [--dim 128] \
        [--queries 4096] [--k 16] [--repeats 2]

The search (``prolfa.search.top_candidates``: per column of the ``(d, d̄)`` factor, the ``k`` rows of largest
negative inner product, one flat FAISS search) on Gaussian data of the fit's shapes (the defaults: the seed-0
split's SIFT-90, N = 316,030 distinct descriptors, d = 128, d̄ = 4,096 prototypes; ``--n 483000 --dim 200`` is
DAISY-150's), against the same products alone in NumPy in FAISS's blocks (4,096 queries x 1,024 rows: its
``distance_compute_blas_query_bs`` and ``_database_bs``), and against the floor ``2 N d d̄`` at this machine's
float32 GEMM rate (``suite/rates.py``'s ``gemm_rate``, 1024^3, measured here). The three alternate, CPU seconds of
this process, best of ``--repeats``. The search minus the products is FAISS's selection of the ``k`` best per
query; the products minus the floor is what the GEMM loses at an inner dimension of ``d`` against a square one.
The time of a product does not depend on the values; the selection's does a little (how often a row enters a
query's heap), so its share on real descriptors may differ.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from revisions import cpu  # noqa: E402
from suite.rates import gemm_rate  # noqa: E402

#: FAISS's blocks on its BLAS route (queries x database rows per product).
QUERY_BLOCK, DATABASE_BLOCK = 4096, 1024


def blocked_products(X: np.ndarray, H: np.ndarray) -> None:
    """Every inner product of the search, in FAISS's blocks, discarded."""
    Q = np.ascontiguousarray(-H.T, dtype=np.float32)
    for q in range(0, Q.shape[0], QUERY_BLOCK):
        for s in range(0, X.shape[0], DATABASE_BLOCK):
            Q[q:q + QUERY_BLOCK] @ X[s:s + DATABASE_BLOCK].T


def cpu_best(fn, repeats: int) -> float:
    """The least CPU seconds of ``repeats`` calls of ``fn``."""
    return min(cpu(fn)[0] for _ in range(repeats))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=316_030)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--queries", type=int, default=4096)
    parser.add_argument("--k", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    from lfabench_plugins.aggregators.prolfa.search import top_candidates

    rng = np.random.default_rng(0)
    X = rng.standard_normal((args.n, args.dim), dtype=np.float32)
    H = rng.standard_normal((args.dim, args.queries))
    with threadpool_limits(1):
        rate = max(gemm_rate("float32") for _ in range(2))
        search = cpu_best(lambda: top_candidates(X, H, args.k), args.repeats)
        products = cpu_best(lambda: blocked_products(X, H), args.repeats)
    floor = 2.0 * args.n * args.dim * args.queries / (rate * 1e9)
    print(f"N={args.n}, d={args.dim}, d̄={args.queries}, k={args.k}; float32 GEMM {rate:.1f} GFLOP/s")
    print(f"  search (top_candidates) {search:.2f} s = {search / floor:.2f}x the floor")
    print(f"  its products alone       {products:.2f} s = {products / floor:.2f}x the floor")
    print(f"  floor 2 N d d̄            {floor:.2f} s")
    print(f"  selection (search - products): {search - products:.2f} s, {100 * (search - products) / search:.0f} % "
          f"of the search")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
