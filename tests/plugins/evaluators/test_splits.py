import numpy as np
import pytest

from lfabench_plugins.evaluators.splits import labelled_classes, labelled_subset, stratified_split


def test_stratified_split_per_class_and_paired_by_seed():
    labels = np.repeat([0, 1, 2], [10, 25, 7])
    train, test = stratified_split(labels, 0.2, seed=3)
    assert np.intersect1d(train, test).size == 0 and train.size + test.size == labels.size
    assert [int((labels[test] == c).sum()) for c in range(3)] == [2, 5, 1]  # round(0.2 * n_c)
    again = stratified_split(labels, 0.2, seed=3)
    np.testing.assert_array_equal(train, again[0])
    assert not np.array_equal(test, stratified_split(labels, 0.2, seed=4)[1])
    with pytest.raises(ValueError, match="test_fraction"):
        stratified_split(labels, 1.5)


def test_labelled_subset_fraction_per_class():
    labels = np.repeat([0, 1], [10, 3])
    mask = labelled_subset(labels, 0.2, seed=0)
    assert int(mask[labels == 0].sum()) == 2 and int(mask[labels == 1].sum()) == 1


def test_labelled_classes_labels_every_sample_of_a_drawn_fraction_of_the_classes():
    labels = np.repeat(np.arange(10), 4)                       # ten groups of four, as the copies board's
    mask = labelled_classes(labels, 0.2, seed=0)
    per_class = np.bincount(labels, weights=mask).astype(int)
    assert sorted(per_class) == [0] * 8 + [4] * 2              # ceil(0.2 * 10) = 2 whole classes
    np.testing.assert_array_equal(mask, labelled_classes(labels, 0.2, seed=0))
    draws = {tuple(np.flatnonzero(np.bincount(labels, weights=labelled_classes(labels, 0.2, s)))) for s in range(8)}
    assert len(draws) > 1                                      # the seed moves which classes
    assert labelled_classes(labels, 0.01, seed=0).sum() == 4   # at least one class
    with pytest.raises(ValueError, match="labelled fraction"):
        labelled_classes(labels, 0.0)
