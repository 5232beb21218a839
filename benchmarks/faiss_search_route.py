"""ProLFA's candidate search: FAISS's two routes for an exact inner-product top-k, and its threads.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/faiss_search_route.py [--repeat 3] [--csv PATH]
    .venv/bin/python benchmarks/faiss_search_route.py --skip-grid --threads --fit-ab 12

``faiss.knn`` scans each query separately with SIMD code below ``faiss.cvar.distance_compute_blas_threshold``
queries (128,000 in FAISS 1.15) and otherwise computes blocks of inner products by one float32 GEMM, then keeps a
heap per query. The solver searches with its d̄ prototypes as queries (16-4,096), so FAISS's default always picks
the scan; :func:`lfabench_plugins.aggregators.prolfa.search.blas_route` makes it take the GEMM route from
``BLAS_MIN_QUERIES`` queries, and a search below ``SMALL_SEARCH_MACS`` multiply-adds runs on one thread.

The grid: random Gaussian descriptors and queries (seeded), ``k = 16`` (the solver's ``n_candidates``), each
route's best wall time of ``--repeat`` calls, and whether each route returns the exact top-k rows (the sets of a
float64 NumPy reference; ties have probability zero here; ``-`` where the reference would be too large). The row
``45,000 / 9 / 128`` has the embedded digits fit's shape (N = 44,904 distinct 3x3 patches, d̄ = 128); the last,
``316,000 / 128 / 4,096``, the paper-scale fit's (Fifteen Scene SIFT-90, d̄ = 4,096). Run it with
``OMP_NUM_THREADS=1`` to compare the routes alone.

``--threads``: the BLAS route on one thread against all of them, on the grid's shapes (run without
``OMP_NUM_THREADS``).

``--fit-ab R``: the embedded digits fit (as ``benchmarks/prolfa_tiny.py`` runs it) ``R`` times in each setting,
alternating in one process so that a loaded machine slows all alike: the SIMD scan with all threads (the solver
before), the BLAS route with all threads, and the solver's choice (the BLAS route, one thread below
``SMALL_SEARCH_MACS``). Wall and CPU seconds of the fit (min and median), the searches' wall seconds
(``fit_info_["search_s"]``, median) and the final J of each.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
import warnings
from contextlib import contextmanager, nullcontext

import faiss
import numpy as np
from threadpoolctl import threadpool_limits

from lfabench_plugins.aggregators.prolfa import search
from lfabench_plugins.aggregators.prolfa.search import blas_route

SHAPES = [  # (N, d, queries)
    (45_000, 2, 128), (45_000, 9, 16), (45_000, 9, 128), (45_000, 9, 1024), (45_000, 64, 128), (45_000, 128, 128),
    (45_000, 128, 1024), (20_000, 1024, 128), (20_000, 1024, 1024), (316_000, 128, 4096),
]

#: Each setting of the solver's search: (the query count from which FAISS takes its BLAS route, the multiply-adds
#: below which it runs on one thread).
SETTINGS = {
    "SIMD scan, all threads (before)": (2**31 - 1, 0),
    "BLAS route, all threads": (search.BLAS_MIN_QUERIES, 0),
    "BLAS route, one thread when small (now)": (search.BLAS_MIN_QUERIES, search.SMALL_SEARCH_MACS),
}


@contextmanager
def setting(name: str):
    """The solver's searches, and FAISS's flat searches in the block, use the setting ``name``."""
    chosen = search.BLAS_MIN_QUERIES, search.SMALL_SEARCH_MACS
    search.BLAS_MIN_QUERIES, search.SMALL_SEARCH_MACS = SETTINGS[name]
    try:
        with blas_route(faiss):
            yield
    finally:
        search.BLAS_MIN_QUERIES, search.SMALL_SEARCH_MACS = chosen


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

        with setting("SIMD scan, all threads (before)"):
            t_scan, (_, r_scan) = best_time(search, args.repeat)
        with setting("BLAS route, all threads"):
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


def threads(args):
    """The BLAS route on one thread against all threads, on the grid's shapes."""
    rng = np.random.default_rng(0)
    print()
    print("| N | d | queries | multiply-adds | one thread (ms) | all threads (ms) | solver's choice |")
    print("|---|---|---|---|---|---|---|")
    for N, d, nq in SHAPES:
        X = rng.normal(size=(N, d)).astype(np.float32)
        Q = rng.normal(size=(nq, d)).astype(np.float32)
        times = {}
        for n_threads in (1, None):
            with blas_route(faiss), (threadpool_limits(limits=1) if n_threads == 1 else nullcontext()):
                times[n_threads], _ = best_time(
                    lambda: faiss.knn(Q, X, args.k, metric=faiss.METRIC_INNER_PRODUCT), args.repeat)
        macs = N * d * nq
        choice = "one thread" if macs < search.SMALL_SEARCH_MACS else "all threads"
        print(f"| {N:,} | {d} | {nq} | {macs / 1e6:,.0f}M | {times[1] * 1e3:.1f} | {times[None] * 1e3:.1f} "
              f"| {choice} |", flush=True)


def fit_ab(repeat: int):
    """The digits fit in each setting, alternating (see the module docstring)."""
    from prolfa_tiny import digits_split

    from lfabench_plugins.aggregators.prolfa.plugin import ProLFA

    train, y, _, _ = digits_split(0)
    wall, cpu, search, J = ({name: [] for name in SETTINGS} for _ in range(4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ProLFA(random_state=0).fit(train, y)           # imports and first-call costs out of the timings
        for _ in range(repeat):
            for name in SETTINGS:
                est = ProLFA(random_state=0)
                with setting(name):
                    t0, c0 = time.perf_counter(), time.process_time()
                    est.fit(train, y)
                    wall[name].append(time.perf_counter() - t0)
                    cpu[name].append(time.process_time() - c0)
                search[name].append(est.fit_info_["search_s"])
                J[name].append(est.objective_history_[-1])
    print()
    print(f"| digits fit, {repeat} each, alternating | wall s (min / median) | CPU s (min / median) "
          f"| search s (median) | J |")
    print("|---|---|---|---|---|")
    for name in SETTINGS:
        print(f"| {name} | {min(wall[name]):.3f} / {np.median(wall[name]):.3f} "
              f"| {min(cpu[name]):.3f} / {np.median(cpu[name]):.3f} | {np.median(search[name]):.3f} "
              f"| {float(J[name][-1])!r} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--csv", default=None)
    ap.add_argument("--skip-grid", action="store_true")
    ap.add_argument("--threads", action="store_true", help="the BLAS route on one thread against all threads")
    ap.add_argument("--fit-ab", type=int, default=0, metavar="R", help="the digits fit R times in each setting")
    args = ap.parse_args()
    if not args.skip_grid:
        grid(args)
    if args.threads:
        threads(args)
    if args.fit_ab:
        fit_ab(args.fit_ab)


if __name__ == "__main__":
    main()
