"""Helpers shared by the dataset/descriptor tests: where ../shared/data is, and tiny image fixtures."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, shared_data_dir  # noqa: F401 - re-exported for the dataset tests


def need_shared(sub: str) -> Path:
    """``../shared/data/<sub>``, or skip the test with the reason."""
    base = shared_data_dir()
    if base is None or not (base / sub).exists():
        pytest.skip(f"needs the real data ../shared/data/{sub} (not present here)")
    return base / sub


def textured_image(seed: int, size=(96, 128)) -> np.ndarray:
    """A deterministic grey uint8 image with blobs and edges (gives SIFT/DAISY something to find)."""
    rng = np.random.default_rng(seed)
    h, w = size
    yy, xx = np.mgrid[0:h, 0:w]
    img = np.full((h, w), 40.0)
    for _ in range(12):
        cy, cx, r = rng.uniform(10, h - 10), rng.uniform(10, w - 10), rng.uniform(3, 12)
        img += rng.uniform(60, 150) * np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * r * r))
    x0, y0 = rng.integers(5, w // 2), rng.integers(5, h // 2)
    img[y0:y0 + h // 3, x0:x0 + w // 4] += 50
    return np.clip(img, 0, 255).astype(np.uint8)


def write_jpeg(path: Path, image: np.ndarray) -> None:
    import cv2

    path.parent.mkdir(parents=True, exist_ok=True)
    assert cv2.imwrite(str(path), image), path
