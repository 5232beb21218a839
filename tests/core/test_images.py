"""Image files that are empty, cut short or too large are refused before decoding, naming the file."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from lfabench.dataset import Dataset
from lfabench.describe import Descriptor
from lfabench.images import DEFAULT_MAX_IMAGE_PIXELS, CorruptImageError, ImageTooLargeError, header_size
from lfabench.run import run_benchmark
from lfabench.params import ConfigError

from data_helpers import textured_image


class RowMeans(Descriptor):
    """One descriptor per image row: its mean and max."""

    def extract(self, image):
        img = image.astype(np.float32)
        D = np.stack([img.mean(axis=1), img.max(axis=1)], axis=1)
        return D, np.stack([np.zeros(len(D)), np.arange(len(D))], axis=1)


def _png(path, image):
    ok, buf = cv2.imencode(".png", image)
    assert ok
    path.write_bytes(buf.tobytes())
    return path


def _files(tmp_path, n=4, shape=(40, 48)):
    return [_png(tmp_path / f"im{i}.png", textured_image(i, shape)) for i in range(n)]


def _dataset(paths, **kw):
    return Dataset(name="files", task="classification", sample_ids=[p.name for p in paths],
                   labels=np.arange(len(paths)) % 2, images=paths, **kw)


def test_a_zero_byte_image_is_corrupt_and_named(tmp_path):
    paths = _files(tmp_path)
    paths[1].write_bytes(b"")
    with pytest.raises(CorruptImageError, match=r"im1\.png \(sample 'im1\.png'\) is corrupt: an empty file \(0 bytes\)"):
        _dataset(paths).load_image(1)
    with pytest.raises(CorruptImageError, match="im1.png"):
        RowMeans().describe(_dataset(paths), n_jobs=1, cache=False)


def test_a_zero_byte_image_is_skipped_when_asked(tmp_path):
    paths = _files(tmp_path)
    paths[2].write_bytes(b"")
    d = RowMeans()
    with pytest.warns(UserWarning, match="no descriptors"):
        bags = d.describe(_dataset(paths, skip_corrupt_images=True), n_jobs=1, cache=False)
    assert list(bags.counts) == [40, 40, 0, 40]
    assert d.record_info()["extraction"]["corrupt_image_ids"] == ["im2.png"]


def test_an_undecodable_file_is_named_whatever_opencv_raises(tmp_path, monkeypatch):
    paths = _files(tmp_path, n=1)

    def broken(*args, **kwargs):
        raise cv2.error("OpenCV(4.x) error: (-215:Assertion failed) !buf.empty() in function 'imdecode_'")

    monkeypatch.setattr(cv2, "imdecode", broken)
    with pytest.raises(CorruptImageError, match=r"im0\.png.*cannot be decoded by OpenCV.*buf\.empty"):
        _dataset(paths).load_image(0)


def test_the_header_size_is_read_without_decoding(tmp_path):
    path = _png(tmp_path / "wide.png", np.zeros((30, 70), np.uint8))
    assert header_size(path.read_bytes()) == (70, 30)


def test_an_image_over_the_cap_is_refused_before_decoding(tmp_path, monkeypatch):
    paths = _files(tmp_path, n=2)
    _png(paths[1], np.zeros((1200, 1000), np.uint8))  # 1.2 MP of zeros: a 1-2 KB file

    def must_not_decode(*args, **kwargs):
        raise AssertionError("decoded an image over the pixel cap")

    monkeypatch.setattr(cv2, "imdecode", must_not_decode)
    with pytest.raises(ImageTooLargeError, match=r"im1\.png \(sample 'im1\.png'\) is 1000 x 1200 = 1,200,000 pixels, "
                                                  r"more than max_image_pixels=1,000,000"):
        _dataset(paths, max_image_pixels=1_000_000).load_image(1)


def test_the_default_cap_refuses_a_decompression_bomb(tmp_path):
    side = 6400  # 40.96 MP, just over the default 40 MP; a PNG of zeros of this size is ~40 KB
    assert side * side > DEFAULT_MAX_IMAGE_PIXELS
    path = _png(tmp_path / "bomb.png", np.zeros((side, side), np.uint8))
    assert path.stat().st_size < 200_000
    with pytest.raises(ImageTooLargeError, match="bomb.png"):
        _dataset([path]).load_image(0)
    assert _dataset([path], max_image_pixels=None).load_image(0).shape == (side, side)


def test_an_image_over_the_cap_is_skipped_when_asked(tmp_path):
    paths = _files(tmp_path)
    _png(paths[3], np.zeros((100, 100), np.uint8))
    d = RowMeans()
    with pytest.warns(UserWarning, match="no descriptors"):
        bags = d.describe(_dataset(paths, skip_corrupt_images=True, max_image_pixels=5000), n_jobs=1, cache=False)
    assert list(bags.counts) == [40, 40, 40, 0]


@pytest.mark.filterwarnings("ignore:.*no descriptors")
def test_the_cap_is_part_of_the_cache_key_of_a_skipping_run(tmp_path):
    paths = _files(tmp_path)
    _png(paths[3], np.zeros((100, 100), np.uint8))
    for cap, counts in ((5000, [40, 40, 40, 0]), (None, [40, 40, 40, 100])):  # the second never reads the first's
        bags = RowMeans().describe(_dataset(paths, skip_corrupt_images=True, max_image_pixels=cap), n_jobs=1,
                                   cache=tmp_path / "cache")
        assert list(bags.counts) == counts


@pytest.mark.parametrize("value", [0, -5, 2.5, True, "big"])
def test_a_bad_cap_is_a_config_error(tmp_path, value):
    cfg = {"dataset": {"name": "digits", "params": {"n_samples": 40}}, "descriptor": {"name": "patches", "params": {}},
           "aggregator": {"name": "bow", "params": {"n_clusters": 4, "random_state": 0}},
           "evaluator": {"name": "knn", "params": {}}, "seed": 0, "cache": False, "max_image_pixels": value}
    with pytest.raises(ConfigError, match="max_image_pixels"):
        run_benchmark(cfg, tmp_path)


def test_a_path_that_cannot_be_read_is_named_and_can_be_skipped(tmp_path):
    paths = _files(tmp_path, n=3)
    paths[1].unlink()
    paths[1].mkdir()  # a folder where an image should be
    with pytest.raises(CorruptImageError, match=r"im1\.png \(sample 'im1\.png'\) cannot be read \(IsADirectoryError"):
        _dataset(paths).load_image(1)
    with pytest.warns(UserWarning, match="no descriptors"):
        bags = RowMeans().describe(_dataset(paths, skip_corrupt_images=True), n_jobs=1, cache=False)
    assert list(bags.counts) == [40, 0, 40]


def test_a_missing_file_stays_file_not_found(tmp_path):
    paths = _files(tmp_path, n=1)
    paths[0].unlink()
    with pytest.raises(FileNotFoundError):
        _dataset(paths).load_image(0)
