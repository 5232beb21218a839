"""An independent implementation of the Revisited Oxford/Paris evaluation, for the tests.

Written from the protocol's definition (Radenović et al., CVPR 2018, and the usage in revisitop's example
evaluation), in plain loops: per query, the 0-based positions of the positives in the ranking, each
lowered by the number of ignored images ranked before it; AP by trapezoids between consecutive
positives; P@k with k' = min(k, last positive's 1-based position); queries without positives are left
out of the means. Setups: easy (easy vs junk + hard ignored), medium (easy + hard vs junk), hard (hard
vs junk + easy).
"""

from __future__ import annotations

import numpy as np


def reference_query(ranking, positives, ignored, ks):
    positives, ignored = set(int(v) for v in positives), set(int(v) for v in ignored)
    positions, skipped = [], 0
    for position, item in enumerate(ranking):
        if item in ignored:          # ignored images only shift the positions of later positives
            skipped += 1
        elif item in positives:
            positions.append(position - skipped)
    ap = 0.0
    for j, rank in enumerate(positions):
        before = 1.0 if rank == 0 else j / rank
        after = (j + 1) / (rank + 1)
        ap += (before + after) / 2.0 / len(positives)
    precisions = {}
    for k in ks:
        if not positions:
            precisions[k] = 0.0
            continue
        one_based = [p + 1 for p in positions]
        top = min(max(one_based), k)
        precisions[k] = sum(1 for p in one_based if p <= top) / top
    return ap, precisions


def reference_scores(rankings, gnd, ks=(1, 5, 10)):
    lists = {"easy": lambda g: (g["easy"], list(g["junk"]) + list(g["hard"])),
             "medium": lambda g: (list(g["easy"]) + list(g["hard"]), g["junk"]),
             "hard": lambda g: (g["hard"], list(g["junk"]) + list(g["easy"]))}
    out = {}
    for setup, pick in lists.items():
        aps, precisions = [], {k: [] for k in ks}
        for ranking, g in zip(rankings, gnd):
            positives, ignored = pick(g)
            if len(positives) == 0:
                continue
            ap, pk = reference_query(ranking, positives, ignored, ks)
            aps.append(ap)
            for k in ks:
                precisions[k].append(pk[k])
        out[setup] = (float(np.mean(aps)) if aps else float("nan"),
                      {k: (float(np.mean(v)) if v else float("nan")) for k, v in precisions.items()})
    return out
