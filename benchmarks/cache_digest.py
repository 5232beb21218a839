"""What checking a cache entry's digest at load costs: ``ArrayCache.load`` against a bare ``np.load``.

An entry of the size of a real descriptor cache (Fifteen Scene's SIFT at 90 per image: 4,485 images x
90 x 128 float32 ~ 207 MB, plus keypoints and offsets) is written once; then the two loads alternate
(``--repeats`` times each, in the same process, so that machine load hits both alike) and the medians
are printed. The file is read from the page cache after the first load: the difference is the sha256.

Usage::

    .venv/bin/python benchmarks/cache_digest.py [--mb 207] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import numpy as np

from lfabench.storage import ArrayCache


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=207.0, help="size of the descriptor array (MB)")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    rows = int(args.mb * 1e6 / (128 * 4))
    rng = np.random.default_rng(0)
    arrays = {"descriptors": rng.random((rows, 128), dtype=np.float32),
              "keypoints": rng.random((rows, 4), dtype=np.float32),
              "offsets": np.arange(0, rows + 1, 90, dtype=np.int64)}
    with tempfile.TemporaryDirectory() as root:
        store = ArrayCache(root)
        name = "descriptors-bench-0123456789abcdef"
        store.save(name, arrays)
        npz = store.root / f"{name}.npz"
        plain, checked = [], []
        for _ in range(args.repeats):
            t = time.perf_counter()
            with np.load(npz, allow_pickle=False) as z:
                _ = {k: z[k] for k in z.files}
            plain.append(time.perf_counter() - t)
            t = time.perf_counter()
            assert store.load(name) is not None
            checked.append(time.perf_counter() - t)
    size = sum(a.nbytes for a in arrays.values()) / 1e6
    p, c = statistics.median(plain), statistics.median(checked)
    print(f"entry {size:.0f} MB; median of {args.repeats}: np.load {p:.3f} s, ArrayCache.load (with sha256 check) "
          f"{c:.3f} s, +{c - p:.3f} s ({size / max(c - p, 1e-9):.0f} MB/s for the check)")


if __name__ == "__main__":
    main()
