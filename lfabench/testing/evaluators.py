"""The evaluator battery: checks ``check_<what>(evaluator, dataset)`` on a tiny dataset of the evaluator's task.

Features are made up by the checks: *oracle* vectors that encode the labels and random
ones; a protocol must score the oracle at least as well as noise (better: higher, or lower for a metric it
declares lower-is-better in ``metric_directions``). Predictions an evaluator stores must give its metrics back.
"""

from __future__ import annotations

import math

import numpy as np
from sklearn.base import clone

from ..dataset import Dataset
from ..evaluate import METRIC_DIRECTIONS, higher_is_better
from ..evaluation.predictions import recompute_metrics
from .core import Case, assert_json, bind
from .data import make_check_bags_dataset, make_check_retrieval_dataset, oracle_features, random_features


def _score(evaluator, dataset: Dataset, features: np.ndarray, seed: int = 0):
    ev = clone(evaluator)
    split = ev.split(dataset, seed)
    return ev.evaluate(features, dataset, split), split


def check_split_deterministic(evaluator, dataset):
    """The same seed gives the same split (every method is scored on the same samples)."""
    a, b = clone(evaluator).split(dataset, 3), clone(evaluator).split(dataset, 3)
    for field in ("fit_indices", "train_indices", "test_indices"):
        x, y = getattr(a, field), getattr(b, field)
        assert (x is None) == (y is None), f"{field} is None in one split only"
        if x is not None:
            np.testing.assert_array_equal(x, y, err_msg=f"{field} differs for the same seed")


def check_split_indices_valid(evaluator, dataset):
    """Split indices name samples; train and test do not overlap; one fit label per fit sample."""
    split = clone(evaluator).split(dataset, 0)
    m = dataset.n_samples
    for field in ("fit_indices", "train_indices", "test_indices"):
        idx = getattr(split, field)
        if idx is not None:
            idx = np.asarray(idx)
            assert idx.size == 0 or (idx.min() >= 0 and idx.max() < m), f"{field} out of range for {m} samples"
    assert np.unique(split.fit_indices).size == len(split.fit_indices), "fit_indices repeat a sample"
    if split.fit_labels is not None:
        assert len(split.fit_labels) == len(split.fit_indices), "one fit label per fit sample"
    if split.train_indices is not None and split.test_indices is not None and dataset.task == "classification":
        common = np.intersect1d(split.train_indices, split.test_indices)
        assert common.size == 0, f"train and test share samples, e.g. {common[:3]}"


def check_metrics_are_finite_floats(evaluator, dataset):
    """``evaluate`` returns a non-empty ``{name: finite float}``."""
    metrics, _ = _score(evaluator, dataset, random_features(dataset.n_samples))
    assert isinstance(metrics, dict) and metrics, "evaluate must return a non-empty dict of metrics"
    for name, value in metrics.items():
        assert isinstance(name, str), f"metric name {name!r} is not a string"
        assert isinstance(value, float) and math.isfinite(value), f"metric {name} = {value!r} is not a finite float"


def check_oracle_beats_random(evaluator, dataset):
    """Features that encode the labels score at least as well as random ones on every metric, in the metric's
    direction (``metric_directions``: a lower-is-better metric must be at most the noise's)."""
    oracle, _ = _score(evaluator, dataset, oracle_features(dataset.labels))
    noise, _ = _score(evaluator, dataset, random_features(dataset.n_samples))
    worse = {k: (oracle[k], noise[k]) for k in oracle if k in noise
             and (oracle[k] < noise[k] if higher_is_better(evaluator, k) else oracle[k] > noise[k])}
    assert not worse, f"oracle features score worse than random ones on {worse} (oracle, noise)"


def check_metric_directions(evaluator, dataset):
    """``metric_directions`` says ``"higher"`` or ``"lower"``, and only of metrics that ``evaluate`` returns."""
    directions = dict(getattr(evaluator, "metric_directions", None) or {})
    bad = {k: v for k, v in directions.items() if v not in METRIC_DIRECTIONS}
    assert not bad, f"metric_directions values must be one of {METRIC_DIRECTIONS}, got {bad}"
    metrics, _ = _score(evaluator, dataset, random_features(dataset.n_samples))
    unknown = sorted(set(directions) - set(metrics))
    assert not unknown, f"metric_directions names metrics that evaluate does not return: {unknown}"


def check_predictions_recompute_metrics(evaluator, dataset):
    """Predictions the evaluator stores (``split.predictions``, optional) give back every metric it returned
    (what ``lfabench verify`` recomputes from a published record)."""
    metrics, split = _score(evaluator, dataset, random_features(dataset.n_samples))
    if split.predictions is None:
        return  # optional: records then say that no predictions are stored
    recomputed = recompute_metrics(split.predictions)
    missing = sorted(set(metrics) - set(recomputed))
    assert not missing, f"the predictions do not give back the metric(s) {missing} (got {sorted(recomputed)})"
    off = {k: (metrics[k], recomputed[k]) for k in metrics if not math.isclose(metrics[k], recomputed[k],
                                                                               rel_tol=1e-12, abs_tol=1e-12)}
    assert not off, f"metrics recomputed from the predictions differ (returned, recomputed): {off}"


def check_rejects_other_task(evaluator, dataset):
    """A dataset of another task is refused with a ValueError, before any scoring."""
    other = make_check_retrieval_dataset() if dataset.task == "classification" else make_check_bags_dataset()
    try:
        clone(evaluator).split(other, 0)
    except ValueError:
        return
    raise AssertionError(f"split accepted a {other.task} dataset")


def check_params_roundtrip(evaluator, dataset):
    """Hyper-parameters survive ``clone``, ``split`` and ``evaluate`` (they are recorded)."""
    params = evaluator.get_params()
    ev = clone(evaluator)
    assert ev.get_params() == params, "clone changed the hyper-parameters"
    ev.evaluate(random_features(dataset.n_samples), dataset, ev.split(dataset, 0))
    assert ev.get_params() == params, "split/evaluate must not change the hyper-parameters"


def check_split_info_json(evaluator, dataset):
    """What the record stores about the split (``split.info``, after evaluate) is JSON."""
    _, split = _score(evaluator, dataset, random_features(dataset.n_samples))
    assert_json(split.info, "split.info")


ALL_CHECKS = (check_split_deterministic, check_split_indices_valid, check_metrics_are_finite_floats,
              check_oracle_beats_random, check_metric_directions, check_predictions_recompute_metrics,
              check_rejects_other_task, check_params_roundtrip, check_split_info_json)


def default_dataset(evaluator) -> Dataset:
    """A tiny dataset of the evaluator's task."""
    task = getattr(evaluator, "task", "classification")
    return make_check_retrieval_dataset() if task == "retrieval" else make_check_bags_dataset()


def evaluator_checks(evaluator, dataset: Dataset | None = None, skip=(), select=None,
                     expected_failures=None) -> list[Case]:
    """The evaluator checks bound to ``evaluator`` and ``dataset`` (default: :func:`default_dataset`)."""
    dataset = default_dataset(evaluator) if dataset is None else dataset
    return bind("evaluator", ALL_CHECKS, (evaluator, dataset), select, skip, expected_failures)
