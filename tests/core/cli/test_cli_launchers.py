"""Sweeps through Hydra launchers (optional extras `launchers`, `ray`): joblib for local parallel runs, submitit in
its local mode, a SLURM configuration that composes, and Ray on a cluster started on the loopback address.
Skipped with a reason when the launchers are absent."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from lfabench.record import read_record

from conftest import run_cli

pytestmark = pytest.mark.slow  # the slow tier: sweeps through real launchers (joblib, submitit, Ray)

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


def test_killing_a_joblib_sweep_ends_its_workers(tmp_path):
    """SIGTERM reaches the sweep's main process only; its loky workers must not run on as orphans
    (before lfabench.cli.orphans they finished their run, wrote its record and then idled forever)."""
    from conftest import process_alive
    from lfabench.cli.orphans import children

    _need("hydra_plugins.hydra_joblib_launcher")
    env = dict(os.environ, LFABENCH_CACHE=str(tmp_path / "cache"), LFABENCH_N_JOBS="1", OMP_NUM_THREADS="1")
    slow = ["run", "-m", "aggregator=sc", "dataset.params.n_samples=600", "seed=0,1,2,3,4,5",
            "hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]
    proc = subprocess.Popen([sys.executable, "-m", "lfabench.cli", *slow], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            workers = [k for k in children(proc.pid) if b"popen_loky" in Path(f"/proc/{k}/cmdline").read_bytes()]
            if len(workers) == 2 and len(list(tmp_path.glob("lfabench_multirun/*/*/lfabench.log"))) >= 2:
                break                                                  # both workers are running a job
            time.sleep(0.2)
        assert proc.poll() is None and len(workers) == 2, "the sweep should be running two loky workers"
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(process_alive(w) for w in workers):
            time.sleep(0.2)
        survivors = [w for w in workers if process_alive(w)]
        assert not survivors, f"workers {survivors} outlived the killed sweep"
    finally:
        for pid in [proc.pid, *workers]:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def test_submitit_local_launcher_runs_jobs_for_real(tmp_path):
    _need("hydra_plugins.hydra_submitit_launcher")
    env = {"LFABENCH_CACHE": str(tmp_path / "cache"), "LFABENCH_N_JOBS": "1"}
    run_cli([*SWEEP, "seed=0,1", "hydra/launcher=submitit_local", "hydra.launcher.timeout_min=10",
             "hydra.launcher.cpus_per_task=1"], cwd=tmp_path, env=env)
    recs = _records(tmp_path)
    assert sorted(r["seed"] for r in recs) == [0, 1] and all(r["status"] == "ok" for r in recs)
    assert len({r["provenance"]["environment"]["cpu_count"] for r in recs}) == 1


def test_slurm_configuration_composes(tmp_path):
    _need("hydra_plugins.hydra_submitit_launcher")
    proc = run_cli(["run", "--cfg", "hydra", "-p", "hydra.launcher", "hydra/launcher=slurm",
                    "hydra.launcher.partition=gpu"], cwd=tmp_path)
    assert "SlurmLauncher" in proc.stdout and "partition: gpu" in proc.stdout and "timeout_min: 120" in proc.stdout


RAY_EXTRA = 'pip install "lfabench[ray]" && pip install --no-deps hydra-ray-launcher'


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _processes_mentioning(text: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and text.encode() in (entry / "cmdline").read_bytes():
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


@pytest.fixture
def ray_cluster(tmp_path):
    """A one-node Ray cluster on 127.0.0.1 (``ray start --head --block``, its own process group); yields
    (address, environment of its nodes); killed with its whole group afterwards."""
    _need("ray", RAY_EXTRA)
    _need("hydra_plugins.hydra_ray_launcher", RAY_EXTRA)
    ray = Path(sys.executable).with_name("ray")
    if not ray.exists():
        pytest.skip(f"the ray command is not beside {sys.executable} ({RAY_EXTRA})")
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # Ray's unix sockets live here: keep the path short
    port = _free_port()
    # Ray rewrites 127.0.0.1 to the host's network address unless it runs single-machine (its setting for
    # Windows/macOS, which keeps every address on the loopback); the nodes' environment reaches the jobs
    env = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "LFABENCH_CACHE": str(tmp_path / "cache"),
           "LFABENCH_N_JOBS": "1"}
    with open(tmp_path / "ray-head.log", "w") as log:
        head = subprocess.Popen([str(ray), "start", "--head", "--block", "--node-ip-address=127.0.0.1",
                                 f"--port={port}", "--num-cpus=2", "--include-dashboard=false",
                                 "--disable-usage-stats", f"--temp-dir={temp}"],
                                cwd=tmp_path, env=dict(os.environ, **env), start_new_session=True,
                                stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while head.poll() is None and time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        if head.poll() is not None or time.monotonic() >= deadline:
            raise AssertionError("the Ray head did not come up:\n" + (tmp_path / "ray-head.log").read_text()[-3000:])
        yield f"127.0.0.1:{port}", env
    finally:
        os.killpg(head.pid, signal.SIGKILL)  # the head and every Ray process it started share its group
        head.wait()
        # some Ray helpers (e.g. late-started workers) may sit in their own session: kill whatever still
        # names the cluster's folder, then require that nothing of the cluster survives
        for pid in _processes_mentioning(temp):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10
        while (left := _processes_mentioning(temp)) and time.monotonic() < deadline:
            time.sleep(0.2)
        shutil.rmtree(temp, ignore_errors=True)
        assert not left, f"Ray processes {left} survived SIGKILL"


def test_ray_launcher_runs_the_sweep_on_a_loopback_cluster(ray_cluster, tmp_path):
    address, env = ray_cluster
    sweep_dir = tmp_path / "lfabench_multirun"  # absolute: a Ray job's working directory is its node's
    t0 = time.monotonic()
    proc = run_cli([*SWEEP, "seed=0,1", "hydra/launcher=ray_cluster", f"hydra.launcher.ray.init.address={address}",
                    f"hydra.sweep.dir={sweep_dir}"], cwd=tmp_path, env=env)
    wall = time.monotonic() - t0
    assert f"Connecting to existing Ray cluster at address: {address}" in proc.stdout + proc.stderr
    assert (proc.stdout + proc.stderr).count("(_run_job pid=") >= 2  # each job ran as a Ray task, its output forwarded
    recs = [read_record(p) for p in sweep_dir.glob("**/result.json")]  # the schema check: complete, well-formed
    assert sorted(r["seed"] for r in recs) == [0, 1]
    for rec in recs:
        assert rec["status"] == "ok" and rec["finished_at"] and rec["metrics"]["accuracy"] > 0
        assert set(rec["timings_s"]) >= {"config", "dataset", "descriptors", "split", "fit", "transform", "evaluate"}
    print(f"Ray sweep of 2 runs: {wall:.1f} s wall (cluster already up)")
