"""The C heap's free pages go back to the operating system after extraction and after every run."""

import subprocess
import sys

import pytest

import lfabench.run as run_module
from lfabench.heap import release_free_heap
from lfabench.params import ConfigError
from lfabench.run import run_benchmark

FRAGMENTED_HEAP = """
import numpy as np
from lfabench.heap import release_free_heap
from lfabench.record import current_rss_mb

# 3,000 arrays of 100 KB: under glibc's smallest mmap threshold (128 KB), so on the heap; a small buffer kept
# after each (over pymalloc's 512 bytes: malloc's) leaves 300 MB free inside the heap once they are freed
parts, pins = [], []
for _ in range(3_000):
    parts.append(np.ones(12_800))
    pins.append(bytearray(1024))
before = current_rss_mb()
del parts
freed = current_rss_mb()
assert release_free_heap()
print(before, freed, current_rss_mb())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim and /proc: Linux only")
def test_free_heap_pages_stay_resident_until_released():
    out = subprocess.run([sys.executable, "-c", FRAGMENTED_HEAP], capture_output=True, text=True, check=True)
    before, freed, released = map(float, out.stdout.split())
    assert freed > before - 50              # freeing alone returns (almost) nothing: the pages stay resident
    assert released < freed - 250           # 300 MB of free heap given back


def test_release_is_harmless_where_the_c_library_cannot(monkeypatch):
    import lfabench.heap as heap

    monkeypatch.setattr(heap, "_malloc_trim", lambda: None)
    assert release_free_heap() is False


def _events(monkeypatch):
    events = []
    monkeypatch.setattr(run_module, "release_free_heap", lambda: events.append("release"))
    return events


def test_a_run_releases_after_extraction_and_at_its_end(tmp_path, monkeypatch):
    events = _events(monkeypatch)
    cfg = {"dataset": {"name": "digits", "params": {"n_samples": 60}}, "descriptor": {"name": "patches", "params": {}},
           "aggregator": {"name": "bow", "params": {"n_clusters": 4, "random_state": 0}},
           "evaluator": {"name": "knn", "params": {"k": 1}}, "seed": 0, "cache": False}
    run_benchmark(cfg, tmp_path / "run", on_stage=events.append)
    assert events[events.index("descriptors") + 1] == "release"       # before the split stage starts
    assert events[-1] == "release" and events.count("release") == 2


def test_a_failed_run_releases_too(tmp_path, monkeypatch):
    events = _events(monkeypatch)
    cfg = {"dataset": {"name": "digits", "params": {}}, "descriptor": {"name": "patches", "params": {}},
           "aggregator": {"name": "bow", "params": {}}, "evaluator": {"name": "knn", "params": {}}, "seed": -1}
    with pytest.raises(ConfigError):
        run_benchmark(cfg, tmp_path / "run", on_stage=events.append)
    assert events[-1] == "release"
