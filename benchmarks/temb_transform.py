"""T-emb's transform against its floor, on a Fifteen Scene DAISY subset at the ``temb`` plugin's defaults
(A = 16 anchors, D = (A - 1) d = 3,000 dimensions for DAISY's d = 200): the embedding is one float32 GEMM
``(N, A d) x (A d, D)`` and the democratic kernel one stacked GEMM per padded batch, so the floor is
``2 N A d D + 2 N n D`` operations (``n`` descriptors per sample, on average) at this machine's float32 GEMM
rate. Prints the transform's seconds (median of ``--repeats``), the floor and their ratio.

    python benchmarks/temb_transform.py --per-class 40 --repeats 3
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from lfabench_plugins.aggregators.temb import TriangulationEmbedding


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-class", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)

    from fv_encode import gemm_rate  # benchmarks/ is the script's folder
    from scene15_daisy import scene15_daisy_subset

    bags, _ = scene15_daisy_subset(args.per_class, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = TriangulationEmbedding(random_state=0).fit(bags)
    N, m = bags.n_descriptors, bags.n_samples
    (Ad, D) = est.projection_.shape
    times = []
    for _ in range(args.repeats):
        t = time.perf_counter()
        est.transform(bags)
        times.append(time.perf_counter() - t)
    sec = float(np.median(times))
    rate = gemm_rate(dtype=np.float32)
    n_mean = N / m
    flops = 2 * N * Ad * D + 2 * N * n_mean * D
    floor = flops / rate / 1e9
    print(f"DAISY subset: {m} images, {N} descriptors; A*d={Ad}, D={D}")
    print(f"transform (median of {args.repeats}): {sec:.2f} s; float32 GEMM rate {rate:.1f} GFLOP/s; floor "
          f"{floor:.2f} s ({flops / 1e9:.0f} GFLOP): {sec / floor:.1f}x the floor")


if __name__ == "__main__":
    main()
