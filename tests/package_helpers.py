"""Installing a plugin package for a test: a real wheel build (pip, build isolation) into a folder that the test
puts on PYTHONPATH, so the environment running the suite is left as it was."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def install_into(source: Path, site: Path, workdir: Path) -> Path:
    """pip-install the package at ``source`` (copied into ``workdir`` first: the build leaves nothing in the
    repository) into ``site``; a failed install fails the test with pip's output."""
    copy = workdir / source.name
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site),
                           str(copy)], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        pytest.fail(f"pip could not install {source.name}:\n{proc.stdout}\n{proc.stderr}")
    return site
