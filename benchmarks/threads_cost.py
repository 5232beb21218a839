"""What a fixed thread count costs: fit + transform + evaluate seconds with ``threads=1`` against the libraries' own.

The conductor runs every computing stage under :func:`lfabench.threads.fixed_threads` (config ``threads``,
default 1) so that results do not depend on the machine's thread count. This script times the same
aggregation both ways on DAISY descriptors of a Fifteen Scene subset (the first ``--per-class`` images of
each class, cached descriptors): ``pinned`` = every BLAS/OpenMP pool at 1 thread, ``own`` = the pools as
the environment sized them (``threads=null``, all cores by default). Runs alternate (pinned, own, pinned,
own...) so a change of machine load hits both alike; it reports the median of ``--repeats`` per mode and
whether the two modes gave the same accuracy (they need not: that is what the pin is for).

Usage::

    .venv/bin/python benchmarks/threads_cost.py [--per-class 20] [--repeats 3] [--methods bow vlad fv ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

METHODS = {
    "bow": {"n_clusters": 256},
    "vlad": {"n_clusters": 64},
    "fv": {"n_components": 32, "pca_components": 64},
    "temb": {"n_anchors": 16},
    "prolfa": {},
}


def subset(per_class: int) -> Path:
    """A Fifteen Scene subset of symlinks (the first ``per_class`` images of each class)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from conftest import shared_data_dir

    shared = shared_data_dir()
    if shared is None:
        raise SystemExit("needs ../shared/data/scene15")
    root = Path(tempfile.mkdtemp(prefix="threads_cost_")) / "scene15"
    for cls in sorted(p.name for p in (shared / "scene15").iterdir() if p.is_dir()):
        (root / cls).mkdir(parents=True)
        for src in sorted((shared / "scene15" / cls).glob("*.jpg"))[:per_class]:
            (root / cls / src.name).symlink_to(src)
    return root


def one_run(dataset, bags, method: str, params: dict, threads) -> tuple[float, float]:
    """(seconds of fit + transform + evaluate, accuracy) of one run under ``threads`` (None: not pinned)."""
    from lfabench.registry import get_registry
    from lfabench.threads import fixed_threads

    registry = get_registry()
    aggregator = registry.get_spec("aggregator", method).factory(**params, random_state=0)
    evaluator = registry.get_spec("evaluator", "knn").factory()
    split = evaluator.split(dataset, 0)
    t0 = time.perf_counter()
    with fixed_threads(threads):
        aggregator.fit(bags.subset(split.fit_indices), split.fit_labels)
        features = aggregator.transform(bags)
        split.empty_rows = bags.counts == 0
        accuracy = evaluator.evaluate(features, dataset, split)["accuracy"]
    return time.perf_counter() - t0, accuracy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-class", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--methods", nargs="+", default=list(METHODS))
    args = parser.parse_args()

    from lfabench.registry import get_registry

    registry = get_registry()
    dataset = registry.get_spec("dataset", "scene15").factory(root=str(subset(args.per_class)), strict=False)
    bags = registry.get_spec("descriptor", "daisy").factory().describe(dataset, progress=False)
    print(f"DAISY on {dataset.n_samples} Fifteen Scene images: {bags.n_descriptors} descriptors; "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, {os.cpu_count()} CPUs")
    print(f"{'method':8} {'pinned s':>9} {'own s':>9} {'cost':>6}  accuracy pinned / own")
    for method in args.methods:
        times = {1: [], None: []}
        accs = {}
        for _ in range(args.repeats):
            for threads in (1, None):
                seconds, accs[threads] = one_run(dataset, bags, method, METHODS[method], threads)
                times[threads].append(seconds)
        pinned, own = statistics.median(times[1]), statistics.median(times[None])
        print(f"{method:8} {pinned:9.2f} {own:9.2f} {pinned / own:5.2f}x  {accs[1]:.2f} / {accs[None]:.2f}",
              flush=True)


if __name__ == "__main__":
    main()
