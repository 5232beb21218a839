"""The descriptor battery: checks ``check_<what>(descriptor, dataset)`` on a tiny in-memory dataset.

The default dataset (:func:`~lfabench.testing.data.make_check_image_dataset`) holds four grey
images and one RGB image of 64 x 80 pixels; descriptors that read something else than images
(``needs_images = False``) get a dataset that ships its own descriptors instead. Every check
extracts in this process (``n_jobs=1``) without the user's cache.
"""

from __future__ import annotations

import tempfile

import numpy as np
from sklearn.base import clone

from ..bags import Bags
from ..dataset import Dataset
from .core import Case, assert_json, bind
from .data import make_check_bags_dataset, make_check_image_dataset


def _describe(descriptor, dataset: Dataset, cache=False) -> Bags:
    return descriptor.describe(dataset, progress=False, n_jobs=1, cache=cache)


def _sub_dataset(dataset: Dataset, stop: int) -> Dataset:
    return Dataset(name=dataset.name + "_head", task=dataset.task, sample_ids=dataset.sample_ids[:stop],
                   labels=None if dataset.labels is None else dataset.labels[:stop], class_names=dataset.class_names,
                   images=None if dataset.images is None else list(dataset.images[:stop]),
                   bags=None if dataset.bags is None else dataset.bags[:stop])


def check_describe_returns_bags(descriptor, dataset):
    """``describe`` returns one finite :class:`Bags` row block per sample, with the dataset's sample ids."""
    bags = _describe(clone(descriptor), dataset)
    assert isinstance(bags, Bags), f"describe must return Bags, got {type(bags).__name__}"
    assert bags.n_samples == dataset.n_samples, f"describe returned {bags.n_samples} samples for {dataset.n_samples}"
    assert list(bags.ids) == list(dataset.sample_ids), "the bags' ids must be the dataset's sample ids"
    assert bags.dim >= 1 and bags.n_descriptors >= 1, "describe found no descriptor in any check image"
    assert np.isfinite(bags.descriptors).all(), "descriptors hold NaN or inf"


def check_keypoints_match_fields(descriptor, dataset):
    """Keypoints (when given) have one row per descriptor and one column per declared ``keypoint_fields``."""
    bags = _describe(clone(descriptor), dataset)
    if bags.keypoints is None:
        return
    assert bags.keypoints.shape[0] == bags.n_descriptors, "one keypoint row per descriptor"
    assert list(bags.keypoint_fields) == list(descriptor.keypoint_fields)[: bags.keypoints.shape[1]], (
        f"keypoint columns {list(bags.keypoint_fields)} differ from keypoint_fields {list(descriptor.keypoint_fields)}")


def check_deterministic(descriptor, dataset):
    """Two extractions of the same images give the same descriptors (runs are reproducible)."""
    a, b = _describe(clone(descriptor), dataset), _describe(clone(descriptor), dataset)
    np.testing.assert_array_equal(a.offsets, b.offsets, err_msg="descriptor counts differ between two extractions")
    np.testing.assert_allclose(a.descriptors, b.descriptors, rtol=1e-6, atol=1e-6,
                               err_msg="descriptors differ between two extractions")


def check_per_sample_independence(descriptor, dataset):
    """A sample's descriptors do not depend on the other samples: describing a prefix gives the same rows."""
    full = _describe(clone(descriptor), dataset)
    head = _describe(clone(descriptor), _sub_dataset(dataset, 2))
    np.testing.assert_array_equal(head.offsets, full.offsets[:3], err_msg="counts of the first two samples changed")
    np.testing.assert_allclose(head.descriptors, full.descriptors[: head.n_descriptors], rtol=1e-6, atol=1e-6)


def check_cache_roundtrip(descriptor, dataset):
    """A second ``describe`` with a cache folder is a hit and returns the same arrays."""
    if not getattr(descriptor, "cacheable", True):
        return
    with tempfile.TemporaryDirectory(prefix="lfabench-check-") as tmp:
        first = clone(descriptor)
        a = _describe(first, dataset, cache=tmp)
        second = clone(descriptor)
        b = _describe(second, dataset, cache=tmp)
        info = second.record_info().get("extraction", {}) if callable(getattr(second, "record_info", None)) else {}
        if "cache" in info:
            assert info["cache"] == "hit", f"the second describe was a cache {info['cache']!r}, expected 'hit'"
    np.testing.assert_array_equal(a.offsets, b.offsets)
    np.testing.assert_array_equal(a.descriptors, b.descriptors, err_msg="cached descriptors differ")


def check_params_roundtrip(descriptor, dataset):
    """Hyper-parameters survive ``clone`` and ``describe`` (they key the cache and the record)."""
    params = descriptor.get_params()
    assert clone(descriptor).get_params() == params, "clone changed the hyper-parameters"
    d = clone(descriptor)
    _describe(d, dataset)
    assert d.get_params() == params, "describe must not change the hyper-parameters"


def check_record_info_json(descriptor, dataset):
    """What the run record stores about the extraction is JSON."""
    d = clone(descriptor)
    _describe(d, dataset)
    if callable(getattr(d, "record_info", None)):
        assert_json(d.record_info(), "record_info()")


ALL_CHECKS = (check_describe_returns_bags, check_keypoints_match_fields, check_deterministic,
              check_per_sample_independence, check_cache_roundtrip, check_params_roundtrip, check_record_info_json)


def default_dataset(descriptor) -> Dataset:
    """The check dataset that suits ``descriptor``: images, or bags for ``needs_images = False``."""
    return make_check_image_dataset() if getattr(descriptor, "needs_images", True) else make_check_bags_dataset()


def descriptor_checks(descriptor, dataset: Dataset | None = None, skip=(), select=None,
                      expected_failures=None) -> list[Case]:
    """The descriptor checks bound to ``descriptor`` and ``dataset`` (default: :func:`default_dataset`)."""
    dataset = default_dataset(descriptor) if dataset is None else dataset
    return bind("descriptor", ALL_CHECKS, (descriptor, dataset), select, skip, expected_failures)
