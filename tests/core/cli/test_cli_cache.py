"""``lfabench cache clear`` removes only what lfabench wrote, lists it, and never follows a link out of its root."""

from __future__ import annotations

import json
import os

import numpy as np

from lfabench.storage import ArrayCache

from conftest import run_cli

ENTRY = "kmeans-K_8-0123456789abcdef"


def _plant(root, outside):
    """A project folder used as the cache by mistake, holding one real entry and an unfinished extraction."""
    (root / "project" / "src").mkdir(parents=True)
    (root / "package.json").write_text('{"name": "app"}')
    (root / "project.json").write_text('{"name": "project"}')
    (root / "project" / "src" / "main.js").write_text("console.log(1)")
    outside.mkdir()
    (outside / "victim.json").write_text(json.dumps({"name": "kmeans-K_9-0123456789abcdef", "lfabench_cache": 1}))
    (outside / "chunks").mkdir()
    (outside / "chunks" / "chunk-00000-of-00001.npz").write_bytes(b"precious")
    # links named like an entry and like an unfinished extraction, pointing out of the root
    os.symlink(outside / "victim.json", root / "kmeans-K_9-0123456789abcdef.json")
    os.symlink(outside / "chunks", root / "descriptors-d-0123456789abcdef.partial")
    ArrayCache(root).save(ENTRY, {"centres": np.zeros((8, 2), np.float32)})
    (root / "descriptors-e-fedcba9876543210.partial").mkdir()
    np.savez(root / "descriptors-e-fedcba9876543210.partial" / "chunk-00000-of-00002.npz", a=np.zeros(1))


def _foreign_intact(root, outside):
    assert (root / "package.json").read_text() == '{"name": "app"}'
    assert (root / "project.json").is_file() and (root / "project" / "src" / "main.js").is_file()
    assert (root / "kmeans-K_9-0123456789abcdef.json").is_symlink()
    assert (root / "descriptors-d-0123456789abcdef.partial").is_symlink()
    assert json.loads((outside / "victim.json").read_text())["lfabench_cache"] == 1
    assert (outside / "chunks" / "chunk-00000-of-00001.npz").read_bytes() == b"precious"


def test_clear_refuses_a_folder_holding_foreign_files(tmp_path):
    root, outside = tmp_path / "work", tmp_path / "outside"
    root.mkdir()
    _plant(root, outside)
    proc = run_cli(["cache", "clear"], cwd=tmp_path, env={"LFABENCH_CACHE": str(root)}, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "refusing to clear it" in proc.stderr and "package.json" in proc.stderr and "project/" in proc.stderr
    _foreign_intact(root, outside)
    assert (root / f"{ENTRY}.npz").is_file()  # nothing removed at all


def test_clear_keep_foreign_removes_only_lfabench_entries_and_lists_them(tmp_path):
    root, outside = tmp_path / "work", tmp_path / "outside"
    root.mkdir()
    _plant(root, outside)
    env = {"LFABENCH_CACHE": str(root)}
    dry = run_cli(["cache", "clear", "--keep-foreign", "--dry-run"], cwd=tmp_path, env=env)
    assert f"would remove {ENTRY}" in dry.stdout and "would remove descriptors-e-fedcba9876543210.partial" in dry.stdout
    assert (root / f"{ENTRY}.npz").is_file()
    proc = run_cli(["cache", "clear", "--keep-foreign"], cwd=tmp_path, env=env)
    assert f"removed {ENTRY}" in proc.stdout and "removed 2 cache entries" in proc.stdout
    assert "left 5 other file(s) or folder(s) alone" in proc.stdout
    assert not (root / f"{ENTRY}.npz").exists() and not (root / f"{ENTRY}.json").exists()
    assert not (root / "descriptors-e-fedcba9876543210.partial").exists()
    _foreign_intact(root, outside)


def test_clear_of_lfabench_own_cache_needs_no_flag(tmp_path):
    root = tmp_path / "cache"
    ArrayCache(root).save(ENTRY, {"centres": np.zeros((8, 2), np.float32)})
    (root / ".locks").mkdir()
    proc = run_cli(["cache", "clear"], cwd=tmp_path, env={"LFABENCH_CACHE": str(root)})
    assert f"removed {ENTRY}" in proc.stdout and "removed 1 cache entry from" in proc.stdout
    assert sorted(p.name for p in root.iterdir()) == [".locks"]
