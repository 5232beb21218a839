"""Bags: per-sample sets of local descriptors in one contiguous array (CSR layout).

A collection of ``m`` samples (images), sample ``i`` holding ``N_i >= 0`` local
descriptors of dimension ``d``, is stored as

* ``descriptors``: one C-contiguous ``(N, d)`` array, ``N = sum_i N_i``;
* ``offsets``: ``(m + 1,)`` int64, ``offsets[0] == 0``, non-decreasing,
  ``offsets[-1] == N``; sample ``i`` is ``descriptors[offsets[i]:offsets[i+1]]``;
* ``keypoints`` (optional): ``(N, k)`` float array, one row per descriptor, with
  columns named by ``keypoint_fields`` (default ``KEYPOINT_FIELDS[:k]``);
* ``ids`` (optional): ``(m,)`` sample identifiers (strings).

``offsets`` is exactly a CSR ``indptr``, so per-sample reductions are one sparse
matrix product (:meth:`Bags.pooling_matrix`) instead of a Python loop.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = ["Bags", "KEYPOINT_FIELDS", "EmptySampleWarning"]

#: Canonical keypoint columns: position, scale, orientation (radians) and the
#: 2x2 affine shape (row-major) where the detector gives one.
KEYPOINT_FIELDS = ("x", "y", "scale", "orientation", "a11", "a12", "a21", "a22")


class EmptySampleWarning(UserWarning):
    """Some samples hold no descriptors (allowed, but worth knowing)."""


def descriptor_dtype_problem(dtype) -> str | None:
    """Why descriptors of ``dtype`` cannot be used (bool, complex, non-numeric), or ``None`` when they can.

    Converting those to floats would lose information in silence (an imaginary part) or turn flags into
    numbers, so every reader of descriptors refuses them with this reason.
    """
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return f"descriptors must be real numbers, got booleans (dtype {dtype})"
    if dtype.kind == "c":
        return f"descriptors must be real numbers, got complex numbers (dtype {dtype}; the imaginary part would be lost)"
    if not np.issubdtype(dtype, np.number):
        return f"descriptors must be real numbers, got dtype {dtype}"
    return None


def _as_descriptor_array(descriptors, dtype=None) -> np.ndarray:
    arr = np.asarray(descriptors)
    if arr.ndim != 2:
        raise ValueError(f"descriptors must be a 2-D (N, d) array, got shape {arr.shape}")
    if dtype is None:
        # float64 input stays float64; everything else becomes float32.
        dtype = np.float64 if arr.dtype == np.float64 else np.float32
    problem = descriptor_dtype_problem(arr.dtype)
    if problem:
        raise TypeError(problem)
    return np.ascontiguousarray(arr, dtype=dtype)


def _as_offsets(offsets) -> np.ndarray:
    """``offsets`` as int64; fractional or non-numeric entries are an error naming the first one (never truncated)."""
    off = np.asarray(offsets)
    if off.dtype.kind in "iu":
        return np.ascontiguousarray(off, dtype=np.int64)
    if off.dtype.kind != "f" or off.ndim != 1:
        raise TypeError(f"offsets must be a 1-D array of integers, got dtype {off.dtype} and shape {off.shape}")
    bad = np.flatnonzero(~np.isfinite(off) | (off != np.round(off)))
    if bad.size:
        raise ValueError(f"offsets must be integers: offsets[{int(bad[0])}]={float(off[bad[0]])!r} is not")
    return np.ascontiguousarray(off, dtype=np.int64)


def _owned(arr: np.ndarray, given, copy: bool) -> np.ndarray:
    """``arr``, copied when it shares memory with the caller's array ``given`` (and ``copy`` is asked)."""
    if copy and isinstance(given, np.ndarray) and np.may_share_memory(arr, given):
        return arr.copy()
    return arr


