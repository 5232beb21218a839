"""Tiny inputs for the conformance batteries: labelled bags, image datasets, scoring datasets.

Everything here is deterministic and small (a few dozen samples), so a battery over every
registered plugin stays within seconds.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..bags import Bags, EmptySampleWarning
from ..dataset import Dataset, RetrievalGroundTruth


def make_check_bags(n_classes: int = 3, per_class: int = 8, dim: int = 8, seed: int = 0,
                    empty_sample: bool = False) -> tuple[Bags, np.ndarray]:
    """Small labelled bags: class ``c`` descriptors cluster around a class centre plus shared noise."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=3.0, size=(n_classes, dim))
    arrays, labels = [], []
    for c in range(n_classes):
        for _ in range(per_class):
            n = int(rng.integers(10, 30))
            own = centres[c] + rng.normal(size=(n // 2, dim))
            shared = rng.normal(scale=2.0, size=(n - n // 2, dim))
            arrays.append(np.vstack([own, shared]).astype(np.float32))
            labels.append(c)
    if empty_sample:
        arrays[1] = np.empty((0, dim), np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptySampleWarning)
        return Bags.from_list(arrays), np.asarray(labels)


def textured_image(seed: int, size=(64, 80)) -> np.ndarray:
    """A grey uint8 image with blobs and an edge (something for detectors to find)."""
    rng = np.random.default_rng(seed)
    h, w = size
    yy, xx = np.mgrid[0:h, 0:w]
    img = np.full((h, w), 40.0)
    for _ in range(10):
        cy, cx, r = rng.uniform(8, h - 8), rng.uniform(8, w - 8), rng.uniform(3, 10)
        img += rng.uniform(60, 150) * np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * r * r))
    img[h // 4: h // 2, w // 3: w // 2] += 50
    return np.clip(img, 0, 255).astype(np.uint8)


def make_check_image_dataset(n_grey: int = 4, seed: int = 0) -> Dataset:
    """In-memory images for descriptor checks: ``n_grey`` grey images and one RGB image, 3 classes."""
    images = [textured_image(seed + i) for i in range(n_grey)]
    grey = textured_image(seed + n_grey)
    images.append(np.stack([grey, grey[::-1], grey[:, ::-1]], axis=2))  # an RGB sample
    m = len(images)
    return Dataset(name="check_images", task="classification", sample_ids=[f"img_{i}" for i in range(m)],
                   labels=np.arange(m) % 3, class_names=["a", "b", "c"], images=images)


def make_check_bags_dataset(seed: int = 0) -> Dataset:
    """A classification dataset that ships its own local descriptors (``make_check_bags``)."""
    bags, y = make_check_bags(seed=seed)
    return Dataset(name="check_bags", task="classification", sample_ids=list(bags.ids),
                   labels=y, class_names=[str(c) for c in np.unique(y)], bags=bags)


def make_check_retrieval_dataset(groups: int = 3, per_group: int = 4, seed: int = 0) -> Dataset:
    """A retrieval dataset: ``groups`` groups; the first item of each group is a query, the rest its positives."""
    bags, _ = make_check_bags(n_classes=groups, per_class=per_group, seed=seed)
    labels = np.repeat(np.arange(groups), per_group)
    queries = np.arange(groups) * per_group
    positives = [np.arange(q + 1, q + per_group) for q in queries]
    gt = RetrievalGroundTruth(queries=queries, positives=positives, junk=[np.empty(0, np.int64)] * groups)
    return Dataset(name="check_retrieval", task="retrieval", sample_ids=list(bags.ids),
                   labels=labels, class_names=[str(g) for g in range(groups)], bags=bags, ground_truth=gt)


def oracle_features(labels: np.ndarray, seed: int = 0) -> np.ndarray:
    """Vectors that encode the labels (one-hot, plus a little noise to break ties): the best a method can do."""
    labels = np.asarray(labels)
    classes, codes = np.unique(labels, return_inverse=True)
    X = np.eye(classes.size)[codes] * 10.0
    return X + np.random.default_rng(seed).normal(scale=0.01, size=X.shape)


def random_features(n: int, dim: int = 4, seed: int = 0) -> np.ndarray:
    """Vectors that carry no information about the labels."""
    return np.random.default_rng(seed).normal(size=(n, dim))
