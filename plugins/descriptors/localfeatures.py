"""Small shared helpers for descriptor plugins: grey conversion, resizing, deterministic caps, RootSIFT, grids.

Every capped descriptor plugin selects its keypoints with one of two documented,
deterministic rules, so results are reproducible across machines and recorded in
each run:

* :func:`select_strongest` (detector keypoints): sort by detector response,
  strongest first; ties broken by ``y`` then ``x`` (smaller first), then by the
  optional extra keys; keep the first ``cap``.
* :func:`select_spread` (dense grids): ``cap`` grid positions evenly spaced in
  raster order (``round(linspace(0, n - 1, cap))``), so the kept points cover
  the whole image instead of its first rows.

The image-based plugins (``sift``, ``dense_sift``, ``hesaff``, ``daisy``) take an opt-in
``long_side`` (:func:`resize_long_side`): the grey image is resized so that its longer side has
``long_side`` pixels before detection and description, and the keypoints are mapped back to the
dataset image's frame (:func:`keypoints_to_original`). It is left out of the plugins' default
configs (:func:`config_defaults`), so existing configs, run directories and leaderboard settings
are unchanged; give it with ``+descriptor.params.long_side=300``.
"""

from __future__ import annotations

import numbers

import numpy as np

from lfabench.sdk import COUNT, COUNT_OR_ZERO, default_params, to_uint8

#: Opt-in parameters left out of the default configs (a run that does not name them keeps its setting key).
OPT_IN_PARAMS = ("long_side",)
#: The ranges the extractors of this folder share (checked by lfabench.params): a per-image cap of 0 or null keeps
#: every keypoint; long_side resizes to that many pixels, null keeps the image's size.
CONSTRAINTS = {"max_keypoints": [COUNT_OR_ZERO, None], "long_side": [COUNT, None]}

STRONGEST_RULE = ("strongest detector response first; ties broken by smaller y, then smaller x, then larger "
                  "scale, then smaller orientation; the first max_keypoints are kept")
SPREAD_RULE = ("grid positions in raster order (row by row); when more than max_keypoints, the positions "
               "round(linspace(0, n-1, max_keypoints)) are kept (evenly spread over the image)")


def to_gray_uint8(image: np.ndarray) -> np.ndarray:
    """``(H, W)`` uint8 grey image from a grey or RGB(A) array.

    Integer images other than uint8 (16-bit...) are first scaled to 8 bits channel by channel
    (:func:`lfabench.images.to_uint8`: uint16 divided by 257); colour becomes grey with the ITU-R 601
    weights (as OpenCV's ``COLOR_RGB2GRAY``). Float images become grey first, then 8 bits: values in [0, 1]
    are scaled by 255, values within [0, 255] kept, any other range scaled from its own minimum and maximum
    (never clipped).
    """
    img = np.asarray(image)
    if img.dtype.kind in "iub" and img.dtype != np.uint8:
        img = to_uint8(img)  # 16-bit colour is scaled, never clipped to white
    if img.ndim == 3:
        if img.shape[2] == 4:
            img = img[..., :3]
        if img.shape[2] == 1:
            img = img[..., 0]
        else:
            uint8 = img.dtype == np.uint8
            img = img[..., 0] * 0.299 + img[..., 1] * 0.587 + img[..., 2] * 0.114
            if uint8:
                return np.clip(np.rint(img), 0, 255).astype(np.uint8)
    if img.ndim != 2:
        raise ValueError(f"expected a (H, W) or (H, W, 3) image, got shape {np.asarray(image).shape}")
    if img.dtype == np.uint8:
        return np.ascontiguousarray(img)
    return np.ascontiguousarray(to_uint8(img))


def config_defaults(factory) -> dict:
    """``factory``'s keyword defaults without the opt-in parameters (:data:`OPT_IN_PARAMS`): its default config."""
    return default_params(factory, opt_in=OPT_IN_PARAMS)


def check_long_side(plugin: str, long_side) -> int | None:
    """``long_side`` as an int, or None (no resizing). Its range is declared in :data:`CONSTRAINTS` and checked by
    lfabench before the extractor is built; a value that bypassed that check is a ValueError naming ``plugin``."""
    if long_side is None:
        return None
    if isinstance(long_side, bool) or not isinstance(long_side, numbers.Integral) or int(long_side) < 1:
        raise ValueError(f"{plugin}: long_side must be a positive integer (pixels of the image's longer side after "
                         f"resizing) or null (no resizing), got {long_side!r}")
    return int(long_side)


def resize_long_side(gray: np.ndarray, long_side: int | None) -> np.ndarray:
    """``gray`` ``(H, W)`` resized so that ``max(H, W) == long_side`` (aspect ratio kept), or unchanged.

    Output shape ``(max(1, round(H * f)), max(1, round(W * f)))`` with ``f = long_side / max(H, W)``.
    Enlarging uses bicubic interpolation (OpenCV ``INTER_CUBIC``, saturated to uint8); shrinking uses
    pixel-area averaging (``INTER_AREA``, OpenCV's recommendation against aliasing). ``None``, an
    empty image or ``f == 1`` returns the input itself.
    """
    if long_side is None or gray.size == 0 or max(gray.shape) == long_side:
        return gray
    import cv2

    h, w = gray.shape[:2]
    f = long_side / max(h, w)
    size = (max(1, round(w * f)), max(1, round(h * f)))  # OpenCV takes (width, height)
    return cv2.resize(gray, size, interpolation=cv2.INTER_CUBIC if f > 1 else cv2.INTER_AREA)


