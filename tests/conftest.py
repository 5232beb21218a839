"""Shared fixtures: the real data in ../shared/data (skipped with a reason when absent), CLI runner."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# xdist runs one worker per core, so a thread pool whose idle threads spin holds a core that the other worker
# needs: libgomp's active wait (FAISS, scikit-learn) doubled the CPU seconds of an IVF-PQ training under load, and
# OpenBLAS's worker spins 2^28 cycles (0.11 s of CPU here) after every multi-threaded product. Passive waiting puts
# them to sleep at once; the same threads compute the same sums, so no result changes. Set before any pool's
# library loads (each reads it then); a user's own value is kept.
for _name, _value in (("OMP_WAIT_POLICY", "PASSIVE"), ("OPENBLAS_THREAD_TIMEOUT", "4")):
    os.environ.setdefault(_name, _value)


def shared_data_dir() -> Path | None:
    """``$LFABENCH_SHARED_DATA``, else ``../shared/data`` beside the repository, or None."""
    for cand in (os.environ.get("LFABENCH_SHARED_DATA"), REPO.parent / "shared" / "data"):
        if cand and Path(cand).is_dir():
            return Path(cand)
    return None


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", default=False,
                     help="also run the slow tier (end-to-end runs and sweeps in subprocesses, real-data fits)")


def pytest_collection_modifyitems(config, items):
    """The default tier leaves out tests marked ``slow``; ``--run-slow`` (``.ci/run``) runs every tier."""
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="slow tier: run with --run-slow (.ci/run does)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = shared_data_dir()
    if path is None:
        pytest.skip("needs the real data in ../shared/data (absent here; set LFABENCH_SHARED_DATA)")
    return path


def run_cli(args: list[str], cwd: Path, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """Run ``lfabench ARGS`` in a subprocess (the installed console entry point's module)."""
    full_env = dict(os.environ, HYDRA_FULL_ERROR="1", **(env or {}))
    proc = subprocess.run([sys.executable, "-m", "lfabench.cli", *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"lfabench {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def compose_config(overrides: list[str]) -> dict:
    """The config ``lfabench run OVERRIDES`` composes (plugin and primary configs registered as a run does),
    unresolved, as plain data."""
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    from lfabench.cli.run import CONFIG_PACKAGE, PRIMARY_CONFIG, register_configs

    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_module(config_module=CONFIG_PACKAGE, version_base="1.3"):
        cfg = compose(config_name=PRIMARY_CONFIG, overrides=overrides)
    GlobalHydra.instance().clear()
    return OmegaConf.to_container(cfg, resolve=False)


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` is running (a zombie has exited: its reaper may be slow in containers)."""
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in state
