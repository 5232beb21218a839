"""``knn``: k-nearest-neighbour classification accuracy (percent) on a seeded, stratified train/test split.

Protocol (the ProLFA paper's classification protocol; ``protocols.md``): for each
seed, ``test_fraction`` (default 20%) of each class is held out by
:func:`lfabench.splits.stratified_split` (the draw depends on the labels and the
seed only, so every method is scored on the same split and results are paired);
the aggregator is fitted on the training samples; every test vector is
classified by :func:`lfabench.evaluation.knn_predict` (FAISS flat index, equal
to scikit-learn's brute-force ``KNeighborsClassifier``):

* ``k``: 1, 2, 3, 5 (any k >= 1);
* ``metric``: ``euclidean``, ``cosine``, ``mahalanobis`` (covariance of the
  training vectors by ``covariance``: ``auto`` = empirical when non-singular,
  else Ledoit-Wolf shrinkage; ``ledoit_wolf``, ``oas``, ``pca`` (PCA-whitening),
  ``empirical``; the estimator used, its shrinkage and rank are recorded under
  the record's ``split.knn_metric``) or ``minkowski`` (exponent ``p``, recorded);
* tie rules: a vote tie (even k) goes to the smallest class label; among
  equidistant training vectors at the k-th place the lower index wins.

Split protocol (``split_protocol``): by default a dataset that publishes an official train/test split
(``Dataset.official_split``, e.g. CUB-200-2011, whose protocol the paper follows) is scored on it, every
other one on the seeded stratified split above; ``"stratified"`` forces the seeded split, ``"official"``
requires the dataset's (an error naming the dataset where it has none). On an official split the seed
still seeds the aggregator and the labelled subset. The record's ``split.protocol`` says which was used.
The parameter is opt-in (left out of the default config), so existing run keys and rows are unchanged.

Semi-supervised aggregators: ``labelled_fraction < 1`` keeps that fraction of
each class of the training part labelled (:func:`lfabench.splits.labelled_subset`,
seeded) and gives the others label ``-1``; unsupervised aggregators ignore the
labels. Default 1.0: classification runs are fully supervised (ProLFA); pass
``labelled_fraction=0.2`` for the paper's semi-supervised setting.
"""

from __future__ import annotations

import numpy as np

from lfabench.evaluation import fit_metric_space, knn_predict, label_predictions
from lfabench.evaluation.search import METRICS
from lfabench.evaluation.whitening import COVARIANCE_ESTIMATORS

from lfabench.sdk import (Dataset, Evaluator, PluginSpec, Split, default_params, hookimpl, labelled_subset,
                          stratified_split)


#: ``split_protocol`` values: None = the dataset's official split where it has one, else stratified.
SPLIT_PROTOCOLS = (None, "official", "stratified")


