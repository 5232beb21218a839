"""Parallel extraction runs on joblib's loky workers: they die with their parent, and a user script needs no
``if __name__ == "__main__":`` guard."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import process_alive

SLOW = textwrap.dedent('''
    import os, sys, time
    from pathlib import Path
    import numpy as np
    from lfabench.dataset import Dataset
    from lfabench.describe import Descriptor

    PIDS = Path(sys.argv[1])

    class Slow(Descriptor):
        chunk_size = 1
        def __init__(self, delay: float = 0.5):
            self.delay = delay
        def extract(self, image):
            (PIDS / str(os.getpid())).touch()
            time.sleep(self.delay)
            return np.ones((2, 3), np.float32), np.zeros((2, 2), np.float32)

    images = [np.full((8, 8), i, np.uint8) for i in range(int(sys.argv[2]))]
    ds = Dataset(name="slow", task="classification", sample_ids=[f"s{i}" for i in range(len(images))],
                 labels=[0] * len(images), images=images)
    bags = Slow(float(sys.argv[3])).describe(ds, n_jobs=2, cache=False, progress=False)
    print("DESCRIBED", bags.n_samples)
''')


@pytest.mark.slow  # parallel extraction workers in subprocesses
def test_workers_die_when_the_parent_is_killed(tmp_path):
    (tmp_path / "slow.py").write_text(SLOW)
    pids = tmp_path / "pids"
    pids.mkdir()
    proc = subprocess.Popen([sys.executable, "slow.py", str(pids), "200", "0.5"], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while len(list(pids.iterdir())) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    workers = [int(p.name) for p in pids.iterdir()]
    assert len(workers) >= 2 and proc.pid not in workers, "extraction should run in two worker processes"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 30
    while any(process_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [w for w in workers if process_alive(w)]
    for w in left:  # do not leave them behind even when the test fails
        os.kill(w, signal.SIGKILL)
    assert not left, f"worker processes {left} outlived their killed parent"


@pytest.mark.slow  # parallel extraction workers in subprocesses
def test_a_script_without_main_guard_can_describe_in_parallel(tmp_path):
    (tmp_path / "script.py").write_text(SLOW)  # module-level code, no __main__ guard
    (tmp_path / "pids").mkdir()
    proc = subprocess.run([sys.executable, "script.py", str(tmp_path / "pids"), "6", "0"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "DESCRIBED 6" in proc.stdout, proc.stderr[-2000:]
