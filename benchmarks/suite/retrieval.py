"""The ``retrieval`` evaluator at the copies board's size.

``CopiesEvaluate`` times ``Retrieval.evaluate`` on ``copy_detection`` built from all 4,485 Fifteen Scene
photographs (``../shared/data/scene15``; 4,485 queries, each ranking the 17,940-image database with its own
image removed, the Holidays rule), with 256-D features (BoW SIFT's size): Gaussian group centres plus
per-image noise, drawn from seed 0, so the case needs no fitted aggregator. ``scoring``: ``places`` is the
evaluator (each query scored from the places of its positives and junk, :func:`lfabench.evaluation.
scores_from_places`); ``ranked lists`` the earlier ranked-list scoring, kept as the reference of
``tests/plugins/evaluators/test_retrieval_places.py`` (whole rankings by a stable argsort, scored by
``average_precision`` / ``precision_at_k`` / ``ranks_of``). Both give the same metrics and predictions.

``CopiesMeanDescriptor`` scores each image's centred mean descriptor (the copies board's SIFT-90 or DAISY-300, no
aggregator): ProLFA's and Semi-ProLFA's vector is a linear map of that mean (``docs/prolfa-bound.md``), so its
mAP is the level a linear read-out of the mean starts from on the board.
"""

from __future__ import annotations

import sys

import numpy as np

from lfabench.registry import get_plugin

from .cases import REPO, shared_data

#: The copies board's descriptors (``copy_detection``'s protocol: SIFT 90, DAISY 300 per image).
COPIES_DESCRIPTORS = {"sift": {"max_keypoints": 90}, "daisy": {"max_keypoints": 300}}


def copies_setting(noise: float = 1.5):
    """``(evaluator, dataset, split, features)`` of the copies board's retrieval, seed 0."""
    from lfabench_plugins.datasets.copy_detection import load_copy_detection

    root = shared_data()
    if root is None:
        raise NotImplementedError("needs ../shared/data (or $LFABENCH_SHARED_DATA)")
    dataset = load_copy_detection(root=str(root / "scene15"))
    evaluator = get_plugin("evaluator", "retrieval")()
    split = evaluator.split(dataset, 0)
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((int(dataset.labels.max()) + 1, 256)).astype(np.float32)
    features = centres[dataset.labels] + np.float32(noise) * rng.standard_normal((dataset.n_samples, 256),
                                                                                 dtype=np.float32)
    return evaluator, dataset, split, features


def reference_evaluate():
    """The ranked-list reference evaluator of the tests (``tests/`` is not a package: imported by path)."""
    sys.path.insert(0, str(REPO / "tests" / "plugins" / "evaluators"))
    try:
        from test_retrieval_places import reference_evaluate as ref
    finally:
        sys.path.pop(0)
    return ref


class CopiesEvaluate:
    """``Retrieval.evaluate`` on the copies setting: 4,485 queries x 17,940 database images, 256-D."""

    params = [["places", "ranked lists"]]
    param_names = ["scoring"]
    timeout = 1200
    number, repeat, rounds = 1, 1, 1

    def setup(self, scoring):
        self.evaluator, self.dataset, self.split, self.features = copies_setting()
        self.evaluate = (self.evaluator.evaluate if scoring == "places" else
                         lambda *a: reference_evaluate()(self.evaluator, *a))

    def time_evaluate(self, scoring):
        self.evaluate(self.features, self.dataset, self.split)

    def peakmem_evaluate(self, scoring):
        self.evaluate(self.features, self.dataset, self.split)


def centred_means(bags) -> dict[str, np.ndarray]:
    """Each image's mean L2-normalised descriptor minus the mean over all descriptors, ``(n_images, d)``
    float64: ``{"centred mean": M, "unit centred mean": M / ||M||}`` (ProLFA's ``l2_centered`` normalisation
    before pooling, centred on every image's descriptors: the board's retrieval is unsupervised)."""
    from lfabench_plugins.aggregators.prolfa.normalize import normalize_descriptors

    X = normalize_descriptors(bags.descriptors, "l2")
    M = np.asarray(bags.with_descriptors(X).means(), dtype=np.float64) - X.mean(axis=0, dtype=np.float64)
    return {"centred mean": M, "unit centred mean": M / np.maximum(np.linalg.norm(M, axis=1, keepdims=True),
                                                                   1e-300)}


class CopiesMeanDescriptor:
    """mAP and precision@1 (%) of the centred mean descriptor on the copies board's seed-0 setting."""

    params = [list(COPIES_DESCRIPTORS), ["centred mean", "unit centred mean"]]
    param_names = ["descriptor", "readout"]
    timeout = 3600
    number, repeat, rounds = 1, 1, 1

    def setup(self, descriptor, readout):
        evaluator, dataset, split, _ = copies_setting()
        bags = get_plugin("descriptor", descriptor)(**COPIES_DESCRIPTORS[descriptor]).describe(dataset)
        features = centred_means(bags)[readout].astype(np.float32)
        self.metrics = evaluator.evaluate(features, dataset, split)

    def track_map(self, descriptor, readout):
        return self.metrics["mAP"]

    def track_precision_at_1(self, descriptor, readout):
        return self.metrics["precision@1"]

    track_map.unit = track_precision_at_1.unit = "%"
