"""What the trust fields cost a run: provenance collection time, record and predictions sizes, verify time.

    python benchmarks/record_overhead.py [--runs 2] [--repeat 20]

Runs ``--runs`` small digits runs (BoW, 16 words, 300 samples) into a temporary folder, publishes them
and builds a board, then prints: the time of one ``provenance.collect()`` (median over ``--repeat``, the
source state read once per process as a run reads it), the sizes of ``result.json`` and
``predictions.npz``, and the wall time of ``lfabench verify`` on the board.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from lfabench import provenance
from lfabench.leaderboard import build_leaderboard
from lfabench.leaderboard.publish import publish_records
from lfabench.run import run_benchmark
from lfabench.verify import verify_board


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    provenance.source_state()  # once per process, as in a run
    times = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        provenance.collect()
        times.append(time.perf_counter() - t)
    print(f"provenance.collect(): median {1e3 * statistics.median(times):.1f} ms over {args.repeat} "
          f"({len(provenance.package_lock())} distributions)")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for seed in range(args.runs):
            cfg = {"dataset": {"name": "digits", "params": {"n_samples": 300}}, "descriptor": {"name": "patches",
                   "params": {}}, "aggregator": {"name": "bow", "params": {"n_clusters": 16, "random_state": seed}},
                   "evaluator": {"name": "knn", "params": {"k": 1}}, "seed": seed}
            run_benchmark(cfg, root / "sweep" / "g" / f"s{seed}")
        run = root / "sweep" / "g" / "s0"
        print(f"result.json: {(run / 'result.json').stat().st_size} bytes; predictions.npz: "
              f"{(run / 'predictions.npz').stat().st_size} bytes (60 test samples)")
        board = root / "board"
        publish_records([root / "sweep"], board, allow_unclean=True)
        import os

        os.chdir(root)
        build_leaderboard(["board/records"], "board", "b", command="lfabench leaderboard board/records")
        t = time.perf_counter()
        report = verify_board(board)
        print(f"verify_board: {time.perf_counter() - t:.2f} s for {report.n_records} records "
              f"({len(report.failures)} discrepancies)")


if __name__ == "__main__":
    main()
