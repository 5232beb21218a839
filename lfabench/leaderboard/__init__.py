"""Leaderboards from run records only: tables (Markdown, CSV, HTML), plots, and seed-paired comparisons."""

from .tables import (
                     DEFAULT_RUN_ROOTS,
                     build_leaderboard,
                     display_tables,
                     find_records,
                     records_frame,
                     summarize,
                     to_html,
                     to_markdown,
)

__all__ = ["DEFAULT_RUN_ROOTS", "build_leaderboard", "display_tables", "find_records", "records_frame", "summarize",
           "to_html", "to_markdown"]
