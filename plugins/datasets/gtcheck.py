"""The checks every retrieval ground truth reader applies, each error naming the file and the query.

* :func:`index_list`: a list of database indices is a list (or tuple) of distinct integers in range (a bool,
  a float such as ``3.0``, a text or a nested list is refused, never read as a number).
* :func:`disjoint`: a query's lists (easy, hard, junk; or positives, junk) share no image.
* :func:`image_name`: an image name is a relative path inside the dataset's folder (no absolute path, no
  ``..``, no empty name), so that no ground truth file reads an image outside the dataset root.
"""

from __future__ import annotations

import math
import numbers
from pathlib import PurePosixPath, PureWindowsPath


def shown(value) -> str:
    """``value`` as an error message shows it: text and numbers as written (cut at 60 characters), anything else
    by its type only (a crafted, deeply nested or self-referencing list has no safe repr)."""
    if isinstance(value, (str, bytes, int, float)):
        text = repr(value)
        return text if len(text) <= 60 else text[:57] + "..."
    return f"a {type(value).__name__}"


def index_list(values, n: int, where: str, key: str) -> list[int]:
    """``values`` (the ``key`` list of one query, ``where`` names the file and the query) as distinct ints in
    ``0..n-1``; a ``ValueError`` naming the first offending entry otherwise. None is an empty list."""
    if values is None:
        return []
    if not isinstance(values, (list, tuple)):
        raise ValueError(f"{where}: {key} must be a list of image indices, got {type(values).__name__}")
    out = []
    for i in values:
        if isinstance(i, bool) or not isinstance(i, numbers.Integral):
            raise ValueError(f"{where}: {key} holds {shown(i)} ({type(i).__name__}), not an integer image index")
        if not 0 <= int(i) < n:
            raise ValueError(f"{where}: {key} index {int(i)} out of range for {n} database images")
        out.append(int(i))
    duplicated(out, where, key)
    return out


def duplicated(items, where: str, key: str) -> None:
    """A ``ValueError`` when ``items`` (one list of a query) names an image twice."""
    seen = set()
    for item in items:
        if item in seen:
            raise ValueError(f"{where}: {key} lists image {shown(item)} twice")
        seen.add(item)


def disjoint(where: str, **lists) -> None:
    """A ``ValueError`` when two of a query's ``lists`` (name -> items) share an image."""
    names = list(lists)
    for a_pos, a in enumerate(names):
        first = set(lists[a])
        for b in names[a_pos + 1:]:
            both = [item for item in lists[b] if item in first]
            if both:
                raise ValueError(f"{where}: image {shown(both[0])} is both {a} and {b}")


def not_its_own(where: str, query, positives) -> None:
    """A ``ValueError`` when the query is among its own positives (a protocol that removes the query from its
    ranking could never find it: a positive counted as missed)."""
    if query in set(positives):
        raise ValueError(f"{where}: the query is among its own positives (it is removed from its own ranking)")


def image_name(name, where: str) -> str:
    """``name`` when it is a relative path inside the image folder, else a ``ValueError`` naming it."""
    if not isinstance(name, str) or not name or "\x00" in name:
        raise ValueError(f"{where}: image name {shown(name)} is not a file name")
    if (PurePosixPath(name).is_absolute() or PureWindowsPath(name).is_absolute() or PureWindowsPath(name).drive
            or ".." in PurePosixPath(name.replace("\\", "/")).parts):
        raise ValueError(f"{where}: image name {shown(name)} leaves the dataset's folder (absolute, or with '..')")
    return name


def query_box(value, where: str):
    """A query box ``(x1, y1, x2, y2)`` of four finite numbers with ``x1 <= x2``, ``y1 <= y2`` (given as a list or
    as text ``"x1 y1 x2 y2"``), None when absent; a ``ValueError`` naming ``where`` otherwise."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    parts = value.split() if isinstance(value, str) else value
    if not isinstance(parts, (list, tuple)) or any(isinstance(v, bool) for v in parts):
        raise ValueError(f"{where}: bbox must be four numbers x1 y1 x2 y2, got {shown(value)}")
    try:
        box = tuple(float(v) for v in parts)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: bbox must be four numbers x1 y1 x2 y2, got {shown(value)}") from None
    if len(box) != 4 or not all(math.isfinite(v) for v in box) or not (box[0] <= box[2] and box[1] <= box[3]):
        raise ValueError(f"{where}: bbox must be four finite numbers x1 y1 x2 y2 with x1 <= x2, y1 <= y2, "
                         f"got {shown(value) if isinstance(value, str) else box}")
    return box
