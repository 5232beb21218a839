"""`lfabench run`, sweeps, records and leaderboards through the real CLI (subprocesses)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from lfabench.provenance import recorded_machine
from lfabench.record import SCHEMA_VERSION, RunRecord, check_record

from conftest import run_cli

SMALL = ["aggregator=bow", "dataset.params.n_samples=400", "aggregator.params.n_clusters=32"]


def test_default_run_prints_table_and_writes_record(tmp_path):
    proc = run_cli(["run", "hydra.run.dir=run0"], cwd=tmp_path)
    assert "accuracy" in proc.stdout and "fit time (s)" in proc.stdout
    rec = json.loads((tmp_path / "run0" / "result.json").read_text())
    assert rec["schema_version"] == SCHEMA_VERSION and rec["status"] == "ok"
    assert set(rec) <= set(RunRecord.__annotations__), "the conductor wrote fields the schema does not declare"
    check_record(rec, "run0")
    assert isinstance(rec["fit_info"], dict) and rec["fit_info"]  # Aggregator.record_info() reaches the record
    assert rec["config"]["aggregator"]["name"] == rec["plugins"]["aggregator"]["name"]
    assert set(rec["timings_s"]) >= {"descriptors", "fit", "transform", "evaluate", "total"}
    assert rec["peak_rss_mb"] > 0 and set(rec["peak_rss_mb_by_stage"]) >= {"fit", "transform"}
    assert rec["dataset"]["n_samples"] == 1797 and len(rec["dataset"]["fingerprint"]) == 64
    assert rec["seed"] == 0 and rec["provenance"]["lfabench_version"] and rec["started_at"]
    # the BLAS kernel decides whether an iterative fit's floats reproduce on another machine: the record names it
    from threadpoolctl import threadpool_info

    numpy_blas = {(lib["internal_api"], lib["version"], lib.get("architecture")) for lib in threadpool_info()
                  if lib["user_api"] == "blas" and "numpy" in lib["filepath"]}
    env = rec["provenance"]["environment"]
    assert numpy_blas <= {(b["internal_api"], b["version"], b["architecture"]) for b in env["threadpools"]}
    assert env["cpu_count"] >= 1 and "cpu_model" in env
    machine = recorded_machine(rec)
    assert machine["blas_kernels"] and machine["cpu_count"] == env["cpu_count"]
    simd = machine["simd_flags"]
    assert simd is None or set(simd) <= {"sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl"}
    assert rec["plugins"]["aggregator"]["name"] == "prolfa"  # the paper's method is the default
    assert rec["output_dim"] == rec["config"]["aggregator"]["params"]["n_prototypes"]
    acc = rec["metrics"]["accuracy"]
    assert 50.0 < acc <= 100.0  # 10 balanced classes: chance is 10%
    assert f"{acc:.4f}" in proc.stdout


@pytest.mark.slow
def test_seed_sweep_then_leaderboard_reports_three_seeds(tmp_path):
    run_cli(["run", "-m", "seed=0,1,2", *SMALL], cwd=tmp_path)
    records = sorted(tmp_path.glob("lfabench_multirun/**/result.json"))
    assert len(records) == 3
    accs = [json.loads(p.read_text())["metrics"]["accuracy"] for p in records]
    proc = run_cli(["leaderboard"], cwd=tmp_path)
    table = pd.read_csv(tmp_path / "leaderboards" / "leaderboard.csv")
    assert len(table) == 1
    row = table.iloc[0]
    assert row["n_seeds"] == 3 and row["aggregator"] == "bow[n_clusters=32]"  # 32: not BoW's default
    assert abs(row["mean"] - sum(accs) / 3) < 1e-9
    assert abs(row["std"] - pd.Series(accs).std()) < 1e-9
    md_rows = [ln for ln in (tmp_path / "leaderboards" / "leaderboard.md").read_text().splitlines()
               if ln.startswith("|") and "bow" in ln and "patches" in ln]  # not the overall ranks
    assert len(md_rows) == 1
    cells = [c.strip() for c in md_rows[0].strip("|").split("|")]
    assert cells[3] == f"{row['mean']:.2f} ± {row['std']:.2f}" and cells[4] == "3"
    assert md_rows[0] in proc.stdout


def test_unknown_plugin_lists_available_and_closest():
    # refused before Hydra starts, so in this process: what `lfabench run aggregator=bwo` prints and exits with
    from lfabench.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["run", "aggregator=bwo"])
    message = str(stop.value.code)
    assert "unknown aggregator plugin 'bwo'" in message
    assert "Did you mean 'bow'?" in message and "Available aggregator plugins:" in message


@pytest.mark.parametrize("argv, named", [(["-m", "--cfg", "job", "aggregator=bow,vlad"], "--cfg and -m"),
                                         (["--cfg=job", "--info"], "--cfg and --info"),
                                         (["--multirun", "-sc", "install=bash"], "--multirun and -sc")])
def test_two_of_hydras_modes_are_refused_in_one_line(argv, named):
    # Hydra's own check raises a bare ValueError (a traceback); refused before Hydra starts, naming both flags
    from lfabench.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["run", *argv])
    assert str(stop.value.code).startswith(f"lfabench run: {named} cannot be combined")


@pytest.mark.parametrize("argv", [["-m", "seed=0,1"], ["--cfg", "job", "--package", "aggregator"],
                                  ["--info", "searchpath"], ["aggregator=bow", "-m"]])
def test_one_mode_passes_the_check(argv):
    from lfabench.cli.run import check_one_mode

    assert check_one_mode(argv) is None


@pytest.mark.slow  # two end-to-end runs in subprocesses
def test_rerun_in_same_dir_keeps_previous_record(tmp_path):
    run_cli(["run", "hydra.run.dir=same", *SMALL], cwd=tmp_path)
    first = (tmp_path / "same" / "result.json").read_text()
    run_cli(["run", "hydra.run.dir=same", "seed=1", *SMALL], cwd=tmp_path)
    previous = list((tmp_path / "same").glob("result.previous-*.json"))
    assert len(previous) == 1 and previous[0].read_text() == first
    assert json.loads((tmp_path / "same" / "result.json").read_text())["seed"] == 1


@pytest.mark.slow  # an end-to-end run; the composition is in test_dataset_protocol
def test_synthetic_dataset_selects_native_descriptor(tmp_path):
    run_cli(["run", "dataset=synthetic", "aggregator=bow", "aggregator.params.n_clusters=8", "hydra.run.dir=syn"],
            cwd=tmp_path)
    rec = json.loads((tmp_path / "syn" / "result.json").read_text())
    assert rec["config"]["descriptor"]["name"] == "native"
    assert {k: rec["descriptors"][k] for k in ("n_descriptors", "dim", "empty_samples")} == {
        "n_descriptors": 2000, "dim": 2, "empty_samples": 0}


@pytest.mark.slow  # an end-to-end run in a subprocess
def test_fit_cache_hits_are_recorded(tmp_path):
    env = {"LFABENCH_CACHE": str(tmp_path / "cache")}
    for run in ("first", "second"):
        run_cli(["run", f"hydra.run.dir={run}", *SMALL], cwd=tmp_path, env=env)
    first, second = (json.loads((tmp_path / r / "result.json").read_text()) for r in ("first", "second"))
    assert [e["hit"] for e in first["fit_cache"]] == [False]
    assert [e["hit"] for e in second["fit_cache"]] == [True]
    assert first["fit_cache"][0]["entry"] == second["fit_cache"][0]["entry"]
    # the reused entry carries what computing it cost: the first run's k-means, within its fit time
    cost = first["fit_cache"][0]["fit_seconds"]
    assert 0 < cost <= first["timings_s"]["fit"] and second["fit_cache"][0]["fit_seconds"] == cost
    assert first["metrics"] == second["metrics"]  # the cached codebook is the trained one
