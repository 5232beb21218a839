"""sift descriptor plugin: the cap keeps OpenCV's strongest responses, RootSIFT, keypoints, determinism."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from lfabench import get_plugin
from lfabench.bags import KEYPOINT_FIELDS

from data_helpers import need_shared, textured_image


def _image():
    root = need_shared("scene15")
    return cv2.imread(str(root / "MITcoast" / "image_0001.jpg"), cv2.IMREAD_GRAYSCALE)


@pytest.mark.shared_data
def test_cap_keeps_the_strongest_opencv_responses():
    img = _image()
    ref = cv2.SIFT_create().detect(img, None)  # independent reference: OpenCV with no cap
    assert len(ref) > 90
    D, K = get_plugin("descriptor", "sift")(max_keypoints=90).extract(img)
    assert D.shape == (90, 128) and K.shape == (90, 4)
    ref_resp = np.sort([k.response for k in ref])[::-1]
    threshold = ref_resp[89]
    # every kept keypoint is at least as strong as the 90th strongest of the reference
    pos = {(round(k.pt[0], 3), round(k.pt[1], 3)): k.response for k in ref}
    kept = np.array([pos[(round(float(x), 3), round(float(y), 3))] for x, y in K[:, :2]])
    assert kept.min() >= threshold - 1e-9
    assert np.all(np.diff(kept) <= 1e-12)  # selection order: strongest first


@pytest.mark.shared_data
def test_uncapped_matches_opencv_detect_and_compute():
    img = _image()
    kps, ref = cv2.SIFT_create().detectAndCompute(img, None)
    D, K = get_plugin("descriptor", "sift")(max_keypoints=None).extract(img)
    assert D.shape == ref.shape
    # same set of descriptors (order differs: ours is by response)
    a = D[np.lexsort(D.T[::-1])]
    b = ref[np.lexsort(ref.T[::-1])]
    np.testing.assert_allclose(a, b, atol=1e-4)


def test_rootsift_is_hellinger_of_sift():
    img = textured_image(3, (120, 160))
    D, K = get_plugin("descriptor", "sift")(max_keypoints=50).extract(img)
    R, K2 = get_plugin("descriptor", "sift")(max_keypoints=50, root_sift=True).extract(img)
    assert D.shape[0] > 0
    np.testing.assert_array_equal(K, K2)
    np.testing.assert_allclose(R, np.sqrt(D / D.sum(axis=1, keepdims=True)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(R, axis=1), 1.0, rtol=1e-5)


def test_keypoints_follow_the_canonical_fields_and_are_deterministic():
    sift = get_plugin("descriptor", "sift")(max_keypoints=20)
    assert sift.keypoint_fields == KEYPOINT_FIELDS[:4]
    img = textured_image(5, (100, 140))
    D1, K1 = sift.extract(img)
    D2, K2 = sift.extract(img.copy())
    np.testing.assert_array_equal(D1, D2)
    np.testing.assert_array_equal(K1, K2)
    assert np.all((K1[:, 0] >= 0) & (K1[:, 0] < 140) & (K1[:, 1] >= 0) & (K1[:, 1] < 100))
    assert np.all(K1[:, 2] > 0)
    # colour input with equal channels gives the grey result
    D3, _ = sift.extract(np.repeat(img[..., None], 3, axis=2))
    np.testing.assert_array_equal(D1, D3)


def test_blank_image_gives_an_empty_bag_and_bad_cap_is_rejected():
    D, K = get_plugin("descriptor", "sift")().extract(np.zeros((50, 50), np.uint8))
    assert D.shape == (0, 128) and K.shape == (0, 4)
    with pytest.raises(ValueError, match="max_keypoints"):
        get_plugin("descriptor", "sift")(max_keypoints=-1)
