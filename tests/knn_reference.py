"""scikit-learn brute-force k-NN references shared by the k-NN search and evaluator tests."""

import numpy as np
from sklearn.metrics import pairwise_distances


def distances(test_X, train_X, metric, p, VI):
    if metric == "minkowski":
        return pairwise_distances(test_X, train_X, metric="minkowski", p=p)
    if metric == "mahalanobis":
        return pairwise_distances(test_X, train_X, metric="mahalanobis", VI=VI)
    return pairwise_distances(test_X, train_X, metric=metric)


def determined(D, train_y, k):
    """Test rows whose k-NN vote does not depend on which equidistant vectors fill the last places.

    scikit-learn leaves that choice unspecified (ArgKmin heap order, np.argpartition); elsewhere
    its prediction is a function of the data and lfabench must equal it.
    """
    dk = np.sort(D, axis=1)[:, k - 1:k]
    tol = 1e-6 * np.maximum(1.0, np.abs(dk))
    inside = (D < dk - tol).sum(axis=1)
    group = np.abs(D - dk) <= tol
    return np.array([(k - inside[r]) == group[r].sum() or np.unique(train_y[group[r]]).size == 1
                     for r in range(D.shape[0])])
