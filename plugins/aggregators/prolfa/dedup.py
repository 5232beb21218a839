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
import scipy.sparse as sp

__all__ = ["distinct_rows", "expand_rows"]


def distinct_rows(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first occurrence of every distinct row of ``X`` (``(N, d)``) and each row's representative.

    Returns ``(representatives (u,) int64 ascending, inverse (N,) int64)`` with
    ``X[representatives[inverse]] == X`` exactly (bitwise, with ``-0.0`` equal to ``0.0``).
    """
    X = np.ascontiguousarray(X)
    N = X.shape[0]
    if N == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    # byte-wise comparison of whole rows: one sort of N fixed-size keys, exact, no float rounding
    rows = (X + 0).view(np.dtype((np.void, X.dtype.itemsize * X.shape[1]))).ravel()
    _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    order = np.argsort(first)                       # representatives in row order
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return first[order].astype(np.int64), rank[inverse.ravel()].astype(np.int64)


def expand_rows(C: sp.spmatrix, representatives: np.ndarray, n_rows: int) -> sp.csc_matrix:
    """``C`` (``(u, k)``, on the distinct rows) as an ``(n_rows, k)`` matrix on their representative rows."""
    C = sp.csc_matrix(C)
    out = sp.csc_matrix((C.data.copy(), representatives[C.indices], C.indptr.copy()), shape=(n_rows, C.shape[1]))
    out.sort_indices()
    return out
