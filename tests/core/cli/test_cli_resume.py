"""Resumable sweeps: SIGKILL a sweep midway, rerun it, and find exactly one complete record per configuration."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import run_cli
from data_helpers import scene15_subset

pytestmark = pytest.mark.slow  # the slow tier: sweeps in subprocesses, killed and resumed

SWEEP = ["run", "-m", "aggregator=bow", "aggregator.params.n_clusters=8", "dataset.params.n_samples=300",
         "seed=0,1,2,3,4,5"]


def _records(root):
    return sorted(root.glob("lfabench_multirun/**/result.json"))


def _complete(root):
    return [p for p in _records(root) if json.loads(p.read_text()).get("status") == "ok"]


def test_killed_sweep_resumes_without_losing_or_duplicating_runs(tmp_path):
    env = dict(os.environ, LFABENCH_CACHE=str(tmp_path / "cache"))
    proc = subprocess.Popen([sys.executable, "-m", "lfabench.cli", *SWEEP], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not _complete(tmp_path) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        done_at_kill = len(_complete(tmp_path))
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert 1 <= done_at_kill < 6, f"the sweep should be killed midway, {done_at_kill} of 6 runs were complete"

    out = run_cli(SWEEP, cwd=tmp_path, env={"LFABENCH_CACHE": str(tmp_path / "cache")}).stdout
    assert out.count("skipped, complete record") >= done_at_kill
    records = _records(tmp_path)
    seeds = sorted(json.loads(p.read_text())["seed"] for p in records)
    assert seeds == [0, 1, 2, 3, 4, 5], f"expected one record per seed, found {seeds} in {records}"
    assert len(_complete(tmp_path)) == 6

    # a third run of the same sweep computes nothing; force=true recomputes and keeps the earlier record aside
    again = run_cli(SWEEP, cwd=tmp_path, env={"LFABENCH_CACHE": str(tmp_path / "cache")}).stdout
    assert again.count("skipped, complete record") == 6
    forced = run_cli([*SWEEP[:-1], "seed=0", "force=true"], cwd=tmp_path,
                     env={"LFABENCH_CACHE": str(tmp_path / "cache")}).stdout
    assert "skipped" not in forced and len(_records(tmp_path)) == 6
    assert len(list(tmp_path.glob("lfabench_multirun/**/result.previous-*.json"))) == 1


def test_a_run_in_progress_in_another_process_is_skipped_and_its_record_left_alone(tmp_path):
    from lfabench.resume import claim_run

    env = {"LFABENCH_CACHE": str(tmp_path / "cache")}
    one = [*SWEEP[:-1], "seed=0"]
    run_cli(one, cwd=tmp_path, env=env)
    (record,) = _records(tmp_path)
    before = record.read_bytes()
    with claim_run(record.parent):  # this test process plays the sweep that is computing the run
        out = run_cli([*one, "force=true"], cwd=tmp_path, env=env).stdout
    assert f"skipped, in progress in pid {os.getpid()} on " in out
    assert record.read_bytes() == before and not list(tmp_path.glob("lfabench_multirun/**/result.previous-*.json"))
    forced = run_cli([*one, "force=true"], cwd=tmp_path, env=env).stdout  # claim released: it runs
    assert "skipped" not in forced and record.read_bytes() != before


def test_two_sweeps_into_one_folder_compute_each_run_once(tmp_path):
    env = dict(os.environ, HYDRA_FULL_ERROR="1", LFABENCH_CACHE=str(tmp_path / "cache"))
    sweep = [*SWEEP[:-1], "seed=0,1,2,3"]
    procs = [subprocess.Popen([sys.executable, "-m", "lfabench.cli", *sweep], cwd=tmp_path, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    stdout = "".join(out for out, _ in outs)
    # each of the 4 runs is computed by exactly one sweep; the other skips it (in progress or complete)
    assert stdout.count("  record: ") == 4, stdout
    assert stdout.count("lfabench run: skipped, ") == 4, stdout
    assert sorted(json.loads(p.read_text())["seed"] for p in _complete(tmp_path)) == [0, 1, 2, 3]


def test_a_sweep_over_an_interpolated_parameter_runs_every_value(tmp_path):
    env = {"LFABENCH_CACHE": str(tmp_path / "cache")}
    sweep = ["run", "-m", "aggregator=bow", "+k=8,64", "aggregator.params.n_clusters=${k}",
             "dataset.params.n_samples=300"]
    out = run_cli(sweep, cwd=tmp_path, env=env).stdout
    assert "skipped" not in out
    records = [json.loads(p.read_text()) for p in _records(tmp_path)]
    assert sorted(r["config"]["aggregator"]["params"]["n_clusters"] for r in records) == [8, 64]
    assert sorted(r["setting"]["aggregator"]["params"]["n_clusters"] for r in records) == [8, 64]
    assert {r["setting"]["aggregator"]["params"]["random_state"] for r in records} == {"${seed}"}
    again = run_cli(sweep, cwd=tmp_path, env=env).stdout
    assert again.count("skipped, complete record") == 2


def test_images_added_under_the_same_root_are_not_resumed_from_the_smaller_record(tmp_path, shared_data):
    # shared_data: skips without ../shared/data; scene15_subset links its Fifteen Scene photos
    root = tmp_path / "scene15"
    scene15_subset(root, 4)
    env = {"LFABENCH_CACHE": str(tmp_path / "cache")}
    run = ["run", "-m", "dataset=scene15", f"dataset.params.root={root}", "dataset.params.strict=false",
           "descriptor=patches", "descriptor.params.patch_size=8", "descriptor.params.stride=16",
           "aggregator=bow", "aggregator.params.n_clusters=8", "evaluator.params.k=1"]
    run_cli(run, cwd=tmp_path, env=env)
    assert "skipped, complete record" in run_cli(run, cwd=tmp_path, env=env).stdout  # same data: resumed
    scene15_subset(root, 10)
    out = run_cli(run, cwd=tmp_path, env=env).stdout
    assert "skipped" not in out and "its dataset changed: 60 samples" in out and "150 samples" in out
    (path,) = _records(tmp_path)
    assert json.loads(path.read_text())["dataset"]["n_samples"] == 150
    (previous,) = path.parent.glob("result.previous-*.json")
    assert json.loads(previous.read_text())["dataset"]["n_samples"] == 60
