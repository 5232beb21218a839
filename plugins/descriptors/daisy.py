"""``daisy``: scikit-image DAISY descriptors (Tola, Lepetit & Fua, TPAMI 2010), 200-D by default.

Two placements (``keypoints``):

* ``"dog"`` (default): at difference-of-Gaussians keypoints (OpenCV's SIFT detector, as the
  ``sift`` plugin), the descriptor being read from scikit-image's dense DAISY computed at every
  pixel (``step=1``). Keypoints closer than ``radius`` to the border (no full support) are
  dropped, several orientations at one position count once, then the cap keeps the strongest
  responses (:data:`lfabench_plugins.descriptors.localfeatures.STRONGEST_RULE`).
* ``"dense"``: on a regular grid with spacing ``step``; the cap keeps evenly spread grid points
  (:data:`lfabench_plugins.descriptors.localfeatures.SPREAD_RULE`).

The paper caps DAISY at 300 per image (Oxford, Holidays) or 150 (Scene-15, VOC) and computes it on
Hessian-affine regions (see the ``hesaff`` plugin for that variant). DAISY is not rotation- or
scale-normalised here: the support is a fixed ``radius`` in pixels. Keypoints: ``x, y, scale`` with
``scale = radius``, in the dataset image's pixel frame. Reference: ``skimage.feature.daisy``.

``long_side`` (opt-in, default None): everything runs on the grey image resized so that its longer
side has ``long_side`` pixels (bicubic when enlarging, pixel-area when shrinking); ``step`` and
``radius`` are pixels of the resized image; keypoints are mapped back to the original frame.
"""

from __future__ import annotations

import numpy as np

from lfabench.sdk import Descriptor, PluginSpec, hookimpl

from .localfeatures import (
    CONSTRAINTS,
    SPREAD_RULE,
    STRONGEST_RULE,
    check_long_side,
    config_defaults,
    daisy_grid,
    keypoints_to_original,
    resize_long_side,
    select_spread,
    select_strongest,
    to_gray_uint8,
)


class DAISY(Descriptor):
    keypoint_fields = ("x", "y", "scale")
    keypoint_extent = 2.0  # scale = radius: the disc of the outer ring fits a square of side 2 * radius

    _parameter_constraints = CONSTRAINTS  # max_keypoints, long_side

    def __init__(self, max_keypoints: int | None = 150, keypoints: str = "dog", step: int = 4, radius: int = 15,
                 rings: int = 3, histograms: int = 8, orientations: int = 8, contrast_threshold: float = 0.04,
                 long_side: int | None = None):
        if keypoints not in ("dog", "dense"):
            raise ValueError(f"daisy: keypoints must be 'dog' or 'dense', got {keypoints!r}")
        if int(step) < 1 or int(radius) < 1:
            raise ValueError(f"daisy: step and radius must be >= 1, got {step}, {radius}")
        self.max_keypoints = None if not max_keypoints else int(max_keypoints)
        self.keypoints = keypoints
        self.step = int(step)
        self.radius = int(radius)
        self.rings = int(rings)
        self.histograms = int(histograms)
        self.orientations = int(orientations)
        self.contrast_threshold = float(contrast_threshold)
        self.long_side = check_long_side("daisy", long_side)

    @property
    def selection_rule(self) -> str:  # type: ignore[override]
        return SPREAD_RULE if self.keypoints == "dense" else (
            "DoG keypoints with full DAISY support, one per pixel position; " + STRONGEST_RULE)

    @property
    def dim(self) -> int:
        return (self.rings * self.histograms + 1) * self.orientations

    def extract(self, image: np.ndarray):
        original = to_gray_uint8(image)
        gray = resize_long_side(original, self.long_side)
        if self.keypoints == "dense":
            D, x, y = daisy_grid(gray, self.step, self.radius, self.rings, self.histograms, self.orientations)
            keep = select_spread(len(D), self.max_keypoints)
            D, x, y = D[keep], x[keep], y[keep]
        else:
            D, x, y = self._at_dog_keypoints(gray)
        K = np.stack([x, y, np.full(len(x), self.radius, np.float32)], axis=1).astype(np.float32)
        return D, keypoints_to_original(K, original.shape, gray.shape, self.keypoint_fields)

    def _at_dog_keypoints(self, gray):
        import cv2

        empty = (np.empty((0, self.dim), np.float32), np.empty(0, np.float32), np.empty(0, np.float32))
        kps = cv2.SIFT_create(contrastThreshold=self.contrast_threshold).detect(gray, None)
        if not kps:
            return empty
        h, w = gray.shape
        px = np.array([int(round(k.pt[0])) for k in kps])
        py = np.array([int(round(k.pt[1])) for k in kps])
        resp = np.array([k.response for k in kps])
        size = np.array([k.size for k in kps])
        r = self.radius
        inside = (px >= r) & (px < w - r) & (py >= r) & (py < h - r)
        if not inside.any():
            return empty
        px, py, resp, size = px[inside], py[inside], resp[inside], size[inside]
        order = select_strongest(resp, px, py, None, -size)
        _, first = np.unique(py[order] * w + px[order], return_index=True)  # one keypoint per pixel position
        order = order[np.sort(first)][: self.max_keypoints or None]
        dense, _, _ = daisy_grid(gray, 1, r, self.rings, self.histograms, self.orientations)
        cols = w - 2 * r
        D = dense[(py[order] - r) * cols + (px[order] - r)]
        return D, px[order].astype(np.float32), py[order].astype(np.float32)


@hookimpl
def lfabench_descriptors():
    return [PluginSpec("daisy", DAISY, "scikit-image DAISY (200-D) at DoG keypoints or on a dense grid, capped",
                       defaults=config_defaults(DAISY))]
