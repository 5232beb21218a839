import json

import numpy as np
import pytest

from lfabench.leaderboard import build_leaderboard
from lfabench.record import RunRecorder, _jsonable, read_record
from lfabench.storage import write_json_atomic


def _record(path, seed, acc, n_clusters=64, status="ok"):
    cfg = {"dataset": {"name": "digits", "params": {}}, "descriptor": {"name": "patches", "params": {}},
           "aggregator": {"name": "bow", "params": {"n_clusters": n_clusters, "random_state": seed}},
           "evaluator": {"name": "knn", "params": {"k": 1}}, "seed": seed}
    setting = {k: v for k, v in cfg.items() if k != "seed"}
    setting["aggregator"] = {"name": "bow", "params": {"n_clusters": n_clusters, "random_state": "${seed}"}}
    rec = RunRecorder(path, cfg, seed)
    rec.data["setting"] = setting
    if status == "ok":
        rec.finish_ok({"accuracy": acc})
    else:
        rec.finish_failed(RuntimeError("boom"))


def test_leaderboard_means_stds_and_settings(tmp_path):
    for seed, acc in enumerate([80.0, 82.0, 87.0]):
        _record(tmp_path / "runs" / f"a{seed}", seed, acc)
    _record(tmp_path / "runs" / "b0", 0, 70.0, n_clusters=8)
    _record(tmp_path / "runs" / "c0", 1, 0.0, status="failed")
    out = build_leaderboard([tmp_path / "runs"], tmp_path / "lb")
    import pandas as pd

    table = pd.read_csv(out["csv"])
    first = table.iloc[0]
    assert first["aggregator"] == "bow[n_clusters=64]" and first["n_seeds"] == 3
    assert first["mean"] == pytest.approx(83.0) and first["std"] == pytest.approx(np.std([80, 82, 87], ddof=1))
    assert table.iloc[1]["aggregator"] == "bow[n_clusters=8]" and np.isnan(table.iloc[1]["std"])  # one seed
    md = out["markdown"].read_text()
    assert "83.00 ± 3.61" in md and "1 run record(s) not counted" in md and "RuntimeError: boom" in md
    page = out["html"].read_text()
    assert page.startswith("<!DOCTYPE html>") and "83.00 ± 3.61" in page and "bow[n_clusters=8]" in page
    plot = out["plots"][0]
    assert plot.name == "leaderboard-digits-patches-knn-accuracy-scores.png" and plot.read_bytes()[:4] == b"\x89PNG"
    runs = pd.read_csv(out["runs_csv"])  # one row per setting and seed, with where each value came from
    assert len(runs) == 4 and sorted(runs["value"]) == [70.0, 80.0, 82.0, 87.0]
    assert set(runs["aggregator"]) == {"bow[n_clusters=64]", "bow[n_clusters=8]"}
    assert all(str(tmp_path / "runs") in p for p in runs["path"])


def test_failed_record_and_atomic_json(tmp_path):
    _record(tmp_path, 3, 0.0, status="failed")
    rec = read_record(tmp_path / "result.json")
    assert rec["status"] == "failed" and rec["error"]["message"] == "boom" and rec["metrics"] == {}
    write_json_atomic(tmp_path / "x.json", _jsonable({"a": np.float32(1.5), "b": np.arange(2), "c": float("nan")}))
    assert json.loads((tmp_path / "x.json").read_text()) == {"a": 1.5, "b": [0, 1], "c": None}
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="bad.json: not a valid run record"):
        read_record(tmp_path / "bad.json")


def test_written_records_follow_the_schema_in_code(tmp_path):
    from lfabench.record import RunRecord, check_record

    _record(tmp_path / "ok", 0, 90.0)
    _record(tmp_path / "failed", 1, 0.0, status="failed")
    for sub in ("ok", "failed"):
        data = json.loads((tmp_path / sub / "result.json").read_text())
        assert set(data) <= set(RunRecord.__annotations__), set(data) - set(RunRecord.__annotations__)
        check_record(data, sub)
    data = json.loads((tmp_path / "ok" / "result.json").read_text())
    with pytest.raises(ValueError, match="field 'seed' is a str"):
        check_record(dict(data, seed="0"), "x")
    with pytest.raises(ValueError, match="no 'metrics' field"):
        check_record({k: v for k, v in data.items() if k != "metrics"}, "x")


def test_repeated_runs_of_one_seed_count_once_and_conflicts_are_flagged(tmp_path):
    """A rerun sweep left 9 records for 6 seeds: the leaderboard and compare use one value per seed."""
    import pandas as pd

    from lfabench.cli.compare import compare_table

    accs = [90.0, 91.0, 92.5, 89.0, 90.5, 93.0]
    for seed, acc in enumerate(accs):
        _record(tmp_path / "first" / f"s{seed}", seed, acc)
    for seed in (0, 1, 2):  # the rerun redid three of them, identically, in other folders
        _record(tmp_path / "rerun" / f"s{seed}", seed, accs[seed])
    table = pd.read_csv(build_leaderboard([tmp_path], tmp_path / "lb")["csv"])
    row = table.iloc[0]
    assert row["n_seeds"] == 6 and row["n_runs"] == 9 and row["conflicts"] == 0
    assert row["mean"] == pytest.approx(np.mean(accs)) and row["std"] == pytest.approx(np.std(accs, ddof=1))
    cmp = compare_table([tmp_path]).iloc[0]
    assert cmp["mean"] == pytest.approx(np.mean(accs)) and cmp["std"] == pytest.approx(np.std(accs, ddof=1))

    _record(tmp_path / "other" / "s3", 3, 50.0)  # a repeat that disagrees
    out = build_leaderboard([tmp_path], tmp_path / "lb2")
    row = pd.read_csv(out["csv"]).iloc[0]
    assert row["conflicts"] == 1 and row["n_seeds"] == 6
    assert "repeats disagree (seeds)" in out["markdown"].read_text()
    from lfabench.cli.compare import to_markdown

    cmp = compare_table([tmp_path])
    assert cmp.iloc[0]["conflicts"] == 1 and "repeated records of 1 seed(s) disagree" in to_markdown(cmp)


def test_labels_show_resolved_values_never_interpolations(tmp_path):
    _record(tmp_path / "a", 0, 80.0)  # random_state: ${seed}
    cfg_fixed = tmp_path / "b"
    _record(cfg_fixed, 0, 70.0)
    rec = json.loads((cfg_fixed / "result.json").read_text())
    rec["setting"]["aggregator"]["params"]["random_state"] = 7
    rec["config"]["aggregator"]["params"]["random_state"] = 7
    write_json_atomic(cfg_fixed / "result.json", rec)
    md = build_leaderboard([tmp_path], tmp_path / "lb")["markdown"].read_text()
    # (n_clusters=64 is shown too: BoW's default is 256); a random_state that follows the seed is no setting
    assert "${seed}" not in md and "| bow[n_clusters=64] " in md
    assert "bow[n_clusters=64, random_state=7]" in md
