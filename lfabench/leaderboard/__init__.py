"""Leaderboards from run records only: tables (Markdown, CSV, HTML), plots, and seed-paired comparisons."""

from .build import build_leaderboard
from .html import to_html
from .ranks import rank_table
from .tables import DEFAULT_RUN_ROOTS, display_tables, find_records, records_frame, summarize, to_markdown

__all__ = ["DEFAULT_RUN_ROOTS", "build_leaderboard", "display_tables", "find_records", "rank_table", "records_frame",
           "summarize", "to_html", "to_markdown"]
