"""k-nearest-neighbour classification on FAISS, equal to scikit-learn's brute-force ``KNeighborsClassifier``.

Protocol (``uniform`` weights, as ``KNeighborsClassifier(algorithm="brute")``):

1. the ``k`` nearest training vectors of each test vector under ``metric``
   (:mod:`lfabench.evaluation.search`, FAISS, float32 distances);
2. a majority vote of their labels; **vote ties** (possible for even k, or k >= 3
   with several classes) go to the **smallest class label** in sorted order,
   whatever the neighbours' distances: scikit-learn's rule
   (``classes_[argmax(class counts)]`` in ``ArgKminClassMode``, ``scipy.stats.mode``
   otherwise; both return the first maximum);
3. **distance ties at the k-th place** (several training vectors equally far,
   more than the places left): lfabench keeps the ones that come first in
   ``train_X``. scikit-learn leaves this choice unspecified: it falls out of its
   ``ArgKmin`` heap order (euclidean, minkowski; it also depends on chunking and
   threads) or of ``np.argpartition`` (cosine, mahalanobis), and neither is the
   lower index in general.

So predictions equal scikit-learn's for every test vector whose vote does not
hinge on choice 3 (checked on tie-rich data with duplicates, equal distances
and even-k vote ties), and are deterministic where scikit-learn's are not.
Exact ties are ties as computed: on discrete features (e.g. BoW histograms)
distances equal in exact arithmetic may differ by rounding, in FAISS (float32)
as in scikit-learn (float64), and are then ordered by that rounding.
"""

from __future__ import annotations

import numpy as np

from .search import MetricSpace, fit_metric_space, knn_search

__all__ = ["knn_predict", "knn_accuracy", "accuracy_from_predictions"]


def _labels(y, n: int, name: str) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"{name} must be a 1-D array of {n} labels, got shape {y.shape}")
    return y


def knn_predict(train_X, train_y, test_X, k: int = 1, metric: str = "euclidean", p: float | None = None,
                covariance: str = "auto", space: MetricSpace | None = None) -> np.ndarray:
    """Labels of ``test_X`` (``(t, D)``) by k-NN majority vote among ``train_X`` (``(n, D)``) / ``train_y`` (``(n,)``).

    ``metric``: ``"euclidean"``, ``"cosine"``, ``"mahalanobis"`` (covariance
    estimated on ``train_X`` by ``covariance``; see
    :func:`lfabench.evaluation.whitening.fit_whitening`) or ``"minkowski"`` (needs
    ``p >= 1``). ``space``: an already fitted :class:`MetricSpace` (then
    ``metric``/``p``/``covariance`` are ignored). Tie rules: module docstring.
    """
    k = int(k)
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    train_X = np.asarray(train_X)
    test_X = np.asarray(test_X)
    if train_X.ndim != 2 or test_X.ndim != 2:
        raise ValueError(f"train_X and test_X must be 2-D (n, D) arrays, got shapes {train_X.shape} and "
                         f"{test_X.shape}")
    if train_X.shape[1] != test_X.shape[1]:
        raise ValueError(f"train_X has {train_X.shape[1]} columns but test_X has {test_X.shape[1]}")
    n = train_X.shape[0]
    train_y = _labels(train_y, n, "train_y")
    if k > n:
        raise ValueError(f"k={k} exceeds the number of training vectors ({n})")
    if space is None:
        space = fit_metric_space(train_X, metric, p, covariance)
    index = space.index(space.transform(train_X, "train_X"))
    if test_X.shape[0] == 0:
        return train_y[:0]
    _, neighbours = knn_search(index, space.transform(test_X, "test_X"), k, space.larger_is_closer)
    classes, codes = np.unique(train_y, return_inverse=True)
    votes = codes[neighbours]                                           # (t, k) class codes
    t = votes.shape[0]
    counts = np.bincount((np.arange(t)[:, None] * classes.size + votes).ravel(),
                         minlength=t * classes.size).reshape(t, classes.size)
    return classes[np.argmax(counts, axis=1)]                           # first maximum = smallest label


def knn_accuracy(train_X, train_y, test_X, test_y, k: int = 1, metric: str = "euclidean", p: float | None = None,
                 *, covariance: str = "auto") -> float:
    """Fraction (0..1) of ``test_X`` whose k-NN label (:func:`knn_predict`) equals ``test_y``.

    Equal to ``KNeighborsClassifier(n_neighbors=k, algorithm="brute", metric=...,
    p=...).fit(train_X, train_y).score(test_X, test_y)`` (Mahalanobis: with
    ``metric_params={"VI": C^{-1}}`` for the covariance chosen by ``covariance``)
    except where scikit-learn's own choice among equidistant k-th neighbours
    decides a vote (module docstring, rule 3).

    >>> knn_accuracy([[0.], [1.], [10.]], [0, 0, 1], [[0.2], [9.]], [0, 1])
    1.0
    """
    test_X = np.asarray(test_X)
    test_y = _labels(test_y, test_X.shape[0] if test_X.ndim == 2 else -1, "test_y")
    if test_y.size == 0:
        raise ValueError("knn_accuracy needs at least one test vector")
    pred = knn_predict(train_X, train_y, test_X, k, metric, p, covariance)
    return float(np.mean(pred == test_y))


def accuracy_from_predictions(predicted, true, counted_wrong=None) -> float:
    """The ``knn`` evaluator's ``accuracy`` metric (percent) recomputed from its stored predictions.

    ``predicted`` and ``true`` are the ``(t,)`` labels of the test samples; ``counted_wrong`` a ``(t,)``
    bool mask of test samples scored as misses whatever their prediction (samples without descriptors).
    ``100 * mean((predicted == true) & ~counted_wrong)``, computed as the evaluator computes it, so the
    value is the recorded one to the last bit.

    >>> accuracy_from_predictions([1, 2, 3, 3], [1, 2, 0, 3], [False, True, False, False])
    50.0
    """
    predicted, true = np.asarray(predicted), np.asarray(true)
    if predicted.ndim != 1 or predicted.shape != true.shape:
        raise ValueError(f"predicted and true labels must be 1-D of one length, got {predicted.shape} and "
                         f"{true.shape}")
    if predicted.size == 0:
        raise ValueError("accuracy needs at least one test sample")
    wrong = np.zeros(predicted.shape, dtype=bool) if counted_wrong is None else np.asarray(counted_wrong, dtype=bool)
    if wrong.shape != predicted.shape:
        raise ValueError(f"counted_wrong has shape {wrong.shape}, the predictions {predicted.shape}")
    return float(100.0 * np.mean((predicted == true) & ~wrong))
