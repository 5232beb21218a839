"""Where run records lie: every ``result.json`` under some folders, and a record's path as a board names it."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from ..record import RESULT_FILE

#: Where ``lfabench run`` writes records by default: what ``leaderboard`` and ``compare`` read when given no folder.
DEFAULT_RUN_ROOTS = ("lfabench_runs", "lfabench_multirun")


def find_records(paths: Iterable[Path | str]) -> list[Path]:
    """Every ``result.json`` at or under the given files/directories, resolved and sorted; a path that is neither
    a record nor a folder is a FileNotFoundError."""
    found = set()
    for p in map(Path, paths):
        if p.is_file() and p.name == RESULT_FILE:
            found.add(p.resolve())
        elif p.is_dir():
            found.update(q.resolve() for q in p.rglob(RESULT_FILE))
        else:
            raise FileNotFoundError(f"no run record or run directory at {p}")
    return sorted(found)


def shown_path(path: Path | str) -> str:
    """Relative to the working directory when under it (committed boards must not name a machine's home)."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


__all__ = ["DEFAULT_RUN_ROOTS", "find_records", "shown_path"]
