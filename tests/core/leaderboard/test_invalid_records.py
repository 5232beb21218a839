"""Bad records never enter a board: the leaderboard and compare refuse them, naming the file and the field."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from lfabench.cli.compare import compare_table
from lfabench.leaderboard import build_leaderboard
from lfabench.recordset import InvalidRecords
from lfabench.record import read_record, validate_record

from record_helpers import record

GOOD = [80.0, 82.0, 84.0]


def _runs(tmp_path, edit):
    """Three good seeds of one setting, and a fourth seed whose record ``edit`` changes by hand."""
    for seed, acc in enumerate(GOOD):
        record(tmp_path / "runs" / f"s{seed}", seed, acc)
    bad = tmp_path / "runs" / "s3"
    record(bad, 3, 86.0)
    path = bad / "result.json"
    text = path.read_text()
    path.write_text(edit(json.loads(text), text))
    return path


def _set_metric(value):
    def edit(rec, _text):
        rec["metrics"]["accuracy"] = value
        return json.dumps(rec)
    return edit


def _set_version(version):
    """The record with ``provenance.lfabench_version`` set to ``version`` (where a record says which lfabench wrote it)."""
    return lambda rec, _t: json.dumps(dict(rec, provenance=dict(rec["provenance"], lfabench_version=version)))


BAD_CASES = {
    "out of range": (_set_metric(170.0), "'accuracy' = 170.0 lies outside \\[0, 100\\]"),
    "negative": (_set_metric(-1.0), "outside \\[0, 100\\]"),
    "NaN": (_set_metric(float("nan")), "'accuracy' is nan, not a finite number"),
    "null (NaN as written)": (_set_metric(None), "'accuracy' is a NoneType"),
    "infinite": (_set_metric(float("inf")), "not a finite number"),
    "string": (_set_metric("87.5"), "'accuracy' is a str"),
    "list": (_set_metric([87.5]), "'accuracy' is a list"),
    "bool": (_set_metric(True), "'accuracy' is a bool"),
    "newer lfabench release": (_set_version("9.0.0"), "written by lfabench 9.0.0, a release newer"),
    "not a version": (_set_version("banana"), "not a version"),
    "unknown record format": (lambda rec, _t: json.dumps(dict(rec, schema_version=7)), "unknown record format"),
    "not JSON": (lambda _rec, text: text[:-20], "not a valid run record"),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_leaderboard_and_compare_refuse_a_bad_record_naming_it(tmp_path, case):
    edit, message = BAD_CASES[case]
    bad = _runs(tmp_path, edit)
    with pytest.raises(InvalidRecords, match=message) as err:
        build_leaderboard([tmp_path / "runs"], tmp_path / "lb")
    assert str(bad) in str(err.value)
    assert not (tmp_path / "lb" / "leaderboard.csv").exists()  # nothing built with the record left out
    with pytest.raises(InvalidRecords, match=message):
        compare_table([tmp_path / "runs"])


def test_the_cli_exits_2_naming_the_file_without_a_traceback(tmp_path, monkeypatch, capsys):
    from lfabench.cli import main

    bad = _runs(tmp_path, _set_metric(170.0))
    monkeypatch.chdir(tmp_path)
    for command in (["leaderboard", "runs", "--out", "lb"], ["compare", "runs"]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert str(bad) in err and "170.0" in err and "Traceback" not in err


def test_valid_records_still_build_and_one_seed_counts_once(tmp_path):
    _runs(tmp_path, lambda rec, text: text)
    row = pd.read_csv(build_leaderboard([tmp_path / "runs"], tmp_path / "lb")["csv"]).iloc[0]
    assert row["n_seeds"] == 4 and row["mean"] == pytest.approx(np.mean(GOOD + [86.0]))


def test_validate_record_accepts_edges_and_other_metrics(tmp_path):
    record(tmp_path, 0, 100.0)
    rec = read_record(tmp_path / "result.json")
    validate_record(dict(rec, metrics={"accuracy": 0.0, "mAP": 100.0, "precision@10": 50.0}), "x")
    validate_record(dict(rec, metrics={"loss": 1234.5}), "x")  # not a percentage: any finite number
    with pytest.raises(ValueError, match="'precision@5' = 100.5 lies outside"):
        validate_record(dict(rec, metrics={"precision@5": 100.5}), "x")
    # an older record format of a known schema is read (the committed boards)
    validate_record(dict(rec, schema_version=1, lfabench_version="0.1.0"), "x")
