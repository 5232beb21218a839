"""The package's own tests: lfabench's conformance battery, then what is particular to this protocol."""

import numpy as np
import pytest

from lfabench.evaluate import stratified_split
from lfabench.evaluation import recompute_metrics
from lfabench.testing import evaluator_checks, make_check_bags_dataset, parametrize, plugin_checks
from lfabench_logreg import LogRegAccuracy


@parametrize(evaluator_checks(LogRegAccuracy()))
def test_conformance(check):
    check()


@parametrize(plugin_checks("evaluator", "logreg"))  # the installed plugin, found by its entry point
def test_registered_plugin_conformance(check):
    check()


def test_split_is_lfabench_stratified_split_so_scores_pair_with_knn():
    dataset = make_check_bags_dataset()
    split = LogRegAccuracy().split(dataset, seed=4)
    train, test = stratified_split(dataset.labels, 0.2, seed=4)
    np.testing.assert_array_equal(split.test_indices, test)
    np.testing.assert_array_equal(split.train_indices, train)


def test_separable_features_score_100_and_the_predictions_give_it_back():
    dataset = make_check_bags_dataset()
    features = np.eye(int(dataset.labels.max()) + 1)[dataset.labels] * 10.0
    evaluator = LogRegAccuracy()
    split = evaluator.split(dataset, seed=0)
    metrics = evaluator.evaluate(features, dataset, split)
    assert metrics == {"accuracy": 100.0}
    assert recompute_metrics(split.predictions) == metrics


def test_c_must_be_positive():
    dataset = make_check_bags_dataset()
    evaluator = LogRegAccuracy(C=0.0)
    with pytest.raises(ValueError, match="C must be > 0"):
        evaluator.evaluate(np.zeros((dataset.n_samples, 2)), dataset, evaluator.split(dataset, 0))
