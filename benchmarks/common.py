"""Shared inputs for benchmark scripts: Fifteen Scene SIFT bags from ../shared/data/scene15.

``scene15_sift()`` runs the ``scene15`` dataset and ``sift`` descriptor plugins (the
90 keypoints of strongest response per image; extraction is cached by the
descriptor plugin, so only the first call extracts).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from lfabench.registry import get_plugin

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "out"


def shared_data() -> Path:
    """``../shared/data`` beside the repository (or ``$LFABENCH_SHARED_DATA``)."""
    for cand in (os.environ.get("LFABENCH_SHARED_DATA"), ROOT.parent / "shared" / "data", Path("/work/shared/data")):
        if cand and Path(cand).is_dir():
            return Path(cand)
    raise SystemExit("benchmark needs ../shared/data (set LFABENCH_SHARED_DATA)")


def scene15_sift(max_keypoints: int = 90):
    """``(bags, labels)`` for all 4,485 Fifteen Scene images, SIFT capped at ``max_keypoints`` per image."""
    root = shared_data() / "scene15"
    dataset = get_plugin("dataset", "scene15")(root=str(root))
    bags = get_plugin("descriptor", "sift")(max_keypoints=max_keypoints).describe(dataset)
    return bags, np.asarray(dataset.labels)
