"""Resident memory a run leaves behind: two runs in one process, the first extracting its descriptors.

    python benchmarks/run_memory.py IMAGE_FOLDER [--descriptor daisy] [--keep-free-heap]

``IMAGE_FOLDER`` is laid out as the ``imagefolder`` dataset reads it (``root/<class>/<image>``). Both runs are
BoW (16 words) with 1-NN on it, in this process, with an empty descriptor cache: the first extracts, the second
reads the cache, as the runs of an ``lfabench run -m`` sweep do. Prints the resident memory before and after each
run, and each run's own peak (the record's ``peak_rss_mb``, sampled while it ran). ``--keep-free-heap`` replaces
:func:`lfabench.heap.release_free_heap` by a no-op, for the comparison with a run that keeps the extraction's
freed heap resident.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import warnings


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("root")
    parser.add_argument("--descriptor", default="daisy")
    parser.add_argument("--keep-free-heap", action="store_true")
    args = parser.parse_args(argv)
    os.environ["LFABENCH_CACHE"] = tempfile.mkdtemp(prefix="lfabench-run-memory-")
    import lfabench.run as run_module
    from lfabench.record import current_rss_mb

    if args.keep_free_heap:
        run_module.release_free_heap = lambda: False
    cfg = {"dataset": {"name": "imagefolder", "params": {"root": args.root}},
           "descriptor": {"name": args.descriptor, "params": {}},
           "aggregator": {"name": "bow", "params": {"n_clusters": 16, "random_state": 0}},
           "evaluator": {"name": "knn", "params": {"k": 1}}, "seed": 0}
    print(f"before: {current_rss_mb():.0f} MB resident", flush=True)
    for i in range(2):
        with tempfile.TemporaryDirectory() as run_dir, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rec = run_module.run_benchmark(cfg, os.path.join(run_dir, "run"))
        extracted = rec["descriptors"].get("extraction", {}).get("chunks_computed", 0) > 0
        print(f"run {i} ({rec['descriptors']['n_descriptors']:,} descriptors, "
              f"{'extracted' if extracted else 'from the cache'}): peak {rec['peak_rss_mb']:.0f} MB, "
              f"{current_rss_mb():.0f} MB resident after it", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
