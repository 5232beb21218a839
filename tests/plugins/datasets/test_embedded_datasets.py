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


def test_synthetic_as_a_search_set():
    import numpy as np
    import pytest

    from lfabench_plugins.datasets.synthetic import make_synthetic

    ds = make_synthetic(task="retrieval", n_classes=3, samples_per_class=4)
    gt = ds.ground_truth
    assert ds.task == "retrieval" and gt.exclude_query_from_ranking
    assert gt.queries.tolist() == [0, 4, 8]
    for q, positives in zip(gt.queries, gt.positives):
        assert set(np.asarray(ds.labels)[positives]) == {ds.labels[q]} and q not in positives
        assert len(positives) == 3
    same = make_synthetic(n_classes=3, samples_per_class=4)
    assert np.array_equal(same.bags.descriptors, ds.bags.descriptors)  # the same bags, only the task differs
    with pytest.raises(ValueError, match="task must be"):
        make_synthetic(task="detection")
