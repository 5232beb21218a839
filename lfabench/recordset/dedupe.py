"""One value per (setting, seed, metric), wherever its records lie: repeats of a run count once."""

from __future__ import annotations

import pandas as pd

from ..evaluation.significance import exact_mean
from .frame import GROUP_COLUMNS


def dedupe_runs(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (setting, seed, metric), wherever its records lie.

    Repeats of one configuration and seed (a sweep rerun after it was killed, a copy of a
    results folder) count once: identical repeats collapse to one value; repeats that disagree
    are kept as their mean (so no seed weighs more than another) and flagged in ``conflict``.
    ``n_records`` says how many records each row stands for.
    """
    if df.empty:
        return df.assign(n_records=pd.Series(dtype=int), conflict=pd.Series(dtype=bool))
    keys = GROUP_COLUMNS + ["setting", "seed"]
    for col in ("peak_rss_mb", "output_dim", "lfabench_version", "git_revision", "finished_at", "transform_s",
                "hardware"):
        if col not in df:
            df = df.assign(**{col: None})
    if "fit_cache_untimed" not in df:
        df = df.assign(fit_cache_untimed=False)
    if "non_default" not in df:
        df = df.assign(non_default=[()] * len(df))
    if "exact" not in df:
        df = df.assign(exact=None)
    for col in ("predictions", "n_train", "n_test"):
        if col not in df:
            df = df.assign(**{col: None})
    g = df.groupby(keys, sort=False, dropna=False)
    out = g.agg(value=("value", "mean"), lo=("value", "min"), hi=("value", "max"), n_records=("value", "size"),
                params=("params", "first"), non_default=("non_default", "first"), fit_s=("fit_s", "mean"),
                transform_s=("transform_s", "mean"),
                fit_cache_untimed=("fit_cache_untimed", "max"),
                peak_rss_mb=("peak_rss_mb", "max"), output_dim=("output_dim", "first"),
                lfabench_version=("lfabench_version", "first"), git_revision=("git_revision", "first"),
                hardware=("hardware", distinct_text),
                finished_at=("finished_at", "max"),
                exact=("exact", exact_mean),
                predictions=("predictions", "first"), n_train=("n_train", "first"), n_test=("n_test", "first"),
                path=("path", lambda p: ";".join(sorted(set(p))))).reset_index()
    out["conflict"] = (out["hi"] - out["lo"]) > 1e-9 * (1.0 + out["hi"].abs())
    return out.drop(columns=["lo", "hi"])


def distinct_text(values) -> str:
    """The distinct texts, ``; ``-joined (a hardware description holds commas)."""
    return "; ".join(sorted({t for v in values if v is not None and not pd.isna(v) for t in str(v).split("; ")}))


__all__ = ["dedupe_runs", "distinct_text"]
