"""Column-sparse ``(N, d̄)`` matrices as sorted int64 keys ``col * N + row`` plus value arrays.

ProLFA's ``Z``, ``C`` and ``Lambda`` live on a shared, small support (with
one-hot starts ``C`` keeps a few non-zeros per column), so the ADMM updates are
elementwise operations on aligned value arrays. Sorting keys by column first
keeps each column's entries contiguous for the per-column simplex projection.
"""

from __future__ import annotations

import numpy as np

from lfabench.sdk import LazyModule

sp = LazyModule("scipy.sparse")  # imported at first use: a third of a second at start-up

__all__ = ["make_keys", "split_keys", "union_keys", "align", "to_csc", "from_csc", "combine", "block_rows",
           "gather_float64", "run_starts", "ColumnLayout"]

#: Bytes of float64 rows a gather or row-wise product handles at once: at paper scale with a lifted map
#: (D = 1,024) the former 64k-row blocks were 0.5 GB temporaries beside the working set, mapped afresh on every
#: call (above glibc's 32 MiB mmap threshold).
BLOCK_BYTES = 8 << 20


def block_rows(d: int) -> int:
    """Rows of ``d`` float64 values per block of :data:`BLOCK_BYTES`."""
    return max(1, BLOCK_BYTES // (8 * max(int(d), 1)))


def gather_float64(X: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``X[rows]`` as float64 ``(rows.size, d)``, the same values as ``np.asarray(X[rows], float64)``, gathered
    block by block into the result (no whole gathered copy in ``X``'s dtype beside it)."""
    if X.dtype == np.float64:
        return X[rows]
    out = np.empty((rows.size, X.shape[1]), dtype=np.float64)
    step = block_rows(X.shape[1])
    for s in range(0, rows.size, step):
        out[s:s + step] = X[rows[s:s + step]]
    return out


def make_keys(rows: np.ndarray, cols: np.ndarray, n_rows: int) -> np.ndarray:
    return np.asarray(cols, dtype=np.int64) * n_rows + np.asarray(rows, dtype=np.int64)


def union_keys(*keys: np.ndarray) -> np.ndarray:
    """The sorted distinct values of the integer arrays ``keys`` (``np.union1d``, the same array), by one stable
    sort: its merge of the sorted runs that key arrays come in is linear, where NumPy 2.4's ``np.union1d`` finds
    distinct integers by hashing, ~20x slower here (35 ms against 1.7 ms for 80k and 65k keys)."""
    merged = np.concatenate(keys)
    merged.sort(kind="stable")
    if merged.size == 0:
        return merged
    first = np.empty(merged.size, dtype=bool)
    first[0] = True
    np.not_equal(merged[1:], merged[:-1], out=first[1:])
    return merged[first]


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


def run_starts(keys: np.ndarray) -> np.ndarray:
    """The positions where a run of equal values starts in the sorted, non-empty ``keys``."""
    return np.concatenate(([True], keys[1:] != keys[:-1])).nonzero()[0]


class ColumnLayout:
    """Sorted column indices ``cols`` (``(nnz,)``, of ``n_cols`` columns) grouped into columns, once per set of
    entries, for every projection and ``X^T D`` product on that set.

    The solver's inner loop projects and multiplies on one working set many times (on moon.mat, 20 ADMM
    iterations of one to six trials each). On tiny problems each of those costs a few µs of arithmetic behind tens of µs
    of NumPy calls and scipy checks that only re-derive this grouping.
    """

    def __init__(self, cols: np.ndarray, n_cols: int):
        self.cols = np.asarray(cols, dtype=np.int64)
        self.n_cols = int(n_cols)
        self.counts = np.bincount(self.cols, minlength=self.n_cols)
        self.starts = np.concatenate([[0], self.counts.cumsum()[:-1]])   # first entry of each column
        self.complete = self.counts.size == self.n_cols and not (self.counts == 0).any()   # no empty column
        # (nnz,) 1-based rank of each position within its column's run
        self.rank = np.arange(self.cols.size) - self.starts.repeat(self.counts) + 1
        self._runs = self._matrix = None

    def runs(self) -> np.ndarray:
        """The first entry of each non-empty column."""
        if self._runs is None:
            self._runs = run_starts(self.cols)
        return self._runs

    def column_matrix(self, vals: np.ndarray) -> sp.csr_matrix:
        """The ``(n_cols, nnz)`` CSR matrix of :func:`_column_sums` with data ``vals``: built once, then only its
        data is replaced (scipy's constructor checks cost ~80 µs, twice the product at 5,000 entries)."""
        vals = np.asarray(vals, dtype=np.float64)
        if self._matrix is None:
            self._matrix = _column_matrix(self.cols, vals, self.n_cols)
        else:
            self._matrix.data = vals
        return self._matrix


def combine(X: np.ndarray, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, n_cols: int,
            Xw: np.ndarray | None = None, chunk: int = 1 << 16, layout: ColumnLayout | None = None) -> np.ndarray:
    """``X^T D`` (``(d, n_cols)`` float64) for the column-sparse ``D`` given by ``rows``/``cols``/``vals``.

    ``cols`` must be sorted (the key order). ``Xw`` (optional) is ``X[rows]`` in
    float64, gathered once per working set by the caller. Small inputs are
    summed by ``np.add.reduceat`` (no scipy matrix: its construction costs
    ~100 µs, which dominates the inner loops on tiny problems); larger ones by a
    CSR product ``(n_cols x nnz) @ Xw`` (scipy's C loop, ~15x faster than
    ``reduceat`` at 250k entries), in chunks of ``chunk`` entries; without ``Xw``
    the rows are gathered in blocks of :data:`BLOCK_BYTES` (see :func:`_column_blocks`). ``layout`` (optional,
    of ``cols``) spares re-deriving the column grouping (same floats).
    """
    d = X.shape[1]
    if rows.size <= 2048:
        if rows.size == 0:
            return np.zeros((d, n_cols))
        W = Xw if Xw is not None else gather_float64(X, rows)
        first = layout.runs() if layout is not None else run_starts(cols)
        out = np.zeros((n_cols, d))
        out[cols[first]] = np.add.reduceat(W * np.asarray(vals)[:, None], first, axis=0)
        return out.T
    out = np.zeros((n_cols, d))
    if layout is not None and Xw is not None and rows.size <= chunk:
        out += layout.column_matrix(vals) @ Xw          # as the one-chunk loop below, from a built matrix
        return out.T
    for s in range(0, rows.size, chunk):
        e = min(s + chunk, rows.size)
        if Xw is not None:
            out += _column_sums(cols[s:e], vals[s:e], Xw[s:e], n_cols)
            continue
        # gathered in blocks that never split a column inside this chunk: each column's sum over the chunk
        # is then the same sequence of additions as one product over the whole chunk (same floats)
        for a, b in _column_blocks(cols, s, e, block_rows(d)):
            present = union_keys(cols[a:b])
            out[present] += _column_sums(np.searchsorted(present, cols[a:b]), vals[a:b],
                                         gather_float64(X, rows[a:b]), present.size)
    return out.T


def _column_sums(cols: np.ndarray, vals: np.ndarray, W: np.ndarray, n_cols: int) -> np.ndarray:
    """``(n_cols, d)``: row j sums ``vals[e] W[e]`` over the entries e with ``cols[e] == j`` (sorted ``cols``), in
    entry order from 0, by a CSR product (scipy's C loop)."""
    return _column_matrix(cols, vals, n_cols) @ W


def _column_matrix(cols: np.ndarray, vals: np.ndarray, n_cols: int) -> sp.csr_matrix:
    """``(n_cols, nnz)`` CSR: row j holds ``vals[e]`` at column e for the entries e of column j (sorted ``cols``)."""
    indptr = np.zeros(n_cols + 1, dtype=np.int64)
    np.cumsum(np.bincount(cols, minlength=n_cols), out=indptr[1:])
    return sp.csr_matrix((np.asarray(vals, dtype=np.float64), np.arange(cols.size), indptr), shape=(n_cols, cols.size))


def _column_blocks(cols: np.ndarray, start: int, stop: int, step: int):
    """``(a, b)`` blocks covering ``[start, stop)`` of sorted ``cols``, about ``step`` entries each, each ending
    where a column ends (or at ``stop``): a column longer than ``step`` is one block."""
    a = start
    while a < stop:
        b = min(a + step, stop)
        if b < stop:
            b = min(int(np.searchsorted(cols, cols[b - 1], side="right")), stop)
        yield a, b
        a = b
