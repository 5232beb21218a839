"""Text for the Markdown boards that renders as text on GitHub, MkDocs or any CommonMark renderer.

A value a record or a plugin controls (metric and plugin names, labels, parameter values, paths, error
messages) is written into Markdown through :func:`md_text` (table cells, titles, list items) or
:func:`md_code` (code spans), never as it is: raw HTML (``<img onerror=...>``, which MkDocs passes through
unsanitised), a link (``[x](javascript:...)``), a ``|`` that splits a table cell, a backtick that ends a code
span or a newline that ends a table row would otherwise become structure instead of text.
"""

from __future__ import annotations

import re

import pandas as pd

# CommonMark's backslash escapes for code spans and table cells; `*` and `_` are left as they are (emphasis
# cannot run anything, and labels such as n_clusters stay readable in the raw file), and so are brackets:
# `bow[n_clusters=64]` is a link only when `(` follows (escaped below; a reference definition needs a line
# of its own, which one-line text never starts)
_STRUCTURE = re.compile(r"([\\`|])")


def md_text(value) -> str:
    """``value`` as Markdown text: HTML's ``& < >`` as entities, ``\\ ` |`` and a link's ``](`` backslash-escaped,
    on one line."""
    text = " ".join(str(value).splitlines())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _STRUCTURE.sub(r"\\\1", text).replace("](", "]\\(")


def md_code(value) -> str:
    """``value`` as one inline code span (shown literally: no HTML, no links), fenced by more backticks than
    it holds (CommonMark); ``|`` escaped so that it cannot split a table cell either."""
    text = " ".join(str(value).splitlines()).replace("|", "\\|")
    runs = [len(r) for r in re.findall(r"`+", text)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every column name and cell through :func:`md_text` (for ``DataFrame.to_markdown``)."""
    out = frame.astype(object).map(lambda v: v if v is None or (isinstance(v, float) and pd.isna(v)) else md_text(v))
    out.columns = [md_text(c) for c in frame.columns]
    return out
