"""The plugin module named by the ``lfabench`` entry point: the aggregator and the hook that declares it."""

from __future__ import annotations

from numbers import Real

import numpy as np

from lfabench.sdk import Aggregator, Bags, Interval, PluginSpec, hookimpl


class GeMPool(Aggregator):
    """Generalised-mean pooling: per sample, ``(mean_j |x_j|^p)^(1/p)`` coordinate-wise, then L2.

    ``p = 1`` is mean pooling of absolute values, large ``p`` tends to max pooling. An empty
    sample aggregates to zeros.

    Parameters
    ----------
    p : float
        The exponent (>= 1).
    l2 : bool
        L2-normalise the pooled vectors.
    random_state : int or None
        Unused (GeM is deterministic); kept so the run's seed reaches every aggregator alike.
    """

    # p's range, checked by lfabench on the command line, at construction and at fit (the type: the annotation)
    _parameter_constraints = {"p": [Interval(Real, 1, None, closed="left")]}

    def __init__(self, p: float = 3.0, l2: bool = True, random_state=None):
        self.p = p
        self.l2 = l2
        self.random_state = random_state

    def _fit(self, bags: Bags, y):
        self.dim_ = bags.dim  # nothing to learn; fitted attributes end in "_"

    def _transform(self, bags: Bags) -> np.ndarray:
        powered = bags.with_descriptors(np.abs(bags.descriptors.astype(np.float64)) ** self.p)
        pooled = powered.means() ** (1.0 / self.p)  # Bags.means(): per-sample means, zeros for empty samples
        if self.l2:
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            pooled = pooled / np.maximum(norms, 1e-12)
        return pooled.astype(np.float32)


@hookimpl
def lfabench_aggregators():
    return [PluginSpec("gempool", GeMPool, "Generalised-mean pooling (example third-party package)")]
