"""The example third-party package (examples/lfabench-gempool) builds, installs, registers its plugin and its
config variant, passes lfabench's conformance battery, runs, and its own tests pass."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO, run_cli

pytestmark = pytest.mark.slow  # the slow tier: builds and installs a package, runs its tests

EXAMPLE = REPO / "examples" / "lfabench-gempool"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The example installed (a real wheel build, as test_packaging builds lfabench's) into a PYTHONPATH folder."""
    site = tmp_path_factory.mktemp("site")
    source = tmp_path_factory.mktemp("source") / EXAMPLE.name  # a copy: the build leaves nothing in the repo
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site),
                           str(source)],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        pytest.fail(f"pip could not install the example package:\n{proc.stdout}\n{proc.stderr}")
    assert (site / "lfabench_gempool" / "conf" / "aggregator" / "gempool_max.yaml").is_file(), \
        "the config folder's YAML files must be installed with the package"
    return site


def test_example_plugin_is_listed_and_passes_the_battery(site, tmp_path):
    env = {"PYTHONPATH": str(site)}
    listed = run_cli(["plugins"], cwd=tmp_path, env=env).stdout
    assert "gempool" in listed and "lfabench-gempool" in listed
    report = run_cli(["plugins", "check", "gempool"], cwd=tmp_path, env=env).stdout
    assert "0 failed" in report and "PASS   check_subset_consistency" in report


def test_example_variant_runs_with_merged_defaults(site, tmp_path):
    env = {"PYTHONPATH": str(site)}
    run_cli(["run", "aggregator=gempool_max", "dataset.params.n_samples=100", "hydra.run.dir=r"], cwd=tmp_path,
            env=env)
    rec = json.loads((tmp_path / "r" / "result.json").read_text())
    assert rec["status"] == "ok" and rec["plugins"]["aggregator"]["distribution"] == "lfabench-gempool"
    assert rec["config"]["aggregator"]["params"] == {"p": 20.0, "l2": True, "random_state": 0}


def test_example_package_tests_pass(site, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(site))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(EXAMPLE / "tests")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "passed" in proc.stdout