class KNN(Evaluator):
    """k-NN classification accuracy (percent) on a stratified split."""

    task = "classification"
    label_params = ("labelled_fraction",)  # unsupervised aggregators never see the labels
    primary_metric = "accuracy"
    count_metrics = {"accuracy": "n_test"}  # 100 * correct / n_test

    def __init__(self, k: int = 1, metric: str = "euclidean", p: float | None = None, covariance: str = "auto",
                 test_fraction: float = 0.2, labelled_fraction: float = 1.0, split_protocol: str | None = None):
        if int(k) < 1:
            raise ValueError(f"knn: k must be >= 1, got {k}")
        if metric not in METRICS:
            raise ValueError(f"knn: metric must be one of {METRICS}, got {metric!r}")
        if metric == "minkowski" and (p is None or not float(p) >= 1.0):
            raise ValueError(f"knn: metric=minkowski needs the exponent p >= 1 (evaluator.params.p=3), got p={p}")
        if covariance not in COVARIANCE_ESTIMATORS:
            raise ValueError(f"knn: covariance must be one of {COVARIANCE_ESTIMATORS}, got {covariance!r}")
        if not 0.0 < float(labelled_fraction) <= 1.0:
            raise ValueError(f"knn: labelled_fraction must be in (0, 1], got {labelled_fraction}")
        if split_protocol not in SPLIT_PROTOCOLS:
            raise ValueError(f"knn: split_protocol must be one of {SPLIT_PROTOCOLS} (null: the dataset's official "
                             f"split where it has one), got {split_protocol!r}")
        self.k = int(k)
        self.metric = metric
        self.p = None if p is None else float(p)
        self.covariance = covariance
        self.test_fraction = float(test_fraction)
        self.labelled_fraction = float(labelled_fraction)
        self.split_protocol = split_protocol

    def train_test(self, dataset: Dataset, seed: int) -> tuple[np.ndarray, np.ndarray, str]:
        """(train indices, test indices, protocol name) for ``dataset`` and ``seed`` (see the module docstring)."""
        official = dataset.official_split
        if self.split_protocol == "official" and official is None:
            raise ValueError(f"knn: dataset {dataset.name!r} publishes no official split "
                             f"(split_protocol=official); use split_protocol=stratified")
        if official is not None and self.split_protocol != "stratified":
            train, test = (np.sort(np.asarray(a, dtype=np.int64)) for a in official)
            return train, test, "official"
        train, test = stratified_split(dataset.labels, self.test_fraction, seed)
        return train, test, "stratified"

    def check_setting(self, dataset: Dataset, seed: int) -> None:
        """Refuse, before any descriptor is extracted, a ``k`` larger than this seed's training set."""
        self.check_dataset(dataset)
        if dataset.labels is None:
            raise ValueError(f"knn: dataset {dataset.name!r} has no labels")
        n_train = self.train_test(dataset, seed)[0].size
        if self.k > n_train:
            raise ValueError(f"k={self.k} exceeds the {n_train} training samples of {dataset.name!r} "
                             f"(`evaluator.params.k=...`)")

    def split(self, dataset: Dataset, seed: int) -> Split:
        self.check_dataset(dataset)
        if dataset.labels is None:
            raise ValueError(f"knn: dataset {dataset.name!r} has no labels")
        train, test, protocol = self.train_test(dataset, seed)
        fit_labels = dataset.labels[train].copy()
        info = {"n_train": int(train.size), "n_test": int(test.size), "protocol": protocol,
                "k": self.k, "metric": self.metric}
        if protocol == "stratified":
            info["test_fraction"] = self.test_fraction
        if self.metric == "minkowski":
            info["p"] = self.p
        if self.labelled_fraction < 1.0:
            labelled = labelled_subset(fit_labels, self.labelled_fraction, seed)
            fit_labels = np.where(labelled, fit_labels, -1)
            info.update(labelled_fraction=self.labelled_fraction, n_labelled=int(labelled.sum()))
        return Split(fit_indices=train, fit_labels=fit_labels, train_indices=train, test_indices=test, seed=seed,
                     info=info)

    def evaluate(self, features: np.ndarray, dataset: Dataset, split: Split) -> dict[str, float]:
        """Accuracy (%) of k-NN over the test samples.

        Samples without local descriptors (``split.empty_rows``) have no evidence: they are left out
        of the neighbour database (else their zero vectors would be every query's nearest neighbour)
        and, as test samples, count as misclassified. Both counts are recorded.
        """
        y = dataset.labels
        empty = split.empty_mask(features.shape[0])
        train = split.train_indices[~empty[split.train_indices]]
        test = split.test_indices
        if train.size == 0:
            raise ValueError(f"knn: every training sample of {dataset.name!r} has no local descriptors")
        train_X = features[train]
        space = fit_metric_space(train_X, self.metric, self.p, self.covariance)
        pred = knn_predict(train_X, y[train], features[test], self.k, space=space)
        correct = (pred == y[test]) & ~empty[test]
        split.predictions = label_predictions(split.train_indices, test, pred, y[test], empty[test])
        split.info["knn_metric"] = space.info
        split.info["empty_samples"] = {"train_left_out": int(empty[split.train_indices].sum()),
                                       "test_counted_wrong": int(empty[test].sum())}
        return {"accuracy": float(100.0 * np.mean(correct))}


@hookimpl
def lfabench_evaluators():
    defaults = default_params(KNN, opt_in=("split_protocol",))  # opt-in: existing run keys unchanged
    return [PluginSpec("knn", KNN, "k-NN classification accuracy (%) on a seeded stratified 80/20 split, or the "
                                   "dataset's official one (FAISS; euclidean, cosine, mahalanobis, minkowski)",
                       defaults=defaults)]