class Bags:
    """Per-sample bags of local descriptors, stored CSR-style.

    Parameters
    ----------
    descriptors : array-like, shape (N, d)
        All local descriptors, stacked sample after sample. float64 input stays
        float64; any other real dtype is converted to float32.
    offsets : array-like of int, shape (m + 1,)
        Sample boundaries: sample ``i`` owns rows ``offsets[i]:offsets[i+1]``.
    keypoints : array-like, shape (N, k), optional
        Per-descriptor geometry; columns named by ``keypoint_fields``.
    ids : sequence of str, shape (m,), optional
        Sample identifiers (e.g. image names). Default: ``"0", "1", ...``.
    keypoint_fields : sequence of str, optional
        Names of the keypoint columns; default ``KEYPOINT_FIELDS[:k]``.
    dtype : numpy dtype, optional
        Force the descriptor dtype (e.g. ``np.float64``).
    validate : bool, default True
        Check dtype, finiteness and offsets. Internal fast paths that build a
        ``Bags`` from an already-validated one pass ``False``.
    copy : bool, default True
        Copy caller arrays that the ``Bags`` would otherwise share, so that later edits of the
        caller's array cannot bypass validation. ``False`` hands fresh arrays over (the caller
        must not edit them afterwards).

    Raises
    ------
    ValueError
        If shapes disagree, offsets are not monotone or do not span the
        descriptors, or a descriptor is NaN/inf (the message names the sample).
    """

    __slots__ = ("descriptors", "offsets", "keypoints", "keypoint_fields", "_ids")

    def __init__(
        self,
        descriptors,
        offsets,
        keypoints=None,
        ids: Sequence[str] | None = None,
        keypoint_fields: Sequence[str] | None = None,
        dtype=None,
        validate: bool = True,
        copy: bool = True,
    ):
        self.descriptors = _owned(_as_descriptor_array(descriptors, dtype), descriptors, copy and validate)
        self.offsets = _owned(_as_offsets(offsets) if validate else np.ascontiguousarray(offsets, dtype=np.int64),
                              offsets, copy and validate)
        self.keypoints = None if keypoints is None else _owned(
            np.ascontiguousarray(keypoints, dtype=np.float32), keypoints, copy and validate)
        if self.keypoints is not None and self.keypoints.ndim == 1:
            self.keypoints = self.keypoints[:, None]
        n_kp = 0 if self.keypoints is None else self.keypoints.shape[1]
        self.keypoint_fields = tuple(keypoint_fields) if keypoint_fields is not None else KEYPOINT_FIELDS[:n_kp]
        self._ids = None if ids is None else np.asarray([str(i) for i in ids], dtype=object)
        if validate:
            self._validate()

    # ------------------------------------------------------------------ checks
    def _validate(self) -> None:
        off, X = self.offsets, self.descriptors
        if off.ndim != 1 or off.size < 1:
            raise ValueError(f"offsets must be a 1-D array of length m + 1 >= 1, got shape {off.shape}")
        if off[0] != 0:
            raise ValueError(f"offsets[0] must be 0, got {off[0]}")
        steps = np.diff(off)
        if np.any(steps < 0):
            bad = int(np.flatnonzero(steps < 0)[0])
            raise ValueError(
                f"offsets must be non-decreasing: offsets[{bad}]={off[bad]} > offsets[{bad + 1}]={off[bad + 1]} "
                f"(sample {bad})"
            )
        if off[-1] != X.shape[0]:
            raise ValueError(f"offsets[-1]={off[-1]} must equal the number of descriptors N={X.shape[0]}")
        if self.keypoints is not None:
            if self.keypoints.shape[0] != X.shape[0]:
                raise ValueError(
                    f"keypoints has {self.keypoints.shape[0]} rows but there are {X.shape[0]} descriptors"
                )
            if len(self.keypoint_fields) != self.keypoints.shape[1]:
                raise ValueError(
                    f"keypoint_fields names {len(self.keypoint_fields)} columns, keypoints has "
                    f"{self.keypoints.shape[1]}"
                )
        if self._ids is not None and len(self._ids) != self.n_samples:
            raise ValueError(f"ids has {len(self._ids)} entries but there are {self.n_samples} samples")
        finite_rows = np.isfinite(X).all(axis=1)
        if not finite_rows.all():
            row = int(np.flatnonzero(~finite_rows)[0])
            sample = int(np.searchsorted(off, row, side="right") - 1)
            raise ValueError(
                f"descriptor row {row} (sample {sample}, id {self.ids[sample]!r}) is not finite (NaN or inf)"
            )
        empty = self.empty_samples()
        if empty.size:
            shown = ", ".join(repr(self.ids[i]) for i in empty[:5])
            more = f" and {empty.size - 5} more" if empty.size > 5 else ""
            warnings.warn(
                f"{empty.size} of {self.n_samples} samples have no descriptors: {shown}{more}",
                EmptySampleWarning,
                stacklevel=3,
            )

    # ------------------------------------------------------------ constructors
    @classmethod
    def from_list(cls, arrays: Sequence, keypoints: Sequence | None = None, ids=None, dtype=None) -> "Bags":
        """Build bags from a list of ``(N_i, d)`` arrays (one per sample).

        Empty samples may be given as ``(0, d)`` arrays or as empty lists/arrays
        (their width is taken from the others). The concatenation happens once.
        """
        arrays = list(arrays)
        if not arrays:
            raise ValueError("from_list needs at least one sample")
        mats = [np.asarray(a) for a in arrays]
        widths = [a.shape[1] if a.ndim == 2 and a.size else None for a in mats]
        known = [w for w in widths if w is not None]
        d = known[0] if known else next((a.shape[1] for a in mats if a.ndim == 2), 0)
        for i, w in enumerate(widths):
            if w is not None and w != d:
                raise ValueError(f"sample {i} has descriptor dimension {w}; the first non-empty sample has {d}")
        fixed = []
        for i, a in enumerate(mats):
            if a.size == 0:
                a = np.empty((0, d), dtype=a.dtype if a.dtype.kind == "f" else np.float32)
            if a.ndim != 2:
                raise ValueError(f"sample {i}: expected a 2-D (N_i, d) array, got shape {a.shape}")
            fixed.append(a)
        if dtype is None:
            dtype = np.float64 if all(a.dtype == np.float64 for a in fixed) else np.float32
        counts = np.fromiter((a.shape[0] for a in fixed), dtype=np.int64, count=len(fixed))
        offsets = np.concatenate([[0], np.cumsum(counts)])
        X = np.concatenate(fixed, axis=0).astype(dtype, copy=False)
        K = None
        if keypoints is not None:
            kps = [np.asarray(k, dtype=np.float32) for k in keypoints]
            width = max((k.shape[1] for k in kps if k.ndim == 2), default=0)
            kps = [k if k.ndim == 2 else k.reshape(0, width) for k in kps]
            K = np.concatenate(kps, axis=0)
        return cls(X, offsets, keypoints=K, ids=ids, dtype=dtype, copy=False)  # X, K are fresh concatenations

    @classmethod
    def concatenate(cls, parts: Sequence["Bags"]) -> "Bags":
        """Stack several ``Bags`` of the same dimension into one (samples in order)."""
        parts = list(parts)
        if not parts:
            raise ValueError("concatenate needs at least one Bags")
        dims = {p.dim for p in parts}
        if len(dims) != 1:
            raise ValueError(f"cannot concatenate bags of dimensions {sorted(dims)}")
        X = np.concatenate([p.descriptors for p in parts])
        starts = np.cumsum([0] + [p.n_descriptors for p in parts[:-1]])
        off = np.concatenate([[0]] + [p.offsets[1:] + s for p, s in zip(parts, starts)])
        has_kp = all(p.keypoints is not None for p in parts)
        K = np.concatenate([p.keypoints for p in parts]) if has_kp else None
        ids = np.concatenate([p.ids for p in parts])
        return cls(X, off, keypoints=K, ids=ids, keypoint_fields=parts[0].keypoint_fields if has_kp else None,
                   validate=False)

    # -------------------------------------------------------------- properties
    @property
    def n_samples(self) -> int:
        """m, the number of samples."""
        return int(self.offsets.size - 1)

    @property
    def n_descriptors(self) -> int:
        """N, the total number of descriptors."""
        return int(self.descriptors.shape[0])

    @property
    def dim(self) -> int:
        """d, the descriptor dimension."""
        return int(self.descriptors.shape[1])

    @property
    def dtype(self) -> np.dtype:
        return self.descriptors.dtype

    @property
    def counts(self) -> np.ndarray:
        """(m,) int64 number of descriptors per sample, N_i."""
        return np.diff(self.offsets)

    @property
    def ids(self) -> np.ndarray:
        """(m,) sample identifiers (object array of str)."""
        if self._ids is None:
            return np.asarray([str(i) for i in range(self.n_samples)], dtype=object)
        return self._ids

    def empty_samples(self) -> np.ndarray:
        """Indices of samples with no descriptors."""
        return np.flatnonzero(self.counts == 0)

    def sample_index(self) -> np.ndarray:
        """(N,) int64: the sample each descriptor belongs to."""
        return np.repeat(np.arange(self.n_samples, dtype=np.int64), self.counts)

    def __len__(self) -> int:
        return self.n_samples

    def __iter__(self) -> Iterator[np.ndarray]:
        for i in range(self.n_samples):
            yield self.descriptors[self.offsets[i]:self.offsets[i + 1]]

    def __getitem__(self, key):
        """``bags[i]`` is sample i's ``(N_i, d)`` view; ``bags[idx]`` (slice, array) is a new ``Bags``."""
        if isinstance(key, (int, np.integer)):
            i = int(key)
            if i < 0:
                i += self.n_samples
            if not 0 <= i < self.n_samples:
                raise IndexError(f"sample {key} out of range for {self.n_samples} samples")
            return self.descriptors[self.offsets[i]:self.offsets[i + 1]]
        return self.subset(key)

    def __repr__(self) -> str:
        return (f"Bags(n_samples={self.n_samples}, n_descriptors={self.n_descriptors}, dim={self.dim}, "
                f"dtype={self.dtype}, keypoints={self.keypoint_fields or None})")

    # ------------------------------------------------------------- operations
    def subset(self, indices) -> "Bags":
        """A new ``Bags`` with the samples ``indices`` (int array, bool mask or slice), in that order.

        Vectorised: one gather of the descriptor rows, no per-sample Python loop.
        """
        idx = np.arange(self.n_samples)[indices] if isinstance(indices, slice) else np.asarray(indices)
        if idx.dtype == bool:
            if idx.shape != (self.n_samples,):
                raise IndexError(f"boolean mask has shape {idx.shape}, expected ({self.n_samples},)")
            idx = np.flatnonzero(idx)
        idx = idx.astype(np.int64, copy=False)
        if idx.size and (idx.min() < -self.n_samples or idx.max() >= self.n_samples):
            raise IndexError(f"sample indices out of range for {self.n_samples} samples")
        idx = np.where(idx < 0, idx + self.n_samples, idx)
        counts = self.counts[idx]
        new_off = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        # row r of the result comes from offsets[idx[s]] + (r - new_off[s]) for its sample s
        rows = np.repeat(self.offsets[idx] - new_off[:-1], counts) + np.arange(new_off[-1], dtype=np.int64)
        K = None if self.keypoints is None else self.keypoints[rows]
        return Bags(self.descriptors[rows], new_off, keypoints=K, ids=self.ids[idx],
                    keypoint_fields=self.keypoint_fields if K is not None else None, validate=False)

    def with_descriptors(self, descriptors) -> "Bags":
        """Same samples/keypoints/ids, new ``(N, d')`` descriptors (e.g. after PCA or normalisation)."""
        descriptors = _as_descriptor_array(descriptors)
        if descriptors.shape[0] != self.n_descriptors:
            raise ValueError(f"expected {self.n_descriptors} rows, got {descriptors.shape[0]}")
        return Bags(descriptors, self.offsets, keypoints=self.keypoints, ids=self._ids,
                    keypoint_fields=self.keypoint_fields if self.keypoints is not None else None, validate=False)

    def pooling_matrix(self, mean: bool = True, dtype=None) -> sp.csr_matrix:
        """The ``(m, N)`` sparse matrix G with ``G @ X`` = per-sample sums (or means).

        Row ``i`` has ``1/N_i`` (mean) or ``1`` (sum) on sample ``i``'s columns;
        an empty sample has an all-zero row. This is the paper's G (its rows
        average each sample's descriptors).
        """
        dtype = dtype or self.dtype
        counts = self.counts
        if mean:
            w = np.repeat(1.0 / np.maximum(counts, 1), counts).astype(dtype)
        else:
            w = np.ones(self.n_descriptors, dtype=dtype)
        import scipy.sparse as sp  # here: scipy.sparse costs a third of a second at start-up

        return sp.csr_matrix((w, np.arange(self.n_descriptors), self.offsets),
                             shape=(self.n_samples, self.n_descriptors))

    def means(self) -> np.ndarray:
        """(m, d) per-sample mean descriptors (zero rows for empty samples)."""
        return np.asarray(self.pooling_matrix(mean=True) @ self.descriptors)

    def sums(self, values: np.ndarray | None = None) -> np.ndarray:
        """(m, k) per-sample sums of ``values`` (``(N, k)``; default the descriptors)."""
        V = self.descriptors if values is None else values
        return np.asarray(self.pooling_matrix(mean=False, dtype=V.dtype) @ V)

    def astype(self, dtype) -> "Bags":
        if self.dtype == np.dtype(dtype):
            return self
        return Bags(self.descriptors.astype(dtype), self.offsets, keypoints=self.keypoints, ids=self._ids,
                    keypoint_fields=self.keypoint_fields if self.keypoints is not None else None,
                    dtype=dtype, validate=False)

    def fingerprint(self) -> str:
        """sha256 of descriptors, offsets and ids: identifies this exact content."""
        import hashlib

        h = hashlib.sha256()
        h.update(str(self.descriptors.dtype).encode() + str(self.descriptors.shape).encode())
        h.update(self.descriptors.tobytes())
        h.update(self.offsets.tobytes())
        h.update("\0".join(self.ids).encode())
        return h.hexdigest()


def as_bags(bags, name: str = "bags") -> Bags:
    """Accept a ``Bags`` or a list of ``(N_i, d)`` arrays; anything else is a clear TypeError."""
    if isinstance(bags, Bags):
        return bags
    if isinstance(bags, (list, tuple)):
        return Bags.from_list(bags)
    raise TypeError(f"{name} must be an lfabench.Bags or a list of (N_i, d) arrays, got {type(bags).__name__}")
