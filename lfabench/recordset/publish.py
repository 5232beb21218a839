"""Publishing a sweep's records beside its board: copies that carry no machine's paths and that a rerun resumes.

``lfabench leaderboard SWEEP --out BOARD --publish-records [--relocate OLD=NEW ...]`` copies every record under
``SWEEP`` that a board keeps (:func:`~lfabench.recordset.board_keeps`: a run that finished, or one of a method
not applicable to the protocol, shown on the board as such with its reason) to
``BOARD/records/<group>/<key>_s<seed>/result.json`` and builds the board from ``BOARD/records``. In each copy:

* every string value starting with an ``OLD`` prefix gets ``NEW`` instead (e.g. the dataset root
  ``/data/scene15`` -> ``../shared/data/scene15``), longest prefix first;
* ``run_dir`` becomes the copy's folder relative to ``BOARD``, and the descriptor cache folder
  ``$LFABENCH_CACHE``;
* the folder's ``<key>`` is :func:`~lfabench.record.setting_key` of the *relocated* setting, so that
  running the documented sweep with ``hydra.sweep.dir=BOARD/records`` skips every published run.

A copy that would still hold an absolute path of this machine (an existing file or folder, or one under
the home folder) is refused, naming the record and the field, so that no machine's layout is published
by accident; so is one that holds a secret (a value read from the environment, or the value of an environment
variable named like a secret: :func:`lfabench.redact.secret_problems`). The record's own files go with it
(``predictions.npz``, and ``source.diff.gz`` for a dirty tree); the raw arrays stay behind (``prototypes.npz``
and logs). A changed copy gets its digest anew (:func:`~lfabench.record.content_digest`): the published
record is the one the digest vouches for.
Files are written atomically; an existing copy is replaced only by a record of the same setting and seed
that finished later.

Only clean, complete records are published (:func:`~lfabench.provenance.missing_provenance`: a revision
and no diff, the environment, the package lock): others are refused, naming each record and what it
lacks, unless ``allow_unclean`` (``--allow-unclean-records``); their copies then carry
``publication.unclean`` (the reasons) and the board marks their rows (``UNCLEAN_MARK`` in the label).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..boardfiles import confined
from ..provenance import missing_provenance
from ..record import RESULT_FILE, content_digest, read_record, setting_key
from ..redact import secret_problems, string_fields
from ..storage import write_text_atomic
from .load import board_keeps, load_records

CACHE_PLACEHOLDER = "$LFABENCH_CACHE"


@dataclass
class PublishReport:
    """What :func:`publish_records` did: destination paths by outcome, and the records it left out."""

    written: list[Path] = field(default_factory=list)
    unchanged: list[Path] = field(default_factory=list)
    kept_newer: list[Path] = field(default_factory=list)
    not_ok: list[tuple[Path, str]] = field(default_factory=list)

    def summary(self) -> str:
        parts = [f"{len(self.written)} record(s) written", f"{len(self.unchanged)} unchanged"]
        if self.kept_newer:
            parts.append(f"{len(self.kept_newer)} kept (the published copy finished later)")
        if self.not_ok:
            parts.append(f"{len(self.not_ok)} not published (failed or incomplete runs)")
        return ", ".join(parts)


def parse_relocations(pairs: Iterable[str]) -> dict[str, str]:
    """``["OLD=NEW", ...]`` -> ``{OLD: NEW}``; a pair without ``=`` or with an empty OLD is a ValueError."""
    out = {}
    for pair in pairs:
        old, sep, new = pair.partition("=")
        if not sep or not old:
            raise ValueError(f"--relocate {pair!r}: expected OLD=NEW, e.g. /data/scene15=../shared/data/scene15")
        out[old] = new
    return out


def _relocate(value: Any, relocations: dict[str, str]) -> Any:
    """``value`` with every string's leading OLD prefix replaced by NEW (longest OLD first), recursively."""
    if isinstance(value, dict):
        return {k: _relocate(v, relocations) for k, v in value.items()}
    if isinstance(value, list):
        return [_relocate(v, relocations) for v in value]
    if isinstance(value, str):
        for old in sorted(relocations, key=len, reverse=True):
            if value == old or value.startswith(old.rstrip("/") + "/"):
                return relocations[old] + value[len(old):]
    return value


