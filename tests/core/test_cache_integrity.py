"""Cache entries carry their content digest: an entry that is not what was stored is recomputed, with a warning.

Also: a cache write that fails (disk full) names the entry's path and the run goes on uncached; every
atomic write that fails names its file.
"""

from __future__ import annotations

import errno
import json

import numpy as np
import pytest

import lfabench.storage as storage
from lfabench.run import run_benchmark
from lfabench.storage import ArrayCache, CacheWarning, WriteError, arrays_digest, atomic_write, cached_fit


def _cfg(cache_dir, seed=0):
    return {"dataset": {"name": "digits", "params": {"n_samples": 120}},
            "descriptor": {"name": "patches", "params": {}},
            "aggregator": {"name": "bow", "params": {"n_clusters": 16, "random_state": seed, "cache": True}},
            "evaluator": {"name": "knn", "params": {}}, "seed": seed, "cache": True}


def test_a_replaced_codebook_is_recomputed_with_a_warning_and_the_same_accuracy(tmp_path, monkeypatch):
    monkeypatch.setenv("LFABENCH_CACHE", str(tmp_path / "cache"))
    first = run_benchmark(_cfg(tmp_path), tmp_path / "run1")
    (entry,) = [e for e in ArrayCache().entries() if e.name.startswith("kmeans-")]
    centres = np.load(tmp_path / "cache" / f"{entry.name}.npz")["centres"]
    # an attacker (or bit rot) swaps the codebook for random centres of the same shape; the .json stays
    rng = np.random.default_rng(7)
    np.savez(tmp_path / "cache" / f"{entry.name}.npz",
             centres=rng.uniform(centres.min(), centres.max(), centres.shape).astype(centres.dtype))
    with pytest.warns(CacheWarning, match=f"cache entry {entry.name} .*does not match its recorded digest"):
        second = run_benchmark(_cfg(tmp_path), tmp_path / "run2")
    assert second["metrics"] == first["metrics"]
    assert [e["hit"] for e in second["fit_cache"]] == [False]  # recomputed, not used
    # the entry was rewritten: the next run uses it, silently
    np.testing.assert_array_equal(np.load(tmp_path / "cache" / f"{entry.name}.npz")["centres"], centres)
    third = run_benchmark(_cfg(tmp_path), tmp_path / "run3")
    assert [e["hit"] for e in third["fit_cache"]] == [True] and third["metrics"] == first["metrics"]


def test_entries_record_format_tag_and_digest_and_older_entries_stay_readable(tmp_path):
    store = ArrayCache(tmp_path)
    arrays = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array([1, 2], dtype=np.int64)}
    store.save("toy-x-0123456789abcdef", arrays)
    meta = json.loads((tmp_path / "toy-x-0123456789abcdef.json").read_text())
    assert meta["lfabench_cache"] == 1 and meta["sha256"] == arrays_digest(arrays)
    # an independent digest: sha256 over name, dtype, shape and bytes, in name order
    import hashlib

    def fp(a):
        return hashlib.sha256(f"{a.dtype}{a.shape}".encode() + a.tobytes()).hexdigest()
    want = hashlib.sha256(b"".join(f"{k}\0".encode() + fp(arrays[k]).encode() for k in ("a", "b"))).hexdigest()
    assert meta["sha256"] == want
    # an entry as the previous lfabench wrote it (no tag, no digest) loads and counts as an entry
    np.savez(tmp_path / "old-y-fedcba9876543210.npz", **arrays)
    (tmp_path / "old-y-fedcba9876543210.json").write_text(json.dumps(
        {"name": "old-y-fedcba9876543210", "created": "x", "arrays": {"a": [[2, 3], "float32"], "b": [[2], "int64"]}}))
    loaded = store.load("old-y-fedcba9876543210")
    assert set(loaded) == {"a", "b"} and np.array_equal(loaded["a"], arrays["a"])
    assert [e.name for e in store.entries()] == ["old-y-fedcba9876543210", "toy-x-0123456789abcdef"]


def _enospc(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_cache_disk_names_the_entry_and_the_fit_goes_on(tmp_path, monkeypatch):
    monkeypatch.setattr(storage.os, "fsync", _enospc)
    calls = []

    def fit():
        calls.append(1)
        return {"centres": np.ones((3, 2))}

    with pytest.warns(CacheWarning, match=rf"could not store cache entry toy-.*No space left on device: "
                                          rf"'{tmp_path}/toy-.*\.npz'"):
        out = cached_fit("toy", "t", np.zeros((4, 2)), {"seed": 0}, fit, cache=tmp_path)
    assert np.array_equal(out["centres"], np.ones((3, 2))) and calls == [1]
    assert [p.name for p in tmp_path.iterdir()] == []  # no partial entry, no temporary file


def test_a_failed_atomic_write_names_its_file(tmp_path, monkeypatch):
    target = tmp_path / "result.json"
    target.write_text("old")
    monkeypatch.setattr(storage.os, "fsync", _enospc)
    with pytest.raises(WriteError, match=rf"\[Errno 28\] No space left on device: '{target}'") as info:
        with atomic_write(target) as fh:
            fh.write("new")
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(target)
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]


def test_a_descriptor_entry_that_was_tampered_with_is_extracted_again(tmp_path):
    from test_describe import Counting, _dataset

    ds = _dataset()
    first = Counting().describe(ds, n_jobs=1, cache=tmp_path)
    (npz,) = tmp_path.glob("descriptors-*.npz")
    with np.load(npz) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["descriptors"] = arrays["descriptors"] + 1  # a plausible entry, of other values
    np.savez(npz, **arrays)
    d = Counting()
    with pytest.warns(CacheWarning, match=rf"cache entry {npz.stem} .*does not match its recorded digest"):
        again = d.describe(ds, n_jobs=1, cache=tmp_path)
    assert d.record_info()["extraction"]["cache"] == "miss"
    np.testing.assert_array_equal(again.descriptors, first.descriptors)


def test_a_full_disk_during_extraction_warns_naming_the_chunk_file_and_goes_on(tmp_path, monkeypatch):
    """The cache's promise: a write that fails is a warning naming the file, and the descriptors come back
    computed, with no part of the entry left behind."""
    from test_describe import Counting, _dataset

    expected = Counting().describe(_dataset(), n_jobs=1, cache=False)
    monkeypatch.setattr(storage.os, "fsync", _enospc)
    with pytest.warns(CacheWarning, match=rf"No space left on device: '{tmp_path}/descriptors-.*\.partial/chunk-"):
        bags = Counting().describe(_dataset(), n_jobs=1, cache=tmp_path)
    np.testing.assert_array_equal(bags.descriptors, expected.descriptors)
    assert not list(tmp_path.glob("descriptors-*"))
