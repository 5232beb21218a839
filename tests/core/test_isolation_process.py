"""isolate=process: a run in a child process that is killed at the time limit however it hangs (here: in a C
call with every signal blocked, which the in-process SIGALRM limit cannot interrupt), a crash of the child
(a segfault) fails that run only, the sweep goes on, and no child outlives a SIGKILLed sweep."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lfabench.isolation import call_in_child
from lfabench.run import run_benchmark

from conftest import process_alive, run_cli
from site_helpers import write_distribution

pytestmark = pytest.mark.slow  # the slow tier: runs in child processes, killed at their limits

# A third-party aggregator whose fit blocks every signal, then sleeps inside libc (no Python bytecode runs,
# so no Python signal handler either): only killing its process stops it.
STUCK_PLUGIN = '''
import ctypes, os, signal
from pathlib import Path
import numpy as np
from lfabench import PluginSpec, hookimpl
from lfabench.aggregate import Aggregator


class Stuck(Aggregator):
    def __init__(self, seconds: int = 600, random_state=None):
        self.seconds, self.random_state = seconds, random_state

    def _fit(self, bags, y):
        if os.environ.get("STUCK_PID_FILE"):  # where the test finds the process that runs fit
            # written then renamed: the test polls for the file and must never read it half written
            pid_file = Path(os.environ["STUCK_PID_FILE"])
            partial = pid_file.with_name(pid_file.name + ".partial")
            partial.write_text(str(os.getpid()))
            os.replace(partial, pid_file)
        signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP})
        ctypes.CDLL(None).sleep(self.seconds)

    def _transform(self, bags):
        return bags.means()


class Crasher(Stuck):
    def _fit(self, bags, y):
        ctypes.string_at(0)  # a segmentation fault


@hookimpl
def lfabench_aggregators():
    return [PluginSpec("stuck", Stuck, "hangs in a C call with signals blocked (test plugin)"),
            PluginSpec("crasher", Crasher, "segfaults in fit (test plugin)")]
'''

SMALL = ["dataset.params.n_samples=100", "cache=false"]


@pytest.fixture(scope="module")
def stuck_site(tmp_path_factory) -> Path:
    """A folder holding the ``lfabench-stuck`` distribution (entry point ``stuck``), for PYTHONPATH."""
    return write_distribution(tmp_path_factory.mktemp("site"), "lfabench-stuck", "lfabench_stuck", STUCK_PLUGIN,
                              "[lfabench]\nstuck = lfabench_stuck\n")


def _env(site: Path, pid_file: Path | None = None) -> dict:
    env = {"PYTHONPATH": str(site), "LFABENCH_N_JOBS": "1"}  # extraction in-process: no workers to track
    return dict(env, STUCK_PID_FILE=str(pid_file)) if pid_file else env


def _records(root: Path) -> dict[str, dict]:
    recs = [json.loads(p.read_text()) for p in root.glob("lfabench_*/**/result.json")]
    return {r["config"]["aggregator"]["name"]: r for r in recs}


def test_in_process_time_limit_cannot_stop_a_plugin_stuck_in_c(stuck_site, tmp_path):
    """Why isolate=process exists: SIGALRM at 10 s changes nothing while fit sleeps 14 s in libc. (The limit leaves
    the stages before fit their time, which has passed 4 s on a loaded two-core machine.)"""
    run_cli(["run", "aggregator=stuck", "aggregator.params.seconds=14", "time_limit=10", "continue_on_error=true",
             *SMALL], cwd=tmp_path, env=_env(stuck_site))
    rec = _records(tmp_path)["stuck"]
    assert rec["isolate"] == "none" and rec["timings_s"]["fit"] >= 14.0 > rec["time_limit_s"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the stuck plugin and /proc checks are Linux's")
def test_process_isolation_kills_a_run_stuck_in_c_and_the_sweep_goes_on(stuck_site, tmp_path):
    # the limit covers every stage: on a loaded two-core machine the stages before fit (a child's imports, the
    # dataset) have taken over 4 s, so the limit leaves them room and the plugin sleeps far beyond it
    limit = 15
    pid_file = tmp_path / "stuck.pid"
    t0 = time.monotonic()
    proc = run_cli(["run", "-m", "aggregator=stuck,crasher,bow", f"time_limit={limit}", "isolate=process",
                    "continue_on_error=true", *SMALL], cwd=tmp_path, env=_env(stuck_site, pid_file))
    wall = time.monotonic() - t0
    recs = _records(tmp_path)
    stuck, crasher, bow = recs["stuck"], recs["crasher"], recs["bow"]
    assert stuck["status"] == "failed" and stuck["isolate"] == "process" and stuck["time_limit_s"] == limit
    assert stuck["error"]["type"] == "RunTimeLimitExceeded" and stuck["error"]["stage"] == "fit"
    assert f"time limit of {limit} s" in stuck["error"]["message"] and "was killed" in stuck["error"]["message"]
    # killed at the limit, not after the plugin's 600 s; the record keeps where it hung (faulthandler's dump)
    assert limit - 0.5 <= stuck["timings_s"]["total"] < limit + 3 and wall < 300
    assert "in _fit" in stuck["error"]["traceback"] and "lfabench_stuck" in stuck["error"]["traceback"]
    assert {"config", "dataset", "descriptors", "split", "fit"} <= set(stuck["timings_s"])
    assert stuck["peak_rss_mb"] is None or stuck["peak_rss_mb"] > 10
    assert not process_alive(int(pid_file.read_text()))
    # a segfault in a plugin fails its run only
    assert crasher["status"] == "failed" and crasher["error"]["type"] == "RunProcessDied"
    assert crasher["error"]["stage"] == "fit" and "killed by signal SIGSEGV" in crasher["error"]["message"]
    assert bow["status"] == "ok" and bow["isolate"] == "process" and bow["metrics"]["accuracy"] > 0
    assert "RunTimeLimitExceeded" in proc.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the stuck plugin and /proc checks are Linux's")
def test_no_isolated_run_outlives_its_killed_sweep(stuck_site, tmp_path):
    pid_file = tmp_path / "stuck.pid"
    sweep = subprocess.Popen([sys.executable, "-m", "lfabench.cli", "run", "aggregator=stuck", "isolate=process",
                              "aggregator.params.seconds=120", *SMALL],
                             cwd=tmp_path, env=dict(os.environ, **_env(stuck_site, pid_file)),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not pid_file.exists() and time.monotonic() < deadline and sweep.poll() is None:
            time.sleep(0.05)
        child = int(pid_file.read_text())
        assert child != sweep.pid and process_alive(child)
        assert f"PPid:\t{sweep.pid}\n" in Path(f"/proc/{child}/status").read_text()  # the sweep's own child
    finally:
        sweep.kill()
        sweep.wait()
    deadline = time.monotonic() + 10
    while process_alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    survived = process_alive(child)
    if survived:  # do not leave it behind even when the test fails
        os.kill(child, signal.SIGKILL)
    assert not survived, f"the isolated run's process {child} outlived its SIGKILLed sweep"


# --------------------------------------------------------------- call_in_child on its own
def _double(x, report):
    report("halfway")
    return 2 * x


def _raise(kind, report):
    report("about to raise")
    if kind == "exit":
        sys.exit(3)
    raise ValueError("bad value in the child")


def _crash(how, report):
    report("about to crash")
    if how == "segfault":
        ctypes.string_at(0)
    os._exit(7)


def _blocked_sleep(seconds, report):
    report("sleeping")
    signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP})
    ctypes.CDLL(None).sleep(seconds)
    return "woke up"


def test_call_in_child_returns_and_raises_like_a_call():
    out = call_in_child(_double, (21,), time_limit_s=60)
    assert (out.status, out.value, out.progress, out.exitcode) == ("returned", 42, "halfway", 0)
    assert out.pid != os.getpid()
    out = call_in_child(_raise, ("value",))
    assert out.status == "raised" and isinstance(out.value, ValueError) and "bad value" in str(out.value)
    out = call_in_child(_raise, ("exit",))
    assert out.status == "raised" and isinstance(out.value, SystemExit) and out.value.code == 3


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="libc sleep through ctypes.CDLL(None)")
def test_call_in_child_kills_a_c_hang_at_the_limit_and_reports_crashes():
    t0 = time.monotonic()
    out = call_in_child(_blocked_sleep, (60,), time_limit_s=1.5)
    assert out.status == "timed_out" and out.progress == "sleeping"
    assert 1.4 <= out.elapsed_s < 4 and time.monotonic() - t0 < 30
    assert "_blocked_sleep" in out.hang_traceback and not process_alive(out.pid)
    out = call_in_child(_crash, ("exit",))
    assert (out.status, out.exitcode, out.progress) == ("died", 7, "about to crash")
    out = call_in_child(_crash, ("segfault",))
    assert out.status == "died" and out.exitcode == -signal.SIGSEGV


def test_an_isolated_run_gives_the_in_process_result(tmp_path, monkeypatch):
    """Same config, same record contents that matter (metrics, split, dimension), one in a child process."""
    monkeypatch.setenv("LFABENCH_N_JOBS", "1")  # the child inherits it: extraction without worker processes
    cfg = {"dataset": {"name": "digits", "params": {"n_samples": 80}},
           "descriptor": {"name": "patches", "params": {}},
           "aggregator": {"name": "bow", "params": {"n_clusters": 4, "random_state": 0}},
           "evaluator": {"name": "knn", "params": {}}, "seed": 1, "cache": False}
    here = run_benchmark(cfg, tmp_path / "here")
    there = run_benchmark(cfg, tmp_path / "there", isolate="process", time_limit_s=300)
    assert (here["isolate"], there["isolate"]) == ("none", "process")
    on_disk = json.loads((tmp_path / "there" / "result.json").read_text())
    for rec in (there, on_disk):
        assert rec["status"] == "ok" and rec["metrics"] == here["metrics"] and rec["split"] == here["split"]
        assert rec["output_dim"] == here["output_dim"] and rec["time_limit_s"] == 300


@pytest.mark.parametrize(("override", "message"), [
    ("aggregator.params.n_clusters=2.5", "n_clusters=2.5 must be an integer"),
    ("dataset=scene15 dataset.params.root=nowhere", "dataset 'scene15': the folder does not exist"),
])
def test_user_errors_in_an_isolated_run_read_as_in_process(tmp_path, override, message):
    """The child's exception reaches the parent as itself: one clear message, exit 2, no traceback."""
    proc = run_cli(["run", "aggregator=bow", *override.split(), "isolate=process", "hydra.run.dir=r"], cwd=tmp_path,
                   check=False)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr
    rec = json.loads((tmp_path / "r" / "result.json").read_text())
    assert rec["status"] == "failed" and rec["isolate"] == "process" and "Traceback" in rec["error"]["traceback"]
