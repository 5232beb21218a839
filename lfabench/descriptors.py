"""The descriptor contract: a plugin that turns every sample of a dataset into local descriptors."""

from __future__ import annotations

import numpy as np
from tqdm.auto import tqdm

from .bags import Bags
from .datasets import Dataset


class Descriptor:
    """Base class for descriptor extractors.

    Subclasses implement :meth:`extract` for one image; :meth:`describe` runs it over a
    dataset and returns one :class:`Bags`. Hyper-parameters are ``__init__`` arguments.
    ``params()`` returns them (recorded in run records and cache keys).
    """

    #: Keypoint columns produced by :meth:`extract` (see ``lfabench.bags.KEYPOINT_FIELDS``).
    keypoint_fields: tuple[str, ...] = ("x", "y")

    def params(self) -> dict:
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}

    def extract(self, image: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Local descriptors of one image: ``(descriptors (n, d), keypoints (n, k))``."""
        raise NotImplementedError

    def describe(self, dataset: Dataset, progress: bool = True) -> Bags:
        """Local descriptors of every sample of ``dataset``, as one :class:`Bags` (ids = sample ids)."""
        if dataset.images is None:
            raise TypeError(f"descriptor {type(self).__name__} needs images, but dataset {dataset.name!r} ships "
                            f"its own local descriptors: use descriptor=native")
        descs, kps = [], []
        for i in tqdm(range(dataset.n_samples), desc=f"{type(self).__name__} on {dataset.name}",
                      disable=not progress or dataset.n_samples < 200, leave=False):
            d, k = self.extract(dataset.load_image(i))
            descs.append(d)
            kps.append(k)
        return Bags.from_list(descs, keypoints=kps, ids=dataset.sample_ids)
