"""Provenance: the package lock, the environment and the source state, checked against independent readings."""

from __future__ import annotations

import gzip
import hashlib
import json
import subprocess
import sys

import numpy as np
import pytest

from lfabench import provenance
from lfabench.record import RunRecorder, content_digest

from conftest import REPO, run_cli


def _git(cwd, *args):
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True).stdout


def test_package_lock_equals_pip_list():
    proc = subprocess.run([sys.executable, "-m", "pip", "list", "--format", "json", "--disable-pip-version-check"],
                          capture_output=True, text=True, timeout=120, check=True)
    pip = {d["name"].lower().replace("_", "-").replace(".", "-"): d["version"] for d in json.loads(proc.stdout)}
    lock = provenance.package_lock()
    assert lock == pip
    assert lock["numpy"] == np.__version__ and list(lock) == sorted(lock)
    assert provenance.lock_digest(lock) == hashlib.sha256(
        "".join(f"{k}=={v}\n" for k, v in sorted(pip.items())).encode()).hexdigest()


def test_environment_names_cpu_simd_and_thread_pools():
    from threadpoolctl import threadpool_info

    env = provenance.environment()
    with open("/proc/cpuinfo") as fh:
        info = fh.read()
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), None)
    flags = next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), None)
    assert env["cpu_model"] == model and env["cpu_flags"] == (sorted(flags) if flags else None)
    if flags and "avx2" in flags:
        assert "AVX2" in env["cpu_simd"]
    pools = {(p["internal_api"], p["version"], p["num_threads"]) for p in threadpool_info()}
    assert pools <= {(p["internal_api"], p["version"], p["num_threads"]) for p in env["threadpools"]}
    assert env["python"] == ".".join(map(str, sys.version_info[:3]))


def test_a_dirty_trees_diff_applies_to_its_revision(tmp_path):
    repo = tmp_path / "repo"
    (repo / "lfabench").mkdir(parents=True)
    _git(tmp_path, "init", "-q", str(repo))
    _git(repo, "config", "user.email", "t@example.org")
    _git(repo, "config", "user.name", "t")
    (repo / "lfabench" / "a.py").write_text("x = 1\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "one")
    clean = provenance.source_state(repo)
    assert clean.revision == _git(repo, "rev-parse", "HEAD").strip() and not clean.dirty and clean.diff_sha256 is None
    (repo / "lfabench" / "a.py").write_text("x = 2\n")
    (repo / "lfabench" / "new.py").write_text("y = 3\n")  # untracked source: part of the code that runs
    (repo / "notes.txt").write_text("not source\n")
    state = provenance.source_state(repo)
    assert state.dirty and state.diff_sha256 == hashlib.sha256(state.diff).hexdigest()
    assert b"notes.txt" not in state.diff
    # independent check: git itself rebuilds the tree from the revision and the diff
    copy = tmp_path / "copy"
    _git(tmp_path, "clone", "-q", str(repo), str(copy))
    (tmp_path / "d.patch").write_bytes(state.diff)
    _git(copy, "apply", str(tmp_path / "d.patch"))
    assert (copy / "lfabench" / "a.py").read_text() == "x = 2\n"
    assert (copy / "lfabench" / "new.py").read_text() == "y = 3\n"


def test_a_record_carries_complete_provenance_and_its_diff(tmp_path, monkeypatch):
    state = provenance.SourceState("f" * 40, b"diff --git a/x b/x\n")
    monkeypatch.setattr(provenance, "source_state", lambda root=None: state)
    rec = RunRecorder(tmp_path, {"seed": 0}, 0)
    rec.finish_ok({"accuracy": 50.0})
    data = json.loads((tmp_path / "result.json").read_text())
    prov = data["provenance"]
    assert prov["git_revision"] == "f" * 40 and prov["dirty"] and prov["diff_file"] == "source.diff.gz"
    assert gzip.decompress((tmp_path / "source.diff.gz").read_bytes()) == state.diff
    assert prov["diff_sha256"] == hashlib.sha256(state.diff).hexdigest()
    assert prov["packages"]["numpy"] == np.__version__ and prov["environment"]["threadpools"]
    assert data["digest"] == content_digest(data) and data["predictions"] is None
    assert provenance.missing_provenance(data) == [f"dirty tree (revision {'f' * 40} plus a diff, sha256 "
                                                   f"{prov['diff_sha256'][:12]})"]
    clean = dict(data, provenance=dict(prov, dirty=False, diff_sha256=None))
    assert provenance.missing_provenance(clean) == []
    assert provenance.missing_provenance({"schema_version": 1}) == ["no provenance (a record of an older format)"]


def test_version_is_the_release_of_the_source_and_names_the_checkouts_commit():
    import lfabench
    from packaging.version import Version

    out = run_cli(["--version"], cwd=REPO).stdout.strip()
    assert out == f"lfabench {provenance.source_version()}"
    assert lfabench.__version__ == "0.2.0" and Version(lfabench.__version__) >= Version("0.2.0")
    version = Version(provenance.source_version())
    assert version.public == lfabench.__version__
    if provenance.checkout_root() is None:
        pytest.skip("lfabench is not running from a git checkout")
    head = _git(REPO, "rev-parse", "HEAD").strip()
    assert version.local == f"g{head[:9]}" + (".dirty" if provenance.source_state().dirty else "")


def test_non_finite_values_anywhere_still_give_a_record_with_a_digest(tmp_path):
    """JSON has no NaN and the digest refuses it: every NaN/inf, NumPy scalars and arrays included, is written as
    null / "inf" (a NaN metric then fails validation, naming the record, instead of the record being lost)."""
    rec = RunRecorder(tmp_path, {"seed": 0}, 0)
    rec.data["fit_info"] = {"curve": np.array([np.nan, 1.0, np.inf]), "last": np.float64("nan")}
    rec.finish_ok({"accuracy": 50.0})
    data = json.loads((tmp_path / "result.json").read_text())
    assert data["fit_info"] == {"curve": [None, 1.0, "inf"], "last": None}
    assert data["digest"] == content_digest(data)
