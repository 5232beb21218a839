"""Column-sparse ``(N, d̄)`` matrices as sorted int64 keys ``col * N + row`` plus value arrays.

ProLFA's ``Z``, ``C`` and ``Lambda`` live on a shared, small support (with
one-hot starts ``C`` keeps a few non-zeros per column), so the ADMM updates are
elementwise operations on aligned value arrays. Sorting keys by column first
keeps each column's entries contiguous for the per-column simplex projection.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["make_keys", "split_keys", "align", "to_csc", "from_csc", "combine"]


def make_keys(rows: np.ndarray, cols: np.ndarray, n_rows: int) -> np.ndarray:
    return np.asarray(cols, dtype=np.int64) * n_rows + np.asarray(rows, dtype=np.int64)


def split_keys(keys: np.ndarray, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, cols)`` of sorted keys."""
    return keys % n_rows, keys // n_rows


def align(keys_src: np.ndarray, vals_src: np.ndarray, keys_dst: np.ndarray) -> np.ndarray:
    """The values of ``(keys_src, vals_src)`` at ``keys_dst`` (both sorted); 0 where absent."""
    out = np.zeros(keys_dst.size, dtype=np.float64)
    if keys_src.size == 0 or keys_dst.size == 0:
        return out
    idx = np.minimum(np.searchsorted(keys_src, keys_dst), keys_src.size - 1)
    hit = keys_src[idx] == keys_dst
    out[hit] = vals_src[idx[hit]]
    return out


def to_csc(keys: np.ndarray, vals: np.ndarray, n_rows: int, n_cols: int) -> sp.csc_matrix:
    """A new CSC matrix (its arrays are copies: in-place scipy ops must not alias ``vals``)."""
    rows, cols = split_keys(keys, n_rows)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(cols, minlength=n_cols))])
    return sp.csc_matrix((np.array(vals, dtype=np.float64), rows, indptr), shape=(n_rows, n_cols))


def from_csc(M: sp.spmatrix) -> tuple[np.ndarray, np.ndarray]:
    """Sorted ``(keys, values)`` of the stored non-zeros of ``M``."""
    M = sp.csc_matrix(M)
    M.sum_duplicates()
    M.sort_indices()
    M.eliminate_zeros()
    cols = np.repeat(np.arange(M.shape[1], dtype=np.int64), np.diff(M.indptr))
    return make_keys(M.indices, cols, M.shape[0]), M.data.astype(np.float64)


def combine(X: np.ndarray, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, n_cols: int,
            Xw: np.ndarray | None = None, chunk: int = 1 << 16) -> np.ndarray:
    """``X^T D`` (``(d, n_cols)`` float64) for the column-sparse ``D`` given by ``rows``/``cols``/``vals``.

    ``cols`` must be sorted (the key order). ``Xw`` (optional) is ``X[rows]`` in
    float64, gathered once per working set by the caller. Small inputs are
    summed by ``np.add.reduceat`` (no scipy matrix: its construction costs
    ~100 µs, which dominates the inner loops on tiny problems); larger ones by a
    CSR product ``(n_cols x nnz) @ Xw`` (scipy's C loop, ~15x faster than
    ``reduceat`` at 250k entries), in chunks of entries so the float64 gather
    stays at most ``chunk x d`` when ``Xw`` is not given.
    """
    d = X.shape[1]
    if rows.size <= 2048:
        if rows.size == 0:
            return np.zeros((d, n_cols))
        W = Xw if Xw is not None else np.asarray(X[rows], dtype=np.float64)
        first = np.flatnonzero(np.concatenate(([True], cols[1:] != cols[:-1])))
        out = np.zeros((n_cols, d))
        out[cols[first]] = np.add.reduceat(W * np.asarray(vals)[:, None], first, axis=0)
        return out.T
    out = np.zeros((n_cols, d))
    for s in range(0, rows.size, chunk):
        c = cols[s:s + chunk]
        W = Xw[s:s + chunk] if Xw is not None else np.asarray(X[rows[s:s + chunk]], dtype=np.float64)
        indptr = np.zeros(n_cols + 1, dtype=np.int64)
        np.cumsum(np.bincount(c, minlength=n_cols), out=indptr[1:])
        M = sp.csr_matrix((np.asarray(vals[s:s + chunk], dtype=np.float64), np.arange(c.size), indptr),
                          shape=(n_cols, c.size))
        out += M @ W
    return out.T
