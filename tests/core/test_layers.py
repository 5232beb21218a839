"""The core's layering is enforced: `lint-imports` keeps the contracts of pyproject.toml."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO


def test_import_contracts_are_kept():
    script = Path(sys.executable).with_name("lint-imports")
    if not script.exists():
        pytest.skip("import-linter is not installed (it is in the test extra: pip install -e '.[test]')")
    proc = subprocess.run([str(script)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "4 kept, 0 broken" in proc.stdout


def test_rerunning_records_loads_no_leaderboard_module():
    # reproduce reads records through lfabench.recordset: importing it pulls in nothing of the leaderboard
    code = ("import sys, lfabench.reproduce\n"
            "print(sorted(m for m in sys.modules if m.startswith('lfabench.leaderboard')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