def keypoints_to_original(K: np.ndarray, original_shape, resized_shape, fields) -> np.ndarray:
    """Keypoints ``K (n, len(fields))`` found in the resized image, in the original image's frame.

    With per-axis factors ``fx = W' / W`` and ``fy = H' / H``: positions follow OpenCV's pixel-centre
    convention of ``cv2.resize`` (``x' = (x + 0.5) fx - 0.5``, so ``x = (x' + 0.5) / fx - 0.5``);
    ``scale`` is divided by ``sqrt(fx fy)``; the region shape ``A`` (rows = image axes) becomes
    ``diag(1/fx, 1/fy) A``; ``orientation`` is kept. Unchanged when the shapes are equal.
    """
    (h, w), (h2, w2) = original_shape[:2], resized_shape[:2]
    if (h, w) == (h2, w2) or len(K) == 0:
        return K
    fx, fy = w2 / w, h2 / h
    per_field = {"x": (1 / fx, 0.5 / fx - 0.5), "y": (1 / fy, 0.5 / fy - 0.5), "scale": (1 / np.sqrt(fx * fy), 0.0),
                 "a11": (1 / fx, 0.0), "a12": (1 / fx, 0.0), "a21": (1 / fy, 0.0), "a22": (1 / fy, 0.0)}
    out = np.array(K, dtype=np.float64, copy=True)
    for j, name in enumerate(fields):
        if name in per_field:
            mul, add = per_field[name]
            out[:, j] = out[:, j] * mul + add
    return out.astype(np.asarray(K).dtype)


def select_strongest(response, x, y, cap: int | None, *tiebreak) -> np.ndarray:
    """Indices of the ``cap`` strongest keypoints (all when ``cap`` is None or 0), in selection order.

    Sort keys, most significant first: ``-response``, ``y``, ``x``, then ``tiebreak``
    arrays in the given order (ascending; pass ``-scale`` for "larger scale first").
    """
    keys = [np.asarray(k, dtype=np.float64) for k in reversed(tiebreak)]
    order = np.lexsort(keys + [np.asarray(x, np.float64), np.asarray(y, np.float64),
                               -np.asarray(response, np.float64)])
    return order if not cap else order[: int(cap)]


def select_spread(n: int, cap: int | None) -> np.ndarray:
    """``cap`` indices evenly spread over ``0..n-1`` (all when ``n <= cap`` or ``cap`` is None/0)."""
    if not cap or n <= cap:
        return np.arange(n)
    return np.unique(np.rint(np.linspace(0, n - 1, int(cap))).astype(np.int64))


def root_sift(descriptors: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    """RootSIFT (Arandjelovic & Zisserman, CVPR 2012): L1-normalise each row, then element-wise sqrt.

    Euclidean distance between RootSIFT vectors is the Hellinger kernel distance of the
    original SIFT histograms. Rows of zeros stay zero. Shape ``(n, d)`` -> ``(n, d)``.
    """
    D = np.asarray(descriptors, dtype=np.float32)
    l1 = np.abs(D).sum(axis=1, keepdims=True)
    return np.sqrt(np.abs(D) / np.maximum(l1, eps)).astype(np.float32)


def cv_keypoints_array(keypoints) -> np.ndarray:
    """``(n, 4)`` float32 ``x, y, scale, orientation`` from OpenCV keypoints.

    ``scale`` is half OpenCV's ``size`` (for SIFT: the Gaussian sigma of the detection
    level in image pixels); ``orientation`` is OpenCV's ``angle`` in radians (image
    axes, y pointing down; 0 for upright keypoints).
    """
    if not len(keypoints):
        return np.empty((0, 4), np.float32)
    return np.array([(k.pt[0], k.pt[1], k.size / 2.0, np.deg2rad(k.angle) if k.angle >= 0 else 0.0)
                     for k in keypoints], dtype=np.float32)


def grid_positions(height: int, width: int, step: int, margin: float) -> tuple[np.ndarray, np.ndarray]:
    """Raster-order ``(x, y)`` of a regular grid with spacing ``step`` keeping ``margin`` pixels from the border."""
    m = int(np.ceil(margin))
    ys = np.arange(m, height - m, step)
    xs = np.arange(m, width - m, step)
    yy, xx = np.meshgrid(ys, xs, indexing="ij")
    return xx.ravel().astype(np.float32), yy.ravel().astype(np.float32)


def daisy_grid(gray: np.ndarray, step: int, radius: int, rings: int = 3, histograms: int = 8,
               orientations: int = 8) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """scikit-image DAISY (Tola, Lepetit & Fua, TPAMI 2010) on a regular grid.

    ``gray``: ``(H, W)`` image (uint8 is scaled to [0, 1]). Returns ``(D, x, y)``: descriptors
    ``(n, (rings * histograms + 1) * orientations)`` float32 (200-D with the defaults), L1-normalised
    per histogram (scikit-image's ``normalization="l1"``), and the centres in raster order;
    centre ``(i, j)`` of the grid is ``(radius + j * step, radius + i * step)``. Images smaller than
    ``2 * radius + 1`` give no descriptor.
    """
    from skimage.feature import daisy

    img = np.asarray(gray)
    img = img.astype(np.float64) / 255.0 if img.dtype == np.uint8 else img.astype(np.float64)
    dim = (rings * histograms + 1) * orientations
    if min(img.shape) < 2 * radius + 1:
        return np.empty((0, dim), np.float32), np.empty(0, np.float32), np.empty(0, np.float32)
    D = daisy(img, step=int(step), radius=int(radius), rings=int(rings), histograms=int(histograms),
              orientations=int(orientations))
    rows, cols = D.shape[:2]
    yy, xx = np.meshgrid(radius + np.arange(rows) * step, radius + np.arange(cols) * step, indexing="ij")
    return (np.ascontiguousarray(D.reshape(rows * cols, dim), dtype=np.float32), xx.ravel().astype(np.float32),
            yy.ravel().astype(np.float32))
