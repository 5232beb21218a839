"""How a board names a row: the plugin and the parameters its own setting changed from the plugin's default.

A label is fixed by its row's own setting, never by which other rows share the board, so one setting reads
the same on every board and across tasks: ``aggregator[param=value, ...]`` (``t1[max_iter=50]``), and for
descriptor parameters ``descriptor[param=value, ...]`` (another task).
"""

from __future__ import annotations

import pandas as pd


def _with_params(name: str, params: dict, keys: list[str], prefix: str) -> str:
    """``name[key=value, ...]`` for ``keys`` (``prefix`` dropped from each), or ``name`` without keys."""
    if not keys:
        return name
    shown = ", ".join(f"{k.removeprefix(prefix)}={params[k]}" for k in keys)
    return f"{name}[{shown}]"


def _is_descriptor_param(key: str) -> bool:
    return key.startswith("descriptor.")


def _descriptor_labels(df: pd.DataFrame) -> pd.Series:
    """``descriptor`` plus the descriptor parameters its setting sets away from the plugin's default.

    Runs on one descriptor with other parameters (image size, keypoint cap) are another task: a
    method is ranked and tested only against methods on the same descriptors, and each of its rows
    keeps the method's own name.
    """
    return pd.Series([_with_params(d, p, [k for k in nd if _is_descriptor_param(k)], "descriptor.")
                      for d, p, nd in zip(df["descriptor"].astype(str), df["params"], df["non_default"])],
                     index=df.index, dtype=object)


def _aggregator_labels(df: pd.DataFrame) -> pd.Series:
    """``aggregator`` plus the other parameters (aggregator's, evaluator's) its setting sets away from their
    plugins' defaults; descriptor parameters are in the descriptor's label (:func:`_descriptor_labels`)."""
    return pd.Series([_with_params(a, p, [k for k in nd if not _is_descriptor_param(k)], "aggregator.")
                      for a, p, nd in zip(df["aggregator"].astype(str), df["params"], df["non_default"])],
                     index=df.index, dtype=object)


def labelled(df: pd.DataFrame) -> pd.DataFrame:
    """The records frame with ``descriptor`` and ``aggregator`` replaced by the leaderboard's labels: the plugin's
    name and the parameters its setting changed from the plugin's default, so a label depends on the row's own
    setting only and one setting reads the same on every board.

    Two settings of one table that differ only where no label looks (e.g. one writes a default out, the other
    leaves it unset) would read alike: their labels get the setting's id (``bow{6461e290d7}``), which is also
    fixed by the setting alone.
    """
    if df.empty:
        return df
    df = df.assign(descriptor=_descriptor_labels(df), aggregator=_aggregator_labels(df))
    keys = ["dataset", "descriptor", "evaluator", "metric", "aggregator"]
    clash = df.groupby(keys, dropna=False)["setting"].transform("nunique") > 1
    if clash.any():
        df.loc[clash, "aggregator"] = [f"{a}{{{s}}}" for a, s in zip(df.loc[clash, "aggregator"],
                                                                     df.loc[clash, "setting"])]
    return df


__all__ = ["labelled"]
