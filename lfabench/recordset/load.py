"""A set of run records read and validated once: what a board, a comparison or a check works from.

Every reader of a set of records goes through :class:`RecordSet`: each file is read and checked once
(:func:`lfabench.record.read_record`, the one validation), and an invalid record stops the whole set
(:class:`InvalidRecords` names every one: none is ever averaged in or skipped in silence). The statuses are
read here: :func:`finished` (a board's scores), :func:`not_applicable` (a board's not-applicable rows),
:func:`board_keeps` (both: what a board keeps and publishing copies); every other record is listed as not
counted (:func:`not_counted_entry`). Pages and plots look records up here
(:meth:`RecordSet.record`) instead of reading them from disk again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

from ..record import RunRecord, read_record
from .find import find_records


class InvalidRecords(ValueError):
    """Records that fail :func:`lfabench.record.validate_record`, each named with its file and field."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__(f"{len(problems)} invalid run record(s), refused (fix or remove them):\n"
                         + "\n".join(f"  {p}" for p in problems))


#: The error types of a run that ended because its method is not applicable to the protocol (its criterion is
#: undefined for the annotation it is given, :class:`lfabench.aggregate.UndefinedCriterionError`): a finding about
#: the method, shown as a not-applicable row of its table with the reason, never a number.
NOT_APPLICABLE_ERRORS = ("UndefinedCriterionError",)


def finished(record: RunRecord) -> bool:
    """Whether ``record`` is of a run that finished with its metrics (status ``ok``): the records a board counts in
    its scores, and what ``reproduce`` reruns."""
    return record.get("status") == "ok"


def not_applicable(record: RunRecord) -> bool:
    """Whether ``record`` ended because its method is not applicable to the protocol (:data:`NOT_APPLICABLE_ERRORS`):
    a board shows its setting as not applicable, with the reason, never a number."""
    return record.get("status") == "failed" and (record.get("error") or {}).get("type") in NOT_APPLICABLE_ERRORS


def board_keeps(record: RunRecord) -> bool:
    """Whether a board keeps ``record``: a run that :func:`finished` (its scores) or one :func:`not_applicable`
    (a not-applicable row). Publishing copies these; every other record (failed, interrupted, still running) is
    kept out of every mean and test and listed as not counted, with its error (:func:`not_counted_entry`)."""
    return finished(record) or not_applicable(record)


def not_counted_entry(path: Path | str, record: RunRecord) -> dict:
    """How a board lists a record it does not count: ``{"path", "status", "error": "<type>: <message>"}``."""
    err = record.get("error") or {}
    return {"path": str(path), "status": record.get("status"),
            "error": f"{err.get('type', '')}: {err.get('message', '')}"}


@dataclass(frozen=True)
class RecordSet:
    """Valid run records with their files, in the order read (:func:`load_records`: sorted paths)."""

    paths: tuple[Path, ...]
    records: tuple[RunRecord, ...]
    _by_path: dict[str, int] = field(init=False, repr=False, compare=False)

    @classmethod
    def read(cls, record_paths: Iterable[Path | str]) -> RecordSet:
        """The records at exactly these files, each read and validated once; :class:`InvalidRecords` naming every
        file that is not a valid record (unreadable, unknown format, a metric of the wrong type, not finite or
        out of range)."""
        paths, records, invalid = [], [], []
        for path in record_paths:
            try:
                records.append(read_record(path))  # the one validation (lfabench.record.validate_record)
            except ValueError as exc:
                invalid.append(str(exc))
                continue
            paths.append(path)
        if invalid:  # never counted, never skipped in silence: nothing is built from the set
            raise InvalidRecords(invalid)
        return cls(tuple(paths), tuple(records))

    def __len__(self) -> int:
        return len(self.paths)

    def __iter__(self) -> Iterator[tuple[Path, RunRecord]]:
        return iter(zip(self.paths, self.records))

    def __post_init__(self):
        index: dict[str, int] = {}
        for i, path in enumerate(self.paths):  # as read, and resolved: a board names records relative to its folder
            index.setdefault(str(path), i)
            index.setdefault(str(Path(path).resolve()), i)
        object.__setattr__(self, "_by_path", index)

    def record(self, path: Path | str) -> RunRecord:
        """The record read from ``path`` (as read, or any path that resolves to the same file); KeyError when the
        set holds none there."""
        found = self._by_path.get(str(path))
        if found is None:
            found = self._by_path.get(str(Path(path).resolve()))
        if found is None:
            raise KeyError(f"{path}: not a record of this set")
        return self.records[found]

    def where(self, rule: Callable[[RunRecord], bool]) -> RecordSet:
        """The records for which ``rule`` holds (:func:`finished`, :func:`board_keeps`...), in order."""
        pairs = [(p, r) for p, r in self if rule(r)]
        return RecordSet(tuple(p for p, _ in pairs), tuple(r for _, r in pairs))


def load_records(paths: Iterable[Path | str]) -> RecordSet:
    """Every record at or under ``paths`` (:func:`~.find.find_records`), read and validated once."""
    return RecordSet.read(find_records(paths))


__all__ = ["NOT_APPLICABLE_ERRORS", "InvalidRecords", "RecordSet", "board_keeps", "finished", "load_records",
           "not_applicable", "not_counted_entry"]
