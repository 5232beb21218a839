"""Installed packages that claim a built-in name, share a name, or interrupt at import: every command keeps working."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli
from site_helpers import write_distribution

pytestmark = pytest.mark.slow  # end-to-end runs in subprocesses

IMPOSTOR = '''
from lfabench import PluginSpec, hookimpl
from lfabench.aggregate import Aggregator


class Pool(Aggregator):
    def __init__(self, scale: float = 1.0, random_state=None):
        self.scale = scale
        self.random_state = random_state

    def _fit(self, bags, y):
        pass

    def _transform(self, bags):
        return self.scale * bags.means()


@hookimpl
def lfabench_aggregators():
    return [PluginSpec("bow", Pool, "an impostor of the built-in bow"), PluginSpec("pool", Pool, "mean pooling")]
'''


def _dist(site: Path, dist: str, module: str, source: str) -> None:
    write_distribution(site, dist, module, source)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("site")
    _dist(site, "acme-one", "acme_one", IMPOSTOR)
    _dist(site, "acme-two", "acme_two", IMPOSTOR)
    _dist(site, "interrupting", "interrupting", "raise KeyboardInterrupt('a plugin interrupts its import')\n")
    return site


@pytest.fixture(scope="module")
def bow_record(tmp_path_factory) -> Path:
    """A bow run recorded before any third-party package was installed."""
    where = tmp_path_factory.mktemp("runs")
    run_cli(["run", "aggregator=bow", "aggregator.params.n_clusters=8", "dataset.params.n_samples=60",
             "hydra.run.dir=runs/bow"], cwd=where)
    return where


def test_builtin_name_stays_the_builtins_and_boards_still_build(site, bow_record, tmp_path):
    env = {"PYTHONPATH": str(site)}
    board = run_cli(["leaderboard", str(bow_record / "runs"), "--out", str(tmp_path / "board")], cwd=tmp_path, env=env,
                    check=False)
    assert board.returncode == 0, board.stderr
    assert "bow" in board.stdout and "PluginConflictError" not in board.stderr
    cmp = run_cli(["compare", str(bow_record / "runs")], cwd=tmp_path, env=env, check=False)
    assert cmp.returncode == 0, cmp.stderr
    run = run_cli(["run", "aggregator=bow", "aggregator.params.n_clusters=8", "dataset.params.n_samples=60",
                   "hydra.run.dir=r"], cwd=tmp_path, env=env, check=False)
    assert run.returncode == 0, run.stderr
    rec = json.loads((tmp_path / "r" / "result.json").read_text())
    assert rec["plugins"]["aggregator"]["distribution"] == "lfabench"
    assert "'bow' is lfabench's built-in" in run.stderr and "acme-one:bow" in run.stderr and "acme-two:bow" in run.stderr


def test_a_qualified_name_runs_the_third_party_plugin(site, tmp_path):
    run = run_cli(["run", "aggregator=acme-two:bow", "dataset.params.n_samples=60", "hydra.run.dir=q"], cwd=tmp_path,
                  env={"PYTHONPATH": str(site)}, check=False)
    assert run.returncode == 0, run.stderr
    rec = json.loads((tmp_path / "q" / "result.json").read_text())
    assert rec["plugins"]["aggregator"]["distribution"] == "acme-two" and rec["output_dim"] == 9


def test_a_name_two_packages_claim_is_named_never_unknown(site, tmp_path):
    run = run_cli(["run", "aggregator=pool", "hydra.run.dir=p"], cwd=tmp_path, env={"PYTHONPATH": str(site)},
                  check=False)
    assert run.returncode == 2
    assert "unknown" not in run.stderr and "Traceback" not in run.stderr
    assert "acme_one (acme-one 1.0); acme_two (acme-two 1.0)" in run.stderr
    assert "aggregator=acme-one:pool or aggregator=acme-two:pool" in run.stderr


def test_a_plugin_interrupting_its_import_is_a_broken_plugin(site, tmp_path):
    listing = run_cli(["plugins"], cwd=tmp_path, env={"PYTHONPATH": str(site)}, check=False)
    assert " bow " in listing.stdout and "acme-one:pool" in listing.stdout
    assert "interrupting 1.0 failed to load: KeyboardInterrupt: a plugin interrupts its import" in listing.stderr
    assert "Traceback" not in listing.stderr
