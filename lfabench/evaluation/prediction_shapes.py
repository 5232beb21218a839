"""What a record's ``predictions.npz`` may declare, judged from its array headers before any array is read.

A record states its counts in ``split`` (k-NN: ``n_train``, ``n_test``; retrieval: ``n_queries``,
``n_database``). :func:`check_declared` holds every array header of the file (name, shape, dtype; see
:mod:`lfabench.boardfiles`) to the layout of :mod:`lfabench.evaluation.predictions` at those counts: the
arrays of the layout and no others, one dimension, the dtype kind the layout writes, and the length the
counts give (or, for the flattened per-query lists, at most ``n_queries * n_database``). A count the record
does not state is not checked; :func:`byte_budget` bounds the whole file's declared bytes by its size then.
"""

from __future__ import annotations

from collections.abc import Mapping

from .predictions import KINDS

__all__ = ["check_declared", "byte_budget", "MAX_EXPANSION", "BUDGET_FLOOR"]

#: The most bytes a predictions file may declare per byte of file. The committed boards' files expand 1.4-5.9
#: times (deflate on index arrays); a header declaring more is not read.
MAX_EXPANSION = 16
#: Files whose arrays declare less than this are not held to :data:`MAX_EXPANSION`.
BUDGET_FLOOR = 16 << 20

_OPTIONAL = {"retrieval": ("positive_difficulty",)}
_INTEGER, _BOOL = "iu", "b"
_LABEL = "iubU"        # labels: integers, bools or text (stored without pickle)
_MAX_TEXT = 1024       # characters of one label or of ``kind``


def byte_budget(file_size: int) -> int:
    """The most bytes the arrays of a predictions file of ``file_size`` bytes may declare."""
    return max(BUDGET_FLOOR, MAX_EXPANSION * int(file_size))


def _count(split: Mapping, key: str) -> int | None:
    value = split.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _expected(kind: str, split: Mapping) -> dict[str, tuple[str, int | None, bool]]:
    """``{array: (dtype kinds, length or None, length is an upper bound)}`` of a layout at the record's counts."""
    if kind in ("labels", "knn"):
        n_train, n_test = _count(split, "n_train"), _count(split, "n_test")
        return {"train_indices": (_INTEGER, n_train, False), "test_indices": (_INTEGER, n_test, False),
                "predicted": (_LABEL, n_test, False), "true": (_LABEL, n_test, False),
                "counted_wrong": (_BOOL, n_test, False)}
    q, n_db = _count(split, "n_queries"), _count(split, "n_database")
    flat = q * n_db if q is not None and n_db is not None else None
    out = {"query_indices": (_INTEGER, q, False), "scored_zero": (_BOOL, q, False),
           "precision_at": (_INTEGER, 1024, True)}
    for name in ("ranking_offsets", "positive_offsets", "junk_offsets"):
        out[name] = (_INTEGER, None if q is None else q + 1, False)
    for name in ("ranking", "positives", "positive_ranks", "junk", "junk_ranks"):
        out[name] = (_INTEGER, flat, True)
    out["positive_difficulty"] = (_INTEGER, flat, True)
    return out


def check_declared(kind: object, split: object, headers: Mapping) -> None:
    """A ``ValueError`` naming the first array whose declared shape or dtype the record's ``kind`` and ``split``
    counts do not allow (``headers``: name -> an object with ``shape`` and ``dtype``)."""
    if kind not in KINDS:
        raise ValueError(f"the record names predictions of unknown kind {kind!r}")
    split = split if isinstance(split, Mapping) else {}
    expected = _expected(kind, split)
    allowed = set(KINDS[kind]) | set(_OPTIONAL.get(kind, ())) | {"kind"}
    unknown = sorted(set(headers) - allowed)
    if unknown:
        raise ValueError(f"array(s) {', '.join(map(repr, unknown))} are not part of {kind} predictions")
    missing = sorted(set(KINDS[kind]) - set(headers))
    if missing:
        raise ValueError(f"{kind} predictions lack the array(s) {', '.join(missing)}")
    for name, h in headers.items():
        if name == "kind":
            if h.shape != () or h.dtype.kind != "U" or h.dtype.itemsize > 4 * _MAX_TEXT:
                raise ValueError(f"array 'kind' declares {h.dtype.str} {h.shape}, not a short text")
            continue
        kinds, length, at_most = expected[name]
        if len(h.shape) != 1:
            raise ValueError(f"array {name!r} declares shape {h.shape}, not one dimension")
        if h.dtype.kind not in kinds or (h.dtype.kind == "U" and h.dtype.itemsize > 4 * _MAX_TEXT):
            raise ValueError(f"array {name!r} declares dtype {h.dtype.str}, not one {kind} predictions use")
        if length is not None and (h.shape[0] > length if at_most else h.shape[0] != length):
            counts = ", ".join(f"{k} {split[k]}" for k in ("n_train", "n_test", "n_queries", "n_database")
                               if k in split)
            raise ValueError(f"array {name!r} declares {h.shape[0]:,} elements, the record's counts "
                             f"({counts}) allow {'at most ' if at_most else ''}{length:,}")
