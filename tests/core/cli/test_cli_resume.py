"""Resumable sweeps: SIGKILL a sweep midway, rerun it, and find exactly one complete record per configuration."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from conftest import run_cli

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
