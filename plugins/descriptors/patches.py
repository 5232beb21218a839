"""Raw pixel patches on a dense grid: the local descriptor for tiny images (e.g. 8x8 digits).

Each patch of ``patch_size x patch_size`` grey values (stride ``stride``) is one
descriptor of dimension ``patch_size**2``; its keypoint is the patch centre
``(x, y)`` in pixels and its scale ``patch_size``. Colour images are converted
to grey as the mean of their channels. ``normalize``: ``"none"`` (values as
stored, divided by ``scale``), ``"center"`` (subtract the patch mean) or
``"l2"`` (unit-norm patches; flat patches stay zero).
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from lfabench.sdk import Descriptor, PluginSpec, hookimpl


class Patches(Descriptor):
    keypoint_fields = ("x", "y", "scale")
    keypoint_extent = 1.0  # scale is the patch side: the region is the patch itself

    def __init__(self, patch_size: int = 3, stride: int = 1, normalize: str = "none", scale: float = 1.0):
        if int(patch_size) < 1 or int(stride) < 1:
            raise ValueError(f"patches: patch_size and stride must be >= 1, got {patch_size}, {stride}")
        if normalize not in ("none", "center", "l2"):
            raise ValueError(f"patches: normalize must be 'none', 'center' or 'l2', got {normalize!r}")
        self.patch_size = int(patch_size)
        self.stride = int(stride)
        self.normalize = normalize
        self.scale = float(scale)

    def extract(self, image: np.ndarray):
        img = np.asarray(image, dtype=np.float32)
        if img.ndim == 3:
            img = img.mean(axis=2)
        p, s = self.patch_size, self.stride
        if img.shape[0] < p or img.shape[1] < p:
            return np.empty((0, p * p), np.float32), np.empty((0, 3), np.float32)
        windows = sliding_window_view(img, (p, p))[::s, ::s]  # (rows, cols, p, p)
        rows, cols = windows.shape[:2]
        D = windows.reshape(rows * cols, p * p) / self.scale
        if self.normalize == "center":
            D = D - D.mean(axis=1, keepdims=True)
        elif self.normalize == "l2":
            D = D / np.maximum(np.linalg.norm(D, axis=1, keepdims=True), 1e-12)
        yy, xx = np.meshgrid(np.arange(rows) * s + (p - 1) / 2, np.arange(cols) * s + (p - 1) / 2, indexing="ij")
        K = np.stack([xx.ravel(), yy.ravel(), np.full(rows * cols, p)], axis=1).astype(np.float32)
        return np.ascontiguousarray(D, dtype=np.float32), K


@hookimpl
def lfabench_descriptors():
    return [PluginSpec("patches", Patches, "Raw grey-value patches on a dense grid (for tiny images)")]
