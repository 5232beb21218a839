"""k-NN on FAISS against scikit-learn's brute-force KNeighborsClassifier (the independent reference)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.covariance import OAS, LedoitWolf, empirical_covariance
from sklearn.neighbors import KNeighborsClassifier

from lfabench.evaluation import fit_metric_space, fit_whitening, knn_accuracy, knn_predict, knn_search

from knn_reference import determined as _determined
from knn_reference import distances as _distances

METRICS = [("euclidean", None), ("cosine", None), ("mahalanobis", None), ("minkowski", 1.0),
           ("minkowski", 1.5), ("minkowski", 3.0), ("minkowski", np.inf)]
KS = (1, 2, 3, 5)


def _sklearn(train_X, train_y, k, metric, p, VI=None):
    kw = {"n_neighbors": k, "algorithm": "brute", "metric": metric}
    if p is not None:
        kw["p"] = p
    if VI is not None:
        kw["metric_params"] = {"VI": VI}
    return KNeighborsClassifier(**kw).fit(train_X, train_y)


def _lattice(rng, n_train=60, n_test=50, d=3, n_classes=3):
    """Small-integer vectors: many exact duplicates and equal distances (exact in float32 and float64)."""
    return (rng.integers(0, 3, size=(n_train, d)).astype(np.float64), rng.integers(0, n_classes, size=n_train),
            rng.integers(0, 3, size=(n_test, d)).astype(np.float64))


@pytest.mark.parametrize("metric,p", METRICS)
def test_equals_sklearn_on_tie_rich_data(metric, p):
    rng = np.random.default_rng(7)
    checked = vote_ties = 0
    for _ in range(8):
        train_X, train_y, test_X = _lattice(rng)
        VI = fit_whitening(train_X, "ledoit_wolf").precision_matrix() if metric == "mahalanobis" else None
        D = _distances(test_X, train_X, metric, p, VI)
        for k in KS:
            ref = _sklearn(train_X, train_y, k, metric, p, VI).predict(test_X)
            mine = knn_predict(train_X, train_y, test_X, k, metric, p, covariance="ledoit_wolf")
            det = _determined(D, train_y, k)
            np.testing.assert_array_equal(mine[det], ref[det], err_msg=f"{metric} p={p} k={k}")
            checked += int(det.sum())
            if k % 2 == 0:  # even k: count determined rows whose vote is tied
                nn = np.argsort(D, axis=1, kind="stable")[:, :k]
                counts = np.stack([(train_y[nn] == c).sum(axis=1) for c in range(3)], axis=1)
                vote_ties += int(((counts == counts.max(axis=1, keepdims=True)).sum(axis=1) > 1)[det].sum())
    assert checked > 250          # the comparison covered many rows with ties inside the neighbour sets
    assert vote_ties > 20         # and many even-k vote ties


@pytest.mark.parametrize("metric,p", METRICS)
@pytest.mark.parametrize("k", KS)
def test_accuracy_equals_sklearn_on_continuous_data_with_duplicates(metric, p, k):
    rng = np.random.default_rng(k)
    centres = rng.normal(scale=2.0, size=(4, 6))
    y = rng.integers(0, 4, size=120)
    X = centres[y] + rng.normal(size=(120, 6))
    X[100:110] = X[:10]                             # exact duplicates, some with other labels
    y[105:110] = (y[:5] + 1) % 4
    train_X, train_y, test_X, test_y = X[:100].copy(), y[:100], X[100:], y[100:]
    train_X[50:60], train_y[50:60] = train_X[:10], (train_y[:10] + 2) % 4   # duplicates inside the training set
    VI = fit_whitening(train_X, "auto").precision_matrix() if metric == "mahalanobis" else None
    ref = _sklearn(train_X, train_y, k, metric, p, VI)
    det = _determined(_distances(test_X, train_X, metric, p, VI), train_y, k)
    mine = knn_predict(train_X, train_y, test_X, k, metric, p)
    np.testing.assert_array_equal(mine[det], ref.predict(test_X)[det])
    if det.all():
        assert knn_accuracy(train_X, train_y, test_X, test_y, k, metric, p) == ref.score(test_X, test_y)


def test_vote_tie_goes_to_smallest_label_like_sklearn():
    train_X, train_y = np.array([[0.0], [3.0]]), np.array([7, 2])
    test_X = np.array([[1.0]])                     # nearest is label 7, but k=2 ties 1-1
    assert knn_predict(train_X, train_y, test_X, k=2)[0] == 2
    assert _sklearn(train_X, train_y, 2, "euclidean", None).predict(test_X)[0] == 2
    # string labels: sorted order decides
    assert knn_predict(train_X, np.array(["b", "a"]), test_X, k=2)[0] == "a"


@pytest.mark.parametrize("metric,p", [("euclidean", None), ("cosine", None), ("minkowski", 1.0),
                                      ("minkowski", 3.0), ("minkowski", np.inf)])
def test_distance_ties_keep_the_lower_index(metric, p):
    rng = np.random.default_rng(3)
    train_X = rng.integers(1, 4, size=(200, 2)).astype(np.float64)   # no zero vector: cosine ties are duplicates
    test_X = rng.integers(1, 4, size=(40, 2)).astype(np.float64)
    space = fit_metric_space(train_X, metric, p)
    index = space.index(space.transform(train_X))
    D = _distances(test_X, train_X, metric, p, None)
    for k in (1, 4, 7, 30):
        _, I = knn_search(index, space.transform(test_X), k, space.larger_is_closer)
        ref = np.argsort(np.round(D, 9), axis=1, kind="stable")[:, :k]   # by distance, then index
        np.testing.assert_array_equal(I, ref)


@pytest.mark.parametrize("covariance,reference", [
    ("ledoit_wolf", lambda X: LedoitWolf().fit(X).precision_),
    ("oas", lambda X: OAS().fit(X).precision_),
    ("empirical", lambda X: np.linalg.inv(empirical_covariance(X))),
    ("pca", lambda X: np.linalg.pinv(empirical_covariance(X), rcond=1e-10, hermitian=True)),
])
@pytest.mark.parametrize("n", [40, 8])           # d <= n (eigh of the covariance) and d > n (thin SVD)
def test_whitening_equals_sklearn_precision(covariance, reference, n):
    rng = np.random.default_rng(n)
    X = rng.normal(size=(n, 12)) @ rng.normal(size=(12, 12))
    if covariance == "empirical" and n < 12:
        with pytest.raises(ValueError, match="singular"):
            fit_whitening(X, covariance)
        return
    w = fit_whitening(X, covariance)
    np.testing.assert_allclose(w.precision_matrix(), reference(X), rtol=1e-6, atol=1e-8)
    assert w.info["covariance"] == covariance and w.info["rank"] == min(n - 1, 12)


def test_auto_covariance_records_its_choice():
    rng = np.random.default_rng(0)
    assert fit_whitening(rng.normal(size=(50, 5)), "auto").info["covariance"] == "empirical"
    singular = fit_whitening(rng.normal(size=(5, 50)), "auto").info
    assert singular["covariance"] == "ledoit_wolf" and 0 < singular["shrinkage"] <= 1 and singular["rank"] == 4


def test_high_dimensional_mahalanobis_equals_sklearn():
    rng = np.random.default_rng(1)
    train_X, train_y = rng.normal(size=(30, 64)), rng.integers(0, 3, size=30)
    test_X = rng.normal(size=(25, 64))
    ref = _sklearn(train_X, train_y, 3, "mahalanobis", None, LedoitWolf().fit(train_X).precision_).predict(test_X)
    np.testing.assert_array_equal(knn_predict(train_X, train_y, test_X, 3, "mahalanobis"), ref)


def test_bad_input_is_named():
    X, y = np.zeros((3, 2)), np.array([0, 1, 0])
    with pytest.raises(ValueError, match="exceeds the number of training"):
        knn_predict(X, y, X, k=4)
    with pytest.raises(ValueError, match="needs the exponent p"):
        knn_predict(X, y, X, metric="minkowski")
    with pytest.raises(ValueError, match="metric must be one of"):
        knn_predict(X, y, X, metric="hamming")
    with pytest.raises(ValueError, match="train_y must be"):
        knn_predict(X, y[:2], X)
    with pytest.raises(ValueError, match="columns"):
        knn_predict(X, y, np.zeros((2, 3)))
    with pytest.raises(ValueError, match="test_X row 1 is not finite"):
        knn_predict(X, y, np.array([[0.0, 0.0], [np.nan, 1.0]]))


@pytest.mark.parametrize("metric,p", [("euclidean", None), ("cosine", None), ("minkowski", 1.0),
                                      ("minkowski", 3.0), ("minkowski", np.inf), ("mahalanobis", None)])
def test_rank_database_is_a_stable_full_ranking(metric, p):
    from lfabench.evaluation import rank_database

    rng = np.random.default_rng(5)
    db = rng.integers(1, 4, size=(150, 3)).astype(np.float64)     # many exact ties (duplicates, equal distances)
    queries = rng.integers(1, 4, size=(20, 3)).astype(np.float64)
    order = rank_database(db, queries, metric, p)
    VI = fit_whitening(db).precision_matrix() if metric == "mahalanobis" else None
    D = _distances(queries, db, metric, p, VI)
    assert sorted(order[0].tolist()) == list(range(150))
    if metric in ("cosine", "mahalanobis"):   # float rounding can split exact ties: compare the distances
        np.testing.assert_allclose(np.take_along_axis(D, order, axis=1), np.sort(D, axis=1), atol=1e-6)
    else:                                      # exact in float32: (distance, index) order
        np.testing.assert_array_equal(order, np.argsort(np.round(D, 9), axis=1, kind="stable"))
