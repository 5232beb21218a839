"""The plugin module named by the ``lfabench`` entry point: the evaluator and the hook that declares it."""

from __future__ import annotations

import numpy as np

from lfabench.evaluation import label_predictions
from lfabench.sdk import Dataset, Evaluator, PluginSpec, Split, hookimpl, partial_labels, stratified_split


class LogRegAccuracy(Evaluator):
    """Accuracy (%) of a logistic regression trained on the aggregated vectors of the training split.

    The split is lfabench's seeded stratified one (``lfabench.evaluate.stratified_split``, as the built-in
    ``knn`` draws it), so a method's scores here are paired with its k-NN scores seed by seed.

    Parameters
    ----------
    C : float
        Inverse regularisation strength of the logistic regression (> 0).
    max_iter : int
        Iterations of its solver (lbfgs).
    test_fraction : float
        Share of each class held out for testing.
    labelled_fraction : float
        Share of each training class whose labels a supervised aggregator sees (the rest: -1).
    """

    task = "classification"  # the datasets it scores
    primary_metric = "accuracy"  # the metric a board's mean rank uses
    count_metrics = {"accuracy": "n_test"}  # accuracy = 100 * correct / split.info["n_test"]: compared exactly
    metric_directions = {"accuracy": "higher"}  # which way is better (higher is also the default)
    label_params = ("labelled_fraction",)  # only decides which labels the aggregator sees

    def __init__(self, C: float = 1.0, max_iter: int = 1000, test_fraction: float = 0.2,
                 labelled_fraction: float = 1.0):
        self.C = C
        self.max_iter = max_iter
        self.test_fraction = test_fraction
        self.labelled_fraction = labelled_fraction

    def split(self, dataset: Dataset, seed: int) -> Split:
        self.check_dataset(dataset)  # a ValueError for a dataset of another task
        if dataset.labels is None:
            raise ValueError(f"logreg: dataset {dataset.name!r} has no labels")
        train, test = stratified_split(dataset.labels, self.test_fraction, seed)
        fit_labels = partial_labels(dataset.labels[train], self.labelled_fraction, seed)
        info = {"n_train": int(train.size), "n_test": int(test.size), "test_fraction": self.test_fraction,
                "n_labelled": int((fit_labels != -1).sum())}
        return Split(fit_indices=train, fit_labels=fit_labels, train_indices=train, test_indices=test, seed=seed,
                     info=info)

    def evaluate(self, features: np.ndarray, dataset: Dataset, split: Split) -> dict[str, float]:
        from sklearn.linear_model import LogisticRegression  # imported when used, not when lfabench lists plugins

        if not self.C > 0:
            raise ValueError(f"logreg: C must be > 0, got {self.C}")
        y = dataset.labels
        empty = split.empty_mask(features.shape[0])  # samples without local descriptors: no evidence
        train = split.train_indices[~empty[split.train_indices]]
        test = split.test_indices
        model = LogisticRegression(C=self.C, max_iter=self.max_iter)
        model.fit(features[train], y[train])
        predicted = model.predict(features[test])
        # what `lfabench verify` recomputes the accuracy from: any classifier's labels
        split.predictions = label_predictions(train, test, predicted, y[test], counted_wrong=empty[test])
        correct = (predicted == y[test]) & ~empty[test]
        return {"accuracy": float(100.0 * np.mean(correct))}


@hookimpl
def lfabench_evaluators():
    return [PluginSpec("logreg", LogRegAccuracy,
                       "Logistic-regression accuracy (%) on a seeded stratified 80/20 split (example third-party "
                       "package)")]
