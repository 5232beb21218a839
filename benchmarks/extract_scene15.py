"""Benchmark: SIFT and DAISY extraction over all of Fifteen Scene (4,485 images), cold and cached.

Run (heavy: one at a time on the shared machine)::

    flock /tmp/lfabench-bench.lock .venv/bin/python benchmarks/extract_scene15.py [--n-jobs 2]

Cold = an empty, private cache folder (everything extracted, chunks written); cached = the same
call again (one ``.npz`` load). Prints images/second and writes ``benchmarks/out/extract_scene15.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time

from common import OUT, shared_data

from lfabench import get_plugin


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--descriptors", default="sift,daisy")
    args = ap.parse_args()
    dataset = get_plugin("dataset", "scene15")(root=str(shared_data() / "scene15"))
    configs = {"sift": {"max_keypoints": 90}, "daisy": {"max_keypoints": 150}}
    results = {"n_images": dataset.n_samples, "n_jobs": args.n_jobs, "cpu_count": os.cpu_count(),
               "processor": platform.processor() or platform.machine(), "runs": []}
    with tempfile.TemporaryDirectory(prefix="lfabench-bench-cache-") as cache_dir:
        for name in args.descriptors.split(","):
            for phase in ("cold", "cached"):
                desc = get_plugin("descriptor", name)(**configs[name])
                t = time.perf_counter()
                bags = desc.describe(dataset, n_jobs=args.n_jobs, cache=cache_dir, progress=False)
                dt = time.perf_counter() - t
                info = desc.record_info()["extraction"]
                row = {"descriptor": name, "params": configs[name], "phase": phase, "seconds": round(dt, 2),
                       "images_per_second": round(dataset.n_samples / dt, 1), "cache": info["cache"],
                       "n_descriptors": bags.n_descriptors, "dim": bags.dim}
                results["runs"].append(row)
                print(f"{name:6s} {phase:6s} {dt:8.2f} s  {row['images_per_second']:9.1f} img/s  "
                      f"cache={info['cache']}  {bags.n_descriptors} x {bags.dim}", flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "extract_scene15.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
