"""A run's recorded peak memory in an in-process sweep, after a run that touched much more memory.

Two runs in one process, as a sweep with ``isolate=none`` runs them: first an aggregator whose fit
touches 300 MiB (then frees it), then BoW (K=4) on 60 digits. Prints each record's ``peak_rss_mb`` and
``rss_at_start_mb``, and the process's ``ru_maxrss`` after the second run: what ``peak_rss_mb`` said for
every run before it was measured per run (the process's lifetime peak).

Usage::

    .venv/bin/python benchmarks/run_peak_memory.py
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import numpy as np

import lfabench.run as conductor
from lfabench import PluginSpec, hookimpl
from lfabench.aggregate import Aggregator
from lfabench.record import peak_rss_mb
from lfabench.registry import PluginRegistry

HOG_MIB = 300


class Hog(Aggregator):
    def __init__(self, random_state=None):
        self.random_state = random_state

    def _fit(self, bags, y):
        np.ones(HOG_MIB * 1024 * 1024, np.uint8)  # touched, then freed

    def _transform(self, bags):
        return bags.means()


class Plugins:
    @staticmethod
    @hookimpl
    def lfabench_aggregators():
        return [PluginSpec("hog", Hog, "touches memory in fit")]


def _cfg(aggregator: str, **params) -> dict:
    return {"dataset": {"name": "digits", "params": {"n_samples": 60}}, "descriptor": {"name": "patches", "params": {}},
            "aggregator": {"name": aggregator, "params": {"random_state": 0, **params}},
            "evaluator": {"name": "knn", "params": {}}, "seed": 0, "cache": False}


def main() -> None:
    warnings.simplefilter("ignore")
    reg = PluginRegistry()
    reg.register(Plugins, name="hog")
    conductor.get_registry = lambda: reg
    out = Path(tempfile.mkdtemp(prefix="lfabench-peak-"))
    hog = conductor.run_benchmark(_cfg("hog"), out / "hog")
    bow = conductor.run_benchmark(_cfg("bow", n_clusters=4), out / "bow")
    print(f"run 1 (touches {HOG_MIB} MiB): peak_rss_mb {hog['peak_rss_mb']}, rss_at_start_mb {hog['rss_at_start_mb']}")
    print(f"run 2 (bow):                  peak_rss_mb {bow['peak_rss_mb']}, rss_at_start_mb {bow['rss_at_start_mb']}")
    print(f"process ru_maxrss after run 2 (the old peak_rss_mb of run 2): {peak_rss_mb():.1f} MiB")


if __name__ == "__main__":
    main()
