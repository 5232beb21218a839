"""Ctrl-C and kill stop a sweep and leave a record saying so; a plugin's forgotten thread does not hang the CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from site_helpers import write_distribution

pytestmark = pytest.mark.slow  # end-to-end runs in subprocesses

SLOW_PLUGIN = '''
import os
import threading
import time
from pathlib import Path

from lfabench import PluginSpec, hookimpl
from lfabench.aggregate import Aggregator


def poll_forever():
    while True:
        time.sleep(0.2)


class Slow(Aggregator):
    """Mean pooling whose fit announces itself in ``marker`` then takes ``seconds``; ``thread``: starts a
    non-daemon thread that never ends instead."""

    def __init__(self, seconds: float = 120.0, marker: str = "", thread: bool = False, random_state=None):
        self.seconds = seconds
        self.marker = marker
        self.thread = thread
        self.random_state = random_state

    def _fit(self, bags, y):
        if self.thread:
            threading.Thread(target=poll_forever, name="slowpoke-poller").start()
            return
        with open(self.marker, "a") as fh:
            fh.write(f"{self.random_state}\\n")
        start = time.monotonic()
        while time.monotonic() - start < self.seconds:
            time.sleep(0.05)

    def _transform(self, bags):
        return bags.means()


@hookimpl
def lfabench_aggregators():
    return [PluginSpec("slowpoke", Slow, "slow mean pooling (test plugin)")]
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return write_distribution(tmp_path_factory.mktemp("site"), "lfabench-slowpoke", "lfabench_slowpoke",
                              SLOW_PLUGIN, "[lfabench]\nslowpoke = lfabench_slowpoke\n")


def _start(site: Path, cwd: Path, args: list[str]) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(site), LFABENCH_N_JOBS="1")
    flags = [a for a in args if a.startswith("-")]  # Hydra takes its flags before the overrides
    overrides = [a for a in args if not a.startswith("-")]
    return subprocess.Popen([sys.executable, "-m", "lfabench.cli", "run", *flags, "aggregator=slowpoke",
                             "dataset.params.n_samples=60", *overrides], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_for(path: Path, proc: subprocess.Popen, timeout: float = 240.0) -> None:
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text().strip()):
        if proc.poll() is not None:
            raise AssertionError(f"lfabench ended before fit ({proc.returncode}): {proc.communicate()}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("fit never started")
        time.sleep(0.1)


def _finish(proc: subprocess.Popen, timeout: float = 120.0) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(f"lfabench run did not end within {timeout:g} s") from None


def _records(folder: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(folder.rglob("result.json"))]


@pytest.mark.parametrize("signum, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_a_continue_on_error_sweep_and_the_run_is_recorded_interrupted(site, tmp_path, signum, status):
    marker = tmp_path / "fit-started"
    proc = _start(site, tmp_path, ["-m", "seed=0,1,2", "continue_on_error=true", f"aggregator.params.marker={marker}",
                                   f"hydra.sweep.dir={tmp_path / 'multi'}"])
    _wait_for(marker, proc)
    proc.send_signal(signum)
    out, err = _finish(proc)
    assert proc.returncode == status, err
    assert "Traceback" not in err
    assert f"interrupted by {signal.Signals(signum).name}" in err
    assert marker.read_text().split() == ["0"]  # no further run started
    records = _records(tmp_path / "multi")
    assert len(records) == 1
    rec = records[0]
    assert rec["status"] == "interrupted" and rec["seed"] == 0
    assert rec["error"]["type"] == "RunInterrupted" and rec["error"]["stage"] == "fit"


def test_sigterm_during_fit_of_a_single_run_leaves_a_record(site, tmp_path):
    marker = tmp_path / "fit-started"
    proc = _start(site, tmp_path, [f"aggregator.params.marker={marker}", "hydra.run.dir=one"])
    _wait_for(marker, proc)
    proc.send_signal(signal.SIGTERM)
    _, err = _finish(proc)
    assert proc.returncode == 143, err
    rec = json.loads((tmp_path / "one" / "result.json").read_text())
    assert rec["status"] == "interrupted" and rec["error"]["stage"] == "fit"
    assert "SIGTERM" in rec["error"]["message"] and rec["timings_s"]["fit"] > 0


def test_sigterm_to_an_isolated_run_leaves_a_record(site, tmp_path):
    marker = tmp_path / "fit-started"
    proc = _start(site, tmp_path, [f"aggregator.params.marker={marker}", "isolate=process", "hydra.run.dir=iso"])
    _wait_for(marker, proc)
    proc.send_signal(signal.SIGTERM)  # the parent only: it stops its child and records the run
    _, err = _finish(proc)
    assert proc.returncode == 143, err
    rec = json.loads((tmp_path / "iso" / "result.json").read_text())
    assert rec["status"] == "interrupted"


def test_a_plugins_non_daemon_thread_does_not_hang_the_cli(site, tmp_path):
    proc = _start(site, tmp_path, ["aggregator.params.thread=true", "hydra.run.dir=t"])
    out, err = _finish(proc, timeout=180)
    assert proc.returncode == 0, err
    assert "status=ok" in out
    assert "'slowpoke-poller' (started by lfabench_slowpoke.poll_forever)" in err
    assert json.loads((tmp_path / "t" / "result.json").read_text())["status"] == "ok"
