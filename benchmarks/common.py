"""Shared inputs for benchmark scripts: Fifteen Scene SIFT bags from ../shared/data/scene15.

``scene15_sift()`` uses the ``scene15`` dataset and ``sift`` descriptor plugins when
they are registered; until then it extracts the same thing directly with OpenCV
(SIFT, the 90 keypoints of strongest response per image, ties broken by position)
and caches the arrays under ``benchmarks/out/``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from lfabench import Bags
from lfabench.registry import UnknownPluginError, get_plugin

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
    try:
        dataset = get_plugin("dataset", "scene15")(root=str(root))
        bags = get_plugin("descriptor", "sift")(max_keypoints=max_keypoints).describe(dataset)
        return bags, np.asarray(dataset.labels)
    except UnknownPluginError:
        pass
    cache = OUT / f"scene15_sift{max_keypoints}_cv2.npz"
    if cache.exists():
        with np.load(cache, allow_pickle=False) as z:
            return Bags(z["X"], z["offsets"]), z["labels"]
    import cv2
    from tqdm import tqdm

    classes = sorted(p.name for p in root.iterdir() if p.is_dir())
    files = [(f, c) for c, name in enumerate(classes) for f in sorted((root / name).glob("*.jpg"))]
    sift = cv2.SIFT_create()
    descs = []
    for f, _ in tqdm(files, desc="SIFT scene15"):
        img = cv2.imread(str(f), cv2.IMREAD_GRAYSCALE)
        kps, d = sift.detectAndCompute(img, None)
        if d is None:
            descs.append(np.empty((0, 128), np.float32))
            continue
        order = sorted(range(len(kps)), key=lambda i: (-kps[i].response, kps[i].pt[1], kps[i].pt[0]))
        descs.append(d[order[:max_keypoints]])
    bags = Bags.from_list(descs)
    labels = np.asarray([c for _, c in files])
    OUT.mkdir(parents=True, exist_ok=True)
    np.savez(cache, X=bags.descriptors, offsets=bags.offsets, labels=labels)
    return bags, labels
