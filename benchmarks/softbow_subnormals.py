"""T1, DBoWs and EO-BoW fitted with and without ``flush_subnormals``, alternately in one process, on real data.

    OMP_NUM_THREADS=1 python benchmarks/softbow_subnormals.py [--methods dbows eobow t1] [--descriptors sift daisy]
        [--stride 4] [--max-iter 100] [--repeats 1]

Every ``stride``-th training image of the ``knn`` evaluator's seed-0 split of the shared Fifteen Scene copy
(``benchmarks/suite/cases.py``: ``../shared/data`` or ``$LFABENCH_SHARED_DATA``, the board's caps). For each
method and descriptor, the plugin at its defaults (``random_state=0``, ``max_iter`` L-BFGS iterations) is fitted
with ``flush_subnormals=False`` and ``True`` alternately, ``repeats`` times each, on one BLAS thread; printed: the
CPU seconds of each fit (best of the repeats) and their ratio, the first iteration whose objective differs between
the two and the relative difference of the final objectives, and how many memberships of the kept fit's last
evaluation were subnormal floats.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from lfabench.registry import get_plugin

sys.path.insert(0, str(Path(__file__).resolve().parent))
from suite.cases import split_bags  # noqa: E402


def subnormal_share(est, bags) -> float:
    """Share of the memberships of ``est``'s training descriptors, at its learned parameters, that are subnormal
    float32 (recomputed without the flush)."""
    from lfabench_plugins.aggregators.softbow import SoftHistograms

    X = est.standardizer_.transform(bags.descriptors).astype(np.float32)
    hist = SoftHistograms(X, bags.offsets)
    if hasattr(est, "codebook_"):
        hist.forward(est.membership_distance, (est.codebook_, est.membership_scale()))
    else:
        hist.forward("linear", (est.weights_, est.bias_))
    U = np.vstack([u for u, _ in hist._saved[1]])
    return float(np.mean((U > 0) & (U < np.finfo(np.float32).tiny)))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--methods", nargs="+", default=["dbows", "eobow", "t1"])
    parser.add_argument("--descriptors", nargs="+", default=["sift", "daisy"])
    parser.add_argument("--stride", type=int, default=4)
    parser.add_argument("--max-iter", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args(argv)
    for name in args.descriptors:
        train, y, _, _, _ = split_bags("scene15", name)
        keep = np.arange(0, train.n_samples, args.stride)
        bags, labels = train.subset(keep), np.asarray(y)[keep]
        print(f"{name}: {bags.n_samples} training images, {bags.n_descriptors} descriptors of {bags.dim}-D", flush=True)
        for method in args.methods:
            cls = get_plugin("aggregator", method)
            times, fitted = {False: [], True: []}, {}
            for _ in range(args.repeats):
                for flush in (False, True):
                    est = cls(max_iter=args.max_iter, random_state=0, flush_subnormals=flush)
                    with threadpool_limits(1):
                        t = time.process_time()
                        est.fit(bags, labels)
                        times[flush].append(time.process_time() - t)
                    fitted[flush] = est
            kept, flushed = (fitted[f].fit_info_["training_curve"] for f in (False, True))
            first = next((i for i, (a, b) in enumerate(zip(kept, flushed)) if a != b), None)
            with threadpool_limits(1):
                share = subnormal_share(fitted[False], bags)
            t_keep, t_flush = min(times[False]), min(times[True])
            print(f"  {method}: fit kept {t_keep:.1f} s, flushed {t_flush:.1f} s, ratio {t_keep / t_flush:.2f}x "
                  f"(best of {args.repeats}); objective first differs at iteration {first}, final "
                  f"{kept[-1]:.6g} / {flushed[-1]:.6g} (rel {abs(flushed[-1] - kept[-1]) / abs(kept[-1]):.1e}); "
                  f"subnormal memberships at the kept fit's end {100 * share:.3f} %", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
