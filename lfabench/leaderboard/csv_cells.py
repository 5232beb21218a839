"""CSV files a board writes, safe to open in a spreadsheet (CSV formula injection, OWASP).

A spreadsheet reads a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a formula (and a leading tab or
carriage return can hide one): a method label, metric name or path that a record controls, such as
``=HYPERLINK("http://x", "click")``, would run when a reader opens ``<name>.csv``. Following OWASP's advice,
every such *text* cell is prefixed with a single quote (``'=HYPERLINK(...``), which a spreadsheet shows as
text; numbers (``-0.5`` in a float column) are left untouched, so the files still read back as numbers.

Every text cell is also quoted (``csv.QUOTE_NONNUMERIC``): Python's and pandas' CSV writers quote a field
holding ``\n`` but not one holding a lone ``\r``, which a reader takes for a line break, splitting the row.
"""

from __future__ import annotations

import csv

import pandas as pd

from ..storage import write_text_atomic

#: The first characters that make a spreadsheet cell a formula (OWASP, "CSV Injection").
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def neutralise(value):
    """``value`` with a single quote before it when it is text that starts like a formula; anything else
    (numbers, None, NaN) as it is."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def safe_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every text cell and column name through :func:`neutralise` (numeric columns untouched)."""
    out = frame.copy()
    for col in out.columns:
        if out[col].dtype == object or pd.api.types.is_string_dtype(out[col]):
            out[col] = out[col].map(neutralise)
    out.columns = [neutralise(c) for c in out.columns]
    return out


def write_csv(path, frame: pd.DataFrame) -> None:
    """``frame`` as CSV (no index) at ``path``, atomically, its text cells neutralised (:func:`safe_frame`)."""
    write_text_atomic(path, safe_frame(frame).to_csv(index=False, quoting=csv.QUOTE_NONNUMERIC))
