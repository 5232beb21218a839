"""A real board published with ``lfabench leaderboard --publish-records``: ``lfabench verify --all`` over a folder
of boards (good, tampered, legacy) and ``lfabench reproduce`` of its records (identical, then a changed config)."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from lfabench.run import run_benchmark

from conftest import run_cli

# The tests may run from a working tree with changes (records of a dirty tree): publishing and verifying
# then need the override, which changes nothing for the clean clone .ci/run tests.
UNCLEAN = "--allow-unclean-records"
pytestmark = pytest.mark.slow  # a published board, two rebuilds and four reruns in subprocesses (~2 min)


@pytest.fixture(scope="module")
def boards(tmp_path_factory):
    """``all/good`` (two tiny digits runs, published by the CLI), ``all/tampered`` (the same records built
    there, then one cell changed) and ``all/archive/legacy`` (a board without record manifest)."""
    root = tmp_path_factory.mktemp("published")
    for seed in (0, 1):
        cfg = {"dataset": {"name": "digits", "params": {"n_samples": 150}},
               "descriptor": {"name": "patches", "params": {}},
               "aggregator": {"name": "bow", "params": {"n_clusters": 8, "random_state": seed}},
               "evaluator": {"name": "knn", "params": {"k": 1}}, "seed": seed, "cache": False}
        setting = dict(cfg, aggregator={"name": "bow", "params": {"n_clusters": 8, "random_state": "${seed}"}})
        setting.pop("seed")
        run_benchmark(cfg, root / "sweep" / "bow" / f"s{seed}", setting=setting)
    run_cli(["leaderboard", "sweep", "--out", "all/good", "--name", "demo", "--publish-records", UNCLEAN], cwd=root)
    shutil.copytree(root / "all" / "good" / "records", root / "all" / "tampered" / "records")
    run_cli(["leaderboard", "all/tampered/records", "--out", "all/tampered", "--name", "demo"], cwd=root)
    md = root / "all" / "tampered" / "demo.md"
    lines = md.read_text().split("\n")
    score = r"\|(\s+)(\d+\.\d\d) ±"  # the first score cell (mean ± std)
    n = next(i for i, line in enumerate(lines) if re.search(score, line))
    lines[n] = re.sub(score, lambda m: f"|{m[1]}{float(m[2]) + 0.01:.2f} ±", lines[n], count=1)
    md.write_text("\n".join(lines))
    legacy = root / "all" / "archive" / "legacy"
    shutil.copytree(root / "all" / "good", legacy)
    (legacy / "demo-records.json").unlink()
    return root, n + 1


def test_verify_all_checks_every_board_and_names_the_legacy_one(boards):
    root, line = boards
    proc = run_cli(["verify", "--all", "all", UNCLEAN], cwd=root, check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"FAIL: all/tampered/demo.md: line {line}: differs from what a rebuild from the records writes" \
        in proc.stderr.splitlines()
    assert not any("all/good" in ln for ln in proc.stderr.splitlines()), proc.stderr
    assert "lfabench verify all/good: ok: 2 record(s), 2 recomputed" in proc.stdout
    assert "lfabench verify all/tampered: FAILED" in proc.stdout
    assert ("not verifiable: all/archive/legacy: board(s) demo published before the current record format "
            "(no demo-records.json)") in proc.stdout
    assert "2 board folder(s) verified (FAILED), 1 not verifiable" in proc.stdout
    shutil.rmtree(root / "all" / "tampered")  # without the tampered board the step passes, legacy named
    try:
        proc = run_cli(["verify", "--all", "all", UNCLEAN], cwd=root)
        assert "1 board folder(s) verified, 1 not verifiable" in proc.stdout
    finally:
        shutil.copytree(root / "all" / "good", root / "all" / "tampered")
    empty = root / "empty"
    empty.mkdir()
    proc = run_cli(["verify", "--all", "empty"], cwd=root, check=False)
    assert proc.returncode == 2 and "no board" in proc.stderr and "Traceback" not in proc.stderr


def test_reproduce_a_published_board_then_a_changed_stored_config(boards, tmp_path):
    root, _ = boards
    proc = run_cli(["reproduce", "all/good", "--sample", "2", "--no-cache"], cwd=root)
    assert "2 of 2 identical" in proc.stdout, proc.stdout
    copy = tmp_path / "copy"
    shutil.copytree(root / "all" / "good", copy)
    path = sorted(copy.glob("records/**/result.json"))[0]
    rec = json.loads(path.read_text())
    rec["config"]["aggregator"]["params"]["n_clusters"] = 9  # the stored config no longer made these results
    path.write_text(json.dumps(rec))
    proc = run_cli(["reproduce", str(copy), "--sample", "2", "--no-cache"], cwd=root, check=False)
    assert proc.returncode == 1 and "1 of 2 identical" in proc.stdout, proc.stdout
    assert f"differs at fitted: {path}" in proc.stdout