def _machine_paths(value: Any) -> Iterable[tuple[str, str]]:
    """(field, value) of every string that is an absolute path of this machine (exists, or under home)."""
    home = os.path.expanduser("~")
    for where, text in string_fields(value):
        if text.startswith("/") and "\n" not in text and len(text) < 4096 and (
                (home not in ("", "/") and text.startswith(home.rstrip("/") + "/")) or os.path.exists(text)):
            yield where, text


def published_copy(record: dict, relocations: dict[str, str]) -> dict:
    """A new record with relocated paths and the cache folder placeholder (``run_dir`` is the caller's to set)."""
    rec = _relocate(record, relocations)  # builds new dicts and lists: the record itself is left as it was
    extraction = (rec.get("descriptors") or {}).get("extraction") or {}
    if extraction.get("cache_dir"):
        extraction["cache_dir"] = CACHE_PLACEHOLDER
    return rec


class UncleanRecords(ValueError):
    """Records refused for publishing: dirty tree, no revision, or provenance missing (each named)."""


#: Files of a run published with its record (the diff only for a dirty tree).
RECORD_FILES = ("predictions.npz", "source.diff.gz")


def publish_records(run_paths: Iterable[Path | str], board_dir: Path | str,
                    relocations: dict[str, str] | None = None, allow_unclean: bool = False) -> PublishReport:
    """Copy the records a board keeps under ``run_paths`` to ``board_dir/records`` (see the module docstring)."""
    relocations = dict(relocations or {})
    records = load_records(run_paths)  # each read and validated once; an invalid one stops the publication
    unclean = []
    for path, record in records:
        problems = missing_provenance(record) if board_keeps(record) else []
        if problems and not allow_unclean and Path(board_dir, "records").resolve() not in path.parents:
            unclean.append(f"{path}: {'; '.join(problems)}")
    if unclean:
        raise UncleanRecords(f"{len(unclean)} record(s) not publishable (rerun them from a clean commit, or pass "
                             f"--allow-unclean-records to publish them marked on the board):\n"
                             + "\n".join(f"  {u}" for u in unclean))
    board_dir = Path(board_dir)
    records_dir = board_dir / "records"
    report = PublishReport()
    for path, record in records:
        if records_dir.resolve() in path.parents:  # already published here
            continue
        if not board_keeps(record):
            report.not_ok.append((path, str(record.get("status"))))
            continue
        rec = published_copy(record, relocations)
        problems = missing_provenance(record)
        if problems:  # only reached with allow_unclean: the board marks the row
            rec["publication"] = {"unclean": problems}
        group = path.parent.parent.name
        rel = Path(group) / f"{setting_key(rec.get('setting') or {}, rec.get('seed'))}_s{rec.get('seed')}"
        rec["run_dir"] = str(Path("records") / rel)
        leftover = [f"{f} = {v}" for f, v in _machine_paths(rec)]
        if leftover:
            raise ValueError(f"{path}: would publish this machine's path(s) {'; '.join(leftover)}; "
                             f"map them with --relocate OLD=NEW")
        secrets = secret_problems(rec)
        if secrets:
            raise ValueError(f"{path}: would publish a secret: {'; '.join(secrets)}; rerun it with this "
                             f"lfabench (which records ${{oc.env:...}} as written) or leave it out")
        dest = records_dir / rel / RESULT_FILE
        if "digest" in rec:
            rec["digest"] = content_digest(rec)
        text = json.dumps(rec, indent=2) + "\n"
        if dest.is_file():
            if dest.read_text() == text:
                report.unchanged.append(dest)
                continue
            try:
                published = read_record(dest)
            except ValueError:
                published = {}
            if str(published.get("finished_at") or "") > str(rec.get("finished_at") or ""):
                report.kept_newer.append(dest)
                continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        for name in RECORD_FILES:  # the files the record names (digests inside it), before the record itself
            if (path.parent / name).is_file():
                confined(path.parent, path.parent / name, f"{name} of {path}")  # a link out is never published
                shutil.copyfile(path.parent / name, dest.parent / f".{name}.tmp")
                os.replace(dest.parent / f".{name}.tmp", dest.parent / name)
        write_text_atomic(dest, text)
        report.written.append(dest)
    return report
