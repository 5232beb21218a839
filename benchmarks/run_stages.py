"""CPU seconds of each stage of a run, for this checkout and another, with the two runs compared bit for bit.

    python benchmarks/run_stages.py RECORD [RECORD ...] [--against OTHER_CHECKOUT] [--repeats 1]

Each RECORD (a run folder or its ``result.json``, e.g. one of ``leaderboards/scene15/records/``) is run again
from its stored config and setting (:func:`lfabench.run.run_benchmark`, into a temporary folder) in a child
process whose ``lfabench`` and ``lfabench_plugins`` are this checkout's, then, with ``--against``, another
checkout's (its root: ``lfabench/`` and ``plugins/``), interleaved so that both see the same load. Per stage it
prints the CPU seconds of the child (user + system, ``time.process_time`` between the conductor's stage
callbacks: other work on a shared machine is left out) and its peak resident memory, and whether the two runs' fingerprints (descriptors,
fitted arrays, features, predictions) and metrics are equal. Relative paths in a record's config (a dataset's
``root``) are read from the current folder, as ``lfabench reproduce`` does.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, resource, sys, tempfile, time
from pathlib import Path
from lfabench.record import read_record
from lfabench.run import run_benchmark

path = Path(sys.argv[1])
record = read_record(path / "result.json" if path.is_dir() else path)
cpu, last = {}, [time.process_time(), None]

def on_stage(stage):
    now = time.process_time()
    if last[1] is not None:
        cpu[last[1]] = now - last[0]
    last[0], last[1] = now, stage

with tempfile.TemporaryDirectory() as tmp:
    out = run_benchmark(record["config"], Path(tmp) / "run", setting=record.get("setting"), on_stage=on_stage)
cpu[last[1]] = time.process_time() - last[0]
print(json.dumps({"cpu_s": cpu, "fingerprints": out["fingerprints"], "metrics": out["metrics"],
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run_child(checkout: Path, record: str) -> dict:
    """One run of ``record`` in a child process importing ``checkout``'s lfabench and plugins."""
    with tempfile.TemporaryDirectory() as links:  # -P: the current folder's lfabench never comes first
        (Path(links) / "lfabench_plugins").symlink_to(checkout / "plugins")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(checkout), links]))
        proc = subprocess.run([sys.executable, "-P", "-c", CHILD, record], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"the run of {record} with {checkout} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("records", nargs="+")
    parser.add_argument("--against", type=Path, default=None, help="another checkout's root (e.g. main's)")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args(argv)
    checkouts = [("this", HERE)] + ([("other", args.against.resolve())] if args.against else [])
    for record in args.records:
        results: dict[str, list[dict]] = {name: [] for name, _ in checkouts}
        for _ in range(args.repeats):
            for name, checkout in checkouts:
                results[name].append(run_child(checkout, record))
        print(record)
        stages = list(results["this"][0]["cpu_s"])
        for stage in stages + ["total"]:
            cells = []
            for name, _ in checkouts:
                values = [sum(r["cpu_s"].values()) if stage == "total" else r["cpu_s"][stage] for r in results[name]]
                cells.append(f"{name} {min(values):8.2f} s")
            ratio = ""
            if args.against:
                this, other = (min(sum(r["cpu_s"].values()) if stage == "total" else r["cpu_s"][stage]
                                   for r in results[n]) for n, _ in checkouts)
                ratio = f"  other/this {other / this:5.2f}" if this > 0.05 else ""
            print(f"  {stage:12s} " + "  ".join(cells) + ratio)
        print("  peak RSS     " + "  ".join(f"{name} {max(r['peak_rss_mb'] for r in results[name]):8.0f} MB"
                                       for name, _ in checkouts))
        if args.against:
            a, b = results["this"][0], results["other"][0]
            same = [k for k in a["fingerprints"] if a["fingerprints"][k] == b["fingerprints"].get(k)]
            differ = [k for k in a["fingerprints"] if k not in same]
            print(f"  fingerprints equal: {', '.join(same) or 'none'}; differ: {', '.join(differ) or 'none'}; "
                  f"metrics {'equal' if a['metrics'] == b['metrics'] else 'differ'} {a['metrics']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
