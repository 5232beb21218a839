"""The dataset battery: checks ``check_<what>(source)`` on what a dataset factory returns.

``source`` is a :class:`DatasetSource` (the factory and its parameters): it loads the dataset
once for the structural checks, and again where a check needs two independent loads
(the fingerprint must not depend on the process or the load). Real datasets that are not on
this machine raise :class:`~lfabench.dataset.DatasetNotFoundError`; the batteries turn that into a
skip with the loader's message.
"""

from __future__ import annotations

import re

import numpy as np

from ..dataset import TASKS, Dataset, DatasetNotFoundError
from .core import Case, CheckSkip, assert_json, bind


class DatasetSource:
    """A dataset factory with its parameters; :meth:`load` caches, :meth:`fresh` loads anew."""

    def __init__(self, factory, params: dict | None = None, name: str | None = None):
        self.factory, self.params = factory, dict(params or {})
        self.name = name or getattr(factory, "__name__", repr(factory))
        self._dataset: Dataset | None = None

    def fresh(self) -> Dataset:
        try:
            return self.factory(**self.params)
        except DatasetNotFoundError as exc:
            raise CheckSkip(f"dataset {self.name!r} is not on this machine: {exc}") from exc

    def load(self) -> Dataset:
        if self._dataset is None:
            self._dataset = self.fresh()
        return self._dataset

    def __repr__(self) -> str:
        return f"DatasetSource({self.name}, {self.params})"


def check_returns_dataset(source):
    """The factory returns a :class:`Dataset` with a known task and at least one sample."""
    ds = source.load()
    assert isinstance(ds, Dataset), f"the factory must return a lfabench.dataset.Dataset, got {type(ds).__name__}"
    assert ds.task in TASKS, f"task {ds.task!r} is not one of {TASKS}"
    assert ds.n_samples > 0, "the dataset has no samples"
    assert ds.images is not None or ds.bags is not None, "a dataset holds images or its own local descriptors"


def check_sample_ids_unique(source):
    """Sample ids are unique strings (they key caches, records and descriptor files)."""
    ids = list(source.load().sample_ids)
    dup = sorted({i for i in ids if ids.count(i) > 1})[:3] if len(set(ids)) != len(ids) else []
    assert not dup, f"sample ids repeat, e.g. {dup}"
    assert all(isinstance(i, str) and i for i in ids), "sample ids must be non-empty strings"


def check_labels_consistent(source):
    """Classification datasets have integer labels, one per sample, within their class names."""
    ds = source.load()
    if ds.task != "classification":
        return
    assert ds.labels is not None, "a classification dataset needs labels"
    labels = np.asarray(ds.labels)
    assert labels.ndim == 1 and np.issubdtype(labels.dtype, np.integer), (
        f"labels must be a 1-D integer array, got shape {labels.shape} dtype {labels.dtype}")
    if ds.class_names:
        assert labels.min() >= 0 and labels.max() < len(ds.class_names), (
            f"labels span {labels.min()}..{labels.max()} for {len(ds.class_names)} class names")


def check_ground_truth_in_range(source):
    """Retrieval ground truth: every query, positive and junk index names a sample; every query has a positive."""
    ds = source.load()
    if ds.task != "retrieval":
        return
    gt, m = ds.ground_truth, ds.n_samples
    for q, (query, pos, junk) in enumerate(zip(gt.queries, gt.positives, gt.junk)):
        idx = np.concatenate([[query], pos, junk])
        assert ((idx >= 0) & (idx < m)).all(), f"query {q}: a sample index is out of range for {m} samples"
        assert pos.size > 0, f"query {q} has no positives"


def check_samples_readable(source):
    """The first and last samples read: images as 2-D or 3-D arrays, shipped bags with one block per sample."""
    ds = source.load()
    if ds.bags is not None:
        assert ds.bags.n_samples == ds.n_samples
    if ds.images is not None:
        for i in sorted({0, ds.n_samples - 1}):
            img = ds.load_image(i)
            assert isinstance(img, np.ndarray) and img.ndim in (2, 3) and img.size > 0, (
                f"sample {i} ({ds.sample_ids[i]!r}) read as {type(img).__name__} "
                f"{getattr(img, 'shape', '')}")


def check_fingerprint_stable(source):
    """The fingerprint is a sha256 hex string and two independent loads give the same one."""
    a, b = source.load().fingerprint(), source.fresh().fingerprint()
    assert isinstance(a, str) and re.fullmatch(r"[0-9a-f]{64}", a), f"fingerprint {a!r} is not a sha256 hex digest"
    assert a == b, "two loads of the same dataset gave different fingerprints"


def check_summary_json(source):
    """What the run record stores about the dataset (``summary()``) is JSON and names the fingerprint."""
    summary = source.load().summary()
    assert_json(summary, "summary()")
    assert summary.get("fingerprint") == source.load().fingerprint()


ALL_CHECKS = (check_returns_dataset, check_sample_ids_unique, check_labels_consistent, check_ground_truth_in_range,
              check_samples_readable, check_fingerprint_stable, check_summary_json)


def dataset_checks(factory, params: dict | None = None, skip=(), select=None, expected_failures=None,
                   name: str | None = None) -> list[Case]:
    """The dataset checks bound to ``factory(**params)``."""
    return bind("dataset", ALL_CHECKS, (DatasetSource(factory, params, name),), select, skip, expected_failures)
