"""Fingerprints of a run's intermediate results, so that a rerun can say where it first differs.

A record's ``fingerprints`` holds, in pipeline order: ``descriptors`` (the bags: descriptors and offsets),
``fitted`` (the aggregator's fitted arrays), ``features`` (the aggregated vectors scored), ``predictions``
(:func:`lfabench.evaluation.predictions_fingerprint`). Each is a sha256 of exact bytes: equal fingerprints
mean bit-identical arrays; ``lfabench reproduce`` compares them in this order.

A fitted sparse matrix is digested in one of two :data:`SPARSE_SCHEMES`, which the record names
(``fingerprints.fitted_sparse``): ``"csr"`` (what runs record) hashes its canonical CSR arrays, as many bytes
as it stores entries; ``"dense"`` (what records without the field hold) hashes the dense array it stands for,
``rows x columns`` entries (ProLFA's selection at paper scale: 17.6 GB of mostly zeros, 12 s of sha256 alone).
In either scheme two digests are equal exactly when the dense arrays are the same bits.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from .evaluation.predictions import predictions_fingerprint

#: The stages fingerprinted, in pipeline order.
STAGES = ("descriptors", "fitted", "features", "predictions")
#: Fitted attributes left out: what fitting reports about itself (e.g. per-iteration times), not the model.
NOT_MODEL = frozenset({"fit_info_"})
#: How a fitted sparse matrix is digested: as its canonical CSR arrays (the default) or as its dense array.
SPARSE_SCHEMES = ("csr", "dense")


def bags_fingerprint(bags) -> str:
    """sha256 of a :class:`~lfabench.bags.Bags`' descriptors (dtype, shape, bytes) and offsets."""
    h = hashlib.sha256()
    for a in (bags.descriptors, bags.offsets):
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _fitted_arrays(obj: Any, prefix: str, out: dict[str, Any], depth: int, seen: set[int], sparse: str) -> None:
    """Collect the numeric arrays reachable from the fitted (``name_``) attributes of ``obj``."""
    if depth > 4 or id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        if obj.dtype != object:
            out[prefix] = obj
        return
    if isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            _fitted_arrays(v, f"{prefix}[{i}]", out, depth + 1, seen, sparse)
        return
    if isinstance(obj, dict):
        for k in sorted(obj, key=str):
            _fitted_arrays(obj[k], f"{prefix}[{k}]", out, depth + 1, seen, sparse)
        return
    if hasattr(obj, "toarray") and hasattr(obj, "shape"):  # scipy.sparse
        if sparse == "dense":
            out[prefix] = _SparseAsDense(obj)
        else:  # the name says which scheme: no CSR digest can stand for a dense one
            out.update({f"{prefix}#csr.{part}": a for part, a in canonical_csr(obj).items()})
        return
    attrs = getattr(obj, "__dict__", None)
    if attrs is None:
        return
    for name in sorted(attrs):
        if name.endswith("_") and not name.startswith("_") and name not in NOT_MODEL:
            _fitted_arrays(attrs[name], f"{prefix}.{name}" if prefix else name, out, depth + 1, seen, sparse)


def canonical_csr(matrix) -> dict[str, np.ndarray]:
    """The arrays that fix a sparse matrix's dense array bit for bit, whatever its format or storage: ``shape``
    (int64), and in CSR order with sorted column indices and duplicates summed, the entries whose bits are not
    all zero: ``indptr``, ``indices`` (int64) and ``data`` (the matrix's dtype). So stored +0.0 entries are
    dropped (the dense array holds the same bits there) and -0.0 is kept (it is not +0.0's bits)."""
    csr = matrix.tocsr(copy=True)
    csr.sum_duplicates()                           # also sorts each row's column indices
    data = np.ascontiguousarray(csr.data)
    keep = data.view(np.uint8).reshape(data.size, data.dtype.itemsize).any(axis=1)
    n_rows = csr.shape[0]
    rows = np.repeat(np.arange(n_rows, dtype=np.int64), np.diff(csr.indptr))[keep]
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_rows), out=indptr[1:])
    return {"shape": np.asarray(csr.shape, dtype=np.int64), "indptr": indptr,
            "indices": csr.indices[keep].astype(np.int64), "data": data[keep]}


class _SparseAsDense:
    """A scipy.sparse matrix hashed as its dense array (C order), a block of rows at a time: the digest of
    the dense array without holding it (ProLFA's selection is N x d̄, 10 GB dense at paper scale). One block
    buffer serves every block (no fresh pages per block) and is hashed in place."""

    BLOCK_BYTES = 32 << 20

    def __init__(self, matrix):
        self.matrix = matrix.tocsr()
        self.dtype, self.shape = np.dtype(matrix.dtype), tuple(matrix.shape)

    def blocks(self):
        rows = max(1, self.BLOCK_BYTES // max(1, self.shape[1] * self.dtype.itemsize))
        buffer = np.empty((min(rows, self.shape[0]), self.shape[1]), dtype=self.dtype)
        for start in range(0, self.shape[0], rows):
            block = buffer[:min(rows, self.shape[0] - start)]
            block.fill(0)                          # toarray(out=) adds the entries to what it finds
            self.matrix[start:start + rows].toarray(out=block)
            yield block


def fitted_fingerprint(estimator, sparse: str = "csr") -> str | None:
    """sha256 over every numeric array a fitted estimator holds in its scikit-learn style ``name_``
    attributes (recursing into lists, dicts and nested estimators; ``fit_info_`` excluded), by path; a
    sparse matrix by ``sparse`` (:data:`SPARSE_SCHEMES`): its :func:`canonical_csr` arrays (named
    ``path#csr.part``) or its dense array. None when it holds none (nothing fitted to compare)."""
    if sparse not in SPARSE_SCHEMES:
        raise ValueError(f"sparse={sparse!r} must be one of {', '.join(SPARSE_SCHEMES)}")
    arrays: dict[str, Any] = {}
    _fitted_arrays(estimator, "", arrays, 0, set(), sparse)
    # the same digest of named arrays as a predictions file's (in the dense scheme a sparse matrix is streamed
    # as dense row blocks)
    return predictions_fingerprint(arrays) if arrays else None


def array_digest(a: np.ndarray) -> str:
    """sha256 of one array's dtype, shape and bytes."""
    a = np.ascontiguousarray(a)
    return hashlib.sha256(f"{a.dtype.str}{a.shape}".encode() + a.tobytes()).hexdigest()
