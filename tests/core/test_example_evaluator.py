"""The example evaluator package (examples/lfabench-logreg): docs/guide/evaluators.md holds its files byte for
byte; it passes the conformance battery as it stands; installed, it passes `lfabench plugins check`, its own
tests, and its runs reach a board (slow tier) whose accuracy recomputes from the stored predictions."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO, run_cli
from package_helpers import install_into

EXAMPLE = REPO / "examples" / "lfabench-logreg"
GUIDE = REPO / "docs" / "guide" / "evaluators.md"
FILE_BLOCK = re.compile(r"^```[a-z]*\n# (?P<path>[\w./-]+\.(?:py|toml|yaml))\n(?P<body>.*?)^```", re.M | re.S)


def test_guide_blocks_are_the_example_files_and_every_file_is_in_the_guide():
    blocks = {m["path"]: m["body"] for m in FILE_BLOCK.finditer(GUIDE.read_text())}
    files = {str(p.relative_to(EXAMPLE)) for p in EXAMPLE.rglob("*") if p.is_file() and p.name != "README.md"
             and "__pycache__" not in p.parts and ".egg-info" not in str(p)}
    assert {"pyproject.toml", "src/lfabench_logreg/plugin.py", "tests/test_logreg.py"} <= set(blocks)
    assert set(blocks) == files
    for path, body in blocks.items():
        assert body.strip() == (EXAMPLE / path).read_text().strip(), f"the guide's block for {path} differs"


def test_example_passes_the_battery_from_its_source(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLE / "src"))
    from lfabench.testing import evaluator_checks, run_cases
    from lfabench_logreg import LogRegAccuracy

    results = run_cases(evaluator_checks(LogRegAccuracy()))
    assert [r.name for r in results if not r.ok] == []
    assert len(results) >= 9


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return install_into(EXAMPLE, tmp_path_factory.mktemp("site"), tmp_path_factory.mktemp("source"))


@pytest.mark.slow
def test_installed_example_passes_plugins_check_and_its_own_tests(site, tmp_path):
    report = run_cli(["plugins", "check", "logreg"], cwd=tmp_path, env={"PYTHONPATH": str(site)}).stdout
    assert "0 failed" in report and "PASS   check_predictions_recompute_metrics" in report
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(EXAMPLE / "tests")], cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(site)),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and "passed" in proc.stdout, proc.stdout[-3000:] + proc.stderr[-2000:]


@pytest.mark.slow
def test_example_reaches_a_board_and_verifies_its_accuracy(site, tmp_path):
    env = {"PYTHONPATH": str(site)}
    run_cli(["run", "-m", "evaluator=logreg", "aggregator=bow,prolfa", "seed=0,1", "dataset.params.n_samples=150",
             "hydra.sweep.dir=sweep"], cwd=tmp_path, env=env)
    records = [json.loads(p.read_text()) for p in (tmp_path / "sweep").rglob("result.json")]
    assert len(records) == 4 and {r["status"] for r in records} == {"ok"}
    assert {r["predictions"]["kind"] for r in records} == {"labels"}
    assert {r["plugins"]["evaluator"]["distribution"] for r in records} == {"lfabench-logreg"}
    run_cli(["leaderboard", "sweep", "--out", "board", "--name", "logreg"], cwd=tmp_path, env=env)
    with open(tmp_path / "board" / "logreg.csv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["evaluator"] == "logreg" and r["metric"] == "accuracy"]
    assert sorted(r["aggregator"] for r in rows) == ["bow", "prolfa"]
    page = (tmp_path / "board" / "logreg.md").read_text()
    assert "Logistic-regression accuracy" in page and "logreg accuracy" in page
    from lfabench.evaluation import recompute_metrics
    from lfabench.record import load_predictions

    for path in (tmp_path / "sweep").rglob("predictions.npz"):
        rec = json.loads((path.parent / "result.json").read_text())
        assert recompute_metrics(load_predictions(path)) == rec["metrics"]
