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
            chunk: int = 1 << 15) -> np.ndarray:
    """``X^T D`` (``(d, n_cols)`` float64) for the column-sparse ``D`` given by ``rows``/``cols``/``vals``.

    ``cols`` must be sorted (the key order). Each column is a segment, summed by
    ``np.add.reduceat`` over chunks of entries: no scipy matrix is built, which
    matters in the inner loops on small problems (a ``csc_matrix`` costs ~100 µs
    of validation however tiny), and the float64 buffer is at most ``chunk x d``.
    """
    out = np.zeros((n_cols, X.shape[1]))
    for s in range(0, rows.size, chunk):
        c = cols[s:s + chunk]
        contrib = np.asarray(X[rows[s:s + chunk]], dtype=np.float64) * np.asarray(vals[s:s + chunk])[:, None]
        first = np.flatnonzero(np.concatenate(([True], c[1:] != c[:-1])))
        # a column cut by a chunk boundary appears in two chunks: += accumulates both parts
        out[c[first]] += np.add.reduceat(contrib, first, axis=0)
    return out.T
