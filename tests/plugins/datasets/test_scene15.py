"""scene15 dataset plugin: the real copy, partial copies, and where the data root comes from."""

from __future__ import annotations

import numpy as np
import pytest

from lfabench import get_plugin
from lfabench.dataroot import register
from lfabench.dataset import DatasetNotFoundError

from data_helpers import need_shared, textured_image, write_jpeg

OFFICIAL = {"bedroom": 216, "CALsuburb": 241, "industrial": 311, "kitchen": 210, "livingroom": 289,
            "MITcoast": 360, "MITforest": 328, "MIThighway": 260, "MITinsidecity": 308, "MITmountain": 374,
            "MITopencountry": 410, "MITstreet": 292, "MITtallbuilding": 356, "PARoffice": 215, "store": 315}


@pytest.mark.shared_data
def test_real_scene15_has_official_counts():
    root = need_shared("scene15")
    ds = get_plugin("dataset", "scene15")(root=str(root))
    assert ds.task == "classification" and ds.n_samples == 4485 and len(ds.class_names) == 15
    counts = dict(zip(ds.class_names, np.bincount(ds.labels)))
    assert counts == OFFICIAL
    # ids name the class folder and labels agree with it
    assert all(sid.split("/")[0] == ds.class_names[y] for sid, y in zip(ds.sample_ids, ds.labels))
    img = ds.load_image(0)
    assert img.shape == (200, 200, 3)


def _mini_scene15(tmp_path, per_class=2, drop=()):
    for c in OFFICIAL:
        if c in drop:
            continue
        for j in range(per_class):
            write_jpeg(tmp_path / c / f"image_{j + 1:04d}.jpg", textured_image(hash(c) % 1000 + j))
    return tmp_path


def test_partial_copy_fails_with_the_fix(tmp_path):
    root = _mini_scene15(tmp_path / "s15", drop=("kitchen",))
    with pytest.raises(DatasetNotFoundError) as err:
        get_plugin("dataset", "scene15")(root=str(root))
    msg = str(err.value)
    assert "'scene15'" in msg and "kitchen" in msg and str(root) in msg
    assert "lfabench data add scene15" in msg and "lfabench data fetch scene15" in msg


def test_wrong_counts_fail_unless_not_strict(tmp_path):
    root = _mini_scene15(tmp_path / "s15", per_class=2)
    with pytest.raises(DatasetNotFoundError, match="bedroom has 2 images, expected 216"):
        get_plugin("dataset", "scene15")(root=str(root))
    ds = get_plugin("dataset", "scene15")(root=str(root), strict=False)
    assert ds.n_samples == 30 and np.array_equal(np.bincount(ds.labels), np.full(15, 2))


def test_default_root_comes_from_registry_then_data_root(tmp_path, monkeypatch):
    monkeypatch.setenv("LFABENCH_DATA", str(tmp_path / "dataroot"))
    with pytest.raises(DatasetNotFoundError) as err:
        get_plugin("dataset", "scene15")()
    assert str(tmp_path / "dataroot" / "scene15") in str(err.value)
    root = _mini_scene15(tmp_path / "elsewhere")
    register("scene15", root)
    ds = get_plugin("dataset", "scene15")(strict=False)
    assert ds.root == root.resolve() and ds.n_samples == 30
