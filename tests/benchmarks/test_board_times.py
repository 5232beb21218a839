"""``benchmarks/board_times.py``: per-method run-minutes of a sweep's records against hand-summed values, and the
records whose times do not measure their work."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from board_times import caveats, main, method_times, read_records


def _record(folder: Path, descriptor: str, method: str, seed: int, fit: float, total: float, peak: float,
            status="ok", hit=False, cache="hit"):
    run = folder / f"scene15_{descriptor}_{method}_knn" / f"key_s{seed}"
    run.mkdir(parents=True)
    run.joinpath("result.json").write_text(json.dumps({
        "status": status, "config": {"descriptor": {"name": descriptor}, "aggregator": {"name": method}},
        "timings_s": {"fit": fit, "transform": 6.0, "evaluate": 3.0, "total": total}, "peak_rss_mb": peak,
        "fit_cache": [{"entry": "kmeans", "hit": hit}], "descriptors": {"extraction": {"cache": cache}}}))


def test_stage_minutes_are_summed_per_descriptor_and_method_and_sorted_by_total(tmp_path):
    _record(tmp_path, "sift", "bow", 0, fit=60.0, total=120.0, peak=500.0)
    _record(tmp_path, "sift", "bow", 1, fit=30.0, total=90.0, peak=700.0)
    _record(tmp_path, "daisy", "bow", 0, fit=600.0, total=900.0, peak=100.0)
    rows = method_times(read_records(tmp_path))
    assert [(r["descriptor"], r["method"], r["runs"]) for r in rows] == [("daisy", "bow", 1), ("sift", "bow", 2)]
    sift = rows[1]
    assert sift["fit"] == pytest.approx(1.5) and sift["total"] == pytest.approx(3.5)
    assert sift["transform"] == pytest.approx(0.2) and sift["evaluate"] == pytest.approx(0.1)
    assert sift["peak_mb"] == 700.0


def test_records_whose_times_are_not_their_work_are_named(tmp_path):
    _record(tmp_path, "sift", "bow", 0, 1.0, 2.0, 1.0)
    _record(tmp_path, "sift", "vlad", 0, 1.0, 2.0, 1.0, hit=True)
    _record(tmp_path, "sift", "fv", 0, 1.0, 2.0, 1.0, cache="miss")
    _record(tmp_path, "sift", "sc", 0, 1.0, 2.0, 1.0, status="failed")
    found = {k: [Path(p).parts[-3] for p in v] for k, v in caveats(read_records(tmp_path)).items()}
    assert found == {"not ok": ["scene15_sift_sc_knn"], "reused a cached fit": ["scene15_sift_vlad_knn"],
                     "descriptors not from the cache": ["scene15_sift_fv_knn"]}


def test_the_command_prints_the_table_and_refuses_an_empty_folder(tmp_path, capsys):
    _record(tmp_path / "sweep", "sift", "bow", 0, fit=60.0, total=120.0, peak=500.0)
    assert main([str(tmp_path / "sweep")]) == 0
    out = capsys.readouterr().out
    assert "| sift | bow | 1 | 1.0 | 0.1 | 0.1 | 2.0 | 500 |" in out and "1 records, 2.0 run-minutes" in out
    with pytest.raises(SystemExit):
        main([str(tmp_path / "empty")])
    assert "no */*/result.json" in capsys.readouterr().err
