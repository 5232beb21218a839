"""The pipeline's own costs: descriptor extraction, a fixed thread count, provenance, the image pixel cap.

* ``Describe``: cold extraction of all 4,485 Fifteen Scene images (no cache, both cores) per descriptor.
* ``Threads``: fit + transform of one method on 300 images of the seed-0 split of Fifteen Scene SIFT-90 (every
  15th image of its training and test sets) under :func:`lfabench.threads.fixed_threads` at 1 thread
  (``pinned``, every run's default) against the libraries' own pools (``own``, ``threads=null``).
* ``Provenance``: one ``provenance.collect()`` (the source state read once per process, as a run does).
* ``PixelCap``: peak memory of the descriptor stage (``sift``, one process, no cache) on eight 320 x 240 JPEGs
  and one textured 2500 x 2500 JPEG, without the large one (``small only``), without a cap (``no cap``), under
  the default 40 MP cap (``default cap``: decoded) and with ``max_image_pixels=4_000_000`` and
  ``skip_corrupt_images=True`` (``cap 4 MP, skip``: refused from its header, an empty sample).
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import numpy as np

from lfabench.registry import get_plugin

from .aggregators import paper_aggregator
from .cases import DESCRIPTOR_CAPS, shared_data, split_bags


class Describe:
    """Cold extraction (no cache) of every Fifteen Scene image, two jobs."""

    params = [["sift", "daisy"]]
    param_names = ["descriptor"]
    timeout = 7200
    number, repeat, rounds = 1, 1, 1

    def setup(self, descriptor):
        root = shared_data()
        if root is None:
            raise NotImplementedError("needs ../shared/data (or $LFABENCH_SHARED_DATA)")
        self.dataset = get_plugin("dataset", "scene15")(root=str(root / "scene15"))
        self.descriptor = get_plugin("descriptor", descriptor)(**DESCRIPTOR_CAPS[descriptor])

    def time_describe(self, descriptor):
        self.descriptor.describe(self.dataset, progress=False, n_jobs=2, cache=False)


class Threads:
    """Fit + transform on 300 Fifteen Scene SIFT-90 images at ``threads`` 1 and 2 (the same bits), or on the pools'
    own counts (``own``: last bits by thread count)."""

    params = [["bow", "vlad", "fv", "temb", "prolfa"], ["1", "2", "own"]]
    param_names = ["method", "threads"]
    timeout = 1200
    number, repeat, rounds = 1, 3, 1

    def setup(self, method, threads):
        train, fit_labels, _, test, _ = split_bags("scene15", "sift")
        rows = np.arange(0, train.n_samples, 15)
        self.train, self.y = train.subset(rows), np.asarray(fit_labels)[rows]
        self.test = test.subset(np.arange(0, test.n_samples, 15))
        self.aggregator = paper_aggregator(method, "sift")

    def time_fit_transform(self, method, threads):
        from lfabench.threads import fixed_threads

        with fixed_threads(None if threads == "own" else int(threads)):
            self.aggregator.fit(self.train, self.y)
            self.aggregator.transform(self.test)


class Provenance:
    """Where a run came from: version, revision and diff, environment, package lock."""

    def setup(self):
        from lfabench import provenance

        provenance.source_state()                       # once per process, as in a run

    def time_collect(self):
        from lfabench import provenance

        provenance.collect()


def _textured(rng, h: int, w: int) -> np.ndarray:
    """Random 8-pixel blobs, smoothly upsampled: corners and edges at every scale SIFT looks at."""
    import cv2

    base = rng.integers(0, 256, size=(h // 8 + 1, w // 8 + 1), dtype=np.uint8)
    return cv2.resize(base, (w, h), interpolation=cv2.INTER_CUBIC)


class PixelCap:
    """Peak memory of ``sift``'s descriptor stage with one large image, without and with a pixel cap."""

    params = [["small only", "no cap", "default cap", "cap 4 MP, skip"]]
    param_names = ["setting"]
    timeout = 600

    def setup_cache(self):
        import cv2

        folder = Path(tempfile.mkdtemp(prefix="lfabench-pixelcap-"))
        rng = np.random.default_rng(0)
        for i in range(8):
            cv2.imwrite(str(folder / f"small{i}.jpg"), _textured(rng, 240, 320))
        cv2.imwrite(str(folder / "big.jpg"), _textured(rng, 2500, 2500))
        return str(folder)

    def setup(self, folder, setting):
        from lfabench.dataset import Dataset
        from lfabench.images import DEFAULT_MAX_IMAGE_PIXELS

        paths = sorted(Path(folder).glob("small*.jpg")) + ([] if setting == "small only" else [Path(folder) / "big.jpg"])
        cap = {"no cap": None, "cap 4 MP, skip": 4_000_000}.get(setting, DEFAULT_MAX_IMAGE_PIXELS)
        self.dataset = Dataset(name="bench", task="classification", sample_ids=[p.name for p in paths],
                               labels=np.arange(len(paths)) % 2, images=paths, max_image_pixels=cap,
                               skip_corrupt_images=setting == "cap 4 MP, skip")
        self.descriptor = get_plugin("descriptor", "sift")()

    def peakmem_describe(self, folder, setting):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.descriptor.describe(self.dataset, n_jobs=1, cache=False, progress=False)
