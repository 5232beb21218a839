"""How far a retrieval board's mAP (Oxford's and Holidays' ``compute_ap``: the trapezoid rule) lies from the
plain AP (the mean of the precisions at each positive), from the stored predictions alone.

    python benchmarks/plain_ap.py leaderboards/copies

For every complete record under ``BOARD/records``, each query's AP is recomputed both ways from the stored
places of its positives and junk (:func:`lfabench.evaluation.ranking.scores_from_places` for the board's
definition, checked to give the recorded mAP); a query scored zero (no descriptors) counts 0 in both. Prints the
range and mean over records of ``plain mAP - recorded mAP`` in points.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from lfabench.evaluation.ranking import scores_from_places
from lfabench.record import load_predictions


def plain_ap(positive_places: np.ndarray, junk_places: np.ndarray, n_positives: int) -> float:
    """Mean over the positives of the precision at each one's junk-free rank (0 for one never ranked)."""
    ranked = np.sort(positive_places[positive_places >= 0])
    kept = ranked - np.searchsorted(np.sort(junk_places[junk_places >= 0]), ranked)
    return float(np.sum((np.arange(kept.size) + 1) / (kept + 1)) / n_positives) if n_positives else 0.0


def board_gaps(board: Path) -> list[float]:
    gaps = []
    for path in sorted(board.glob("records/**/result.json")):
        rec = json.loads(path.read_text())
        if rec.get("status") != "ok" or (rec.get("predictions") or {}).get("kind") != "retrieval":
            continue
        a = load_predictions(path.parent / rec["predictions"]["file"])
        po, jo = a["positive_offsets"], a["junk_offsets"]
        plain, trapezoid = [], []
        for q in range(a["query_indices"].size):
            pos, pr = a["positives"][po[q]:po[q + 1]], a["positive_ranks"][po[q]:po[q + 1]]
            junk, jr = a["junk"][jo[q]:jo[q + 1]], a["junk_ranks"][jo[q]:jo[q + 1]]
            if a["scored_zero"][q]:
                plain.append(0.0)
                trapezoid.append(0.0)
                continue
            trapezoid.append(scores_from_places(pos, pr, junk, jr, [])[0])
            plain.append(plain_ap(pr, jr, np.unique(pos).size))
        recorded = rec["metrics"]["mAP"]
        assert abs(100 * np.mean(trapezoid) - recorded) < 1e-9, f"{path}: mAP does not recompute"
        gaps.append(100 * np.mean(plain) - recorded)
    return gaps


if __name__ == "__main__":
    gaps = np.asarray(board_gaps(Path(sys.argv[1])))
    print(f"{gaps.size} records: plain AP - recorded mAP: min {gaps.min():.2f}, max {gaps.max():.2f}, "
          f"mean {gaps.mean():.2f} points")
