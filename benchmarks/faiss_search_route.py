"""ProLFA's candidate search: FAISS's two routes for an exact inner-product top-k, timed on the solver's shapes.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/faiss_search_route.py [--repeat 3] [--csv PATH] [--fit-ab 12]

``faiss.knn`` scans each query separately with SIMD code below ``faiss.cvar.distance_compute_blas_threshold``
queries (128,000 in FAISS 1.15) and otherwise computes blocks of inner products by one float32 GEMM, then keeps a
heap per query. The solver searches with its d̄ prototypes as queries (16-4,096), so FAISS's default always picks
the scan; :func:`lfabench_plugins.aggregators.prolfa.cstep.blas_route` makes it take the GEMM route from
``BLAS_MIN_QUERIES`` queries.

Rows: random Gaussian descriptors and queries (seeded), ``k = 16`` (the solver's ``n_candidates``), each route's
best wall time of ``--repeat`` calls, and whether each route returns the exact top-k rows (the sets of a float64
NumPy reference; ties have probability zero here; ``-`` where the reference would be too large). The row
``45,000 / 9 / 128`` has the embedded digits fit's shape (N = 44,904 distinct 3x3 patches, d̄ = 128); the last,
``316,000 / 128 / 4,096``, the paper-scale fit's (Fifteen Scene SIFT-90, d̄ = 4,096).

``--fit-ab R``: then the embedded digits fit (as ``benchmarks/prolfa_tiny.py`` runs it) ``R`` times on each
route, alternating in one process so that a loaded machine slows both alike: the fit's CPU seconds (min and
median), the search's seconds (``fit_info_["search_s"]``, median) and the final J of each route.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
import warnings
from contextlib import contextmanager

import faiss
import numpy as np

from lfabench_plugins.aggregators.prolfa import cstep
from lfabench_plugins.aggregators.prolfa.cstep import blas_route

SHAPES = [  # (N, d, queries)
    (45_000, 2, 128), (45_000, 9, 16), (45_000, 9, 128), (45_000, 9, 1024), (45_000, 64, 128), (45_000, 128, 128),
    (45_000, 128, 1024), (20_000, 1024, 128), (20_000, 1024, 1024), (316_000, 128, 4096),
]


#: Each route as the query count from which FAISS takes its BLAS route.
ROUTES = {"SIMD scan": 2**31 - 1, "BLAS route": cstep.BLAS_MIN_QUERIES}


@contextmanager
def route(name: str):
    """FAISS's flat searches (the solver's included) take the route ``name`` within the block."""
    chosen = cstep.BLAS_MIN_QUERIES
    cstep.BLAS_MIN_QUERIES = ROUTES[name]
    try:
        with blas_route(faiss):
            yield
    finally:
        cstep.BLAS_MIN_QUERIES = chosen


def best_time(fn, repeat: int):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def exact_rows(X: np.ndarray, Q: np.ndarray, k: int) -> list[set]:
    """Each query's k rows of largest float64 inner product, as sets."""
    S = Q.astype(np.float64) @ X.astype(np.float64).T
    return [set(r) for r in np.argpartition(-S, k - 1, axis=1)[:, :k]]


def fit_ab(repeat: int):
    """The digits fit on each route, alternating (see the module docstring)."""
    from prolfa_tiny import digits_split

    from lfabench_plugins.aggregators.prolfa.plugin import ProLFA

    train, y, _, _ = digits_split(0)
    cpu, search, J = ({name: [] for name in ROUTES} for _ in range(3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ProLFA(random_state=0).fit(train, y)           # imports and first-call costs out of the timings
        for _ in range(repeat):
            for name in ROUTES:
                est = ProLFA(random_state=0)
                with route(name):
                    t0 = time.process_time()
                    est.fit(train, y)
                    cpu[name].append(time.process_time() - t0)
                search[name].append(est.fit_info_["search_s"])
                J[name].append(est.objective_history_[-1])
    print()
    print(f"| digits fit, {repeat} each, alternating | fit CPU s (min) | fit CPU s (median) | search s (median) | J |")
    print("|---|---|---|---|---|")
    for name in ROUTES:
        print(f"| {name} | {min(cpu[name]):.3f} | {np.median(cpu[name]):.3f} | {np.median(search[name]):.3f} "
              f"| {float(J[name][-1])!r} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--csv", default=None)
    ap.add_argument("--fit-ab", type=int, default=0, metavar="R", help="then the digits fit R times on each route")
    ap.add_argument("--skip-grid", action="store_true")
    args = ap.parse_args()
    if not args.skip_grid:
        grid(args)
    if args.fit_ab:
        fit_ab(args.fit_ab)


def grid(args):
    rng = np.random.default_rng(0)
    rows = []
    print("| N | d | queries | SIMD scan (ms) | BLAS route (ms) | speed-up | scan exact | BLAS exact |")
    print("|---|---|---|---|---|---|---|---|")
    for N, d, nq in SHAPES:
        X = rng.normal(size=(N, d)).astype(np.float32)
        Q = rng.normal(size=(nq, d)).astype(np.float32)

        def search():
            return faiss.knn(Q, X, args.k, metric=faiss.METRIC_INNER_PRODUCT)

        with route("SIMD scan"):
            t_scan, (_, r_scan) = best_time(search, args.repeat)
        with route("BLAS route"):
            t_blas, (_, r_blas) = best_time(search, args.repeat)
        ref = exact_rows(X, Q, args.k) if N * nq <= 50_000_000 else None
        ok_scan = "-" if ref is None else all(set(a) == b for a, b in zip(r_scan, ref))
        ok_blas = "-" if ref is None else all(set(a) == b for a, b in zip(r_blas, ref))
        rows.append(dict(N=N, d=d, queries=nq, k=args.k, scan_ms=round(t_scan * 1e3, 2),
                         blas_ms=round(t_blas * 1e3, 2), scan_exact=ok_scan, blas_exact=ok_blas))
        print(f"| {N:,} | {d} | {nq} | {t_scan * 1e3:.1f} | {t_blas * 1e3:.1f} | {t_scan / t_blas:.2f}x "
              f"| {ok_scan} | {ok_blas} |", flush=True)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        print(f"wrote {args.csv}", file=sys.stderr)


if __name__ == "__main__":
    main()
