"""Small ProLFA problems the solver tests share."""

from __future__ import annotations

import numpy as np

from lfabench import Bags
from lfabench_plugins.aggregators.prolfa import Problem


def clustered_problem(seed=0, n_images=40, per_image=12, d=6, c=4, lambda1=0.1, lambda2=1.0):
    """Descriptors around class centres (so the fit has something to find); one-hot responses."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(c, d))
    y = np.arange(n_images) % c
    bags = Bags.from_list([centres[k] + 0.8 * rng.normal(size=(per_image, d)) for k in y])
    # centred, as the plugin's default normalisation does (raw offsets make the model badly conditioned)
    bags = bags.with_descriptors(bags.descriptors - bags.descriptors.mean(axis=0))
    return Problem.build(bags.descriptors, bags.means(), np.eye(c)[y], lambda1, lambda2)
