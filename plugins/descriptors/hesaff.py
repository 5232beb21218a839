"""``hesaff``: Hessian-affine regions (Mikolajczyk & Schmid, IJCV 2004) with SIFT or DAISY, via ``pyhesaff``.

The paper's detector. ``pyhesaff`` (optional extra ``lfabench[hesaff]``) wraps Perdoch's
Hessian-affine detector and SIFT implementation (Perdoch, Chum & Matas, CVPR 2009): affine-adapted
regions, each normalised to a ``41 x 41`` patch, described by 128-D SIFT (``descriptor="sift"``).
``descriptor="daisy"`` computes scikit-image DAISY (200-D: 3 rings x 8 histograms x 8 orientations)
at the centre of the same normalised patches, with a radius of 20 px (the patch's half-width).

Cap (paper: 90 SIFT; 300 or 150 DAISY): pyhesaff does not expose the detector response, so the
rule is **largest characteristic scale first** (``sqrt(det A)`` of the region's affine shape),
ties by smaller ``y``, then smaller ``x``, then smaller orientation.

Keypoints: all of :data:`lfabench.bags.KEYPOINT_FIELDS`: ``x, y, scale, orientation`` and the
region's shape ``A = [[a11, a12], [a21, a22]]`` (pyhesaff's lower-triangular ``[[a, 0], [c, d]]``
mapping the unit circle to the region's ellipse, in pixels), in the dataset image's pixel frame.

``long_side`` (opt-in, default None): detection and description run on the grey image resized so
that its longer side has ``long_side`` pixels (bicubic when enlarging, pixel-area when shrinking);
the regions are mapped back to the original frame.
"""

from __future__ import annotations

import numpy as np

from lfabench.sdk import KEYPOINT_FIELDS, Descriptor, PluginSpec, hookimpl

from .localfeatures import (
    CONSTRAINTS,
    check_long_side,
    config_defaults,
    daisy_grid,
    keypoints_to_original,
    resize_long_side,
    select_strongest,
    to_gray_uint8,
)

HESAFF_RULE = ("largest characteristic scale sqrt(det A) first (pyhesaff exposes no detector response); ties "
               "broken by smaller y, then smaller x, then smaller orientation; the first max_keypoints are kept")


def _pyhesaff():
    try:
        import pyhesaff
    except ImportError as exc:
        raise ImportError("descriptor 'hesaff' needs pyhesaff (Hessian-affine detector, ~60 MB wheel): "
                          "pip install 'lfabench[hesaff]'  (or: pip install pyhesaff)") from exc
    return pyhesaff


class HessianAffine(Descriptor):
    keypoint_fields = KEYPOINT_FIELDS
    selection_rule = HESAFF_RULE

    _parameter_constraints = CONSTRAINTS  # max_keypoints, long_side

    def __init__(self, max_keypoints: int | None = 90, descriptor: str = "sift", threshold: float = 16.0 / 3.0,
                 affine_invariance: bool = True, rotation_invariance: bool = False,
                 long_side: int | None = None):
        if descriptor not in ("sift", "daisy"):
            raise ValueError(f"hesaff: descriptor must be 'sift' or 'daisy', got {descriptor!r}")
        _pyhesaff()  # fail at construction, not deep inside a run
        self.max_keypoints = None if not max_keypoints else int(max_keypoints)
        self.descriptor = descriptor
        self.threshold = float(threshold)
        self.affine_invariance = bool(affine_invariance)
        self.rotation_invariance = bool(rotation_invariance)
        self.long_side = check_long_side("hesaff", long_side)

    def extract(self, image: np.ndarray):
        hes = _pyhesaff()
        original = to_gray_uint8(image)
        gray = resize_long_side(original, self.long_side)
        dim = 128 if self.descriptor == "sift" else 200
        opts = dict(threshold=self.threshold, affine_invariance=self.affine_invariance,
                    rotation_invariance=self.rotation_invariance)
        kpts, vecs = hes.detect_feats_in_image(gray, **opts)
        if len(kpts) == 0:
            return np.empty((0, dim), np.float32), np.empty((0, 8), np.float32)
        x, y, a, c, d, ori = (kpts[:, i].astype(np.float64) for i in range(6))
        scale = np.sqrt(np.abs(a * d))
        keep = select_strongest(scale, x, y, self.max_keypoints, ori)
        kpts, vecs = kpts[keep], vecs[keep]
        if self.descriptor == "sift":
            D = vecs.astype(np.float32)
        else:
            patches = np.asarray(hes.extract_patches(gray, np.ascontiguousarray(kpts, np.float32), **opts))
            D = np.concatenate([daisy_grid(p / 255.0, step=p.shape[0], radius=p.shape[0] // 2)[0] for p in patches])
        x, y, a, c, d, ori = (kpts[:, i] for i in range(6))
        K = np.stack([x, y, np.sqrt(np.abs(a * d)), ori, a, np.zeros_like(a), c, d], axis=1).astype(np.float32)
        return np.ascontiguousarray(D, np.float32), keypoints_to_original(K, original.shape, gray.shape,
                                                                         self.keypoint_fields)


@hookimpl
def lfabench_descriptors():
    return [PluginSpec("hesaff", HessianAffine,
                       "Hessian-affine regions + SIFT or DAISY via pyhesaff (optional extra), largest-scale cap",
                       defaults=config_defaults(HessianAffine))]
