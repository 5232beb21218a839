"""A separate distribution declaring plugins through the entry point appears and runs; a broken one only warns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli
from site_helpers import write_distribution

PLUGIN_MODULE = '''
import numpy as np
from lfabench import PluginSpec, hookimpl
from lfabench.aggregate import Aggregator


class MeanPool(Aggregator):
    """Mean of each sample's descriptors, times ``scale``."""

    def __init__(self, scale: float = 1.0, random_state=None):
        self.scale = scale
        self.random_state = random_state

    def _fit(self, bags, y):
        self.fitted_dim_ = bags.dim

    def _transform(self, bags):
        return self.scale * bags.means()


class Raiser(MeanPool):
    def _fit(self, bags, y):
        raise RuntimeError("raiser plugin always fails in fit")


@hookimpl
def lfabench_aggregators():
    return [PluginSpec("meanpool", MeanPool, "Mean pooling (third-party test plugin)"),
            PluginSpec("raiser", Raiser, "Always raises (third-party test plugin)")]
'''


def _dist(site: Path, dist: str, version: str, module: str, source: str, entry_points: str,
          files: dict[str, str] | None = None) -> None:
    write_distribution(site, dist, module, source, entry_points, version=version, files=files)


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("site")
    _dist(site, "lfabench-meanpool", "0.3.0", "lfabench_meanpool", PLUGIN_MODULE,
          """
          [lfabench]
          meanpool = lfabench_meanpool

          [lfabench.conf]
          meanpool = lfabench_meanpool.conf
          """,
          files={"conf/__init__.py": "", "conf/aggregator/meanpool_x3.yaml": "name: meanpool\nparams:\n  scale: 3.0\n"})
    _dist(site, "broken-plugin", "1.0", "broken_plugin", "raise ImportError('this plugin is broken on purpose')\n",
          """
          [lfabench]
          broken = broken_plugin
          """)
    return site


def test_plugins_lists_third_party_and_warns_on_broken(plugin_site, tmp_path):
    proc = run_cli(["plugins"], cwd=tmp_path, env={"PYTHONPATH": str(plugin_site)})
    line = next(ln for ln in proc.stdout.splitlines() if " meanpool " in f" {ln} ")
    assert line.split()[:4] == ["aggregator", "meanpool", "0.3.0", "lfabench-meanpool"]
    assert "bow" in proc.stdout  # built-ins still there
    assert "broken-plugin 1.0" in proc.stderr and "this plugin is broken on purpose" in proc.stderr


@pytest.mark.slow  # an end-to-end run in a subprocess
def test_third_party_aggregator_runs(plugin_site, tmp_path):
    proc = run_cli(["run", "aggregator=meanpool", "hydra.run.dir=out"], cwd=tmp_path,
                   env={"PYTHONPATH": str(plugin_site)})
    assert "accuracy" in proc.stdout
    rec = json.loads((tmp_path / "out" / "result.json").read_text())
    assert rec["status"] == "ok"
    assert rec["plugins"]["aggregator"] == {"name": "meanpool", "version": "0.3.0",
                                            "distribution": "lfabench-meanpool", "module": "lfabench_meanpool"}
    assert rec["output_dim"] == 9  # mean of 3x3 patches


def test_plugin_package_contributes_config_files(plugin_site, tmp_path):
    proc = run_cli(["run", "aggregator=meanpool_x3", "--cfg", "job"], cwd=tmp_path,
                   env={"PYTHONPATH": str(plugin_site)})
    assert "scale: 3.0" in proc.stdout


@pytest.mark.slow  # an end-to-end run in a subprocess
def test_failed_run_leaves_failed_record(plugin_site, tmp_path):
    proc = run_cli(["run", "aggregator=raiser", "hydra.run.dir=failed"], cwd=tmp_path,
                   env={"PYTHONPATH": str(plugin_site)}, check=False)
    assert proc.returncode != 0
    rec = json.loads((tmp_path / "failed" / "result.json").read_text())
    assert rec["status"] == "failed"
    assert rec["error"]["type"] == "RuntimeError"
    assert rec["error"]["stage"] == "fit"
    assert "always fails in fit" in rec["error"]["message"]
    assert "descriptors" in rec["timings_s"] and "fit" in rec["timings_s"]
