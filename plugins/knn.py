"""``knn``: k-nearest-neighbour classification accuracy on a seeded, stratified train/test split (FAISS).

Protocol: for each seed, ``test_fraction`` (default 20%) of each class is held
out (:func:`lfabench.splits.stratified_split`, identical for every method); the
aggregator is fitted on the training samples only (with their labels); every
test vector is classified by majority vote of its k nearest training vectors
under squared Euclidean distance (a flat FAISS index). Ties in the vote go to
the class whose nearest member ranks first.
"""

from __future__ import annotations

import numpy as np

from lfabench import PluginSpec, hookimpl
from lfabench.datasets import Dataset
from lfabench.evaluators import Evaluator, Split
from lfabench.splits import stratified_split


def knn_predict_l2(train_X: np.ndarray, train_y: np.ndarray, test_X: np.ndarray, k: int = 1) -> np.ndarray:
    """Labels of ``test_X`` (``(t, D)``) by k-NN vote among ``train_X`` (``(n, D)``), squared-L2 flat FAISS index."""
    import faiss

    index = faiss.IndexFlatL2(train_X.shape[1])
    index.add(np.ascontiguousarray(train_X, dtype=np.float32))
    _, nn = index.search(np.ascontiguousarray(test_X, dtype=np.float32), k)
    votes = np.asarray(train_y)[nn]                                   # (t, k), nearest first
    if k == 1:
        return votes[:, 0]
    pred = np.empty(votes.shape[0], dtype=votes.dtype)
    for r, row in enumerate(votes):
        values, first, counts = np.unique(row, return_index=True, return_counts=True)
        best = counts == counts.max()
        pred[r] = values[best][np.argmin(first[best])]
    return pred


class KNN(Evaluator):
    """k-NN classification accuracy (percent) on a stratified split."""

    task = "classification"

    def __init__(self, k: int = 1, test_fraction: float = 0.2):
        self.k = int(k)
        self.test_fraction = float(test_fraction)

    def split(self, dataset: Dataset, seed: int) -> Split:
        self.check_dataset(dataset)
        train, test = stratified_split(dataset.labels, self.test_fraction, seed)
        return Split(fit_indices=train, fit_labels=dataset.labels[train], train_indices=train,
                     test_indices=test, seed=seed,
                     info={"n_train": int(train.size), "n_test": int(test.size), "test_fraction": self.test_fraction})

    def evaluate(self, features: np.ndarray, dataset: Dataset, split: Split) -> dict[str, float]:
        y = dataset.labels
        pred = knn_predict_l2(features[split.train_indices], y[split.train_indices], features[split.test_indices],
                              self.k)
        return {"accuracy": float(100.0 * np.mean(pred == y[split.test_indices]))}


@hookimpl
def lfabench_evaluators():
    return [PluginSpec("knn", KNN, "k-NN classification accuracy on a seeded stratified 80/20 split (FAISS)")]
