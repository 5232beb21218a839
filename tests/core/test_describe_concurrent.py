"""Two cold runs sharing a cache compute each chunk once, and leave no unfinished-chunk debris."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from lfabench.storage import ArrayCache

SCRIPT = textwrap.dedent('''
    import os, sys, time
    from pathlib import Path
    import numpy as np
    from lfabench.dataset import Dataset
    from lfabench.describe import Descriptor

    LOG = Path(sys.argv[1])

    class Logged(Descriptor):
        chunk_size = 2
        def __init__(self, delay: float = 0.1):
            self.delay = delay
        def extract(self, image):
            with open(LOG, "a") as fh:
                fh.write(f"{os.getpid()} {int(image[0, 0])}\\n")
            time.sleep(self.delay)
            return np.full((2, 3), float(image[0, 0]), np.float32), np.zeros((2, 2), np.float32)

    images = [np.full((8, 8), i, np.uint8) for i in range(12)]
    ds = Dataset(name="shared", task="classification", sample_ids=[f"s{i}" for i in range(12)],
                 labels=[0] * 12, images=images)
    d = Logged()
    bags = d.describe(ds, n_jobs=1, cache=sys.argv[2], progress=False)
    np.save(sys.argv[3], bags.descriptors)
    print(d.record_info()["extraction"]["cache"])
''')


@pytest.mark.slow  # two cold runs in subprocesses
def test_two_cold_runs_share_the_work_and_leave_no_debris(tmp_path):
    (tmp_path / "run.py").write_text(SCRIPT)
    log, cache = tmp_path / "calls.log", tmp_path / "cache"
    procs = [subprocess.Popen([sys.executable, "run.py", str(log), str(cache), f"out{i}.npy"], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    calls = [line.split()[1] for line in log.read_text().splitlines()]
    assert sorted(calls) == sorted(str(i) for i in range(12)), f"images extracted more than once: {sorted(calls)}"
    assert sorted(o[0].strip() for o in outs) == ["hit", "miss"]
    np.testing.assert_array_equal(np.load(tmp_path / "out0.npy"), np.load(tmp_path / "out1.npy"))
    assert not list(cache.glob("*.partial")), "an unfinished-chunk folder outlived the finished entry"
    assert len(ArrayCache(cache).entries()) == 1
