"""Where a board's regeneration spent its time: each method's run-minutes per descriptor, from its records.

    python benchmarks/board_times.py SWEEP_OR_RECORDS_DIR [--markdown]

Reads every ``result.json`` under the folder (a ``regenerate.sh`` sweep, or a board's ``records/``). For each
(descriptor, method), over its records: how many, the summed ``fit``, ``transform``, ``evaluate`` and ``total``
stage times in minutes (each run's wall time: runs that shared the machine count in full), and the largest peak
resident memory. Sorted by total, largest first, with the sum over all records. It also names the records that
are not ``ok``, the runs that reused a cached fit (their fit time is not the fit's cost) and those whose
descriptors were not read from the cache (their ``descriptors`` stage holds the extraction).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from lfabench.recordset.find import find_records

STAGES = ("fit", "transform", "evaluate", "total")


def read_records(root: Path) -> list[dict]:
    """The parsed ``result.json`` of every run under ``root`` (``lfabench.recordset.find_records``: a sweep's lie
    two levels down, ``*/*/result.json``), in path order; none for a folder that does not exist."""
    try:
        paths = find_records([root])
    except FileNotFoundError:
        return []
    return [json.loads(p.read_text()) | {"_path": str(p)} for p in paths]


def method_times(records: list[dict]) -> list[dict]:
    """One row per (descriptor, method): ``runs``, the summed stage minutes of :data:`STAGES` and ``peak_mb``,
    sorted by ``total`` (largest first)."""
    rows: dict[tuple[str, str], dict] = defaultdict(lambda: dict.fromkeys(STAGES, 0.0) | {"runs": 0, "peak_mb": 0.0})
    for r in records:
        row = rows[(r["config"]["descriptor"]["name"], r["config"]["aggregator"]["name"])]
        row["runs"] += 1
        for stage in STAGES:
            row[stage] += r["timings_s"].get(stage, 0.0) / 60
        row["peak_mb"] = max(row["peak_mb"], r.get("peak_rss_mb") or 0.0)
    out = [{"descriptor": d, "method": m} | v for (d, m), v in rows.items()]
    return sorted(out, key=lambda row: -row["total"])


def caveats(records: list[dict]) -> dict[str, list[str]]:
    """Paths of the records that are not ``ok``, that reused a cached fit, or that did not read their
    descriptors from the cache."""
    found = {"not ok": [], "reused a cached fit": [], "descriptors not from the cache": []}
    for r in records:
        if r.get("status") != "ok":
            found["not ok"].append(r["_path"])
        if any(entry.get("hit") for entry in r.get("fit_cache") or []):
            found["reused a cached fit"].append(r["_path"])
        if ((r.get("descriptors") or {}).get("extraction") or {}).get("cache") != "hit":
            found["descriptors not from the cache"].append(r["_path"])
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", type=Path, help="a sweep folder or a board's records/ folder")
    args = parser.parse_args(argv)
    records = read_records(args.root)
    if not records:
        parser.error(f"no */*/result.json under {args.root}")
    rows = method_times(records)
    print("| descriptor | method | runs | fit min | transform min | evaluate min | total min | peak MiB |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row['descriptor']} | {row['method']} | {row['runs']} | {row['fit']:.1f} | {row['transform']:.1f} "
              f"| {row['evaluate']:.1f} | {row['total']:.1f} | {row['peak_mb']:.0f} |")
    print(f"\n{len(records)} records, {sum(row['total'] for row in rows):.1f} run-minutes")
    for what, paths in caveats(records).items():
        print(f"{what}: {len(paths)}" + "".join(f"\n  {p}" for p in paths))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
