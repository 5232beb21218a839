"""The record set: every record found, read and validated once; one rule for which records a board counts."""

from __future__ import annotations

import builtins
import os
from pathlib import Path

import pytest

from lfabench.aggregate import UndefinedCriterionError
from lfabench.leaderboard import build_leaderboard
from lfabench.record import RESULT_FILE, RunRecorder
from lfabench.recordset import (InvalidRecords, RecordSet, board_keeps, finished, load_records, not_applicable,
                                records_frame)

from record_helpers import record


def failed_record(run_dir: Path, seed: int, exc: BaseException) -> None:
    cfg = {"dataset": {"name": "digits", "params": {}}, "aggregator": {"name": "bow", "params": {}}, "seed": seed}
    RunRecorder(run_dir, cfg, seed).finish_failed(exc)


@pytest.fixture
def runs(tmp_path):
    for seed in (0, 1):
        record(tmp_path / f"runs/a{seed}", seed, 50.0 + seed, n_clusters=8,
               fit_info={"training_curve": [3.0, 2.0, 1.5]})
        record(tmp_path / f"runs/b{seed}", seed, 60.0 + seed, n_clusters=16)
    failed_record(tmp_path / "runs/c0", 0, RuntimeError("boom"))
    failed_record(tmp_path / "runs/d0", 0, UndefinedCriterionError("no class has two annotated samples"))
    return tmp_path / "runs"


def test_a_board_scores_finished_runs_keeps_not_applicable_ones_and_lists_the_rest(runs):
    records = load_records([runs])
    assert len(records) == 6 and [p.parent.name for p, _ in records] == ["a0", "a1", "b0", "b1", "c0", "d0"]
    assert [finished(r) for _, r in records] == [True] * 4 + [False, False]
    assert [not_applicable(r) for _, r in records] == [False] * 5 + [True]
    assert [board_keeps(r) for _, r in records] == [True] * 4 + [False, True]
    assert [p.parent.name for p, _ in records.where(board_keeps)] == ["a0", "a1", "b0", "b1", "d0"]
    df, failed = records_frame(records)
    assert len(df) == 4 and sorted(df["value"]) == [50.0, 51.0, 60.0, 61.0]  # one row per finished record, metric
    assert failed[0] == {"path": str(runs / "c0" / RESULT_FILE), "status": "failed", "error": "RuntimeError: boom"}
    assert failed[1]["reason"] == "no class has two annotated samples" and failed[1]["aggregator"] == "bow"
    assert failed[1]["error"] == "UndefinedCriterionError: no class has two annotated samples"


def test_a_record_is_found_by_any_path_to_its_file(runs, monkeypatch):
    records = load_records([runs])
    path, rec = next(iter(records))
    monkeypatch.chdir(runs)
    assert records.record(path) is rec
    assert records.record(os.path.relpath(path)) is rec  # as a board names it: relative to the working folder
    with pytest.raises(KeyError, match="not a record of this set"):
        records.record(runs / "elsewhere" / RESULT_FILE)


def test_every_invalid_record_is_named_and_nothing_is_read_from_the_set(runs):
    for name in ("x", "y"):
        (runs / name).mkdir()
        (runs / name / RESULT_FILE).write_text("{not json")
    with pytest.raises(InvalidRecords) as err:
        load_records([runs])
    assert len(err.value.problems) == 2 and all("not a valid run record" in p for p in err.value.problems)
    assert [str(runs / n / RESULT_FILE) in text for n, text in zip("xy", err.value.problems)] == [True, True]


def test_a_board_reads_each_record_file_once(runs, tmp_path, monkeypatch):
    # the tables, the page's provenance, the plugins section, the training curves and the manifest all
    # take the records the build loaded: no record file is opened a second time
    opened = []
    real_open = builtins.open

    def counting_open(file, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and Path(file).name == RESULT_FILE:
            opened.append(Path(file).resolve())
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting_open)
    out = build_leaderboard([runs], tmp_path / "lb")
    assert any("convergence" in p.name for p in out["plots"])  # the training curves were drawn
    assert sorted(opened) == sorted(p.resolve() for p in runs.rglob(RESULT_FILE))


def test_an_empty_set_has_an_empty_frame():
    empty = RecordSet((), ())
    df, failed = records_frame(empty)
    assert df.empty and failed == [] and len(empty.where(board_keeps)) == 0
