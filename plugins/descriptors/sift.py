"""``sift``: OpenCV's SIFT detector and descriptor (Lowe, IJCV 2004), optional RootSIFT.

Detection: difference-of-Gaussians extrema of the grey image (OpenCV ``SIFT_create``,
``nfeatures=0`` so OpenCV itself keeps everything). The per-image cap is then applied
here, deterministically (:data:`lfabench_plugins.descriptors.localfeatures.STRONGEST_RULE`): strongest DoG
response first, ties by smaller ``y``, smaller ``x``, larger scale, smaller orientation.
The paper caps SIFT at 90 per image. Descriptors are computed for the kept keypoints
only: ``(n, 128)`` float32 (OpenCV's scaling, entries 0..255). ``root_sift=True``
applies RootSIFT (Arandjelovic & Zisserman, CVPR 2012).

``long_side`` (opt-in, default None): the grey image is first resized so that its longer side has
``long_side`` pixels (bicubic when enlarging, pixel-area when shrinking:
:func:`~lfabench_plugins.descriptors.localfeatures.resize_long_side`); detection, the cap and the
descriptors all work on the resized image, and the keypoints are mapped back to the original frame.

Keypoints: ``x, y, scale, orientation`` (scale = OpenCV ``size / 2``, orientation in radians), in
the dataset image's pixel frame.
Reference: OpenCV ``modules/features2d/src/sift.dispatch.cpp``; Lowe 2004.
"""

from __future__ import annotations

import numpy as np

from lfabench.sdk import Descriptor, PluginSpec, hookimpl

from .localfeatures import (
    CONSTRAINTS,
    STRONGEST_RULE,
    check_long_side,
    config_defaults,
    cv_keypoints_array,
    keypoints_to_original,
    resize_long_side,
    root_sift,
    select_strongest,
    to_gray_uint8,
)


class SIFT(Descriptor):
    keypoint_fields = ("x", "y", "scale", "orientation")
    # 4 x 4 cells of 3 sigma each (OpenCV SIFT_DESCR_SCL_FCTR = 3; scale = size / 2 = sigma), unrotated
    keypoint_extent = 12.0
    selection_rule = STRONGEST_RULE

    _parameter_constraints = CONSTRAINTS  # max_keypoints, long_side

    def __init__(self, max_keypoints: int | None = 90, root_sift: bool = False, contrast_threshold: float = 0.04,
                 edge_threshold: float = 10.0, sigma: float = 1.6, n_octave_layers: int = 3,
                 long_side: int | None = None):
        self.max_keypoints = None if not max_keypoints else int(max_keypoints)
        self.root_sift = bool(root_sift)
        self.contrast_threshold = float(contrast_threshold)
        self.edge_threshold = float(edge_threshold)
        self.sigma = float(sigma)
        self.n_octave_layers = int(n_octave_layers)
        self.long_side = check_long_side("sift", long_side)

    def _detector(self):
        import cv2

        return cv2.SIFT_create(nfeatures=0, nOctaveLayers=self.n_octave_layers,
                               contrastThreshold=self.contrast_threshold, edgeThreshold=self.edge_threshold,
                               sigma=self.sigma)

    def extract(self, image: np.ndarray):
        original = to_gray_uint8(image)
        gray = resize_long_side(original, self.long_side)
        sift = self._detector()
        kps = sift.detect(gray, None)
        if not kps:
            return np.empty((0, 128), np.float32), np.empty((0, 4), np.float32)
        K = cv_keypoints_array(kps)
        response = np.array([k.response for k in kps], dtype=np.float64)
        keep = select_strongest(response, K[:, 0], K[:, 1], self.max_keypoints, -K[:, 2], K[:, 3])
        chosen = [kps[i] for i in keep]
        computed, D = sift.compute(gray, chosen)
        if D is None or len(computed) != len(chosen):  # OpenCV's SIFT keeps every provided keypoint
            raise RuntimeError(f"sift: OpenCV returned {0 if D is None else len(computed)} descriptors for "
                               f"{len(chosen)} keypoints")
        D = np.asarray(D, dtype=np.float32)
        if self.root_sift:
            D = root_sift(D)
        return D, keypoints_to_original(cv_keypoints_array(computed), original.shape, gray.shape, self.keypoint_fields)


@hookimpl
def lfabench_descriptors():
    return [PluginSpec("sift", SIFT, "OpenCV SIFT (DoG + 128-D), strongest-response cap (paper: 90), RootSIFT option",
                       defaults=config_defaults(SIFT))]
