"""The wheel ships the Hydra configs and built-in plugins: `lfabench run` works from an unrelated directory."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile

import pytest

from conftest import REPO, run_cli

pytestmark = pytest.mark.slow  # the slow tier: builds and installs lfabench's wheel


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                           "-w", str(out), str(REPO)], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise AssertionError(f"building the wheel failed:\n{proc.stdout}\n{proc.stderr}")
    (whl,) = out.glob("lfabench-*.whl")
    return whl


def test_wheel_contains_configs_plugins_and_entry_points(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    # every source module of the tree ships (a new sub-package missing from pyproject.toml fails here)
    sources = {f"lfabench/{p.relative_to(REPO / 'lfabench').as_posix()}" for p in (REPO / "lfabench").rglob("*.py")}
    sources |= {f"lfabench_plugins/{p.relative_to(REPO / 'plugins').as_posix()}" for p in (REPO / "plugins").rglob("*.py")}
    sources |= {f"lfabench_conf/{p.relative_to(REPO / 'conf').as_posix()}" for p in (REPO / "conf").rglob("*.yaml")}
    sources |= {f"lfabench/{p.relative_to(REPO / 'lfabench').as_posix()}" for p in (REPO / "lfabench").rglob("*.csv")}
    assert "lfabench_conf/config.yaml" in sources and "lfabench_plugins/aggregators/bow.py" in sources
    assert "lfabench/leaderboard/paper_results.csv" in sources  # package data: the paper's numbers
    missing = sorted(sources - names)
    assert not missing, f"missing from the wheel: {missing}"
    (ep,) = [n for n in names if n.endswith("entry_points.txt")]
    text = zipfile.ZipFile(wheel).read(ep).decode()
    assert "[lfabench]" in text and "bow = lfabench_plugins.aggregators.bow" in text
    assert "lfabench = lfabench.cli:main" in text


def test_installed_wheel_runs_from_unrelated_directory(wheel, tmp_path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
                   check=True, capture_output=True, timeout=300)
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    run_cli(["run", "aggregator=bow", "dataset.params.n_samples=300", "aggregator.params.n_clusters=16",
             "hydra.run.dir=r"],
            cwd=workdir, env={"PYTHONPATH": str(target)})
    rec = json.loads((workdir / "r" / "result.json").read_text())
    assert rec["status"] == "ok"
    assert rec["plugins"]["aggregator"]["module"] == "lfabench_plugins.aggregators.bow"
    assert rec["config"]["aggregator"]["params"]["n_clusters"] == 16
