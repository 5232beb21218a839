"""The dataset contract: what a dataset plugin returns.

A dataset is a list of ``m`` samples (usually images) with labels or retrieval
ground truth. Samples are either image files (``images`` holds paths), in-memory
images (``images`` holds arrays), or already local features (``bags``: datasets
that ship descriptors, such as ``synthetic``; used with ``descriptor=native``).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .bags import Bags
# CorruptImageError, ImageTooLargeError and truncation_problem are importable from here, where they began
from .images import (DEFAULT_MAX_IMAGE_PIXELS, CorruptImageError, ImageTooLargeError,  # noqa: F401
                     read_image_file, truncation_problem)

TASKS = ("classification", "retrieval")


def file_digest(path) -> bytes:
    """sha256 of a file's content (read in 1 MiB blocks)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.digest()


class DatasetNotFoundError(FileNotFoundError):
    """The dataset's files are missing or incomplete (the message says where and how to fix it)."""


@dataclass
class RetrievalGroundTruth:
    """Queries and their relevant database items, by sample index.

    ``queries[q]`` is the sample index of query ``q``; ``positives[q]`` and
    ``junk[q]`` are int arrays of database sample indices. ``bboxes[q]`` is the
    query region ``(x1, y1, x2, y2)`` in pixels, or ``None``. ``database`` holds
    the indices of the samples that are ranked (default: all).
    ``exclude_query_from_ranking`` implements the Holidays rule (the query is
    removed from its own ranked list).
    ``difficulty`` (the Revisited Oxford/Paris annotation, Radenović et al. 2018), when given, holds
    ``{"easy": [...], "hard": [...]}`` per query (``positives[q]`` is then easy + hard, ``junk[q]`` the
    junk list); :mod:`lfabench.evaluation.revisited` scores its Easy, Medium and Hard setups.
    """

    queries: np.ndarray
    positives: list[np.ndarray]
    junk: list[np.ndarray]
    bboxes: list[tuple[float, float, float, float] | None] | None = None
    database: np.ndarray | None = None
    exclude_query_from_ranking: bool = False
    difficulty: dict[str, list[np.ndarray]] | None = None

    def __post_init__(self):
        self.queries = _indices(self.queries, "queries")
        n = self.queries.size
        if len(self.positives) != n or len(self.junk) != n:
            raise ValueError(f"ground truth: {n} queries but {len(self.positives)} positive lists and "
                             f"{len(self.junk)} junk lists")
        self.positives = [_indices(p, f"query {q}: positives") for q, p in enumerate(self.positives)]
        self.junk = [_indices(j, f"query {q}: junk") for q, j in enumerate(self.junk)]
        if self.difficulty is not None:
            if set(self.difficulty) != {"easy", "hard"} or any(len(v) != n for v in self.difficulty.values()):
                raise ValueError(f"ground truth: difficulty must hold 'easy' and 'hard' lists for each of {n} queries")
            self.difficulty = {k: [_indices(v, f"query {q}: {k}") for q, v in enumerate(lists)]
                               for k, lists in self.difficulty.items()}


def _indices(values, what: str) -> np.ndarray:
    """``values`` as an int64 array of sample indices; floats (even ``3.0``), bools and text are refused (a
    ``ValueError`` naming ``what``), never rounded or read as 0/1. An empty list is an empty array."""
    a = np.asarray(values)
    if a.size and a.dtype.kind not in "iu":
        raise ValueError(f"ground truth: {what} must be integer sample indices, got {a.dtype} values "
                         f"(e.g. {a.reshape(-1)[0]!r})")
    if a.ndim > 1:
        raise ValueError(f"ground truth: {what} must be a flat list of sample indices, got shape {a.shape}")
    return a.astype(np.int64).reshape(-1)


