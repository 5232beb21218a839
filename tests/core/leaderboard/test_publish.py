"""``lfabench leaderboard --publish-records``: copies without machine paths, resumable where published."""

from __future__ import annotations

import json

import pytest

from lfabench.recordset.publish import CACHE_PLACEHOLDER, parse_relocations, publish_records
from lfabench.record import RunRecorder
from lfabench.record import setting_key
from lfabench.resume import complete_record

from conftest import run_cli
from record_helpers import record


@pytest.fixture(autouse=True)
def clean_tree(monkeypatch):
    """Records written here come from a clean commit (publishing refuses a dirty tree's: tests/core/test_verify.py),
    whatever state the checkout running the tests is in."""
    from lfabench import provenance

    monkeypatch.setattr(provenance, "source_state", lambda root=None: provenance.SourceState("0" * 40, b""))


def located_record(sweep, seed, root, value=50.0, status="ok", finished_at=None):
    """A record whose dataset lives at ``root`` and whose descriptors came from a cache folder of this machine."""
    setting = {"dataset": {"name": "scene15", "params": {"root": str(root)}},
               "descriptor": {"name": "sift", "params": {}},
               "aggregator": {"name": "bow", "params": {"n_clusters": 8, "random_state": "${seed}"}},
               "evaluator": {"name": "knn", "params": {"k": 1}}}
    cfg = json.loads(json.dumps(setting).replace('"${seed}"', str(seed)))
    run_dir = sweep / "scene15_sift_bow_knn" / f"{setting_key(setting, seed)}_s{seed}"
    rec = RunRecorder(run_dir, dict(cfg, seed=seed), seed)
    rec.data["setting"] = setting
    rec.data["descriptors"] = {"extraction": {"cache_dir": str(sweep.parent / "cache")}}
    if status == "ok":
        rec.finish_ok({"accuracy": value})
    else:
        rec.finish_failed(RuntimeError("boom"))
    path = run_dir / "result.json"
    if finished_at is not None:
        data = json.loads(path.read_text())
        data["finished_at"] = finished_at
        path.write_text(json.dumps(data))
    return path


def test_published_copy_is_relocated_and_resumable_under_its_new_key(tmp_path):
    data = tmp_path / "data" / "scene15"
    data.mkdir(parents=True)
    sweep = tmp_path / "sweep"
    for seed in (0, 1):
        located_record(sweep, seed, data, value=40.0 + seed)
    board = tmp_path / "board"
    report = publish_records([sweep], board, {str(tmp_path / "data"): "../shared/data"})
    assert len(report.written) == 2 and not report.not_ok

    for seed in (0, 1):
        relocated = {"dataset": {"name": "scene15", "params": {"root": "../shared/data/scene15"}},
                     "descriptor": {"name": "sift", "params": {}},
                     "aggregator": {"name": "bow", "params": {"n_clusters": 8, "random_state": "${seed}"}},
                     "evaluator": {"name": "knn", "params": {"k": 1}}}
        run_dir = board / "records" / "scene15_sift_bow_knn" / f"{setting_key(relocated, seed)}_s{seed}"
        published = complete_record(run_dir, relocated, seed)  # what a rerun of the relocated sweep checks
        assert published is not None, f"seed {seed}: the rerun would not find the published record"
        assert published["metrics"] == {"accuracy": 40.0 + seed}
        assert published["config"]["dataset"]["params"]["root"] == "../shared/data/scene15"
        assert published["descriptors"]["extraction"]["cache_dir"] == CACHE_PLACEHOLDER
        assert published["run_dir"] == f"records/scene15_sift_bow_knn/{run_dir.name}"
        assert str(tmp_path) not in (run_dir / "result.json").read_text()


def test_a_copy_that_would_keep_a_machine_path_is_refused_naming_record_and_field(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    src = located_record(tmp_path / "sweep", 0, data)
    with pytest.raises(ValueError, match=r"config\.dataset\.params\.root.*--relocate") as info:
        publish_records([tmp_path / "sweep"], tmp_path / "board")
    assert str(src) in str(info.value)
    assert not (tmp_path / "board" / "records").exists()


def test_failed_runs_stay_behind_and_a_later_finish_wins(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    relocate = {str(data): "DATA"}
    located_record(tmp_path / "a", 0, data, value=10.0, finished_at="2026-01-01T00:00:00+00:00")
    located_record(tmp_path / "a", 1, data, status="error")
    first = publish_records([tmp_path / "a"], tmp_path / "board", relocate)
    assert len(first.written) == 1 and [s for _, s in first.not_ok] == ["failed"]

    again = publish_records([tmp_path / "a"], tmp_path / "board", relocate)
    assert len(again.unchanged) == 1 and not again.written

    located_record(tmp_path / "older", 0, data, value=11.0, finished_at="2025-01-01T00:00:00+00:00")
    older = publish_records([tmp_path / "older"], tmp_path / "board", relocate)
    assert len(older.kept_newer) == 1
    located_record(tmp_path / "newer", 0, data, value=12.0, finished_at="2027-01-01T00:00:00+00:00")
    newer = publish_records([tmp_path / "newer"], tmp_path / "board", relocate)
    assert len(newer.written) == 1
    (dest,) = (tmp_path / "board" / "records").rglob("result.json")
    assert json.loads(dest.read_text())["metrics"] == {"accuracy": 12.0}


def test_relocation_pairs_are_checked():
    assert parse_relocations(["/a/b=../c", "/x=/y=z"]) == {"/a/b": "../c", "/x": "/y=z"}
    for bad in ("no-equals", "=new"):
        with pytest.raises(ValueError, match="OLD=NEW"):
            parse_relocations([bad])


@pytest.mark.slow
def test_cli_publishes_then_a_rerun_over_the_published_records_computes_nothing(tmp_path):
    env = {"LFABENCH_CACHE": str(tmp_path / "cache")}
    sweep = ["run", "-m", "aggregator=bow", "aggregator.params.n_clusters=8", "dataset.params.n_samples=200",
             "seed=0,1"]
    run_cli([*sweep, "hydra.sweep.dir=sweep"], cwd=tmp_path, env=env)
    # (--allow-unclean-records: the runs are subprocesses of this checkout, which may be a dirty working tree)
    out = run_cli(["leaderboard", "sweep", "--out", "board", "--name", "b", "--publish-records",
                   "--allow-unclean-records"],
                  cwd=tmp_path, env=env).stdout
    assert "2 record(s) written" in out
    board_md = (tmp_path / "board" / "b.md").read_text()
    assert "from 2 record(s)" in board_md and "board/records" in board_md
    assert "Made by `lfabench leaderboard board/records --out board --name b`" in board_md
    assert "leaderboard sweep" not in board_md and str(tmp_path) not in board_md  # rebuilt from what is published
    for rec in (tmp_path / "board" / "records").rglob("result.json"):
        text = rec.read_text()
        assert str(tmp_path) not in text and CACHE_PLACEHOLDER in text
    again = run_cli([*sweep, "hydra.sweep.dir=board/records"], cwd=tmp_path, env=env).stdout
    assert again.count("skipped, complete record") == 2


def test_cli_refuses_relocate_without_publish(tmp_path):
    record(tmp_path / "runs" / "r0", 0, 50.0)
    proc = run_cli(["leaderboard", "runs", "--relocate", "/a=b"], cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "--publish-records" in proc.stderr
