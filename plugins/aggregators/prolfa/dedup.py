"""Identical descriptors are one prototype candidate: the rule, and the maps between the two row sets.

Real descriptor sets repeat rows exactly: flat patches (every all-zero or
saturated 3x3 patch of the digits, ~13% of its 65k descriptors), and after
``l2``/``rootsift`` normalisation every patch that is a multiple of another.
ProLFA's model treats each repeat as a separate candidate, and its exclusivity
term ``sum_{j != k} <c_j, c_k>`` only penalises two prototypes sharing the
*same row*: so prototypes can share one descriptor *value* without penalty by
spreading over its copies, and the projection of a column whose best entries
are tied spreads the mass equally over every copy. On the digits patches one
outer iteration grew the selection from ~97k to ~1.27M non-zeros (500 images).

The rule (applied by the aggregators before fitting): the candidates are the
*distinct* normalised descriptors, each represented by its first occurrence.
Pooling is untouched (sample means use every descriptor), so the fit loss of a
selection is the same whichever copy it sits on; exclusivity now means "no two
prototypes share a descriptor value". ``selection_`` is reported on the original
rows, with each weight on the representative row.
"""

from __future__ import annotations

import numpy as np

from lfabench.sdk import LazyModule

sp = LazyModule("scipy.sparse")  # imported at first use: a third of a second at start-up

__all__ = ["distinct_rows", "expand_rows"]


#: Rows per block of the row hashes and of their check (bounds the temporaries to a few ``block x d``).
HASH_BLOCK_ROWS = 1 << 14
#: Fixed odd multipliers of the row hash (one per 32-bit word; the pattern repeats past 4,096 words).
_MULTIPLIERS = np.random.default_rng(20261126).integers(1, 2**63, size=4096, dtype=np.uint64) * 2 + 1


def distinct_rows(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first occurrence of every distinct row of ``X`` (``(N, d)``) and each row's representative.

    Returns ``(representatives (u,) int64 ascending, inverse (N,) int64)`` with
    ``X[representatives[inverse]] == X`` exactly (bitwise, with ``-0.0`` equal to ``0.0``).

    Rows are grouped by a 64-bit hash of their bytes, computed in row blocks, and every row is then
    checked byte-wise against its group's first row; a hash collision (or a row that is not a whole number
    of 32-bit words) falls back to one sort of the rows as fixed-size byte keys. The hash keeps the
    temporaries to a few row blocks: the sort copies ``X`` three times (5 GB for 316k lifted descriptors
    of dimension 1,024 in float32).
    """
    X = np.ascontiguousarray(X)
    N = X.shape[0]
    if N == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    first = inverse = None
    if (X.dtype.itemsize * X.shape[1]) % 4 == 0 and X.shape[1] > 0:
        _, first, inverse = np.unique(_row_hashes(X), return_index=True, return_inverse=True)
        if not _rows_equal(X, first[inverse.ravel()]):
            first = None                                 # a collision: the exact sort decides
    if first is None:
        # byte-wise comparison of whole rows: one sort of N fixed-size keys, exact, no float rounding
        rows = (X + 0).view(np.dtype((np.void, X.dtype.itemsize * X.shape[1]))).ravel()
        _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    order = np.argsort(first)                       # representatives in row order
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return first[order].astype(np.int64), rank[inverse.ravel()].astype(np.int64)


def _words(block: np.ndarray) -> np.ndarray:
    """A row block's bytes as 32-bit words, ``-0.0`` read as ``0.0`` (``(b, w)`` uint32)."""
    return np.ascontiguousarray(block + 0).view(np.uint32).reshape(block.shape[0], -1)


def _row_hashes(X: np.ndarray) -> np.ndarray:
    """``sum_k word_k * m_k mod 2^64`` of every row (``(N,)`` uint64; the multipliers ``m_k`` are odd)."""
    out = np.empty(X.shape[0], dtype=np.uint64)
    for s in range(0, X.shape[0], HASH_BLOCK_ROWS):
        words = _words(X[s:s + HASH_BLOCK_ROWS])
        m = np.resize(_MULTIPLIERS, words.shape[1])
        out[s:s + HASH_BLOCK_ROWS] = (words.astype(np.uint64) * m).sum(axis=1, dtype=np.uint64)
    return out


def _rows_equal(X: np.ndarray, rep: np.ndarray) -> bool:
    """Whether every row of ``X`` equals row ``rep[i]`` byte-wise (``-0.0`` as ``0.0``)."""
    for s in range(0, X.shape[0], HASH_BLOCK_ROWS):
        if not np.array_equal(_words(X[s:s + HASH_BLOCK_ROWS]), _words(X[rep[s:s + HASH_BLOCK_ROWS]])):
            return False
    return True


def expand_rows(C: sp.spmatrix, representatives: np.ndarray, n_rows: int) -> sp.csc_matrix:
    """``C`` (``(u, k)``, on the distinct rows) as an ``(n_rows, k)`` matrix on their representative rows."""
    C = sp.csc_matrix(C)
    out = sp.csc_matrix((C.data.copy(), representatives[C.indices], C.indptr.copy()), shape=(n_rows, C.shape[1]))
    out.sort_indices()
    return out
