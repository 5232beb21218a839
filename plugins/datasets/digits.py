"""``digits``: scikit-learn's bundled 8x8 handwritten digits (UCI optdigits test set), 1,797 images, 10 classes.

The embedded default dataset: it ships inside scikit-learn, so ``lfabench run``
works with no download. Pixel values are integers 0..16.
"""

from __future__ import annotations

import numpy as np

from lfabench.sdk import Dataset, DatasetProtocol, PluginSpec, hookimpl


def load_digits_dataset(n_samples: int | None = None) -> Dataset:
    """The digits as a classification :class:`Dataset` of ``(8, 8)`` float32 images in ``[0, 1]``.

    scikit-learn stores grey levels 0..16; they are divided by 16 so every descriptor's defaults
    (e.g. ``patches``' ``scale=1``) suit this dataset as they suit 8-bit images read as ``[0, 1]``.

    ``n_samples`` keeps the first ``n`` images (for quick experiments); ``None`` keeps all 1,797.
    """
    from sklearn.datasets import load_digits

    bunch = load_digits()
    images, labels = (bunch.images / 16.0).astype(np.float32), bunch.target.astype(np.int64)
    if n_samples is not None:
        if not 0 < int(n_samples) <= len(images):
            raise ValueError(f"digits: n_samples must be in 1..{len(images)}, got {n_samples}")
        images, labels = images[: int(n_samples)], labels[: int(n_samples)]
    return Dataset(
        name="digits", task="classification", sample_ids=[f"digit_{i:04d}" for i in range(len(images))],
        labels=labels, class_names=[str(c) for c in range(10)], images=list(images),
        info={"source": "sklearn.datasets.load_digits", "image_size": [8, 8], "pixel_range": [0, 1], "scaled_from": [0, 16]},
    )


#: The protocol a run composes by default: the embedded 3x3-patch descriptor and 1-NN.
PROTOCOL = DatasetProtocol("classification", descriptor="patches", evaluator="knn")


@hookimpl
def lfabench_datasets():
    return [PluginSpec("digits", load_digits_dataset,
                       "scikit-learn's bundled 8x8 handwritten digits, 1,797 images, 10 classes (embedded)",
                       protocol=PROTOCOL)]
