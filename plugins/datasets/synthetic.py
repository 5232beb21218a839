"""``synthetic``: bags drawn from class-specific and shared Gaussian clusters (the paper's toy setting).

As in the ProLFA paper's synthetic experiment (two-class point sets grouped into
samples), each sample of class ``c`` draws ``class_fraction`` of its descriptors
from the clusters owned by class ``c`` and the rest from clusters shared by all
classes, so only a few descriptors are discriminative. Sizes are configurable;
the number of descriptors per sample varies uniformly in
``descriptors_per_sample * [1 - size_jitter, 1 + size_jitter]``.

``task="retrieval"`` turns the same bags into a search set in the Holidays style: the first sample
of each class is its query, the other samples of the class its positives, and the query is removed
from its own ranking (an embedded stand-in for Oxford5k/Holidays in smoke runs and tests).
"""

from __future__ import annotations

import numpy as np

from lfabench.sdk import Bags, Dataset, DatasetProtocol, PluginSpec, RetrievalGroundTruth, hookimpl


def make_synthetic(n_classes: int = 2, samples_per_class: int = 50, descriptors_per_sample: int = 20,
                   dim: int = 2, clusters_per_class: int = 1, shared_clusters: int = 2,
                   class_fraction: float = 0.3, cluster_std: float = 0.5, separation: float = 4.0,
                   size_jitter: float = 0.0, seed: int = 0, task: str = "classification") -> Dataset:
    """A seeded synthetic dataset whose samples are bags of ``dim``-D points (classification or retrieval)."""
    if task not in ("classification", "retrieval"):
        raise ValueError(f"synthetic: task must be classification or retrieval, got {task!r}")
    if task == "retrieval" and samples_per_class < 2:
        raise ValueError("synthetic: task=retrieval needs samples_per_class >= 2 (a query and a positive)")
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
    ground_truth = None
    if task == "retrieval":
        first = np.arange(n_classes) * samples_per_class            # each class's first sample is its query
        ground_truth = RetrievalGroundTruth(
            queries=first, positives=[np.arange(q + 1, q + samples_per_class) for q in first],
            junk=[np.empty(0, dtype=np.int64) for _ in first], exclude_query_from_ranking=True)
    return Dataset(name="synthetic", task=task, sample_ids=ids, labels=labels,
                   class_names=[f"class_{c}" for c in range(n_classes)], bags=bags, ground_truth=ground_truth,
                   info={"generator": "class-specific + shared Gaussian clusters", "seed": seed})


#: The protocol a run composes by default:
#: the bags it ships (descriptor=native, set by conf/dataset/synthetic.yaml); its task is its `task` parameter.
PROTOCOL = DatasetProtocol("classification")


@hookimpl
def lfabench_datasets():
    return [PluginSpec("synthetic", make_synthetic,
                       "Bags from class-specific and shared Gaussian clusters (the paper's toy setting)",
                       protocol=PROTOCOL)]
