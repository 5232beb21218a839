"""Readers for local-descriptor files: ``.npy``, ``.npz``, ``.fvecs``, ``.siftgeo``, HDF5.

Each reader returns ``(descriptors (n, d) float32, keypoints (n, k) float32 or None)``.

* ``.fvecs`` (TEXMEX / INRIA): per vector an int32 dimension ``d`` then ``d`` float32.
* ``.siftgeo`` (INRIA Holidays / Oxford descriptors distributed by Jegou et al.): per descriptor
  9 float32 ``x, y, scale, angle, mi11, mi12, mi21, mi22, cornerness``, an int32 dimension
  ``d`` (128) and ``d`` uint8 values. Keypoints: ``x, y, scale, angle, mi11, mi12, mi21, mi22``
  (the order of :data:`lfabench.bags.KEYPOINT_FIELDS`).
* ``.npz``: arrays ``descriptors`` and optionally ``keypoints`` (read without pickle).
* HDF5 (``h5py``, optional extra ``lfabench[hdf5]``): a dataset ``(n, d)``, or a group holding
  ``descriptors`` and optionally ``keypoints``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lfabench.sdk import DescriptorDataError


def read_fvecs(path: Path) -> tuple[np.ndarray, None]:
    raw = np.fromfile(path, dtype=np.int32)
    if raw.size == 0:
        return np.empty((0, 0), np.float32), None
    d = int(raw[0])
    if d <= 0 or raw.size % (d + 1):
        raise DescriptorDataError(f"{path}: not an .fvecs file (first dimension {d}, {raw.size} int32 words)")
    rows = raw.reshape(-1, d + 1)
    if np.any(rows[:, 0] != d):
        raise DescriptorDataError(f"{path}: .fvecs vectors of different dimensions")
    return np.ascontiguousarray(rows[:, 1:].view(np.float32)), None


def read_siftgeo(path: Path) -> tuple[np.ndarray, np.ndarray]:
    raw = np.fromfile(path, dtype=np.uint8)
    if raw.size == 0:
        return np.empty((0, 128), np.float32), np.empty((0, 8), np.float32)
    d = int(raw[36:40].view(np.int32)[0])
    rec = 40 + d
    if d <= 0 or raw.size % rec:
        raise DescriptorDataError(f"{path}: not a .siftgeo file (dimension {d}, {raw.size} bytes)")
    rows = raw.reshape(-1, rec)
    if np.any(rows[:, 36:40].copy().view(np.int32)[:, 0] != d):
        raise DescriptorDataError(f"{path}: .siftgeo descriptors of different dimensions")
    geo = rows[:, :36].copy().view(np.float32)
    return rows[:, 40:].astype(np.float32), np.ascontiguousarray(geo[:, :8])


def read_npz(path: Path) -> tuple[np.ndarray, np.ndarray | None]:
    with np.load(path, allow_pickle=False) as z:
        if "descriptors" not in z.files:
            raise DescriptorDataError(f"{path}: an .npz descriptor file needs an array 'descriptors' (has {z.files})")
        return z["descriptors"], (z["keypoints"] if "keypoints" in z.files else None)


def read_npy(path: Path) -> tuple[np.ndarray, None]:
    return np.load(path, allow_pickle=False), None


def open_hdf5(path: Path):
    try:
        import h5py
    except ImportError as exc:
        raise ImportError(f"reading {path} needs h5py: pip install 'lfabench[hdf5]' (or: pip install h5py)") from exc
    return h5py.File(path, "r")


def read_hdf5_item(h5, key: str, path: Path) -> tuple[np.ndarray, np.ndarray | None]:
    if key not in h5:
        raise KeyError(f"{path}: no entry {key!r}")
    item = h5[key]
    if hasattr(item, "shape"):
        return item[()], None
    if "descriptors" not in item:
        raise DescriptorDataError(f"{path}: group {key!r} needs a dataset 'descriptors' (has {list(item)})")
    return item["descriptors"][()], (item["keypoints"][()] if "keypoints" in item else None)


READERS = {".npy": read_npy, ".npz": read_npz, ".fvecs": read_fvecs, ".siftgeo": read_siftgeo}