@dataclass
class Dataset:
    """A benchmark dataset.

    Attributes
    ----------
    name : str
        Plugin name (``scene15``, ``digits``...).
    task : {"classification", "retrieval"}
    sample_ids : (m,) array of str
        Stable identifiers (relative file names for image datasets).
    labels : (m,) int64 array or None
        Class index per sample (retrieval datasets may give landmark/group ids).
    class_names : list of str
    images : sequence of paths or arrays, optional
        One entry per sample; read with :meth:`load_image`.
    bags : Bags, optional
        Local descriptors shipped with the dataset itself.
    ground_truth : RetrievalGroundTruth, optional
        For retrieval datasets.
    official_split : (train_indices, test_indices), optional
        When the dataset defines one (e.g. CUB-200).
    root : Path, optional
        Where the files are.
    skip_corrupt_images : bool
        Descriptors of a corrupt or truncated image file are an empty sample (counted in the
        record) instead of an error naming the file.
    max_image_pixels : int or None
        An image file whose header declares more pixels is refused before decoding
        (:class:`~lfabench.images.ImageTooLargeError`, skipped like a corrupt one); None: no cap.
    info : dict
        Anything worth recording (image size, variant, selection rules...).
    """

    name: str
    task: str
    sample_ids: np.ndarray
    labels: np.ndarray | None = None
    class_names: list[str] = field(default_factory=list)
    images: Sequence[Any] | None = None
    bags: Bags | None = None
    ground_truth: RetrievalGroundTruth | None = None
    official_split: tuple[np.ndarray, np.ndarray] | None = None
    root: Path | None = None
    info: dict[str, Any] = field(default_factory=dict)
    #: Corrupt or truncated image files become empty samples, counted in the run record, instead of
    #: an error (the run-level option ``skip_corrupt_images=true``).
    skip_corrupt_images: bool = False
    #: The run-level option ``max_image_pixels`` (:mod:`lfabench.images`).
    max_image_pixels: int | None = DEFAULT_MAX_IMAGE_PIXELS
    _fingerprint: str | None = field(default=None, repr=False)

    def __post_init__(self):
        if self.task not in TASKS:
            raise ValueError(f"dataset {self.name!r}: task must be one of {TASKS}, got {self.task!r}")
        self.sample_ids = np.asarray([str(s) for s in self.sample_ids], dtype=object)
        m = self.sample_ids.size
        if self.labels is not None:
            self.labels = np.asarray(self.labels)
            if self.labels.shape[0] != m:
                raise ValueError(f"dataset {self.name!r}: {self.labels.shape[0]} labels for {m} samples")
        if self.images is not None and len(self.images) != m:
            raise ValueError(f"dataset {self.name!r}: {len(self.images)} images for {m} samples")
        if self.bags is not None and self.bags.n_samples != m:
            raise ValueError(f"dataset {self.name!r}: bags hold {self.bags.n_samples} samples, expected {m}")
        if self.task == "retrieval" and self.ground_truth is None:
            raise ValueError(f"dataset {self.name!r}: a retrieval dataset needs ground_truth")

    @property
    def n_samples(self) -> int:
        return int(self.sample_ids.size)

    def load_image(self, i: int) -> np.ndarray:
        """Sample ``i`` as an image array: ``(H, W)`` grayscale or ``(H, W, 3)`` RGB, as stored."""
        if self.images is None:
            raise TypeError(f"dataset {self.name!r} has no images (it ships local descriptors: "
                            f"use descriptor=native)")
        item = self.images[i]
        if isinstance(item, np.ndarray):
            return item
        path = Path(item)
        return read_image_file(path, f"dataset {self.name!r}: image {path} (sample {self.sample_ids[i]!r})",
                               self.max_image_pixels)

    def fingerprint(self) -> str:
        """sha256 identifying the dataset content: ids, labels, ground truth and the bytes of every image.

        Image files are hashed whole (sha256 of their content), so the fingerprint, and with it every
        descriptor cache key, changes whenever any image's bytes change. On Fifteen Scene (4,485 JPEGs,
        78.5 MB) this reads every file once: 0.13-0.40 s with a warm page cache (sizes alone: ~0.02 s), against
        minutes of extraction.
        """
        if self._fingerprint is None:
            h = hashlib.sha256()
            h.update(f"{self.name}\0{self.task}\0".encode())
            h.update("\0".join(self.sample_ids).encode())
            if self.labels is not None:
                h.update(np.ascontiguousarray(self.labels).tobytes())
            if self.ground_truth is not None:
                gt = self.ground_truth
                h.update(gt.queries.tobytes())
                for p, j in zip(gt.positives, gt.junk):
                    h.update(p.tobytes() + b"|" + j.tobytes() + b";")
                for key in sorted(gt.difficulty or {}):  # absent: the fingerprint of every older dataset is kept
                    h.update(key.encode() + b"".join(v.tobytes() + b";" for v in gt.difficulty[key]))
                if gt.database is not None and np.asarray(gt.database).size != self.n_samples:
                    h.update(b"database" + np.asarray(gt.database, dtype=np.int64).tobytes())
            if self.images is not None:
                for item in self.images:
                    if isinstance(item, np.ndarray):
                        h.update(np.ascontiguousarray(item).tobytes())
                    else:  # the bytes, not the size: an image replaced by another of equal size is new data
                        h.update(file_digest(item) + b";")
            if self.bags is not None:
                h.update(self.bags.fingerprint().encode())
            self._fingerprint = h.hexdigest()
        return self._fingerprint

    def summary(self) -> dict[str, Any]:
        """What the run record stores about the dataset."""
        out = {"name": self.name, "task": self.task, "n_samples": self.n_samples,
               "fingerprint": self.fingerprint()}
        if self.labels is not None:
            out["n_classes"] = int(len(self.class_names) or np.unique(self.labels).size)
        if self.ground_truth is not None:
            out["n_queries"] = int(self.ground_truth.queries.size)
        if self.info:
            out["info"] = self.info
        return out
