"""``precomputed``: local descriptors read from files instead of computed from images.

``path`` is either a folder holding one file per sample, named after the sample id with its
image extension replaced (``MITcoast/image_0001.jpg`` -> ``<path>/MITcoast/image_0001<ext>``),
or one HDF5 file (``.h5``/``.hdf5``) with one entry per sample id (a ``(n, d)`` dataset, or a
group with ``descriptors`` and ``keypoints``). ``format``: ``auto`` (per-sample: the first of
``.npz, .npy, .siftgeo, .fvecs`` that exists), or one of ``npy``, ``npz``, ``fvecs``, ``siftgeo``,
``hdf5``. Formats are described in :mod:`lfabench_plugins.descriptors.descfiles` (e.g. the Holidays ``.siftgeo``
files of Jegou et al.).

Keypoints: ``.siftgeo`` (``format=siftgeo``, or ``auto`` with such files under ``path``) gives all 8 :data:`~lfabench.bags.KEYPOINT_FIELDS`; for the other formats
``keypoint_fields`` (default ``x, y``) names the columns of the stored ``keypoints``, and files
without keypoints get NaN positions (such descriptors cannot be cropped to a query box). ``max_keypoints``
keeps the first ``n`` rows of each file (files are assumed ordered by the producer's preference).
Works on datasets without images (e.g. ``oxford5k`` with ``require_images=false``). Not cached:
the files already are arrays on disk.
"""

from __future__ import annotations

import zipfile
from numbers import Integral
from pathlib import Path

import numpy as np

from lfabench.sdk import (KEYPOINT_FIELDS, Descriptor, DescriptorDataError, Interval, PluginSpec, as_float32,
                          descriptor_dtype_problem, hookimpl)

from .descfiles import READERS, open_hdf5, read_hdf5_item

FORMATS = ("auto", "npy", "npz", "fvecs", "siftgeo", "hdf5")


