"""precomputed: bad caps, files shared by two samples, float32 overflow and foreign dimensions are named."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lfabench import get_plugin
from lfabench.dataset import Dataset
from lfabench.describe import DescriptorDataError
from lfabench.params import ConfigError
from lfabench.run import run_benchmark


def _ids_dataset(ids):
    return Dataset(name="files", task="classification", sample_ids=ids, labels=np.arange(len(ids)) % 2)


def _precomputed(path, **kw):
    return get_plugin("descriptor", "precomputed")(path=str(path), **kw)


@pytest.mark.parametrize("cap", [0, -9])
def test_a_cap_below_one_is_a_parameter_error(tmp_path, cap):
    words = rf"^Precomputed: parameter max_keypoints={cap} must be an int in the range \[1, inf\) or None$"
    with pytest.raises(ValueError, match=words):
        _precomputed(tmp_path, max_keypoints=cap)


def test_a_cap_keeps_the_first_rows(tmp_path):
    X = np.arange(40, dtype=np.float32).reshape(10, 4)
    np.save(tmp_path / "a.npy", X)
    bags = _precomputed(tmp_path, max_keypoints=3).describe(_ids_dataset(["a.jpg"]), n_jobs=1, cache=False)
    np.testing.assert_array_equal(bags.descriptors, X[:3])


def test_two_images_differing_by_extension_do_not_share_one_file(tmp_path):
    np.save(tmp_path / "x.npy", np.ones((3, 4), np.float32))
    with pytest.raises(DescriptorDataError, match=r"samples 'x\.jpg' and 'x\.png' would both read .*x\.\*"):
        _precomputed(tmp_path).describe(_ids_dataset(["x.jpg", "x.png"]), n_jobs=1, cache=False)


def test_the_shared_file_is_refused_before_anything_is_read_in_a_run(tmp_path, monkeypatch):
    from lfabench import hookimpl
    from lfabench.plugin import PluginSpec
    from lfabench.registry import PluginRegistry

    np.save(tmp_path / "x.npy", np.ones((3, 4), np.float32))

    class Twins:  # a dataset plugin whose images x.jpg and x.png differ by extension only
        @staticmethod
        @hookimpl
        def lfabench_datasets():
            return [PluginSpec("twins", lambda: _ids_dataset(["x.jpg", "x.png", "y.jpg", "y.png"]), "twins")]

    reg = PluginRegistry()
    reg.register(Twins, name="twins")
    monkeypatch.setattr("lfabench.run.get_registry", lambda: reg)
    cfg = {"dataset": {"name": "twins", "params": {}},
           "descriptor": {"name": "precomputed", "params": {"path": str(tmp_path)}},
           "aggregator": {"name": "bow", "params": {"n_clusters": 2, "random_state": 0}},
           "evaluator": {"name": "knn", "params": {}}, "seed": 0, "cache": False}
    with pytest.raises(ConfigError, match=r"descriptor 'precomputed': precomputed: samples 'x\.jpg' and 'x\.png'"):
        run_benchmark(cfg, tmp_path / "run")
    assert "descriptors" not in json.loads((tmp_path / "run" / "result.json").read_text())["timings_s"]


def test_float64_beyond_float32_is_reported_as_overflow_naming_the_file(tmp_path):
    X = np.ones((3, 4))
    X[1, 2] = 1e39
    np.save(tmp_path / "big.npy", X)
    with pytest.raises(DescriptorDataError, match=r"big\.npy: value 1e\+39 \(row 1, column 2\) overflows float32"):
        _precomputed(tmp_path).describe(_ids_dataset(["big.jpg"]), n_jobs=1, cache=False)


def test_float64_within_float32_range_is_converted(tmp_path):
    X = np.array([[3e38, -3e38, 1e-50, 0.5]])
    np.save(tmp_path / "ok.npy", X)
    bags = _precomputed(tmp_path).describe(_ids_dataset(["ok.jpg"]), n_jobs=1, cache=False)
    np.testing.assert_array_equal(bags.descriptors, X.astype(np.float32))


def test_a_file_of_another_dimension_is_named_with_both_dimensions(tmp_path):
    np.save(tmp_path / "a.npy", np.ones((3, 8), np.float32))
    np.save(tmp_path / "b.npy", np.ones((2, 8), np.float32))
    np.save(tmp_path / "c.npy", np.ones((2, 5), np.float32))
    with pytest.raises(DescriptorDataError, match=r"c\.npy holds 5-dimensional descriptors, but .*a\.npy "
                                                  r"\(the first sample\) holds 8-dimensional ones"):
        _precomputed(tmp_path).describe(_ids_dataset(["a.jpg", "b.jpg", "c.jpg"]), n_jobs=1, cache=False)


def test_another_dimension_is_named_from_worker_processes_too(tmp_path):
    for i in range(6):
        np.save(tmp_path / f"s{i}.npy", np.ones((2, 8 if i != 4 else 6), np.float32))
    d = _precomputed(tmp_path)
    d.chunk_size = 2
    with pytest.raises(DescriptorDataError, match=r"s4\.npy holds 6-dimensional descriptors, but .*s0\.npy"):
        d.describe(_ids_dataset([f"s{i}.jpg" for i in range(6)]), n_jobs=2, cache=False)


def test_any_descriptor_of_two_widths_in_one_chunk_names_both_samples_and_dimensions():
    from lfabench.describe import Descriptor

    class Ragged(Descriptor):
        def extract(self, image):
            return np.ones((2, 3 if image[0, 0] < 2 else 5)), np.zeros((2, 2))

    images = [np.full((4, 4), v, np.uint8) for v in range(4)]
    ds = Dataset(name="ragged", task="classification", sample_ids=["a", "b", "c", "d"], labels=[0, 1, 0, 1],
                 images=images)
    with pytest.raises(DescriptorDataError, match=r"sample 2 \('c'\) of 'ragged' has 5-dimensional descriptors, but "
                                                  r"sample 0 \('a'\) has 3-dimensional ones"):
        Ragged().describe(ds, n_jobs=1, cache=False)


@pytest.mark.parametrize("ext, content", [(".npy", b""), (".npy", b"\x93NUMPY garbage"), (".npy", None),
                                          (".npz", b"PK\x03\x04 not a zip")])
def test_an_unreadable_descriptor_file_is_named(tmp_path, ext, content):
    path = tmp_path / f"bad{ext}"
    if content is None:
        np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)  # pickled objects are never loaded
    else:
        path.write_bytes(content)
    with pytest.raises(DescriptorDataError, match=rf"bad\{ext} cannot be read as a \{ext} descriptor file"):
        _precomputed(tmp_path).describe(_ids_dataset(["bad.jpg"]), n_jobs=1, cache=False)
