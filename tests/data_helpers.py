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


def scene15_subset(root: Path, per_class: int) -> dict:
    """The first ``per_class`` images of every Fifteen Scene class, linked under ``root`` (added to the links already
    there, so a second call grows the dataset): its dataset config."""
    from lfabench_plugins.datasets.scene15 import CLASS_COUNTS

    shared = shared_data_dir() / "scene15"
    for cls in sorted(CLASS_COUNTS):
        (root / cls).mkdir(parents=True, exist_ok=True)
        for src in sorted((shared / cls).glob("*.jpg"))[:per_class]:
            if not (root / cls / src.name).is_symlink():
                (root / cls / src.name).symlink_to(src)
    return {"name": "scene15", "params": {"root": str(root), "strict": False}}


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


def revisited_folder(root: Path, rng: np.random.Generator, name: str = "roxford5k", n_db: int = 30, n_q: int = 6,
                     size=(24, 24)) -> list[dict]:
    """A Revisited dataset folder in revisitop's official layout (``gnd_<name>.pkl`` + ``jpg/``): ``n_db``
    database images then ``n_q`` queries, each query with easy, hard and junk lists drawn from ``rng`` (query 1
    without easy images, queries 2 and 4 without hard ones, when there are that many). Returns the ``gnd``."""
    import pickle

    names = [f"im{i:03d}" for i in range(n_db + n_q)]
    for i, n in enumerate(names):
        write_jpeg(root / "jpg" / f"{n}.jpg", textured_image(i, size))
    gnd = []
    for q in range(n_q):
        items = rng.permutation(n_db)
        n_easy = 0 if q == 1 else int(rng.integers(1, 5))
        n_hard = 0 if q in (2, 4) else int(rng.integers(1, 5))
        n_junk = int(rng.integers(1, 4))
        gnd.append({"easy": items[:n_easy].tolist(), "hard": items[n_easy:n_easy + n_hard].tolist(),
                    "junk": items[n_easy + n_hard:n_easy + n_hard + n_junk].tolist(),
                    "bbx": [0.0, 0.0, float(size[1] - 4), float(size[0] - 4)]})
    (root / f"gnd_{name}.pkl").write_bytes(
        pickle.dumps({"imlist": names[:n_db], "qimlist": names[n_db:], "gnd": gnd}, protocol=2))
    return gnd
