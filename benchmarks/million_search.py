"""Search at a million: IVF-PQ over 1,000,000 x 2,048 float32 synthetic distractors, time per query, recall, memory.

The database (7.63 GiB as float32) is never held whole: :class:`lfabench.evaluation.largescale.ChunkedDatabase`
makes chunk ``i`` from ``numpy.random.default_rng([seed, i])`` (standard normal rows) each time it is read.
The queries are ``--queries`` database rows drawn from the seed plus Gaussian noise (``--noise`` times the
rows' scale), so each has a known source row. With ``--budget-gib`` below the database's size
:func:`lfabench.evaluation.large_search` chooses IVF-PQ (a power-of-two ``nlist`` near sqrt(n), 64-byte
codes) and reports its recall@k against exact search, streamed over the same chunks, on every query.

Printed (JSON): the plan and its reason, train / add / search seconds, milliseconds per query for the
approximate index and for the streamed exact search, recall@k vs exact, the fraction of queries whose
source row is in the approximate top-k, and the process's peak RSS (``ru_maxrss``).

Usage::

    flock /tmp/lfabench-bench.lock .venv/bin/python benchmarks/million_search.py [--n 1000000] [--dim 2048]
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np

from lfabench.evaluation.largescale import ChunkedDatabase, exact_topk, large_search


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--dim", type=int, default=2048)
    ap.add_argument("--chunk", type=int, default=25_000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--noise", type=float, default=0.5)
    ap.add_argument("--budget-gib", type=float, default=4.0)
    ap.add_argument("--nprobe", type=int, default=16)
    ap.add_argument("--train-size", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    def make(i: int) -> np.ndarray:
        rows = min(args.chunk, args.n - i * args.chunk)
        return np.random.default_rng([args.seed, i]).standard_normal((rows, args.dim), dtype=np.float32)

    db = ChunkedDatabase(args.n, args.dim, args.chunk, make)
    rng = np.random.default_rng([args.seed, 1 << 30])
    sources = np.sort(rng.choice(args.n, args.queries, replace=False))
    rows = {}
    for c in np.unique(sources // args.chunk):         # each chunk made once; rows copied out, chunk freed
        block = make(int(c))
        rows.update({int(s): block[int(s) % args.chunk].copy() for s in sources[sources // args.chunk == c]})
        del block
    queries = np.stack([rows[int(s)] for s in sources])
    queries = queries + args.noise * rng.standard_normal(queries.shape, dtype=np.float32)

    t0 = time.perf_counter()
    _, I, info = large_search(db, queries, args.k, memory_budget_bytes=args.budget_gib * 2**30, nprobe=args.nprobe,
                              recall_queries=args.queries, train_size=args.train_size, seed=args.seed)
    total = time.perf_counter() - t0
    t0 = time.perf_counter()
    exact_topk(db, queries[:10], args.k)                       # streamed exact search: ten queries, one pass
    exact_s = time.perf_counter() - t0
    out = dict(info, n=args.n, dim=args.dim, queries=args.queries, noise=args.noise, total_s=total,
               ms_per_query=1000 * info["search_s"] / args.queries,
               exact_streamed_ms_per_query_10=1000 * exact_s / 10,
               source_in_topk=float(np.mean([s in row for s, row in zip(sources, I)])),
               peak_rss_gib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
