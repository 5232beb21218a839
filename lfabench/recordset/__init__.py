"""The record set: run records found, read, validated and filtered once, deduplicated, and their one frame.

Every reader of a set of records (the leaderboard, ``lfabench compare``, ``verify``, ``reproduce``,
publishing) finds them here (:func:`find_records`) and reads and validates each once (:func:`load_records`,
:class:`RecordSet`; an invalid record stops the set: :class:`InvalidRecords`). Which records a board counts is
decided here alone: :func:`finished` (scores; also what ``reproduce`` reruns), :func:`not_applicable` (rows shown
as not applicable, with the reason), :func:`board_keeps` (both); every other record is listed as not counted.
The one frame is built here too (:func:`records_frame`: one row per record and metric; :func:`dedupe_runs`: one
per setting, seed and metric; :func:`labelled`: rows named by their settings): the leaderboard computes
statistics and renders from what this package gives it.
"""

from .dedupe import dedupe_runs, distinct_text
from .find import DEFAULT_RUN_ROOTS, find_records, shown_path
from .frame import (GROUP_COLUMNS, UNCLEAN_MARK, evaluator_declares, exact_score, fit_cost, hardware, records_frame,
                    row_setting, setting_columns)
from .load import (NOT_APPLICABLE_ERRORS, InvalidRecords, RecordSet, board_keeps, finished, load_records,
                   not_applicable, not_counted_entry)
from .row_labels import labelled

__all__ = ["DEFAULT_RUN_ROOTS", "GROUP_COLUMNS", "InvalidRecords", "NOT_APPLICABLE_ERRORS", "RecordSet", "UNCLEAN_MARK",
           "board_keeps", "dedupe_runs", "distinct_text", "evaluator_declares", "exact_score", "find_records", "finished",
           "fit_cost", "hardware", "labelled", "load_records", "not_applicable", "not_counted_entry", "records_frame",
           "row_setting", "setting_columns", "shown_path"]
