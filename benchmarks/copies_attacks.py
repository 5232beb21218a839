"""Which attacks each method survives on a ``copy_detection`` board: per attack, the share of copies ranked among
their original's first k results.

    python benchmarks/copies_attacks.py leaderboards/copies/records [--k 3] [--csv attacks.csv]

Reads every complete record under the folder (each ``result.json`` beside its ``predictions.npz``).
The record's ``positive_ranks`` give, for each query (an original), the place of each of its copies in its
ranking (0 = first, its own image removed); a copy's attack is named by its sample id
(``copy/<original>#rotation-25``: ``rotation``), and the "strong" family is split into its five attacks
(rotation, scaling, blur, contrast, noise). The dataset is rebuilt from the record's own parameters, from the
data root as the record names it (relative to the working directory), and must have the record's fingerprint.
Prints, per descriptor and method, the mean over seeds of each attack's share (%) of copies in the first k,
and of all copies' (``all``); k defaults to the copies per original, where a perfect ranking scores 100 %.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd


def attack_of(sample_id: str) -> str:
    """The attack a copy's sample id names: ``copy/MITcoast/image_0001.jpg#jpeg5`` -> ``jpeg``."""
    name = sample_id.rpartition("#")[2]
    match = re.match(r"[a-z]+", name) if "#" in sample_id else None
    if match is None:
        raise ValueError(f"copies_attacks: {sample_id!r} is not a copy's sample id (copy/<original>#<attack>)")
    return match.group(0)


def share_in_first_k(attacks: list[str], ranks: np.ndarray, k: int) -> dict[str, float]:
    """Per attack, the percentage of its copies whose rank (0-based) is below ``k``: ``{attack: %}``."""
    ranks = np.asarray(ranks)
    if len(attacks) != ranks.size:
        raise ValueError(f"copies_attacks: {len(attacks)} attacks for {ranks.size} ranks")
    frame = pd.DataFrame({"attack": attacks, "found": ranks < k})
    return {a: 100.0 * float(v) for a, v in frame.groupby("attack").found.mean().items()}


def _dataset(record: dict, cache: dict):
    from lfabench_plugins.datasets.copy_detection import load_copy_detection

    params = record["config"]["dataset"]["params"]
    key = json.dumps(params, sort_keys=True)
    if key not in cache:
        cache[key] = load_copy_detection(**params)
    dataset = cache[key]
    if dataset.fingerprint() != record["dataset"]["fingerprint"]:
        raise SystemExit(f"copies_attacks: the dataset rebuilt from {params} has fingerprint {dataset.fingerprint()}, "
                         f"the record {record['run_dir']} {record['dataset']['fingerprint']}: not the same copies")
    return dataset


def board_shares(folder: Path, k: int | None) -> pd.DataFrame:
    """One row per complete record: descriptor, method, seed, and each attack's share (%) in the first k."""
    from lfabench.recordset import find_records
    from lfabench.record import read_record

    rows, cache = [], {}
    for path in find_records([folder]):
        try:
            record = read_record(path)      # checked as the leaderboard checks it: a bad record is named
        except ValueError as exc:
            raise SystemExit(f"copies_attacks: {exc}") from exc
        if record.get("status") != "ok" or record["config"]["dataset"]["name"] != "copy_detection":
            continue
        dataset = _dataset(record, cache)
        with np.load(path.with_name("predictions.npz"), allow_pickle=False) as z:
            queries, positives, ranks, offsets = (z["query_indices"], z["positives"], z["positive_ranks"],
                                                  z["positive_offsets"])
        truth = dataset.ground_truth.positives
        if not np.array_equal(positives, np.concatenate([truth[int(q)] for q in queries])):
            raise SystemExit(f"copies_attacks: {path}: the positives differ from the dataset's ground truth")
        first_k = k or int(np.max(np.diff(offsets)))     # default: the copies per original
        shares = share_in_first_k([attack_of(dataset.sample_ids[p]) for p in positives], ranks, first_k)
        rows.append({"descriptor": record["config"]["descriptor"]["name"],
                     "method": record["config"]["aggregator"]["name"], "seed": record["seed"],
                     "all": 100.0 * float(np.mean(ranks < first_k)), **shares})
    if not rows:
        raise SystemExit(f"copies_attacks: no complete copy_detection record under {folder}")
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("records", type=Path, help="a folder of records (a board's records/, a sweep folder)")
    parser.add_argument("--k", type=int, default=None, help="first k results (default: copies per original)")
    parser.add_argument("--csv", type=Path, default=None, help="also write the per-record shares here")
    args = parser.parse_args(argv)
    frame = board_shares(args.records, args.k)
    if args.csv:
        frame.to_csv(args.csv, index=False)
    attacks = [c for c in frame.columns if c not in ("descriptor", "method", "seed")]
    table = frame.groupby(["descriptor", "method"])[attacks].mean()
    table.insert(0, "seeds", frame.groupby(["descriptor", "method"]).seed.nunique())
    sys.stdout.write(table.round(1).reset_index().to_markdown(index=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
