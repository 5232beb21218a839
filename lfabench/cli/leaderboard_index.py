"""``lfabench leaderboard --index BOARDS_DIR``: the landing page of a folder of boards
(:mod:`lfabench.leaderboard.index`), ``index.md`` and ``index.html`` written into that folder."""

from __future__ import annotations

import sys


def run_index(folder: str) -> int:
    """Build the landing page of ``folder``; exit status 2 with one message when it cannot be built."""
    from ..leaderboard.index import build_index

    try:
        paths = build_index(folder)
    except (FileNotFoundError, ValueError) as exc:
        print(f"lfabench leaderboard --index: {exc}", file=sys.stderr)
        return 2
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0
