"""Fingerprints of a run's intermediate results, so that a rerun can say where it first differs.

A record's ``fingerprints`` holds, in pipeline order: ``descriptors`` (the bags: descriptors and offsets),
``fitted`` (the aggregator's fitted arrays), ``features`` (the aggregated vectors scored), ``predictions``
(:func:`lfabench.evaluation.predictions_fingerprint`). Each is a sha256 of exact bytes: equal fingerprints
mean bit-identical arrays; ``lfabench reproduce`` compares them in this order.
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


def bags_fingerprint(bags) -> str:
    """sha256 of a :class:`~lfabench.bags.Bags`' descriptors (dtype, shape, bytes) and offsets."""
    h = hashlib.sha256()
    for a in (bags.descriptors, bags.offsets):
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _fitted_arrays(obj: Any, prefix: str, out: dict[str, np.ndarray], depth: int, seen: set[int]) -> None:
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
            _fitted_arrays(v, f"{prefix}[{i}]", out, depth + 1, seen)
        return
    if isinstance(obj, dict):
        for k in sorted(obj, key=str):
            _fitted_arrays(obj[k], f"{prefix}[{k}]", out, depth + 1, seen)
        return
    if hasattr(obj, "toarray") and hasattr(obj, "shape"):  # scipy.sparse
        out[prefix] = np.asarray(obj.toarray())
        return
    attrs = getattr(obj, "__dict__", None)
    if attrs is None:
        return
    for name in sorted(attrs):
        if name.endswith("_") and not name.startswith("_") and name not in NOT_MODEL:
            _fitted_arrays(attrs[name], f"{prefix}.{name}" if prefix else name, out, depth + 1, seen)


def fitted_fingerprint(estimator) -> str | None:
    """sha256 over every numeric array a fitted estimator holds in its scikit-learn style ``name_``
    attributes (recursing into lists, dicts and nested estimators; ``fit_info_`` excluded), by path.
    None when it holds none (nothing fitted to compare)."""
    arrays: dict[str, np.ndarray] = {}
    _fitted_arrays(estimator, "", arrays, 0, set())
    # the same digest of named arrays as a predictions file's
    return predictions_fingerprint(arrays) if arrays else None


def array_digest(a: np.ndarray) -> str:
    """sha256 of one array's dtype, shape and bytes."""
    a = np.ascontiguousarray(a)
    return hashlib.sha256(f"{a.dtype.str}{a.shape}".encode() + a.tobytes()).hexdigest()
