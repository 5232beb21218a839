"""``lfabench reproduce BOARD [--sample N] [--seed S]``: rerun records drawn at random, report where each differs.

Exits 0 when no rerun differs (identical, or identical metrics for an old-format record), 1 otherwise, 2 on
bad input."""

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
    print(f"lfabench reproduce {args.board}: {same} of {len(outcomes)} identical"
          + (f", {metrics_only} with identical metrics (old-format records: stages not compared)" if metrics_only
             else "") + f" (records drawn with seed {args.seed})")
    return 0 if same + metrics_only == len(outcomes) else 1


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("reproduce", help="rerun records drawn from a board and say where each first differs")
    p.add_argument("board", metavar="BOARD", help="a board folder (its records/) or a folder of run records")
    p.add_argument("--sample", type=int, default=5, metavar="N", help="how many records to rerun (default 5)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the random draw (default 0)")
    p.add_argument("--no-cache", action="store_true",
                   help="recompute descriptors and fitted arrays instead of reading the array cache")
    p.set_defaults(func=_cmd_reproduce)
