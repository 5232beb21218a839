import numpy as np
import pytest

from lfabench import get_plugin
from lfabench.splits import labelled_subset, stratified_split


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


def test_patches_descriptor_values_and_keypoints():
    img = np.arange(16, dtype=np.float32).reshape(4, 4)
    D, K = get_plugin("descriptor", "patches")(patch_size=2, stride=2).extract(img)
    np.testing.assert_array_equal(D, [[0, 1, 4, 5], [2, 3, 6, 7], [8, 9, 12, 13], [10, 11, 14, 15]])
    np.testing.assert_array_equal(K[:, :2], [[0.5, 0.5], [2.5, 0.5], [0.5, 2.5], [2.5, 2.5]])
    Dc, _ = get_plugin("descriptor", "patches")(patch_size=2, stride=2, normalize="center").extract(img)
    np.testing.assert_allclose(Dc.sum(1), 0, atol=1e-5)


def test_digits_dataset_and_synthetic():
    ds = get_plugin("dataset", "digits")()
    assert ds.n_samples == 1797 and ds.task == "classification" and np.bincount(ds.labels).min() >= 170
    assert ds.load_image(0).shape == (8, 8) and len(ds.fingerprint()) == 64
    syn = get_plugin("dataset", "synthetic")(n_classes=3, samples_per_class=4, descriptors_per_sample=10, dim=5,
                                              size_jitter=0.5, seed=1)
    assert syn.bags.n_samples == 12 and syn.bags.dim == 5 and np.bincount(syn.labels).tolist() == [4, 4, 4]
    assert syn.bags.counts.min() >= 5 and syn.bags.counts.max() <= 15
    assert syn.fingerprint() == get_plugin("dataset", "synthetic")(
        n_classes=3, samples_per_class=4, descriptors_per_sample=10, dim=5, size_jitter=0.5, seed=1).fingerprint()
