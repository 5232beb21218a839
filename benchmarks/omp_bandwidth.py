"""What bounds LC-KSVD2's Batch-OMP: its Cholesky columns against the same loop alone and a plain read of V.

    OMP_NUM_THREADS=1 python benchmarks/omp_bandwidth.py [--descriptors sift daisy] [--repeats 3]

At step t of a signal, ``gram_omp`` (``plugins/aggregators/omp_kernels.py``) computes the Cholesky column
``G[k] - sum_{j<t} L[t, j] V[j]``: it reads t rows of the [T, K] scratch ``V`` (108 KB at K = 450, T = 30: more
than a core's L1, within its L2), one multiply-add per value read. On the 30,000 training descriptors of the
``knn`` evaluator's seed-0 split (``benchmarks/suite/lcksvd.py``'s setting), one thread, alternately, best of
``repeats`` (CPU seconds):

- ``gram_omp`` itself, with the values of V it read (``sum_i K count_i (count_i - 1) / 2``, from its counts);
- the column loop alone: the kernel's own ``_subtract_rows`` for the same steps, with no selection, no
  correlation update and no final solve;
- a plain read of the same t rows at every step (a reassociated sum, nothing written).

Printed: each one's time, its multiply-adds (or reads) per second and the bytes of V it read per second. The
OMP's rate against the column loop's says what the rest of the kernel costs; the column loop's against the
plain read, how far its reads are from what the core streams from that cache level.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from numba import njit
from threadpoolctl import threadpool_limits

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from lfabench_plugins.aggregators.omp_kernels import _subtract_rows, gram_omp  # noqa: E402
from omp_kernel import kernel_cases, paper_stages  # noqa: E402
from revisions import cpu  # noqa: E402
from suite.lcksvd import T  # noqa: E402


@njit(cache=True, nogil=True)
def column_loop(G, coeffs, steps, n):
    """``n`` signals of ``steps`` steps each: at step t, ``row = G[t] - sum_{j<t} coeffs[j] V[j]`` into
    ``V[t]`` by ``gram_omp``'s own ``_subtract_rows``."""
    K = G.shape[1]
    V = np.zeros((steps, K))
    for _ in range(n):
        for t in range(steps):
            row = V[t]
            for m in range(K):
                row[m] = G[t, m]
            _subtract_rows(row, V, coeffs, t, K)
            for m in range(K):                       # keep the values bounded (the kernel divides by the pivot)
                row[m] *= 0.5
    return V


@njit(cache=True, nogil=True, fastmath=True)
def plain_read(V, steps, n):
    """``n`` signals of ``steps`` steps: at step t, the sum of the t rows ``V[:t]``. Reassociated (fastmath), so
    the compiler spreads the adds over vector accumulators and the loop is bound by its reads, not by the latency
    of a chain of adds: the rate at which one core reads V from where it lies."""
    K = V.shape[1]
    total = 0.0
    for _ in range(n):
        for t in range(steps):
            s = 0.0
            for j in range(t):
                Vj = V[j]
                for m in range(K):
                    s += Vj[m]
            total += s
    return total


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--descriptors", nargs="+", default=["sift", "daisy"])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    eps = float(np.finfo(np.float64).eps)
    with threadpool_limits(1):
        for descriptor, stages in paper_stages(args.descriptors):
            alpha0, G = kernel_cases(stages)["training descriptors"]
            n, K = alpha0.shape
            coeffs = np.random.default_rng(0).uniform(-0.1, 0.1, size=T)
            Vr = np.random.default_rng(1).normal(size=(T, K))
            gram_omp(alpha0[:8], G, T, eps)                      # compile outside the timing
            column_loop(G, coeffs, T, 2)
            plain_read(Vr, T, 2)
            best = {"gram_omp": np.inf, "column loop": np.inf, "plain read": np.inf}
            for _ in range(args.repeats):
                s, (_, _, count) = cpu(lambda: gram_omp(alpha0, G, T, eps))
                best["gram_omp"] = min(best["gram_omp"], s)
                s, _ = cpu(lambda: column_loop(G, coeffs, T, n))
                best["column loop"] = min(best["column loop"], s)
                s, _ = cpu(lambda: plain_read(Vr, T, n))
                best["plain read"] = min(best["plain read"], s)
            omp_reads = float(K * np.sum(count * (count - 1) // 2))
            full_reads = float(n * K * T * (T - 1) // 2)
            print(f"{descriptor} (n = {n:,}, K = {K}, T = {T}; steps run: {count.sum():,} of {n * T:,})")
            for name, reads in (("gram_omp", omp_reads), ("column loop", full_reads), ("plain read", full_reads)):
                s = best[name]
                print(f"  {name:12s} {s:7.2f} s  {reads / s / 1e9:5.2f} G values of V/s  "
                      f"{8 * reads / s / 1e9:6.1f} GB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
