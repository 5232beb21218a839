"""How each method's fit and transform grow with the training set: paper settings, 25, 50 and 100 % of it.

Case names read ``PaperGrowth.time_fit(<method>, <fraction>)`` and ``PaperGrowthFitted.time_transform(...)``
(CPU seconds of the process, on one thread). The fit set at a fraction ``f`` keeps, in every class, the first
``ceil(f n_c)`` of its ``n_c`` training images in a seeded order (:func:`training_fraction`): nested subsets,
every class present, so a supervised method sees every class at every size. The transform is of the same
test images at every fraction. ``benchmarks/growth_table.py`` runs these cases in one process per method and
writes the table with each stage's exponent.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .aggregators import paper_aggregator
from .cases import PAPER_AGGREGATORS, labelled_fraction, split_bags

FRACTIONS = (0.25, 0.5, 1.0)


def training_fraction(labels: np.ndarray, fraction: float, seed: int = 0) -> np.ndarray:
    """Sorted indices of the fit samples at ``fraction``: per class, the first ``ceil(fraction n_c)`` of its
    ``n_c`` samples in one seeded order, so a smaller fraction's set is inside a larger one's."""
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"training_fraction: fraction must be in (0, 1], got {fraction}")
    labels = np.asarray(labels)
    order = np.random.default_rng(seed).permutation(labels.size)
    keep = []
    for cls in np.unique(labels):
        members = order[labels[order] == cls]
        keep.append(members[:math.ceil(fraction * members.size)])
    return np.sort(np.concatenate(keep))


def growth_data(method: str, fraction: float, descriptor: str = "sift"):
    """``(fit bags, fit labels, test bags)`` of ``method``'s case at ``fraction`` of the training images
    (Fifteen Scene, the ``knn`` evaluator's seed-0 split, as the paper cases)."""
    train, fit_labels, y_train, test, _ = split_bags("scene15", descriptor, labelled_fraction(method))
    keep = training_fraction(y_train, fraction)
    return train.subset(keep), np.asarray(fit_labels)[keep], test


class PaperGrowth:
    """Each method at the paper's settings, fitted on 25, 50 and 100 % of Fifteen Scene SIFT-90's training images."""

    params = [list(PAPER_AGGREGATORS), list(FRACTIONS)]
    param_names = ["method", "fraction"]
    timer = staticmethod(time.process_time)
    timeout, number, repeat, rounds = 7200, 1, 1, 1

    def setup(self, method, fraction):
        self.train, self.fit_labels, self.test = growth_data(method, fraction)
        self.aggregator = paper_aggregator(method, "sift")

    def time_fit(self, method, fraction):
        self.aggregator.fit(self.train, self.fit_labels)


class PaperGrowthFitted(PaperGrowth):
    """The transform of the test images by the fit of :class:`PaperGrowth`'s case."""

    def setup(self, method, fraction):
        super().setup(method, fraction)
        self.aggregator.fit(self.train, self.fit_labels)

    def time_transform(self, method, fraction):
        self.aggregator.transform(self.test)
