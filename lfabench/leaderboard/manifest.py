"""A board's record manifest, ``<name>-records.json``: every record the board was built from, with its digest.

Written by every build beside the tables (:func:`write_manifest`), read by ``lfabench verify``
(:mod:`lfabench.verify`)::

    {"manifest_format": 1,
     "command": "lfabench leaderboard leaderboards/x/records --out leaderboards/x --name x",
     "board": "leaderboards/x",            # the output folder as the build saw it (relative to its folder)
     "sources": ["leaderboards/x/records"],  # the record paths it was given, likewise
     "records": [{"path": "records/g/k_s0/result.json",   # relative to the board where it lies inside it
                  "schema_version": 2, "digest": "<sha256 of the canonical record>",
                  "predictions_sha256": "<sha256 of predictions.npz>" | null}, ...]}

A record of the older format (schema 1) has no digest: ``digest`` is null there, and ``verify`` reports it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

from ..recordset import RecordSet
from ..storage import write_text_atomic

MANIFEST_FORMAT = 1


def manifest_path(out_dir: Path, name: str) -> Path:
    return Path(out_dir) / f"{name}-records.json"


def _relative(path: Path, base: Path) -> str:
    """``path`` relative to ``base`` where it lies under it, else as given."""
    try:
        return Path(path).resolve().relative_to(Path(base).resolve()).as_posix()
    except ValueError:
        return str(path)


def _as_seen(path: Path | str) -> str:
    """A path as the build's working folder sees it: relative to it when under it (no machine's home)."""
    return _relative(Path(path), Path.cwd()) if Path(path).is_absolute() or Path(path).exists() else str(path)


def manifest(records: RecordSet, out_dir: Path, command: str, sources: Iterable[str]) -> dict:
    """The manifest of a build from ``records`` (every record it read, counted or not) into ``out_dir`` (module
    docstring)."""
    entries = []
    for path, rec in sorted(records, key=lambda item: _relative(item[0], out_dir)):
        predictions = rec.get("predictions") if isinstance(rec.get("predictions"), dict) else {}
        entries.append({"path": _relative(path, out_dir), "schema_version": rec.get("schema_version"),
                        "digest": rec.get("digest"), "predictions_sha256": predictions.get("sha256")})
    return {"manifest_format": MANIFEST_FORMAT, "command": command, "board": _as_seen(out_dir),
            "sources": [_as_seen(s) for s in sources], "records": entries}


def write_manifest(records: RecordSet, out_dir: Path, name: str, command: str, sources: Iterable[str]) -> Path:
    path = manifest_path(out_dir, name)
    write_text_atomic(path, json.dumps(manifest(records, out_dir, command, sources), indent=1) + "\n")
    return path


def read_manifest(path: Path) -> dict:
    """A manifest, checked for its format (a ValueError naming the file otherwise)."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: unreadable record manifest ({exc})") from exc
    if not isinstance(data, dict) or data.get("manifest_format") != MANIFEST_FORMAT \
            or not isinstance(data.get("records"), list):
        raise ValueError(f"{path}: not a record manifest of format {MANIFEST_FORMAT}")
    return data


__all__ = ["MANIFEST_FORMAT", "manifest", "manifest_path", "read_manifest", "write_manifest"]
