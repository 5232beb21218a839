"""UniVCG at the copies board's class count, fit and transform under ``threads`` 1 and 2 (the same bytes).

    python benchmarks/univcg_threads.py [--classes 4485] [--rounds 3] [--dim 128] [--transform-rows 200000]
        [--repeats 2]

The copies board's paper rule gives UniVCG one annotated image per group: 4,485 classes, so its boosting
rounds solve 4,485 weighted normal equations each (``C_BLOCK`` classes at a time) and its transform fires
``20 x 4,485`` bits per descriptor. This builds a problem of that shape from Gaussian descriptors (one image
per class, 30 descriptors each: what the fit samples per image; timings do not depend on the values), fits
``UniVCG(n_rounds=rounds)`` and transforms ``transform-rows`` descriptors (images of 300, as DAISY's cap) at
``threads`` 1 and 2 alternately, ``repeats`` times each, in this process. It prints wall and CPU seconds of
each, the ratio of the medians' walls, and whether the two counts gave the same bytes (bits and features).
Then the transform's floor: its GEMMs alone (the augmented descriptors against the bits, in runs of the
transform's row cap ``TRANSFORM_CELLS // bits``, one thread; the transform's own blocks end at image boundaries
under that cap), and the one-thread transform's wall against it.
A ratio means something only on a machine whose two cores are otherwise idle.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from lfabench.bags import Bags
from lfabench.threads import fixed_threads
from lfabench_plugins.aggregators.univcg import UniVCG


def gaussian_bags(n_images: int, per_image: int, dim: int, seed: int) -> Bags:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_images * per_image, dim)).astype(np.float32)
    return Bags(X, np.arange(0, n_images * per_image + 1, per_image))


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def gemm_seconds(model: UniVCG, bags: Bags, repeats: int) -> float:
    """The best wall of ``repeats`` passes of the transform's GEMMs alone over ``bags``, in runs of its row cap."""
    bits_t, width = model.bits_.T, model.bits_.shape[0]
    rows = max(1, model.TRANSFORM_CELLS // width)
    Xa = model._augment(bags.descriptors)
    product = np.empty((rows, width))
    best = np.inf
    for _ in range(repeats):
        wall = time.perf_counter()
        for a in range(0, Xa.shape[0], rows):
            np.matmul(Xa[a:a + rows], bits_t, out=product[:min(rows, Xa.shape[0] - a)])
        best = min(best, time.perf_counter() - wall)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--classes", type=int, default=4485)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--transform-rows", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()

    train = gaussian_bags(args.classes, 30, args.dim, seed=0)
    y = np.arange(args.classes)
    test = gaussian_bags(max(1, args.transform_rows // 300), 300, args.dim, seed=1)
    times: dict[tuple[str, int], list[tuple[float, float]]] = {}
    outputs: dict[int, tuple[bytes, bytes]] = {}
    for _ in range(args.repeats):
        for threads in (1, 2):
            with fixed_threads(threads):
                model = UniVCG(n_rounds=args.rounds, descriptors_per_image=None, random_state=0)
                w_fit, c_fit, _ = timed(lambda: model.fit(train, y))
                w_tr, c_tr, features = timed(lambda: model.transform(test))
            times.setdefault(("fit", threads), []).append((w_fit, c_fit))
            times.setdefault(("transform", threads), []).append((w_tr, c_tr))
            outputs[threads] = (model.bits_.tobytes(), np.asarray(features).tobytes())
            print(f"threads={threads}: fit {w_fit:.1f} s wall ({c_fit:.1f} s CPU), "
                  f"transform {w_tr:.1f} s wall ({c_tr:.1f} s CPU)", flush=True)
    bits = args.classes * args.rounds
    print(f"\n{args.classes} classes x {args.rounds} rounds = {bits} bits, d = {args.dim}; transform of "
          f"{test.n_descriptors} descriptors ({2 * test.n_descriptors * bits * (args.dim + 1) / 1e12:.2f} TFLOP)")
    print("| stage | threads=1 wall (CPU) s | threads=2 wall (CPU) s | wall ratio |\n|---|---:|---:|---:|")
    for stage in ("fit", "transform"):
        one, two = times[(stage, 1)], times[(stage, 2)]
        w1, w2 = statistics.median(w for w, _ in one), statistics.median(w for w, _ in two)
        cell = lambda runs: ", ".join(f"{w:.1f} ({c:.1f})" for w, c in runs)  # noqa: E731
        print(f"| {stage} | {cell(one)} | {cell(two)} | {w1 / w2:.2f}x |")
    print(f"\nsame bytes at 1 and 2 threads: bits {outputs[1][0] == outputs[2][0]}, "
          f"features {outputs[1][1] == outputs[2][1]}")
    with fixed_threads(1):
        floor = gemm_seconds(model, test, args.repeats)
    best = min(w for w, _ in times[("transform", 1)])
    print(f"transform at threads=1: {best:.1f} s wall (best), its GEMMs alone {floor:.1f} s: {best / floor:.2f}x")


if __name__ == "__main__":
    main()
