"""``long_side``: image-based descriptors resize before extraction and report keypoints in the original frame."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from lfabench import get_plugin, get_registry
from lfabench.cli.run import plugin_config
from lfabench.params import ConfigError, check_params
from lfabench_plugins.descriptors.localfeatures import keypoints_to_original, resize_long_side

from data_helpers import textured_image

IMAGE_BASED = ("sift", "dense_sift", "hesaff", "daisy")


def _by_hand(img, long_side):
    """The resize the option promises, written out: bicubic to the long side, aspect ratio kept."""
    h, w = img.shape
    f = long_side / max(h, w)
    return cv2.resize(img, (round(w * f), round(h * f)), interpolation=cv2.INTER_CUBIC)


def _map_back(K, shape, big_shape):
    """Hand-written inverse of cv2.resize's pixel-centre mapping for x, y, and the scale factor."""
    (h, w), (H, W) = shape, big_shape
    out = np.array(K, np.float64)
    out[:, 0] = (out[:, 0] + 0.5) * w / W - 0.5
    out[:, 1] = (out[:, 1] + 0.5) * h / H - 0.5
    return out, np.sqrt((W / w) * (H / h))


def test_resize_shapes_and_interpolation():
    img = textured_image(3, (60, 80))
    assert resize_long_side(img, None) is img and resize_long_side(img, 80) is img
    big = resize_long_side(img, 200)
    assert big.shape == (150, 200) and big.dtype == np.uint8
    np.testing.assert_array_equal(big, cv2.resize(img, (200, 150), interpolation=cv2.INTER_CUBIC))
    assert not np.array_equal(big, cv2.resize(img, (200, 150), interpolation=cv2.INTER_LINEAR))
    small = resize_long_side(img, 40)
    assert small.shape == (30, 40)
    np.testing.assert_array_equal(small, cv2.resize(img, (40, 30), interpolation=cv2.INTER_AREA))
    assert resize_long_side(np.zeros((7, 300), np.uint8), 100).shape == (2, 100)  # 7 / 3 rounds to 2


def test_keypoints_to_original_inverts_the_resize_geometry():
    # a pixel at (x, y) of a 40x50 image lands at ((x + .5) * 4 - .5, (y + .5) * 3 - .5) of a 120x200 one
    fields = ("x", "y", "scale", "orientation", "a11", "a12", "a21", "a22")
    Kbig = np.array([[4 * 10.5 - 0.5, 3 * 20.5 - 0.5, np.sqrt(12.0) * 2, 0.7, 8.0, 0.0, 3.0, 6.0]], np.float32)
    K = keypoints_to_original(Kbig, (40, 50), (120, 200), fields)
    np.testing.assert_allclose(K, [[10.0, 20.0, 2.0, 0.7, 2.0, 0.0, 1.0, 2.0]], rtol=1e-6)
    assert K.dtype == np.float32
    np.testing.assert_array_equal(keypoints_to_original(Kbig, (40, 50), (40, 50), fields), Kbig)


def test_a_blob_is_found_where_it_is_in_the_original_image():
    # geometric check independent of the mapping code: a Gaussian blob centred at (31.0, 22.0) of a
    # 48x64 image; SIFT on the image enlarged 4x must put its keypoint back near (31, 22)
    yy, xx = np.mgrid[0:48, 0:64]
    img = (30 + 180 * np.exp(-((xx - 31.0) ** 2 + (yy - 22.0) ** 2) / (2 * 3.0 ** 2))).astype(np.uint8)
    _, K = get_plugin("descriptor", "sift")(max_keypoints=1, long_side=256).extract(img)
    assert len(K) == 1
    assert abs(K[0, 0] - 31.0) < 0.5 and abs(K[0, 1] - 22.0) < 0.5
    _, K1 = get_plugin("descriptor", "sift")(max_keypoints=1).extract(img)
    assert abs(K[0, 2] / K1[0, 2] - 1) < 0.25  # the blob's scale is the same in both frames


def test_sift_on_the_enlarged_image_equals_plain_sift_on_an_image_enlarged_by_hand():
    img = textured_image(5, (72, 96))
    big = _by_hand(img, 300)
    D, K = get_plugin("descriptor", "sift")(max_keypoints=40, long_side=300).extract(img)
    Dref, Kref = get_plugin("descriptor", "sift")(max_keypoints=40).extract(big)
    assert len(D) == len(Dref) > 5
    np.testing.assert_array_equal(D, Dref)
    mapped, f = _map_back(Kref, img.shape, big.shape)
    np.testing.assert_allclose(K[:, :2], mapped[:, :2], atol=1e-4)
    np.testing.assert_allclose(K[:, 2], Kref[:, 2] / f, rtol=1e-5)
    np.testing.assert_array_equal(K[:, 3], Kref[:, 3])
    assert K[:, 0].max() < 96 and K[:, 1].max() < 72  # the original frame, not the enlarged one


