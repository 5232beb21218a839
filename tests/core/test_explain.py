"""lfabench.prototypes (what a run keeps) and lfabench.explain (crops, dataset checks) on hand-made inputs."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from lfabench import Bags
from lfabench.aggregate import PrototypeSupport
from lfabench.explain import ExplainError, crop_keypoint, load_run_dataset
from lfabench.prototypes import load_prototypes, save_prototypes


def test_support_is_stored_in_dataset_coordinates(tmp_path):
    # fit bags: dataset samples 7 (2 descriptors) and 3 (3 descriptors); keypoints x = 10 * row
    X = np.arange(10, dtype=np.float32).reshape(5, 2)
    K = np.stack([np.arange(5) * 10.0, np.zeros(5), np.ones(5)], axis=1)
    bags = Bags(X, np.array([0, 2, 5]), keypoints=K, keypoint_fields=("x", "y", "scale"))
    C = sp.csc_matrix(np.array([[0.0, 0.2], [0.0, 0.0], [1.0, 0.0], [0.0, 0.5], [0.0, 0.3]]))
    info = save_prototypes(tmp_path, PrototypeSupport(C, np.array([2.0, 5.0]), "test weight"), bags, [7, 3])
    assert info == {"file": "prototypes.npz", "n_prototypes": 2, "n_entries": 4,
                    "keypoint_fields": ["x", "y", "scale"], "weight": "test weight"}
    a = load_prototypes(tmp_path / "prototypes.npz")
    # prototype 0 = row 2 (sample 3, first descriptor); prototype 1 = rows 3, 4, 0 by decreasing weight
    assert a["prototype"].tolist() == [0, 1, 1, 1]
    assert a["coefficient"].tolist() == [1.0, 0.5, 0.3, 0.2]
    assert a["sample"].tolist() == [3, 3, 3, 7]
    assert a["descriptor"].tolist() == [0, 1, 2, 0]
    assert a["keypoints"][:, 0].tolist() == [20.0, 30.0, 40.0, 0.0]
    assert a["prototype_weight"].tolist() == [2.0, 5.0] and str(a["weight_definition"]) == "test weight"


def test_support_rows_must_match_the_fitted_bags(tmp_path):
    bags = Bags(np.zeros((3, 2), np.float32), np.array([0, 3]))
    with pytest.raises(ValueError, match="4 rows, the fitted bags 3 descriptors"):
        save_prototypes(tmp_path, PrototypeSupport(sp.csc_matrix((4, 1)), np.ones(1), "w"), bags, [0])


def test_crop_is_the_square_around_the_keypoint_and_nan_outside():
    img = np.arange(64, dtype=float).reshape(8, 8)
    # a patches keypoint: centre (c + 1, r + 1), scale 3 -> pixels r..r+2, c..c+2
    np.testing.assert_array_equal(crop_keypoint(img, 1 + 4, 1 + 2, 3), img[2:5, 4:7])
    # an even side: columns x0 .. x0 + 3 with x0 = round(x - 1.5)
    np.testing.assert_array_equal(crop_keypoint(img, 3.5, 3.5, 4), img[2:6, 2:6])
    corner = crop_keypoint(img, 0, 0, 3)
    assert np.isnan(corner[0]).all() and np.isnan(corner[:, 0]).all()
    np.testing.assert_array_equal(corner[1:, 1:], img[:2, :2])
    rgb = np.stack([img, img + 1, img + 2], axis=2)
    assert crop_keypoint(rgb, 7, 7, 2).shape == (2, 2, 3)
    assert np.isnan(crop_keypoint(img, 100, 100, 5)).all()  # far outside: nothing, never an error


def _record(name, params, fingerprint=None):
    return {"config": {"dataset": {"name": name, "params": params}},
            "dataset": {"fingerprint": fingerprint} if fingerprint else {}}


def test_run_dataset_must_have_images_and_the_runs_content(tmp_path):
    with pytest.raises(ExplainError, match="images of dataset 'scene15' are missing"):
        load_run_dataset(_record("scene15", {"root": str(tmp_path / "absent")}))
    with pytest.raises(ExplainError, match="differs from the one the run used"):
        load_run_dataset(_record("digits", {"n_samples": 50}, fingerprint="0" * 64))
    ds = load_run_dataset(_record("digits", {"n_samples": 50}))
    assert ds.n_samples == 50


def test_a_missing_image_file_is_named(tmp_path, monkeypatch):
    import types

    import cv2

    import lfabench.explain as explain
    from lfabench.dataset import Dataset

    paths = [tmp_path / "im0.png", tmp_path / "im1.png"]
    for i, p in enumerate(paths):
        cv2.imwrite(str(p), np.full((4, 4), 10 * i, np.uint8))
    ds = Dataset(name="tiny", task="classification", sample_ids=["a", "b"], labels=np.array([0, 1]),
                 images=[str(p) for p in paths])
    spec = types.SimpleNamespace(factory=lambda **_: ds)
    monkeypatch.setattr(explain, "get_registry", lambda: types.SimpleNamespace(get_spec=lambda kind, name: spec))
    paths[1].unlink()  # gone since the run
    with pytest.raises(ExplainError, match="missing or unreadable.*im1.png"):
        load_run_dataset({"config": {"dataset": {"name": "tiny", "params": {}}}, "dataset": {}})
