"""What ``lfabench run`` prints when a run ends: the result, what it measures, and where it stands.

The table names the protocol (the dataset's and the evaluator's one-line descriptions from their
``PluginSpec``, with the evaluator's parameters), every metric, the time of each stage, and, when a
committed board covers the same dataset, descriptor, aggregator, evaluator and metric, where that
board ranks the method. Boards are looked for under ``./leaderboards`` and beside the installed package
(a source checkout), so a run from a checkout reads the boards that came with it.
"""

from __future__ import annotations

import csv
import logging
import math
import os
from dataclasses import dataclass
from pathlib import Path

from ..plugin import KINDS
from ..registry import PluginConflictError, UnknownPluginError, get_registry
from ..run import STAGES

#: Set to "1" by ``lfabench run -v``; read in each job's process (launcher workers inherit it).
VERBOSE_ENV = "LFABENCH_VERBOSE"


def quiet_console(verbose: bool | None = None) -> None:
    """Show only warnings on the terminal unless ``verbose`` (default: ``$LFABENCH_VERBOSE``).

    Hydra sends every log record of a job to the terminal and to the run's log file; solver progress
    (``prolfa iter 9: J=...``) belongs in the file, so only the terminal's handlers are raised to WARNING.
    """
    if verbose is None:
        verbose = os.environ.get(VERBOSE_ENV) == "1"
    if verbose:
        return
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler):
            handler.setLevel(logging.WARNING)


@dataclass(frozen=True)
class Standing:
    """A method's row on a committed board: its mean, spread and seeds, its rank, and the board's best."""

    board: Path
    mean: float
    std: float
    n_seeds: int
    rank: int
    n_rows: int
    best_name: str
    best_mean: float


def board_roots() -> list[Path]:
    """Folders that may hold committed boards: ``./leaderboards``, then the source checkout's."""
    roots = [Path.cwd() / "leaderboards", Path(__file__).resolve().parents[2] / "leaderboards"]
    unique: list[Path] = []
    for root in roots:
        if root.is_dir() and root.resolve() not in {r.resolve() for r in unique}:
            unique.append(root)
    return unique


def _task_rows(path: Path, record: dict, metric: str) -> list[dict]:
    cfg = record["config"]
    want = {kind: (cfg.get(kind) or {}).get("name") for kind in KINDS}
    try:
        with path.open(newline="") as fh:
            rows = list(csv.DictReader(fh))
    except (OSError, csv.Error, UnicodeDecodeError):
        return []
    return [r for r in rows if r.get("metric") == metric
            and all(r.get(kind) == want[kind] for kind in ("dataset", "descriptor", "evaluator"))]


def board_standing(record: dict, metric: str, roots: list[Path] | None = None) -> Standing | None:
    """Where a committed board ranks this run's aggregator on ``metric``, or None.

    A board qualifies when its ``NAME.csv`` (one row per setting) has exactly one row for this
    dataset, descriptor, aggregator, evaluator and metric; the rank is by mean, 1 = best.
    """
    aggregator = (record["config"].get("aggregator") or {}).get("name")
    for root in board_roots() if roots is None else roots:
        for path in sorted(root.glob("*/*.csv")):
            if path.stem != path.parent.name:  # NAME.csv only: NAME-runs.csv, NAME-paper.csv are other tables
                continue
            rows = _task_rows(path, record, metric)
            mine = [r for r in rows if r.get("aggregator") == aggregator]
            if len(mine) != 1:
                continue
            try:
                means = sorted(((float(r["mean"]), r["aggregator"]) for r in rows), reverse=True)
                own = mine[0]
                std = float(own["std"]) if own.get("std") not in (None, "") else math.nan
                return Standing(board=path.with_suffix(".md"), mean=float(own["mean"]), std=std,
                                n_seeds=int(own["n_seeds"]),
                                rank=1 + sum(m > float(own["mean"]) for m, _ in means), n_rows=len(rows),
                                best_name=means[0][1], best_mean=means[0][0])
            except (KeyError, ValueError):
                continue
    return None


def _description(kind: str, name: str | None) -> str:
    try:
        return get_registry().get_spec(kind, name).description
    except (UnknownPluginError, PluginConflictError):  # the summary still prints the run's own result
        return ""


def protocol_line(record: dict) -> str:
    """``evaluator[params] on dataset``, each with its plugin's one-line description."""
    cfg = record["config"]
    evaluator = cfg.get("evaluator") or {}
    dataset = cfg.get("dataset") or {}
    params = ", ".join(f"{k}={v}" for k, v in sorted((evaluator.get("params") or {}).items()) if v is not None)
    ev_desc, ds_desc = _description("evaluator", evaluator.get("name")), _description("dataset", dataset.get("name"))
    prefix = f"{dataset.get('name')}: "  # a folder registered under a name of its own opens with that name
    ds_desc = ds_desc[len(prefix):] if ds_desc and ds_desc.startswith(prefix) else ds_desc
    line = f"{evaluator.get('name')}({params})"
    line += f": {ev_desc}" if ev_desc else ""
    line += f"\n  data:      {dataset.get('name')}" + (f": {ds_desc}" if ds_desc else "")
    return line


def _relative(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def format_result(record: dict, roots: list[Path] | None = None) -> str:
    """The terminal summary of one finished run (see the module docstring)."""
    cfg = record["config"]
    names = " / ".join(f"{k}={(cfg.get(k) or {}).get('name', '?')}" for k in KINDS)
    lines = [f"lfabench run  {names}  seed={record['seed']}  status={record['status']}",
             f"  protocol:  {protocol_line(record)}"]
    width = max([len(m) for m in record["metrics"]] + [len(f"{s} time (s)") for s in STAGES] + [14])
    lines.append(f"  {'metric'.ljust(width)}  value")
    for name, value in record["metrics"].items():
        lines.append(f"  {name.ljust(width)}  {value:.4f}")
    for stage in STAGES:
        if stage in record["timings_s"]:
            lines.append(f"  {(stage + ' time (s)').ljust(width)}  {record['timings_s'][stage]:.3f}")
    lines.append(f"  {'peak RSS (MiB)'.ljust(width)}  {record['peak_rss_mb']:.1f}")
    for metric in record["metrics"]:
        standing = board_standing(record, metric, roots)
        if standing is None:
            continue
        spread = "" if math.isnan(standing.std) else f" ± {standing.std:.2f}"
        lines.append(f"  on the committed board {_relative(standing.board)} ({metric}, {standing.n_seeds} seeds): "
                     f"{cfg['aggregator']['name']} {standing.mean:.2f}{spread}, {standing.rank} of "
                     f"{standing.n_rows}; best {standing.best_name} {standing.best_mean:.2f}")
    lines.append(f"  record: {Path(record['run_dir']) / 'result.json'}")
    return "\n".join(lines)


def strip_verbose(argv: list[str]) -> list[str]:
    """``argv`` without ``-v``/``--verbose``, which set ``$LFABENCH_VERBOSE`` for this process and its workers."""
    if any(a in ("-v", "--verbose") for a in argv):
        os.environ[VERBOSE_ENV] = "1"
    return [a for a in argv if a not in ("-v", "--verbose")]
