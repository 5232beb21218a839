"""Compare two regenerations of a board, method by method, paired by seed.

    python benchmarks/compare_boards.py OLD-runs.csv NEW-runs.csv [--n-test 897]

Reads two boards' ``*-runs.csv`` (one row per record). A method is matched across the two by its name
without settings (``t1[max_iter=50]`` is ``t1``; ``prolfa_d4096`` and ``prolfa[n_prototypes=4096]`` are
``prolfa``), per (dataset, descriptor, evaluator, metric). For each: both settings, both means over the
seeds the two share, the per-seed differences (in test samples when ``--n-test`` is given: a metric that is a
percentage of ``n_test``), wins / ties / losses of the new board and the two-sided exact Wilcoxon
signed-rank p of the paired differences (zero differences dropped, as ``lfabench compare`` does).
"""

from __future__ import annotations

import argparse
import re

import pandas as pd
from scipy.stats import wilcoxon

KEYS = ["dataset", "descriptor", "evaluator", "metric"]


def base_name(label: str) -> str:
    """A method's name without its settings: ``t1[max_iter=50]`` -> ``t1``, ``prolfa_d4096`` -> ``prolfa``."""
    return re.sub(r"_d\d+$", "", label.split("[", 1)[0])


def paired(old: pd.DataFrame, new: pd.DataFrame, n_test: int | None) -> pd.DataFrame:
    rows = []
    old, new = old.assign(method=old.aggregator.map(base_name)), new.assign(method=new.aggregator.map(base_name))
    old_groups = dict(list(old.groupby(KEYS + ["method"])))
    for key, b in new.groupby(KEYS + ["method"]):
        a = old_groups.get(key)
        if a is None:
            continue
        s_old, s_new = a.groupby("seed").value.mean(), b.groupby("seed").value.mean()
        seeds = sorted(set(s_old.index) & set(s_new.index))
        diff = s_new[seeds] - s_old[seeds]
        unit = diff * n_test / 100 if n_test else diff
        nonzero = diff[diff != 0]
        p = wilcoxon(nonzero, method="exact").pvalue if len(nonzero) else 1.0
        rows.append(dict(zip(KEYS + ["method"], key), old_setting=a.aggregator.iloc[0],
                         new_setting=b.aggregator.iloc[0], seeds=len(seeds), old_mean=s_old[seeds].mean(),
                         new_mean=s_new[seeds].mean(), delta=diff.mean(),
                         per_seed=" ".join(f"{u:+.0f}" if n_test else f"{u:+.2f}" for u in unit),
                         wins=int((diff > 0).sum()), ties=int((diff == 0).sum()), losses=int((diff < 0).sum()),
                         p_wilcoxon=p))
    return pd.DataFrame(rows)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old_csv")
    ap.add_argument("new_csv")
    ap.add_argument("--n-test", type=int, help="test samples per seed: per-seed differences in samples")
    args = ap.parse_args(argv)
    table = paired(pd.read_csv(args.old_csv), pd.read_csv(args.new_csv), args.n_test)
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.max_colwidth", 40):
        print(table.drop(columns=["dataset", "evaluator"]).to_string(index=False, float_format=lambda v: f"{v:.2f}"))


if __name__ == "__main__":
    main()