def test_dense_sift_grid_is_laid_on_the_enlarged_image():
    img = textured_image(6, (50, 60))
    D, K = get_plugin("descriptor", "dense_sift")(step=8, patch_size=16, long_side=120).extract(img)
    xs, ys = np.arange(8, 120 - 8, 8), np.arange(8, 100 - 8, 8)  # the grid of the 100x120 image
    assert D.shape == (xs.size * ys.size, 128)
    Dref, _ = get_plugin("descriptor", "dense_sift")(step=8, patch_size=16).extract(_by_hand(img, 120))
    np.testing.assert_array_equal(D, Dref)
    np.testing.assert_allclose(K[:, 0], (np.tile(xs, ys.size) + 0.5) / 2 - 0.5, atol=1e-5)
    np.testing.assert_allclose(K[:, 1], (np.repeat(ys, xs.size) + 0.5) / 2 - 0.5, atol=1e-5)
    np.testing.assert_allclose(K[:, 2], 16 / 12 / 2, rtol=1e-6)


def test_daisy_dense_on_the_enlarged_image():
    img = textured_image(7, (60, 70))
    D, K = get_plugin("descriptor", "daisy")(keypoints="dense", step=10, long_side=140).extract(img)
    Dref, Kref = get_plugin("descriptor", "daisy")(keypoints="dense", step=10).extract(_by_hand(img, 140))
    np.testing.assert_array_equal(D, Dref)
    mapped, f = _map_back(Kref, img.shape, (120, 140))
    np.testing.assert_allclose(K[:, :2], mapped[:, :2], atol=1e-4)
    np.testing.assert_allclose(K[:, 2], 15 / f, rtol=1e-5)


def test_hesaff_regions_on_the_enlarged_image():
    pytest.importorskip("pyhesaff")
    img = textured_image(8, (80, 100))
    D, K = get_plugin("descriptor", "hesaff")(max_keypoints=10, long_side=250).extract(img)
    big = _by_hand(img, 250)
    Dref, Kref = get_plugin("descriptor", "hesaff")(max_keypoints=10).extract(big)
    assert len(D) > 0
    np.testing.assert_array_equal(D, Dref)
    mapped, _ = _map_back(Kref, img.shape, big.shape)
    np.testing.assert_allclose(K[:, :2], mapped[:, :2], atol=1e-3)
    np.testing.assert_allclose(K[:, 4:], Kref[:, 4:] / 2.5, rtol=1e-5)  # 250 / 100 on both axes
    np.testing.assert_allclose(K[:, 2], np.sqrt(np.abs(K[:, 4] * K[:, 7])), rtol=1e-5)  # scale = sqrt(det A)


@pytest.mark.parametrize("name", IMAGE_BASED)
@pytest.mark.parametrize("bad", [0, -300, 2.5, True, "300"])
def test_bad_long_side_is_refused_naming_the_plugin_and_parameter(name, bad):
    if name == "hesaff":
        pytest.importorskip("pyhesaff")
    factory = get_plugin("descriptor", name)
    expected = ("an integer or null" if isinstance(bad, (bool, float, str))
                else "an int in the range [1, inf) or None")
    words = f"parameter long_side={bad!r} must be {expected}"
    with pytest.raises(ConfigError) as exc:
        factory(long_side=bad)
    assert str(exc.value) == f"{factory.__name__}: {words}"
    spec = get_registry().get_spec("descriptor", name)  # the command line refuses it in the same words
    with pytest.raises(ConfigError) as exc:
        check_params("descriptor", name, spec.factory, {"long_side": bad})
    assert str(exc.value) == f"descriptor {name!r}: {words} (`descriptor.params.long_side=...`)"


@pytest.mark.parametrize("name", IMAGE_BASED)
def test_long_side_none_is_the_plain_extractor(name):
    if name == "hesaff":
        pytest.importorskip("pyhesaff")
    img = textured_image(9, (64, 80))
    D0, K0 = get_plugin("descriptor", name)().extract(img)
    D1, K1 = get_plugin("descriptor", name)(long_side=None).extract(img)
    D2, K2 = get_plugin("descriptor", name)(long_side=80).extract(img)  # already 80 px on its long side
    for D, K in ((D1, K1), (D2, K2)):
        np.testing.assert_array_equal(D, D0)
        np.testing.assert_array_equal(K, K0)


def test_default_configs_are_unchanged():
    # long_side is opt-in: the default configs are exactly those of the code before the option, so a
    # run of an existing config keeps its setting key (run directory, resume, leaderboard pooling)
    before = {
        "sift": {"max_keypoints": 90, "root_sift": False, "contrast_threshold": 0.04, "edge_threshold": 10.0,
                 "sigma": 1.6, "n_octave_layers": 3},
        "dense_sift": {"step": 8, "patch_size": 16, "max_keypoints": None, "root_sift": False},
        "hesaff": {"max_keypoints": 90, "descriptor": "sift", "threshold": 16.0 / 3.0, "affine_invariance": True,
                   "rotation_invariance": False},
        "daisy": {"max_keypoints": 150, "keypoints": "dog", "step": 4, "radius": 15, "rings": 3, "histograms": 8,
                  "orientations": 8, "contrast_threshold": 0.04},
    }
    for name, params in before.items():
        spec = get_registry().get_spec("descriptor", name)
        assert plugin_config(spec)["params"] == params, name
        assert "long_side" not in spec.defaults
    # the option itself is still a parameter of the extractor (recorded through get_params)
    assert get_plugin("descriptor", "sift")(long_side=300).get_params()["long_side"] == 300
