"""Leaderboards from run records only: tables (Markdown, CSV, HTML), plots, seed-paired comparisons, and the
landing page of a folder of boards. The records themselves (finding, reading, validating, the one frame) are
:mod:`lfabench.recordset`'s; ``find_records``, ``records_frame`` and ``DEFAULT_RUN_ROOTS`` are re-exported here."""

from ..recordset import DEFAULT_RUN_ROOTS, find_records, records_frame
from .build import build_leaderboard
from .html import to_html
from .index import build_index
from .ranks import rank_table
from .statistics import summarize
from .tables import display_tables, to_markdown

__all__ = ["DEFAULT_RUN_ROOTS", "build_index", "build_leaderboard", "display_tables", "find_records", "rank_table", "records_frame",
           "summarize", "to_html", "to_markdown"]
