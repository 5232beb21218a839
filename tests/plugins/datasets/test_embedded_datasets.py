"""The embedded datasets (digits, synthetic): sizes, labels, deterministic fingerprints."""

import numpy as np

from lfabench import get_plugin


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
