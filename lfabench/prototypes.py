"""What a prototype-selecting aggregator selected, kept beside the run record as ``prototypes.npz``.

An aggregator whose output dimensions are made of training descriptors (ProLFA: prototype ``p`` is
the convex combination ``P[:, p] = X^T C[:, p]`` of the fit descriptors, eq. "ModelRelax2") says so by
returning a :class:`~lfabench.aggregate.PrototypeSupport` from ``Aggregator.prototype_support()``. The conductor then
turns its rows (positions in the fitted bags) into the dataset's own coordinates and writes
``<run_dir>/prototypes.npz`` (:func:`save_prototypes`), so that ``lfabench explain`` can show the
source image patches of every prototype without refitting. One entry per non-zero of ``C``
(at most ``d̄ x max_support``: ~16k at d̄ = 4096), never the descriptors themselves:

==================  ==========  ==============================================================
array               shape       what
==================  ==========  ==============================================================
prototype           (nnz,)      output dimension (prototype) of the entry
coefficient         (nnz,)      its weight ``C[row, p]`` in the prototype (each prototype sums to 1)
sample              (nnz,)      the dataset sample (index into the dataset) the descriptor comes from
descriptor          (nnz,)      the descriptor's position within that sample's bag
keypoints           (nnz, k)    the descriptor's keypoint (columns ``keypoint_fields``; k = 0 if none)
keypoint_fields     (k,)        names of the keypoint columns (``x``, ``y``, ``scale``, ...)
prototype_weight    (P,)        the importance of each prototype (``weight_definition``)
weight_definition   ()          what ``prototype_weight`` measures, in words
==================  ==========  ==============================================================

Entries are sorted by prototype, then by decreasing coefficient.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from .aggregate import PrototypeSupport
from .bags import Bags
from .boardfiles import load_npz
from .storage import save_npz_atomic

PROTOTYPES_FILE = "prototypes.npz"
#: A prototypes file's arrays may declare up to 16 times its size (floats compress little), or this much.
PROTOTYPES_BUDGET_FLOOR = 256 << 20
_ARRAYS = ("prototype", "coefficient", "sample", "descriptor", "keypoints", "keypoint_fields",
           "prototype_weight", "weight_definition")


def support_arrays(support: PrototypeSupport, fit_bags: Bags, fit_indices) -> dict[str, np.ndarray]:
    """The arrays of ``prototypes.npz`` (module docstring) for ``support`` fitted on ``fit_bags``.

    ``fit_indices`` ``(m_fit,)``: the dataset index of each sample of ``fit_bags`` (the split's fit samples).
    """
    C = sp.coo_matrix(support.selection)
    n_fit = fit_bags.n_descriptors
    if C.shape[0] != n_fit:
        raise ValueError(f"prototype support has {C.shape[0]} rows, the fitted bags {n_fit} descriptors")
    weight = np.asarray(support.weight, dtype=np.float64).ravel()
    if weight.shape != (C.shape[1],):
        raise ValueError(f"prototype weight has shape {weight.shape}, expected ({C.shape[1]},)")
    fit_indices = np.asarray(fit_indices, dtype=np.int64)
    if fit_indices.shape != (fit_bags.n_samples,):
        raise ValueError(f"fit_indices has shape {fit_indices.shape}, the fitted bags {fit_bags.n_samples} samples")
    keep = C.data != 0
    rows, cols, vals = C.row[keep].astype(np.int64), C.col[keep].astype(np.int64), C.data[keep].astype(np.float64)
    order = np.lexsort((-vals, cols))  # by prototype, then largest coefficient first
    rows, cols, vals = rows[order], cols[order], vals[order]
    fit_sample = np.searchsorted(fit_bags.offsets, rows, side="right") - 1
    fields = tuple(fit_bags.keypoint_fields or ()) if fit_bags.keypoints is not None else ()
    K = fit_bags.keypoints[rows].astype(np.float32) if fields else np.zeros((rows.size, 0), np.float32)
    return {"prototype": cols, "coefficient": vals, "sample": fit_indices[fit_sample],
            "descriptor": rows - fit_bags.offsets[fit_sample], "keypoints": K,
            "keypoint_fields": np.asarray(fields, dtype=str), "prototype_weight": weight,
            "weight_definition": np.asarray(support.weight_definition)}


def save_prototypes(run_dir: Path | str, support: PrototypeSupport, fit_bags: Bags, fit_indices) -> dict[str, Any]:
    """Write ``run_dir/prototypes.npz``; returns what the run record says of it (its ``prototypes`` field)."""
    arrays = support_arrays(support, fit_bags, fit_indices)
    save_npz_atomic(Path(run_dir) / PROTOTYPES_FILE, arrays)
    return {"file": PROTOTYPES_FILE, "n_prototypes": int(arrays["prototype_weight"].size),
            "n_entries": int(arrays["prototype"].size), "keypoint_fields": arrays["keypoint_fields"].tolist(),
            "weight": support.weight_definition}


def load_prototypes(path: Path | str) -> dict[str, np.ndarray]:
    """The arrays of a ``prototypes.npz`` (no pickle, headers checked before any array is read:
    :func:`lfabench.boardfiles.load_npz`); a file missing one is a ValueError naming it."""
    path = Path(path)

    def check(headers):
        missing = [k for k in _ARRAYS if k not in headers]
        if missing:
            raise ValueError(f"not a prototypes file of this lfabench (missing {', '.join(missing)})")

    arrays = load_npz(path, check, max_bytes=max(PROTOTYPES_BUDGET_FLOOR, 16 * path.stat().st_size))
    return {k: arrays[k] for k in _ARRAYS}
