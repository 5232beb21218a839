"""patches descriptor plugin: values and keypoints by hand."""

import numpy as np

from lfabench import get_plugin


def test_patches_descriptor_values_and_keypoints():
    img = np.arange(16, dtype=np.float32).reshape(4, 4)
    D, K = get_plugin("descriptor", "patches")(patch_size=2, stride=2).extract(img)
    np.testing.assert_array_equal(D, [[0, 1, 4, 5], [2, 3, 6, 7], [8, 9, 12, 13], [10, 11, 14, 15]])
    np.testing.assert_array_equal(K[:, :2], [[0.5, 0.5], [2.5, 0.5], [0.5, 2.5], [2.5, 2.5]])
    Dc, _ = get_plugin("descriptor", "patches")(patch_size=2, stride=2, normalize="center").extract(img)
    np.testing.assert_allclose(Dc.sum(1), 0, atol=1e-5)
