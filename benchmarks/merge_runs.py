"""Merge per-seed run CSVs of ``supervised_scene15.py``: rows of later files replace earlier rows with
the same (method, seed); ``--drop`` removes every row of the named methods first (rows measured
with code that has since changed). Used to combine a run that went on beside another (``--out``).

Usage::

    .venv/bin/python benchmarks/merge_runs.py OUT.csv BASE.csv [NEWER.csv ...] [--drop lcksvd2 lcksvd2_start]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd


def merge(frames: list[pd.DataFrame], drop: list[str]) -> pd.DataFrame:
    merged = frames[0][~frames[0]["method"].isin(drop)]
    for newer in frames[1:]:
        keys = set(zip(newer["method"], newer["seed"].astype(int)))
        keep = [(m, int(s)) not in keys for m, s in zip(merged["method"], merged["seed"])]
        merged = pd.concat([merged[keep], newer], ignore_index=True)
    return merged


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("inputs", type=Path, nargs="+")
    ap.add_argument("--drop", nargs="*", default=[], help="methods whose rows in the first input are discarded")
    args = ap.parse_args(argv)
    frames = [pd.read_csv(p) for p in args.inputs if p.exists()]
    if not frames:
        raise SystemExit(f"none of {[str(p) for p in args.inputs]} exists")
    merged = merge(frames, args.drop)
    merged.to_csv(args.out, index=False)
    print(f"{args.out}: {len(merged)} rows; per method: "
          + ", ".join(f"{m} {n}" for m, n in merged.groupby("method", sort=False).size().items()))


if __name__ == "__main__":
    main()
