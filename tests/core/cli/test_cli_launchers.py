"""Sweeps through Hydra launchers (optional extra `launchers`): joblib for local parallel runs, submitit in its
local mode, and a SLURM configuration that composes. Skipped with a reason when the launchers are absent."""

from __future__ import annotations

import importlib.util
import json

import pytest

from conftest import run_cli

SWEEP = ["run", "-m", "aggregator=bow", "aggregator.params.n_clusters=8", "dataset.params.n_samples=120"]


def _need(module: str, extra: str = 'pip install "lfabench[launchers]"'):
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # the namespace package hydra_plugins itself is absent
        found = False
    if not found:
        pytest.skip(f"{module} is not installed ({extra})")


def _records(root):
    return [json.loads(p.read_text()) for p in root.glob("lfabench_multirun/**/result.json")]


def test_joblib_launcher_runs_the_sweep_in_parallel_processes(tmp_path):
    _need("hydra_plugins.hydra_joblib_launcher")
    env = {"LFABENCH_CACHE": str(tmp_path / "cache"), "LFABENCH_N_JOBS": "1"}
    run_cli([*SWEEP, "seed=0,1,2,3", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2"], cwd=tmp_path, env=env)
    recs = _records(tmp_path)
    assert sorted(r["seed"] for r in recs) == [0, 1, 2, 3] and all(r["status"] == "ok" for r in recs)
    # the same sweep again resumes: nothing is run twice, whatever launcher ran it first
    again = run_cli([*SWEEP, "seed=0,1,2,3"], cwd=tmp_path, env=env).stdout
    assert again.count("skipped, complete record") == 4 and len(_records(tmp_path)) == 4


def test_submitit_local_launcher_runs_jobs_for_real(tmp_path):
    _need("hydra_plugins.hydra_submitit_launcher")
    env = {"LFABENCH_CACHE": str(tmp_path / "cache"), "LFABENCH_N_JOBS": "1"}
    run_cli([*SWEEP, "seed=0,1", "hydra/launcher=submitit_local", "hydra.launcher.timeout_min=10",
             "hydra.launcher.cpus_per_task=1"], cwd=tmp_path, env=env)
    recs = _records(tmp_path)
    assert sorted(r["seed"] for r in recs) == [0, 1] and all(r["status"] == "ok" for r in recs)
    assert len({r["host"]["cpu_count"] for r in recs}) == 1


def test_slurm_configuration_composes(tmp_path):
    _need("hydra_plugins.hydra_submitit_launcher")
    proc = run_cli(["run", "--cfg", "hydra", "-p", "hydra.launcher", "hydra/launcher=slurm",
                    "hydra.launcher.partition=gpu"], cwd=tmp_path)
    assert "SlurmLauncher" in proc.stdout and "partition: gpu" in proc.stdout and "timeout_min: 120" in proc.stdout
