"""``lfabench reproduce BOARD [--sample N] [--seed S]``: rerun records drawn at random, report where each differs.

Exits 0 when no rerun differs (identical, or identical metrics for an old-format record; with ``--across-cpus``
also identical metrics from a rerun on another CPU kind than the record's), 1 otherwise, 2 on bad input."""

from __future__ import annotations

import sys


def _cmd_reproduce(args) -> int:
    from ..reproduce import reproduce_board

    try:
        outcomes = reproduce_board(args.board, args.sample, args.seed, use_cache=not args.no_cache,
                                   progress=lambda o: print(o, flush=True))
    except (FileNotFoundError, ValueError) as exc:
        print(f"lfabench reproduce: {exc}", file=sys.stderr)
        return 2
    same = sum(o.identical for o in outcomes)
    metrics_only = sum(o.verdict == "metrics only" for o in outcomes)
    other_cpu = sum(o.same_metrics_on_another_cpu for o in outcomes)
    print(f"lfabench reproduce {args.board}: {same} of {len(outcomes)} identical"
          + (f", {metrics_only} with identical metrics (old-format records: stages not compared)" if metrics_only
             else "")
          + (f", {other_cpu} with identical metrics on another CPU kind (fitted arrays differ in their last bits)"
             + ("" if args.across_cpus else ": not accepted without --across-cpus") if other_cpu else "")
          + f" (records drawn with seed {args.seed})")
    accepted = same + metrics_only + (other_cpu if args.across_cpus else 0)
    return 0 if accepted == len(outcomes) else 1


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("reproduce", help="rerun records drawn from a board and say where each first differs")
    p.add_argument("board", metavar="BOARD", help="a board folder (its records/) or a folder of run records")
    p.add_argument("--sample", type=int, default=5, metavar="N", help="how many records to rerun (default 5)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the random draw (default 0)")
    p.add_argument("--across-cpus", action="store_true",
                   help="also accept a rerun on another CPU kind than the record's (SIMD features, BLAS kernel) "
                        "that differs at a stage but gives the record's metrics exactly")
    p.add_argument("--no-cache", action="store_true",
                   help="recompute descriptors and fitted arrays instead of reading the array cache")
    p.set_defaults(func=_cmd_reproduce)
