"""A method whose criterion is undefined for the protocol's annotation: its records are published, and the board
shows its row as not applicable with the reason (never a number, never among the records "not counted")."""

from __future__ import annotations

import pytest

from lfabench.aggregate import UndefinedCriterionError
from lfabench.leaderboard import build_leaderboard
from lfabench.recordset.publish import publish_records
from lfabench.record import RunRecorder

from record_helpers import record

REASON = "DBoWs: the LDA trace ratio is undefined for these labels (15 classes: 15 with 1 annotated sample)"


@pytest.fixture(autouse=True)
def clean_tree(monkeypatch):
    from lfabench import provenance

    monkeypatch.setattr(provenance, "source_state", lambda root=None: provenance.SourceState("0" * 40, b""))


def _failed(path, seed, exc, aggregator="dbows"):
    cfg = {"dataset": {"name": "scene15", "params": {}}, "descriptor": {"name": "sift", "params": {}},
           "aggregator": {"name": aggregator, "params": {"random_state": seed}},
           "evaluator": {"name": "knn", "params": {"k": 1}}, "seed": seed}
    rec = RunRecorder(path, cfg, seed)
    rec.data["setting"] = {k: v for k, v in cfg.items() if k != "seed"}
    rec.data["setting"]["aggregator"]["params"]["random_state"] = "${seed}"
    rec.finish_failed(exc)


@pytest.fixture
def runs(tmp_path):
    for seed in (0, 1):
        for method, acc in {"bow": 60.0, "prolfa": 70.0}.items():
            record(tmp_path / f"runs/{method}{seed}", seed, acc + seed, aggregator=method, dataset="scene15")
        _failed(tmp_path / f"runs/dbows{seed}", seed, UndefinedCriterionError(REASON))
    _failed(tmp_path / "runs/t1-crash", 0, RuntimeError("out of memory"), aggregator="t1")
    for path in (tmp_path / "runs").rglob("result.json"):  # the helper writes descriptor=patches
        path.write_text(path.read_text().replace('"patches"', '"sift"'))
    return tmp_path / "runs"


def test_the_board_lists_the_row_under_its_table_with_the_reason_and_no_number(runs, tmp_path):
    paths = build_leaderboard([runs], tmp_path / "lb", "board")
    md = paths["markdown"].read_text()
    assert "Not applicable" in md and f"`dbows` (seeds 0,1): {REASON}" in md
    assert "| dbows" not in md.split("## Paper vs lfabench")[0]  # no row of a table with a number
    not_counted = md.split("not counted", 1)[1].split("<details>", 1)[0]
    assert "t1-crash" in not_counted and "dbows" not in not_counted  # a crash is still a record not counted
    csv = paths["not_applicable_csv"].read_text()
    assert "dbows" in csv and "0,1" in csv and "t1" not in csv
    assert "Not applicable" in paths["html"].read_text() and REASON.split(":")[0] in paths["html"].read_text()


def test_the_paper_table_reads_not_applicable_not_not_run(runs, tmp_path):
    md = build_leaderboard([runs], tmp_path / "lb", "board")["markdown"].read_text()
    paper = md.split("## Paper vs lfabench", 1)[1]
    dbows = [line for line in paper.splitlines() if "| dbows" in line and "accuracy" in line]
    lcksvd = [line for line in paper.splitlines() if "| lcksvd2" in line and "accuracy" in line]
    assert dbows and "not applicable" in dbows[0] and "not run" not in dbows[0]
    assert lcksvd and "not run" in lcksvd[0]


def test_publishing_keeps_not_applicable_records_and_leaves_crashes_out(runs, tmp_path):
    report = publish_records([runs], tmp_path / "board")
    assert len(report.written) == 6  # 4 ok, 2 not applicable
    texts = [p.read_text() for p in report.written]
    assert sum("UndefinedCriterionError" in t for t in texts) == 2
    assert not any("out of memory" in t for t in texts)
    assert [str(status) for _, status in report.not_ok] == ["failed"]
