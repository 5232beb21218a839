"""``synthetic``: bags drawn from class-specific and shared Gaussian clusters (the paper's toy setting).

As in the ProLFA paper's synthetic experiment (two-class point sets grouped into
samples), each sample of class ``c`` draws ``class_fraction`` of its descriptors
from the clusters owned by class ``c`` and the rest from clusters shared by all
classes, so only a few descriptors are discriminative. Sizes are configurable;
the number of descriptors per sample varies uniformly in
``descriptors_per_sample * [1 - size_jitter, 1 + size_jitter]``.
"""

from __future__ import annotations

import numpy as np

from lfabench import PluginSpec, hookimpl
from lfabench.bags import Bags
from lfabench.dataset import Dataset


def make_synthetic(n_classes: int = 2, samples_per_class: int = 50, descriptors_per_sample: int = 20,
                   dim: int = 2, clusters_per_class: int = 1, shared_clusters: int = 2,
                   class_fraction: float = 0.3, cluster_std: float = 0.5, separation: float = 4.0,
                   size_jitter: float = 0.0, seed: int = 0) -> Dataset:
    """A seeded synthetic classification dataset whose samples are bags of ``dim``-D points."""
    if n_classes < 1 or samples_per_class < 1 or descriptors_per_sample < 1 or dim < 1:
        raise ValueError("synthetic: n_classes, samples_per_class, descriptors_per_sample and dim must be >= 1")
    if not 0.0 <= class_fraction <= 1.0:
        raise ValueError(f"synthetic: class_fraction must be in [0, 1], got {class_fraction}")
    if shared_clusters < 1 and class_fraction < 1.0:
        raise ValueError("synthetic: shared_clusters must be >= 1 unless class_fraction == 1")
    rng = np.random.default_rng(seed)
    n_centres = n_classes * clusters_per_class + shared_clusters
    centres = rng.normal(scale=separation, size=(n_centres, dim))
    own = centres[: n_classes * clusters_per_class].reshape(n_classes, clusters_per_class, dim)
    shared = centres[n_classes * clusters_per_class:]
    labels = np.repeat(np.arange(n_classes), samples_per_class)
    lo = max(1, int(round(descriptors_per_sample * (1 - size_jitter))))
    hi = max(lo, int(round(descriptors_per_sample * (1 + size_jitter))))
    counts = rng.integers(lo, hi + 1, size=labels.size)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    owner = np.repeat(labels, counts)                          # class of each descriptor's sample
    from_class = rng.random(owner.size) < class_fraction
    pick_own = rng.integers(0, clusters_per_class, size=owner.size)
    pick_shared = rng.integers(0, max(shared_clusters, 1), size=owner.size)
    means = np.where(from_class[:, None], own[owner, pick_own], shared[pick_shared] if shared_clusters else 0.0)
    X = means + rng.normal(scale=cluster_std, size=means.shape)
    ids = [f"synthetic_{i:05d}" for i in range(labels.size)]
    bags = Bags(X.astype(np.float32), offsets, ids=ids)
    return Dataset(name="synthetic", task="classification", sample_ids=ids, labels=labels,
                   class_names=[f"class_{c}" for c in range(n_classes)], bags=bags,
                   info={"generator": "class-specific + shared Gaussian clusters", "seed": seed})


@hookimpl
def lfabench_datasets():
    return [PluginSpec("synthetic", make_synthetic,
                       "Bags from class-specific and shared Gaussian clusters (the paper's toy setting)")]
