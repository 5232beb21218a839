"""Seeded splits and partial annotation that any evaluator can reuse (public API; names are stable).

Every function depends only on the labels, its fraction and the seed, never on the method, so every
aggregator scored with one seed sees the same samples and the same labels: results are paired.

* :func:`stratified_split` — ``round(test_fraction * n_c)`` of each class held out for testing (the
  ``knn`` evaluator's split);
* :func:`labelled_subset` — ``ceil(fraction * n_c)`` samples of each class keep their label (semi-supervised
  protocols: the ``labelled_fraction`` of ``knn`` and ``retrieval``);
* :func:`labelled_classes` — every sample of ``ceil(fraction * n_classes)`` classes keeps its label (whole
  groups annotated: ``retrieval``'s ``labelled_unit=class``);
* :func:`partial_labels` — the labels an aggregator is fitted with, ``-1`` for those left unannotated by
  either rule.

An evaluator plugin that calls these with the run's seed is paired with the built-in protocols: its k-NN
counterpart would test the same samples.
"""

from __future__ import annotations

import numpy as np

__all__ = ["LABELLED_UNITS", "labelled_classes", "labelled_subset", "partial_labels", "stratified_split"]


def stratified_split(labels, test_fraction: float = 0.2, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Split sample indices per class: ``round(test_fraction * n_c)`` of each class go to test.

    The draw depends only on ``labels``, ``test_fraction`` and ``seed`` (never on
    the method), so every aggregator sees the same split for a given seed.
    Each class keeps at least one training sample. Returns sorted
    ``(train_indices, test_indices)`` as int64 arrays.
    """
    labels = np.asarray(labels)
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    rng = np.random.default_rng(seed)
    train, test = [], []
    for cls in np.unique(labels):
        members = np.flatnonzero(labels == cls)
        members = members[rng.permutation(members.size)]
        n_test = min(int(round(test_fraction * members.size)), members.size - 1)
        test.append(members[:n_test])
        train.append(members[n_test:])
    return np.sort(np.concatenate(train)).astype(np.int64), np.sort(np.concatenate(test)).astype(np.int64)


def _check_labelled_fraction(fraction: float) -> None:
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"labelled fraction must be in (0, 1], got {fraction}")


def labelled_classes(labels, fraction: float, seed: int = 0) -> np.ndarray:
    """Boolean mask labelling every sample of ``ceil(fraction * n_classes)`` (at least 1) classes drawn from
    ``seed``: whole groups annotated, the rest given label ``-1`` by the caller."""
    labels = np.asarray(labels)
    _check_labelled_fraction(fraction)
    classes = np.unique(labels)
    k = max(1, int(np.ceil(fraction * classes.size)))
    chosen = np.random.default_rng([seed, 7919, 1]).choice(classes, size=k, replace=False)
    return np.isin(labels, chosen)


def labelled_subset(labels, fraction: float, seed: int = 0) -> np.ndarray:
    """Boolean mask keeping ``ceil(fraction * n_c)`` (at least 1) samples of each class labelled.

    Used by semi-supervised protocols: the rest are given label ``-1``.
    """
    labels = np.asarray(labels)
    _check_labelled_fraction(fraction)
    rng = np.random.default_rng([seed, 7919])
    mask = np.zeros(labels.shape[0], dtype=bool)
    for cls in np.unique(labels):
        members = np.flatnonzero(labels == cls)
        k = max(1, int(np.ceil(fraction * members.size)))
        mask[rng.choice(members, size=k, replace=False)] = True
    return mask


#: ``unit`` values of :func:`partial_labels`: per-class samples, or whole classes.
LABELLED_UNITS = ("sample", "class")


def partial_labels(labels, fraction: float, seed: int = 0, unit: str = "sample") -> np.ndarray:
    """``labels`` with the unannotated ones set to ``-1``: what a semi-supervised aggregator is fitted with.

    ``fraction = 1`` returns a copy of ``labels`` unchanged; otherwise ``unit="sample"`` keeps
    :func:`labelled_subset` of each class, ``unit="class"`` every sample of :func:`labelled_classes`.
    """
    labels = np.asarray(labels)
    if unit not in LABELLED_UNITS:
        raise ValueError(f"labelled unit must be one of {LABELLED_UNITS}, got {unit!r}")
    _check_labelled_fraction(fraction)
    if fraction >= 1.0:
        return labels.copy()
    mask = labelled_subset(labels, fraction, seed) if unit == "sample" else labelled_classes(labels, fraction, seed)
    return np.where(mask, labels, -1)
