"""Old (ranked lists) against new (places) ``retrieval`` evaluation on the copies setting, alternating in one
process, checked equal: ``python benchmarks/retrieval_old_vs_new.py [ROUNDS]``.

The setting and the reference are ``benchmarks/suite/retrieval.py``'s (``CopiesEvaluate``); this script
times them in turns, so both see the same load, and asserts that the metrics, per-query AP and predictions
are identical. Prints each round's seconds.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from suite.retrieval import copies_setting, reference_evaluate  # noqa: E402


def main(rounds: int = 2) -> None:
    evaluator, dataset, split, features = copies_setting()
    reference = reference_evaluate()
    seconds = {"ranked lists (old)": [], "places (new)": []}
    for _ in range(rounds):
        start = time.perf_counter()
        old = reference(evaluator, features, dataset, split)
        seconds["ranked lists (old)"].append(time.perf_counter() - start)
        start = time.perf_counter()
        metrics = evaluator.evaluate(features, dataset, split)
        seconds["places (new)"].append(time.perf_counter() - start)
        new = (metrics, split.predictions, split.info["per_query_ap"])
        assert new[0] == old[0] and new[2] == old[2], (new[0], old[0])
        assert sorted(new[1]) == sorted(old[1])
        assert all(np.array_equal(new[1][k], old[1][k]) and new[1][k].dtype == old[1][k].dtype for k in old[1])
    print(f"metrics {metrics} (identical; predictions identical)")
    for name, values in seconds.items():
        print(f"{name}: " + ", ".join(f"{v:.2f} s" for v in values))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
