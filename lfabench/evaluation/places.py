"""A query's ranking known by counts, not by a sort: the places of chosen items and the head of the ranking.

A full ranking of ``n`` database items sorts each query's ``n`` distances (``O(n log n)``), but scoring a query
reads only the places of its positive and junk items and the first few items (precision@k). With the tie rule
of :func:`lfabench.evaluation.search.stable_argsort_rows` (smaller key first, equal keys in column order), the
place of column ``j`` is a count::

    place(j) = #{i : key_i < key_j} + #{i < j : key_i == key_j}

two comparison passes over the row per item (a third only where its key is tied), and the head is a
selection: the minima of blocks of the row bound the head's last key, one pass picks the keys under that
bound and only those are sorted by ``(key, column)``. Both are exact: they equal the stable sort's ranking,
ties included; ``-0.0`` and ``0.0`` compare equal as in that sort. A row holding NaN keys is ranked by the
sort itself (its NaN-last rule), so every row gives the sort's answer; so is a query with so many items to place
that the passes would cost more than the sort (:func:`_max_items`).

:func:`query_places` also applies the ``retrieval`` evaluator's two edits of a ranking: one ``excluded``
column removed (the query itself, Holidays rule), and ``last`` columns (images without descriptors) moved
after all the others, keeping their order among themselves.
"""

from __future__ import annotations

import numpy as np

from .search import stable_argsort_rows

__all__ = ["query_places", "query_places_by_sort"]

#: Keys per group whose minima bound the head's last key (:func:`_smallest`).
_GROUP = 64
#: More columns than this moved last (images without descriptors): the row is ranked by the sort instead.
_MAX_LAST = 64
def _max_items(n: int) -> int:
    """More items than this to place in a row of ``n`` keys (positives and junk of one query, e.g. Oxford's
    hundreds), two passes per item cost more than the sort, which then ranks the row (measured: about 25 items at
    ``n`` = 5,000, over 150 at 100,000; capped at 128 for rows beyond the caches)."""
    return max(24, min(n // 500, 128))


def _before(keys: np.ndarray, others: np.ndarray, j: int) -> int:
    """How many of the columns ``others`` come before column ``j`` in the stable order of ``keys``."""
    k = keys[others]
    return int(np.count_nonzero((k < keys[j]) | ((k == keys[j]) & (others < j))))


def _place(keys: np.ndarray, j: int) -> int:
    """Column ``j``'s place in the stable order of all of ``keys``: two passes, a third only on a tie."""
    kj = keys[j]
    place = int(np.count_nonzero(keys < kj))
    if np.count_nonzero(keys == kj) > 1:                         # ties: those at lower columns come first
        place += int(np.count_nonzero(keys[:j] == kj))
    return place


def _smallest(keys: np.ndarray, need: int) -> np.ndarray:
    """The first ``need`` columns of the stable order of ``keys`` ``(n,)``, without sorting the row.

    The ``need``-th smallest of the minima of disjoint groups of :data:`_GROUP` keys is at least the ``need``-th
    smallest key (those minima are ``need`` distinct keys), so every column of the answer, ties included, has a
    key at most that bound: one pass selects them and only they are sorted, by ``(key, column)``. A group is
    every ``n // _GROUP``-th key, so that the minima are an elementwise minimum of contiguous rows."""
    n = keys.size
    need = min(int(need), n)
    if need <= 0:
        return np.empty(0, dtype=np.int64)
    groups = n // _GROUP
    if groups >= need:
        minima = keys[:groups * _GROUP].reshape(_GROUP, groups).min(axis=0)
        bound = np.partition(minima, need - 1)[need - 1]
        chosen = np.flatnonzero(keys <= bound)
    else:
        chosen = np.arange(n)
    return chosen[np.lexsort((chosen, keys[chosen]))][:need].astype(np.int64)


def query_places(keys, columns, head: int, excluded: int = -1, last=None) -> tuple[np.ndarray, np.ndarray]:
    """``(places, head_columns)`` of one query's ranking of ``n`` database columns, without sorting the row.

    ``keys``: ``(n,)`` float32, smaller ranks first, equal keys in column order. The ranking is that order with
    column ``excluded`` removed (``-1``: none) and the columns ``last`` (sorted distinct column numbers, or
    None) moved after all the others (their order kept). Returns ``places`` ``(m,)`` int64, the 0-based place of each of
    ``columns`` ``(m,)`` in that ranking (``-1`` for ``excluded``), and ``head_columns``, its first
    ``min(head, ranked)`` columns. Equal to :func:`query_places_by_sort`, the full sort. ``O(n (2m + 4))``; rows
with NaN, more than 64 ``last`` columns or more ``columns`` than :func:`_max_items` are sorted instead.
    """
    keys = np.asarray(keys)
    columns = np.asarray(columns, dtype=np.int64)
    if keys.ndim != 1 or keys.dtype != np.float32:
        raise TypeError(f"query_places ranks a 1-D float32 row, got {keys.dtype} of shape {keys.shape}")
    late = np.zeros(0, dtype=np.int64) if last is None else np.asarray(last, dtype=np.int64)
    if late.size > _MAX_LAST or columns.size > _max_items(keys.size) or np.isnan(keys).any():
        return query_places_by_sort(keys, columns, head, excluded, last)
    excluded = int(excluded)
    late = late[late != excluded]                                # the columns ranked after the others
    is_late = set(late.tolist())
    removed = late if excluded < 0 else np.sort(np.append(late, excluded))    # the columns not in the first part
    n_first = keys.size - removed.size
    is_removed = set(removed.tolist())
    places = np.empty(columns.size, dtype=np.int64)
    for t, j in enumerate(columns.tolist()):
        if j == excluded:
            places[t] = -1
        elif j in is_late:
            places[t] = n_first + _before(keys, late, j)
        else:
            places[t] = _place(keys, j) - _before(keys, removed, j)
    chosen = _smallest(keys, int(head) + removed.size)
    chosen = np.asarray([c for c in chosen.tolist() if c not in is_removed][:max(int(head), 0)], dtype=np.int64)
    if chosen.size < head and late.size:                         # the ranking's head reaches into the last part
        ordered = late[np.lexsort((late, keys[late]))]
        chosen = np.concatenate([chosen, ordered[:int(head) - chosen.size]])
    return places, chosen.astype(np.int64)


def query_places_by_sort(keys, columns, head: int, excluded: int = -1, last=None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`query_places` by a full stable sort of the row (``O(n log n)``): the definition it equals, and its
    path for rows holding NaN."""
    keys = np.asarray(keys, dtype=np.float32)
    columns = np.asarray(columns, dtype=np.int64)
    order = stable_argsort_rows(keys[None, :])[0]
    keep = order != excluded if excluded >= 0 else np.ones(order.size, dtype=bool)
    if last is not None and np.size(last):
        at_end = np.zeros(keys.size, dtype=bool)
        at_end[np.asarray(last, dtype=np.int64)] = True
        at_end = at_end[order]
        ranked = np.concatenate([order[keep & ~at_end], order[keep & at_end]])
    else:
        ranked = order[keep]
    place = np.full(keys.size, -1, dtype=np.int64)
    place[ranked] = np.arange(ranked.size)
    return place[columns], ranked[:max(int(head), 0)]
