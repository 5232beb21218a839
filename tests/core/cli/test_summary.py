"""The terminal summary of a run: protocol, metrics, and the method's standing on a committed board."""

from __future__ import annotations

import csv
import logging
import os
import sys

import pytest

from conftest import run_cli
from lfabench.cli.summary import board_standing, format_result, quiet_console, strip_verbose

FIELDS = ["dataset", "descriptor", "aggregator", "evaluator", "metric", "mean", "std", "n_seeds"]


def _record(aggregator="bow", metric_value=50.0):
    return {"config": {"dataset": {"name": "digits"}, "descriptor": {"name": "patches"},
                       "aggregator": {"name": aggregator, "params": {}},
                       "evaluator": {"name": "knn", "params": {"k": 1, "metric": "euclidean"}}},
            "seed": 0, "status": "ok", "metrics": {"accuracy": metric_value},
            "timings_s": {"fit": 1.0}, "peak_rss_mb": 10.0, "run_dir": "runs/x"}


def _board(root, name, rows):
    folder = root / name
    folder.mkdir(parents=True)
    with (folder / f"{name}.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    return folder


def _row(aggregator, mean, std=1.0, dataset="digits", metric="accuracy"):
    return {"dataset": dataset, "descriptor": "patches", "aggregator": aggregator, "evaluator": "knn",
            "metric": metric, "mean": mean, "std": std, "n_seeds": 6}


def test_the_standing_ranks_by_mean_within_the_same_task(tmp_path):
    _board(tmp_path, "digits", [_row("vlad", 90.0), _row("bow", 80.0), _row("fv", 95.0),
                                _row("bow", 99.0, dataset="scene15"),       # another task: not ranked here
                                _row("fv", 10.0, metric="other")])
    standing = board_standing(_record("bow"), "accuracy", roots=[tmp_path])
    assert (standing.rank, standing.n_rows, standing.best_name, standing.best_mean) == (3, 3, "fv", 95.0)
    assert (standing.mean, standing.std, standing.n_seeds) == (80.0, 1.0, 6)
    assert standing.board == tmp_path / "digits" / "digits.md"


def test_no_standing_without_exactly_one_row_for_the_method(tmp_path):
    _board(tmp_path, "two", [_row("bow", 80.0), _row("bow", 70.0), _row("fv", 95.0)])   # two settings of bow
    assert board_standing(_record("bow"), "accuracy", roots=[tmp_path]) is None
    assert board_standing(_record("sc"), "accuracy", roots=[tmp_path]) is None           # not on the board


def test_only_a_boards_own_table_is_read(tmp_path):
    folder = _board(tmp_path, "digits", [_row("fv", 95.0)])
    (folder / "digits-runs.csv").write_text((folder / "digits.csv").read_text().replace("fv", "bow"))
    assert board_standing(_record("bow"), "accuracy", roots=[tmp_path]) is None


def test_the_summary_names_the_protocol_the_data_and_the_standing(tmp_path):
    _board(tmp_path, "digits", [_row("bow", 80.0), _row("fv", 95.0)])
    text = format_result(_record("bow", 81.25), roots=[tmp_path])
    assert "knn(k=1, metric=euclidean): k-NN classification accuracy (%)" in text
    assert "digits: scikit-learn's bundled 8x8 handwritten digits" in text
    assert "accuracy" in text and "81.2500" in text
    assert "bow 80.00 ± 1.00, 2 of 2; best fv 95.00" in text


def test_quiet_console_raises_only_terminal_handlers(tmp_path):
    root = logging.getLogger()
    stream, file = logging.StreamHandler(sys.stderr), logging.FileHandler(tmp_path / "run.log")
    root.addHandler(stream)
    root.addHandler(file)
    try:
        quiet_console(verbose=True)
        assert stream.level == logging.NOTSET
        quiet_console(verbose=False)
        assert stream.level == logging.WARNING and file.level == logging.NOTSET
    finally:
        root.removeHandler(stream)
        root.removeHandler(file)
        file.close()


def test_strip_verbose_removes_the_flag_and_sets_the_environment(monkeypatch):
    monkeypatch.setenv("LFABENCH_VERBOSE", "0")   # restored at teardown, whatever strip_verbose sets
    assert strip_verbose(["aggregator=bow", "seed=1"]) == ["aggregator=bow", "seed=1"]
    assert os.environ["LFABENCH_VERBOSE"] == "0"
    assert strip_verbose(["-v", "aggregator=bow"]) == ["aggregator=bow"]
    assert os.environ["LFABENCH_VERBOSE"] == "1"


@pytest.mark.slow
def test_solver_progress_shows_only_with_v(tmp_path):
    args = ["run", "aggregator.params.n_prototypes=8", "aggregator.params.solver.max_iter=3", f"hydra.run.dir={tmp_path}/r"]
    env = {"LFABENCH_CACHE": str(tmp_path / "cache"), "LFABENCH_VERBOSE": "0"}
    quiet = run_cli(args, cwd=tmp_path, env=env)
    loud = run_cli(["run", "-v", *args[1:], "force=true"], cwd=tmp_path, env=env)
    assert "prolfa iter" not in quiet.stdout + quiet.stderr
    assert "prolfa iter" in loud.stdout + loud.stderr
    assert "protocol:  knn(" in quiet.stdout
    assert "prolfa iter" in (tmp_path / "r" / "lfabench.log").read_text()   # the run's log file keeps it
