"""Plugins a board's rows come from that are not lfabench's own: each with its package and version, as the records
state them (``plugins.<kind>.distribution`` and ``version``), so a reader knows what to install to rerun a row.

A board of built-in plugins only has no such section.
"""

from __future__ import annotations

import pandas as pd

from ..recordset import RecordSet, finished
from ..registry import BUILTIN_DISTRIBUTION
from .markdown import md_code, md_frame

COLUMNS = ["kind", "plugin", "package", "version"]


def outside_plugins(records: RecordSet) -> pd.DataFrame:
    """One row per (kind, plugin, package, version) that a record of a finished run
    (:func:`~lfabench.recordset.finished`) ran from a package other than lfabench, sorted; empty when there is
    none."""
    rows = set()
    for _, rec in records.where(finished):
        for kind, entry in sorted((rec.get("plugins") or {}).items()):
            if isinstance(entry, dict) and entry.get("distribution") not in (None, BUILTIN_DISTRIBUTION):
                rows.add((str(kind), str(entry.get("name", "?")), str(entry["distribution"]),
                          str(entry.get("version") or "not recorded")))
    return pd.DataFrame(sorted(rows), columns=COLUMNS)


def packages_markdown(table: pd.DataFrame) -> str:
    """The section for the Markdown board (empty string without outside plugins)."""
    if table.empty:
        return ""
    installs = " ".join(md_code(f"pip install {p}=={v}") for p, v in
                        sorted(set(zip(table["package"], table["version"]))) if v != "not recorded")
    return "\n".join(["## Plugins from other packages", "",
                      "Rows of these plugins were run with the package and version named (from the records); "
                      "rerunning them needs the same installed" + (f": {installs}." if installs else "."), "",
                      md_frame(table).to_markdown(index=False, disable_numparse=True), ""])
