"""Descriptor.describe: cached, resumable, parallel extraction; run-record info."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lfabench import get_plugin
from lfabench.dataset import Dataset
from lfabench.describe import Descriptor
from lfabench.run import run_benchmark
from lfabench.storage import ArrayCache

from data_helpers import textured_image, write_jpeg


def _dataset(n=10, name="toy"):
    imgs = [textured_image(i, (40, 48)) for i in range(n)]
    for i, im in enumerate(imgs):
        im[0, 0] = i  # a unique marker per image
    return Dataset(name=name, task="classification", sample_ids=[f"im{i}" for i in range(n)],
                   labels=np.arange(n) % 2, class_names=["a", "b"], images=imgs)


class Counting(Descriptor):
    """Mean and max of each image row, one descriptor per row; counts calls; can fail on demand."""

    keypoint_fields = ("x", "y")
    chunk_size = 3
    fail_at: int | None = None
    calls = 0

    def __init__(self, scale: float = 1.0):
        self.scale = scale

    def extract(self, image):
        Counting.calls += 1
        if Counting.fail_at is not None and image[0, 0] == Counting.fail_at:
            raise RuntimeError("simulated interruption")
        img = image.astype(np.float32) * self.scale
        D = np.stack([img.mean(axis=1), img.max(axis=1)], axis=1)
        K = np.stack([np.zeros(len(D)), np.arange(len(D))], axis=1)
        return D, K


def test_miss_then_hit_gives_identical_bags(tmp_path):
    ds = _dataset()
    Counting.calls = 0
    first = Counting().describe(ds, n_jobs=1, cache=tmp_path)
    assert Counting.calls == 10
    desc = Counting()
    second = desc.describe(ds, n_jobs=1, cache=tmp_path)
    assert Counting.calls == 10  # nothing recomputed
    info = desc.record_info()
    assert info["extraction"]["cache"] == "hit" and info["extraction"]["chunks_reused"] == 4
    np.testing.assert_array_equal(first.descriptors, second.descriptors)
    np.testing.assert_array_equal(first.offsets, second.offsets)
    np.testing.assert_array_equal(first.keypoints, second.keypoints)
    assert list(second.ids) == list(ds.sample_ids)
    # a different parameter is a different entry
    Counting(scale=2.0).describe(ds, n_jobs=1, cache=tmp_path)
    assert Counting.calls == 20
    assert len(ArrayCache(tmp_path).entries()) == 2
    # no pickle anywhere in the entry
    entry = ArrayCache(tmp_path).entries()[0]
    with np.load(tmp_path / f"{entry.name}.npz", allow_pickle=False) as z:
        assert set(z.files) == {"descriptors", "keypoints", "offsets"}


def test_interrupted_extraction_resumes_from_saved_chunks(tmp_path):
    ds = _dataset()
    marker = int(ds.images[7][0, 0])
    assert sum(int(im[0, 0]) == marker for im in ds.images) == 1
    Counting.calls, Counting.fail_at = 0, marker
    try:
        with pytest.raises(RuntimeError, match="simulated interruption"):
            Counting().describe(ds, n_jobs=1, cache=tmp_path)
    finally:
        Counting.fail_at = None
    partial = list(tmp_path.glob("*.partial"))
    assert len(partial) == 1 and len(list(partial[0].glob("chunk-*.npz"))) == 2  # chunks [0,3) and [3,6)
    Counting.calls = 0
    desc = Counting()
    bags = desc.describe(ds, n_jobs=1, cache=tmp_path)
    assert Counting.calls == 4  # only samples 6..9
    assert desc.record_info()["extraction"]["cache"] == "resumed"
    assert not list(tmp_path.glob("*.partial"))
    ref = Counting().describe(ds, n_jobs=1, cache=False)
    np.testing.assert_array_equal(bags.descriptors, ref.descriptors)
    np.testing.assert_array_equal(bags.offsets, ref.offsets)


def test_parallel_equals_sequential(tmp_path):
    ds = _dataset(n=13)
    patches = get_plugin("descriptor", "patches")
    d = patches(patch_size=5, stride=4)
    d.chunk_size = 2
    seq = d.describe(ds, n_jobs=1, cache=False)
    par = d.describe(ds, n_jobs=2, cache=tmp_path)
    assert d.record_info()["extraction"]["n_jobs"] == 2
    np.testing.assert_array_equal(seq.descriptors, par.descriptors)
    np.testing.assert_array_equal(seq.offsets, par.offsets)
    np.testing.assert_array_equal(seq.keypoints, par.keypoints)


def test_env_switch_disables_the_default_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LFABENCH_CACHE", str(tmp_path / "c"))
    monkeypatch.setenv("LFABENCH_DESCRIPTOR_CACHE", "0")
    d = Counting()
    d.describe(_dataset(4), n_jobs=1)
    assert d.record_info()["extraction"]["cache"] == "off" and not (tmp_path / "c").exists()
    monkeypatch.delenv("LFABENCH_DESCRIPTOR_CACHE")
    d.describe(_dataset(4), n_jobs=1)
    assert d.record_info()["extraction"]["cache"] == "miss" and (tmp_path / "c").exists()


def test_bad_extract_output_names_the_sample():
    class Bad(Counting):
        def extract(self, image):
            return np.zeros((3, 2)), np.zeros((2, 2))

    with pytest.raises(ValueError, match="'im0'"):
        Bad().describe(_dataset(2), n_jobs=1, cache=False)


def test_run_record_holds_selection_rule_and_cache_status(tmp_path, monkeypatch):
    """scene15 + sift + bow end to end on a small copy in the official layout (strict=False)."""
    monkeypatch.setenv("LFABENCH_CACHE", str(tmp_path / "cache"))
    from lfabench_plugins.datasets.scene15 import CLASS_COUNTS

    root = tmp_path / "s15"
    for c_i, c in enumerate(sorted(CLASS_COUNTS)):
        for j in range(5):
            write_jpeg(root / c / f"image_{j + 1:04d}.jpg", textured_image(100 * c_i + j, (80, 80)))
    cfg = {"dataset": {"name": "scene15", "params": {"root": str(root), "strict": False}},
           "descriptor": {"name": "sift", "params": {"max_keypoints": 30}},
           "aggregator": {"name": "bow", "params": {"n_clusters": 8, "random_state": 0}},
           "evaluator": {"name": "knn", "params": {"k": 1}}, "seed": 0}
    record = run_benchmark(cfg, tmp_path / "run1")
    assert record["status"] == "ok" and 0.0 <= record["metrics"]["accuracy"] <= 100.0
    d = record["descriptors"]
    assert d["params"]["max_keypoints"] == 30 and "strongest detector response" in d["selection_rule"]
    assert d["extraction"]["cache"] == "miss" and d["keypoint_fields"] == ["x", "y", "scale", "orientation"]
    record2 = run_benchmark(cfg, tmp_path / "run2")
    saved = json.loads((tmp_path / "run2" / "result.json").read_text())
    assert saved["descriptors"]["extraction"]["cache"] == "hit"
    assert record2["metrics"] == record["metrics"]


class Complex(Descriptor):
    """Returns complex descriptors: the imaginary part must not be dropped in silence."""

    def extract(self, image):
        return np.ones((2, 3)) * (1 + 2j), np.zeros((2, 2))


def test_complex_descriptors_are_an_error_naming_the_sample():
    with pytest.raises(TypeError, match=r"sample 0 \('im0'\).*complex"):
        Complex().describe(_dataset(2), n_jobs=1, cache=False)


def test_truncated_jpeg_is_an_error_naming_the_file(tmp_path):
    from lfabench.dataset import CorruptImageError

    paths = []
    for i in range(3):
        write_jpeg(tmp_path / f"im{i}.jpg", textured_image(i))
        paths.append(tmp_path / f"im{i}.jpg")
    data = paths[1].read_bytes()
    paths[1].write_bytes(data[: len(data) // 3])  # decoders fill the rest with grey rows and say "ok"
    ds = Dataset(name="cut", task="classification", sample_ids=["a", "b", "c"], labels=[0, 1, 0], images=paths)
    ds.load_image(0)
    with pytest.raises(CorruptImageError, match=r"im1\.jpg \(sample 'b'\) is corrupt: a truncated JPEG"):
        ds.load_image(1)
    with pytest.raises(CorruptImageError, match="im1.jpg"):
        get_plugin("descriptor", "sift")().describe(ds, n_jobs=1, cache=False)
    (tmp_path / "junk.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 40)
    ds2 = Dataset(name="junk", task="classification", sample_ids=["j"], labels=[0], images=[tmp_path / "junk.png"])
    with pytest.raises(CorruptImageError, match="junk.png"):
        ds2.load_image(0)


def _write_pgm(path, image):
    """Binary PGM: a fixed header then raw pixels, so two images of one shape have the same file size."""
    h, w = image.shape
    path.write_bytes(f"P5\n{w} {h}\n255\n".encode() + image.astype(np.uint8).tobytes())


def test_replacing_an_image_by_another_of_the_same_size_changes_the_fingerprint_and_misses_the_cache(tmp_path):
    """The fingerprint covered file sizes only: a same-size replacement reused stale descriptors (a 'hit')."""
    paths = [tmp_path / f"im{i}.pgm" for i in range(3)]
    for i, p in enumerate(paths):
        _write_pgm(p, textured_image(i, (40, 48)))

    def dataset():
        return Dataset(name="files", task="classification", sample_ids=["a", "b", "c"], labels=[0, 1, 0],
                       images=paths)

    before = dataset().fingerprint()
    a = Counting().describe(dataset(), n_jobs=1, cache=tmp_path / "cache")
    size = paths[1].stat().st_size
    _write_pgm(paths[1], textured_image(7, (40, 48)))
    assert paths[1].stat().st_size == size
    assert dataset().fingerprint() != before
    second = Counting()
    b = second.describe(dataset(), n_jobs=1, cache=tmp_path / "cache")
    assert second.record_info()["extraction"]["cache"] == "miss"
    assert not np.array_equal(a.descriptors, b.descriptors)


def test_corrupt_images_are_skipped_and_counted_only_when_asked(tmp_path):
    from lfabench.dataset import CorruptImageError

    paths = [tmp_path / f"im{i}.pgm" for i in range(5)]
    for i, p in enumerate(paths):
        _write_pgm(p, textured_image(i, (40, 48)))
    paths[2].write_bytes(b"P5\n48 40\n255\n" + b"\0" * 10)  # cut short: no decoder can read it

    def dataset(skip):
        return Dataset(name="cut", task="classification", sample_ids=[f"s{i}" for i in range(5)],
                       labels=[0, 1, 0, 1, 0], images=paths, skip_corrupt_images=skip)

    with pytest.raises(CorruptImageError, match="im2.pgm"):
        Counting().describe(dataset(False), n_jobs=1, cache=False)
    for cache in (False, tmp_path / "cache", tmp_path / "cache"):  # computed, then served from the cache
        d = Counting()
        with pytest.warns(UserWarning, match="no descriptors"):
            bags = d.describe(dataset(True), n_jobs=1, cache=cache)
        assert list(bags.counts[[0, 1, 3, 4]]) == [40] * 4 and bags.counts[2] == 0
        info = d.record_info()["extraction"]
        assert info["corrupt_images_skipped"] == 1 and info["corrupt_image_ids"] == ["s2"]