class Precomputed(Descriptor):
    needs_images = False
    cacheable = False
    selection_rule = "the first max_keypoints rows of each file, in the file's order (all when null)"
    #: checked by lfabench.params before the run starts (scikit-learn's constraint format)
    _parameter_constraints = {"max_keypoints": [Interval(Integral, 1, None, closed="left"), None]}

    def __init__(self, path: str, format: str = "auto", keypoint_fields: list | None = None,
                 max_keypoints: int | None = None):
        if not path:
            raise ValueError("precomputed: give descriptor.params.path (a folder of per-sample files or an HDF5 file)")
        if format not in FORMATS:
            raise ValueError(f"precomputed: format must be one of {FORMATS}, got {format!r}")
        p = Path(path).expanduser()
        if format == "auto" and p.suffix.lower() in (".h5", ".hdf5"):
            format = "hdf5"
        if not p.exists():
            raise FileNotFoundError(f"precomputed: {p} does not exist")
        self.path = str(p)
        self.format = format
        has_siftgeo = format == "siftgeo" or (format == "auto" and p.is_dir() and next(p.rglob("*.siftgeo"), None))
        fields = KEYPOINT_FIELDS if has_siftgeo else ("x", "y")
        self.keypoint_fields = tuple(keypoint_fields) if keypoint_fields else fields
        self.max_keypoints = None if max_keypoints is None else int(max_keypoints)
        self._h5 = None

    def __getstate__(self):  # an open HDF5 handle does not travel to worker processes
        return dict(self.__dict__, _h5=None, _first=None)

    def _file_for(self, sample_id: str) -> tuple[Path, str]:
        stem = Path(self.path) / Path(sample_id).with_suffix("")
        exts = [f".{self.format}"] if self.format != "auto" else [".npz", ".npy", ".siftgeo", ".fvecs"]
        for ext in exts:
            cand = stem.parent / (stem.name + ext)
            if cand.is_file():
                return cand, ext
        raise FileNotFoundError(f"precomputed: no descriptor file for sample {sample_id!r} (looked for "
                                f"{stem}{'|'.join(exts)})")

    def extract_sample(self, dataset, i):
        sid = str(dataset.sample_ids[i])
        if self.format == "hdf5":
            if self._h5 is None:
                self._h5 = open_hdf5(Path(self.path))
            D, K = read_hdf5_item(self._h5, sid, Path(self.path))
            src = f"{self.path}:{sid}"
        else:
            f, ext = self._file_for(sid)
            D, K = _read(f, ext)
            src = str(f)
        D = np.asarray(D)
        problem = descriptor_dtype_problem(D.dtype)
        if problem:
            raise TypeError(f"precomputed: {src}: {problem}")
        if D.ndim != 2:
            raise DescriptorDataError(f"precomputed: {src} holds an array of shape {D.shape}, expected (n, d)")
        D = as_float32(D, f"precomputed: {src}")
        self._check_dimension(dataset, D.shape[1], src)
        k = len(self.keypoint_fields)
        if K is None:
            K = np.full((len(D), k), np.nan, np.float32)
        K = np.asarray(K, np.float32)
        if K.shape != (len(D), k):
            raise DescriptorDataError(f"precomputed: {src} keypoints have shape {K.shape}, expected ({len(D)}, {k}) for "
                             f"keypoint_fields {list(self.keypoint_fields)}")
        if self.max_keypoints:
            D, K = D[: self.max_keypoints], K[: self.max_keypoints]
        return D, K

    def _source(self, sid: str) -> str:
        return f"{self.path}:{sid}" if self.format == "hdf5" else str(self._file_for(sid)[0])

    def _check_dimension(self, dataset, d: int, src: str) -> None:
        """Every file must hold the dimension of the first sample's file (read once per process)."""
        if getattr(self, "_first", None) is None:
            first = str(dataset.sample_ids[0])
            if self.format == "hdf5":
                D0 = read_hdf5_item(self._h5, first, Path(self.path))[0]
            else:
                f, ext = self._file_for(first)
                D0 = _read(f, ext)[0]
            self._first = (np.shape(D0)[1] if np.ndim(D0) == 2 else None, self._source(first))
        d0, first_src = self._first
        if d0 is not None and d != d0:
            raise DescriptorDataError(f"precomputed: {src} holds {d}-dimensional descriptors, but {first_src} "
                                      f"(the first sample) holds {d0}-dimensional ones")

    def check_setting(self, dataset, seed):
        """Before anything is read: two samples must not map to one file (``x.jpg`` and ``x.png`` -> ``x.npy``)."""
        if self.format == "hdf5":
            return  # entries are keyed by the full sample id
        owners: dict[str, str] = {}
        for sid in map(str, dataset.sample_ids):
            stem = str(Path(sid).with_suffix(""))
            if stem in owners:
                raise ValueError(f"precomputed: samples {owners[stem]!r} and {sid!r} would both read the descriptor "
                                 f"file {Path(self.path) / stem}.* (sample ids that differ only by extension); "
                                 f"rename one of the images")
            owners[stem] = sid

    def describe(self, dataset, *args, **kwargs):
        try:
            self.check_setting(dataset, 0)
        except ValueError as exc:
            raise DescriptorDataError(str(exc)) from None
        self._first = None
        return super().describe(dataset, *args, **kwargs)

    def extract(self, image):
        raise TypeError("precomputed descriptors are read per sample id, not computed from an image")


def _read(path: Path, ext: str):
    """``READERS[ext](path)``; a file that cannot be parsed (empty, a bad header, pickled objects) is a
    :class:`DescriptorDataError` naming it."""
    try:
        return READERS[ext](path)
    except DescriptorDataError:
        raise
    except FileNotFoundError:
        raise
    except (ValueError, EOFError, OSError, zipfile.BadZipFile) as exc:
        raise DescriptorDataError(f"precomputed: {path} cannot be read as a {ext} descriptor file "
                                  f"({type(exc).__name__}: {exc})") from exc


@hookimpl
def lfabench_descriptors():
    return [PluginSpec("precomputed", Precomputed,
                       "Descriptors from files: .npy/.npz, .fvecs, .siftgeo, HDF5 (h5py extra)")]
