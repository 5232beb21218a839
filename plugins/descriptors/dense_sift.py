"""``dense_sift``: SIFT descriptors on a regular grid (as Lazebnik et al., CVPR 2006: 16x16 patches every 8 px).

OpenCV's SIFT descriptor (Lowe 2004) is computed at upright keypoints placed every ``step`` pixels,
with a spatial support of ``patch_size`` pixels (4x4 cells of ``patch_size / 4`` px; OpenCV's
support is ``6 * size`` px, so ``size = patch_size / 6``). Only positions whose whole patch lies in
the image are used. With a cap, evenly spread grid points are kept
(:data:`lfabench_plugins.descriptors.localfeatures.SPREAD_RULE`). ``root_sift``: RootSIFT (Arandjelovic & Zisserman 2012).
``long_side`` (opt-in, default None): the grid is laid on the grey image resized so that its longer
side has ``long_side`` pixels (bicubic when enlarging, pixel-area when shrinking); ``step`` and
``patch_size`` are pixels of the resized image, so enlarging gives more, finer-scale descriptors.
Keypoints: ``x, y, scale, orientation`` (``scale = size / 2``, orientation 0), mapped back to the
dataset image's pixel frame.
"""

from __future__ import annotations

import numpy as np

from lfabench.sdk import Descriptor, PluginSpec, hookimpl

from .localfeatures import (
    CONSTRAINTS,
    SPREAD_RULE,
    check_long_side,
    config_defaults,
    grid_positions,
    keypoints_to_original,
    resize_long_side,
    root_sift,
    select_spread,
    to_gray_uint8,
)


class DenseSIFT(Descriptor):
    keypoint_fields = ("x", "y", "scale", "orientation")
    keypoint_extent = 12.0  # OpenCV's support is 6 * size = 12 * scale: patch_size pixels
    selection_rule = SPREAD_RULE

    _parameter_constraints = CONSTRAINTS  # max_keypoints, long_side

    def __init__(self, step: int = 8, patch_size: int = 16, max_keypoints: int | None = None, root_sift: bool = False,
                 long_side: int | None = None):
        if int(step) < 1 or int(patch_size) < 4:
            raise ValueError(f"dense_sift: step must be >= 1 and patch_size >= 4, got {step}, {patch_size}")
        self.step = int(step)
        self.patch_size = int(patch_size)
        self.max_keypoints = None if not max_keypoints else int(max_keypoints)
        self.root_sift = bool(root_sift)
        self.long_side = check_long_side("dense_sift", long_side)

    def extract(self, image: np.ndarray):
        import cv2

        original = to_gray_uint8(image)
        gray = resize_long_side(original, self.long_side)
        x, y = grid_positions(gray.shape[0], gray.shape[1], self.step, self.patch_size / 2)
        keep = select_spread(len(x), self.max_keypoints)
        size = self.patch_size / 6.0
        kps = [cv2.KeyPoint(float(a), float(b), size, 0) for a, b in zip(x[keep], y[keep])]
        if not kps:
            return np.empty((0, 128), np.float32), np.empty((0, 4), np.float32)
        out, D = cv2.SIFT_create().compute(gray, kps)
        if D is None or len(out) != len(kps):
            raise RuntimeError(f"dense_sift: OpenCV returned {0 if D is None else len(out)} descriptors for "
                               f"{len(kps)} grid points")
        D = np.asarray(D, np.float32)
        if self.root_sift:
            D = root_sift(D)
        K = np.stack([x[keep], y[keep], np.full(len(kps), size / 2), np.zeros(len(kps))], axis=1)
        return D, keypoints_to_original(K.astype(np.float32), original.shape, gray.shape, self.keypoint_fields)


@hookimpl
def lfabench_descriptors():
    return [PluginSpec("dense_sift", DenseSIFT, "SIFT on a dense grid (default 16 px patches every 8 px)",
                       defaults=config_defaults(DenseSIFT))]
