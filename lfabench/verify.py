"""``lfabench verify BOARD``: check a published board from its files alone, recomputing without rerunning.

For each board in the folder (one per ``<name>-outputs.txt``) and every record under ``BOARD/records``:

1. the record is valid (:func:`lfabench.record.validate_record`: format, types, finite metrics in range);
2. it is of the current format (a schema-1 record has no digest, predictions or provenance: reported
   as old-format), from a clean commit with complete provenance
   (:func:`lfabench.provenance.missing_provenance`; ``allow_unclean``: a note);
3. its ``digest`` is the sha256 of its canonical content; ``predictions.npz`` and ``source.diff.gz`` have
   the sha256 the record names; the predictions' fingerprint is the record's;
4. every metric recomputes from the predictions (:func:`lfabench.evaluation.recompute_metrics`) to the
   recorded value, and no metric is left unrecomputed;
5. the board's record manifest (``<name>-records.json``) lists exactly these records with these digests;
6. a rebuild from the records (into a temporary copy laid out as the board was, with the command the
   manifest states) writes every file of the board byte for byte (the page's generation time aside):
   each cell follows from the metrics.

7. what the files cannot forge by themselves (:mod:`lfabench.verify_world`): each revision is a commit of this
   checkout and an ancestor of its HEAD, every setting of a table holds every seed of the table, and the
   stored splits, labels and ground truth are the dataset's (embedded datasets always; ``check_data``: those on
   disk).

These prove integrity and consistency, not authenticity: a record changed consistently (predictions,
metrics, digests, manifest, page) passes; only a rerun (:mod:`lfabench.reproduce`) shows it.

A board is read as data (:mod:`lfabench.boardfiles`): every path it names stays inside its folder, the
manifest's sources included; an ``.npz``'s array headers are checked against the record's counts before any
array is read; a file whose sha256 failed is not read further. Each discrepancy is one :class:`Finding`
naming the file and the field, and whatever a file makes a check raise is one too, never a traceback.
Records without predictions (an evaluator that gives none) cannot be recomputed: a note, not a discrepancy.

:func:`discover_boards` finds every board folder under a root (``lfabench verify --all leaderboards``): a
folder with a record manifest is verified as above; one without any (published before the current record
format) is named as not verifiable.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import math
import os
import re
import shutil
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from .boardfiles import BoardFileError, confined, inside, load_npz
from .evaluation.prediction_shapes import byte_budget, check_declared
from .evaluation.predictions import predictions_fingerprint, recompute_metrics
from .leaderboard import build_leaderboard
from .leaderboard.manifest import manifest_path, read_manifest
from .provenance import missing_provenance
from .recordset import find_records
from .registry import get_plugin
from .verify_world import WorldCheck
from .record import DIFF_FILE, RESULT_FILE, VERIFIABLE_SCHEMA, content_digest, file_sha256, plugin_setting, read_record

#: Relative tolerance of a recomputed metric: the evaluators' own arithmetic, so equal to the last bits;
#: a JSON round trip of a float is exact, the margin only absorbs another summation order of the mean.
METRIC_RTOL = 1e-12


@dataclass
class Finding:
    """One discrepancy (or, with ``note``, something unverifiable that is not one) in a file."""

    path: str
    field: str
    problem: str
    note: bool = False

    def __str__(self) -> str:
        return f"{'note' if self.note else 'FAIL'}: {self.path}: {self.field}: {self.problem}"


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    n_records: int = 0
    n_recomputed: int = 0
    boards: list[str] = field(default_factory=list)

    @property
    def failures(self) -> list[Finding]:
        return [f for f in self.findings if not f.note]

    def add(self, path, field_name: str, problem: str, note: bool = False) -> None:
        self.findings.append(Finding(str(path), field_name, problem, note))


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=METRIC_RTOL, abs_tol=0.0)


def _diff_digest(diff: Path) -> str:
    """sha256 of a stored ``source.diff.gz``'s content, decompressed in blocks and never past its budget."""
    budget = diff_budget(diff.stat().st_size)
    h, n = hashlib.sha256(), 0
    with gzip.open(diff, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            n += len(block)
            if n > budget:
                raise BoardFileError(f"{diff}: decompresses to more than {budget:,} bytes: refused")
            h.update(block)
    return h.hexdigest()


def diff_budget(file_size: int) -> int:
    """The most bytes a stored diff of ``file_size`` bytes may decompress to (text diffs expand far less)."""
    return max(64 << 20, 256 * int(file_size))


def check_record_files(path: Path, report: Report, allow_old_format: bool = False,
                       allow_unclean: bool = False, world: WorldCheck | None = None) -> dict | None:
    """Checks 1-4 of the module docstring for one ``result.json``; returns the record when it is readable.

    Whatever the files hold, the result is findings: a file that cannot be checked (malformed, too large for
    what it claims, refused) is one, and the next record is checked."""
    try:
        return _check_record_files(path, report, allow_old_format, allow_unclean, world)
    except BoardFileError as exc:
        report.add(path, "file", str(exc))
    except Exception as exc:  # noqa: BLE001 -- a hostile file is a finding, never a traceback (MemoryError too)
        report.add(path, "record", f"could not be checked: {type(exc).__name__}: {exc}")
    return None


def _check_record_files(path: Path, report: Report, allow_old_format: bool, allow_unclean: bool,
                        world: WorldCheck | None) -> dict | None:
    try:
        rec = read_record(path)
    except ValueError as exc:
        report.add(path, "record", str(exc).removeprefix(f"{path}: "))
        return None
    if rec["schema_version"] < VERIFIABLE_SCHEMA:
        report.add(path, "schema_version", f"old-format record (schema_version {rec['schema_version']}): no "
                   f"digest, predictions or provenance; republish it from a clean commit", note=allow_old_format)
        return rec
    unclean = missing_provenance(rec)
    if unclean:
        report.add(path, "provenance", "unclean record: " + "; ".join(unclean), note=allow_unclean)
    if rec.get("digest") != content_digest(rec):
        report.add(path, "digest", "does not match the record's content (the record was changed after it was "
                   "written)" if rec.get("digest") else "missing")
    prov = rec.get("provenance") or {}
    if prov.get("dirty"):
        try:
            diff = inside(path.parent, prov.get("diff_file") or DIFF_FILE, "provenance.diff_file")
            if _diff_digest(diff) != prov.get("diff_sha256"):
                report.add(diff, "provenance.diff_sha256", "the stored diff is not the one the record names")
        except BoardFileError as exc:
            report.add(path, "provenance.diff_file", str(exc))
        except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
            report.add(path.parent / str(prov.get("diff_file") or DIFF_FILE), "provenance.diff_file",
                       f"the dirty tree's diff is missing or unreadable ({exc})")
    if rec["status"] != "ok":
        return rec
    pred = rec.get("predictions")
    if pred is None:
        report.add(path, "predictions", "none stored (the evaluator gives none): metrics not recomputed", note=True)
        return rec
    try:
        ppath = inside(path.parent, pred.get("file"), "predictions.file")
    except BoardFileError as exc:
        report.add(path, "predictions.file", str(exc))
        return rec
    if not ppath.is_file():
        report.add(ppath, "predictions.file", "missing")
        return rec
    if file_sha256(ppath) != pred.get("sha256"):
        report.add(ppath, "predictions.sha256", "the file is not the one the record names (changed or replaced): "
                   "not read further")
        return rec
    try:
        arrays = load_npz(ppath, lambda headers: check_declared(pred.get("kind"), rec.get("split"), headers),
                          byte_budget(ppath.stat().st_size))
        if (rec.get("fingerprints") or {}).get("predictions") not in (None, predictions_fingerprint(arrays)):
            report.add(ppath, "fingerprints.predictions", "the predictions' content differs from the record's")
        recomputed = recompute_metrics(arrays)
    except ValueError as exc:
        report.add(ppath, "predictions", str(exc).removeprefix(f"{ppath}: "))
        return rec
    report.n_recomputed += 1
    for name, value in rec["metrics"].items():
        if name not in recomputed:
            report.add(path, f"metrics.{name}", "not recomputable from the stored predictions")
        elif not _close(recomputed[name], value):
            report.add(path, f"metrics.{name}", f"recorded {value!r}, the predictions give {recomputed[name]!r}")
    for name in sorted(set(recomputed) - set(rec["metrics"])):
        report.add(path, f"metrics.{name}", "the predictions give it, the record lacks it")
    if world is not None:
        world.predictions(path, ppath, rec, arrays, report)
    return rec


def board_names(board_dir: Path) -> list[str]:
    """The boards built into ``board_dir`` (one per ``<name>-outputs.txt``)."""
    return sorted(p.name.removesuffix("-outputs.txt") for p in board_dir.glob("*-outputs.txt"))


@dataclass
class FoundBoards:
    """The board folders under a root: those with a record manifest, and those published before it existed."""

    verifiable: list[Path] = field(default_factory=list)
    legacy: list[Path] = field(default_factory=list)


def discover_boards(root: Path | str) -> FoundBoards:
    """Every folder at or under ``root`` holding a board (a ``<name>-outputs.txt``), ``records/`` trees aside.

    A folder is verifiable when at least one of its boards has its manifest (``<name>-records.json``); then
    :func:`verify_board` checks all of them, so a board beside it that lacks one is a discrepancy. A folder
    none of whose boards has a manifest is legacy: published before the current record format.
    """
    root = Path(root)
    found = FoundBoards()
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "records" and not d.startswith("."))
        names = sorted(f.removesuffix("-outputs.txt") for f in files if f.endswith("-outputs.txt"))
        if not names:
            continue
        folder = Path(folder)
        has_manifest = any(manifest_path(folder, n).is_file() for n in names)
        (found.verifiable if has_manifest else found.legacy).append(folder)
    return found


@contextlib.contextmanager
def _working_dir(path: Path):
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def _build_root(board_dir: Path, board_as_seen: str) -> Path | None:
    """The folder the board was built from: ``board_dir`` minus the relative path the manifest saw it as."""
    seen = Path(board_as_seen)
    if seen.is_absolute():
        return None
    parts = board_dir.resolve().parts
    if seen.parts and parts[len(parts) - len(seen.parts):] != seen.parts:
        return None
    return Path(*parts[:len(parts) - len(seen.parts)]) if seen.parts != (".",) else board_dir.resolve()


def _manifest_problem(manifest: dict, rel_board: Path) -> str | None:
    """Why a manifest's build cannot be replayed inside the board: its ``command``, ``board`` or ``sources`` of
    the wrong type, or a source outside the board's folder (absolute, ``..``, or another folder)."""
    if not isinstance(manifest.get("command"), str) or not isinstance(manifest.get("board"), str):
        return "its command and board must be text"
    sources = manifest.get("sources")
    if not isinstance(sources, list) or not sources or not all(isinstance(s, str) and s for s in sources):
        return "its sources must be a list of paths"
    for src in sources:
        rel = Path(src)
        if rel.is_absolute() or ".." in rel.parts or rel.parts[:len(rel_board.parts)] != rel_board.parts:
            return (f"its source {src!r} lies outside the board's folder ({rel_board.as_posix()}): a board is "
                    f"rebuilt from its own records only")
    return None


def _links_out(board_dir: Path, folder: Path) -> list[Path]:
    """Symbolic links under ``folder`` (not followed) that resolve outside ``board_dir``."""
    out = []
    for here, dirs, files in os.walk(folder):
        for entry in dirs + files:
            p = Path(here, entry)
            if p.is_symlink():
                try:
                    confined(board_dir, p)
                except BoardFileError:
                    out.append(p)
    return sorted(out)


def plugins_missing_here(records: Iterable[dict]) -> list[str]:
    """``"kind 'name'"`` for each plugin the records' settings name that this environment has not registered.

    A board's row labels (a parameter is shown where it is not the plugin's declared default) and its claim and
    rank sections (which methods are fully supervised, which way a metric is better) read the installed plugins,
    so without one of them a rebuild from the same records writes other files.
    """
    named = set()
    for rec in records:
        config = rec.get("setting") or rec.get("config")
        for kind, spec in (plugin_setting(config) if isinstance(config, dict) else {}).items():
            if isinstance(spec, dict) and isinstance(spec.get("name"), str):
                named.add((kind, spec["name"]))
    missing = []
    for kind, plugin in sorted(named):
        try:
            get_plugin(kind, plugin)
        except LookupError:
            missing.append(f"{kind} {plugin!r}")
    return missing


def check_rebuild(board_dir: Path, name: str, manifest: dict, report: Report,
                  records: Iterable[dict] = ()) -> None:
    """Check 6: rebuild into a temporary copy of the board's layout and compare every output, byte for byte.

    Where the rebuild differs and ``records`` name plugins this environment lacks, one more finding names them:
    the difference may be theirs, not the board's (:func:`plugins_missing_here`).
    """
    mpath = manifest_path(board_dir, name)
    root = _build_root(board_dir, manifest.get("board", "")) if isinstance(manifest.get("board"), str) else None
    records_dir = board_dir / "records"
    if root is None or not records_dir.is_dir():
        report.add(mpath, "board", "not rebuilt: the records do not lie in the board's "
                   "records/ folder, or the manifest names it by an absolute path")
        return
    rel_board = board_dir.resolve().relative_to(root)
    problem = _manifest_problem(manifest, rel_board)
    if problem:
        report.add(mpath, "sources", f"not rebuilt: {problem}")
        return
    listed = []
    for entry in (board_dir / f"{name}-outputs.txt").read_text(errors="replace").split():
        try:
            listed.append(inside(board_dir, entry, "listed output").relative_to(board_dir).as_posix())
        except BoardFileError as exc:
            report.add(board_dir / f"{name}-outputs.txt", "file", str(exc))
    links = set(_links_out(board_dir, records_dir))
    with tempfile.TemporaryDirectory(prefix="lfabench-verify-") as tmp:
        tmp_root = Path(tmp)
        shutil.copytree(records_dir, tmp_root / rel_board / "records", symlinks=False,
                        ignore=lambda d, names: [n for n in names if n == ".lfabench-run.lock" or Path(d, n) in links])
        with _working_dir(tmp_root):
            try:
                build_leaderboard(manifest["sources"], rel_board, name, command=manifest["command"])
            except Exception as exc:  # a board that cannot be rebuilt is itself the finding
                report.add(board_dir, "rebuild", f"the rebuild failed: {type(exc).__name__}: {exc}")
                return
        rebuilt_dir = tmp_root / rel_board
        rebuilt = set((rebuilt_dir / f"{name}-outputs.txt").read_text().split())
        for missing in sorted(set(listed) - rebuilt):
            report.add(board_dir / missing, "file", "listed in the board but not written by a rebuild")
        for extra in sorted(rebuilt - set(listed)):
            report.add(board_dir / extra, "file", "a rebuild writes it but the board lacks it")
        differs = False
        for fname in sorted(rebuilt & set(listed)):
            ours, theirs = board_dir / fname, rebuilt_dir / fname
            if not ours.is_file():
                report.add(ours, "file", "missing")
            elif _comparable(ours) != _comparable(theirs):
                differs = True
                report.add(ours, _first_difference(ours, theirs), "differs from what a rebuild from the records "
                           "writes")
    missing = plugins_missing_here(records) if differs else []
    if missing:
        report.add(board_dir, "plugins", f"the records name {', '.join(missing)}, not installed here: a board's "
                   "labels (parameters shown where not the plugin's default) and its claims read the installed "
                   "plugins, so the rebuild above may differ for that reason alone; install the package that "
                   "registers them (for lfabench's own optional plugins, `pip install -e '.[EXTRA]'` again, which "
                   "also refreshes the entry points) and verify again")


#: What a rebuild cannot write again: the static page's build stamp, the time it was generated and the lfabench
#: that generated it (the records' own versions are content, compared as everything else).
_PAGE_STAMP = re.compile(rb"Generated [0-9T:+.-]+ by lfabench [^ <]+")


def _comparable(path: Path) -> bytes:
    """A board file's bytes, the page's build stamp (generation time and builder's version) blanked."""
    data = path.read_bytes()
    return _PAGE_STAMP.sub(b"Generated (time) by lfabench (version)", data) if path.suffix == ".html" else data


def _first_difference(ours: Path, theirs: Path) -> str:
    """``line N`` of the first differing line of two text files (``content`` for binary files)."""
    if ours.suffix not in (".md", ".csv", ".json", ".txt", ".html"):
        return "content"
    a, b = ours.read_text(errors="replace").split("\n"), theirs.read_text(errors="replace").split("\n")
    for i, (x, y) in enumerate(zip(a, b), 1):
        if x != y:
            return f"line {i}"
    return f"line {min(len(a), len(b)) + 1}"


def verify_board(board_dir: Path | str, allow_old_format: bool = False, rebuild: bool = True,
                 allow_unclean: bool = False, check_data: bool = False) -> Report:
    """Every check of the module docstring for the board(s) in ``board_dir``; ``check_data``: also compare the
    stored splits, labels and ground truth with datasets on disk (the embedded ones are always compared)."""
    board_dir = Path(board_dir)
    report = Report()
    if not board_dir.is_dir():
        report.add(board_dir, "board", "no such folder")
        return report
    try:
        _verify_board(board_dir, report, allow_old_format, rebuild, allow_unclean, check_data)
    except Exception as exc:  # noqa: BLE001 -- whatever a board holds, the answer is a finding
        report.add(board_dir, "board", f"could not be checked further: {type(exc).__name__}: {exc}")
    return report


def _verify_board(board_dir: Path, report: Report, allow_old_format: bool, rebuild: bool, allow_unclean: bool,
                  check_data: bool) -> None:
    records_dir = board_dir / "records"
    try:
        confined(board_dir, records_dir, "records/")
    except BoardFileError as exc:
        report.add(records_dir, "records", str(exc))
        return
    found = find_records([records_dir]) if records_dir.is_dir() else []
    for link in _links_out(board_dir, records_dir) if records_dir.is_dir() else []:
        report.add(link, "file", "a symbolic link out of the board's folder: not read")
    records = [p for p in found if p.resolve().is_relative_to(board_dir.resolve())]
    if not found:
        report.add(board_dir, "records", "no records/ folder with run records: nothing to verify")
    digests, checked = {}, {}
    world = WorldCheck(check_data)
    for path in records:
        report.n_records += 1
        rec = check_record_files(path, report, allow_old_format, allow_unclean, world)
        if rec is not None:
            rel = path.relative_to(board_dir.resolve()).as_posix()
            digests[rel] = rec.get("digest")
            checked[path] = rec
    try:
        world.records(checked, report)
    except Exception as exc:  # noqa: BLE001 -- reported, and the board's files are still checked
        report.add(board_dir, "records", f"revisions and seeds could not be checked: {type(exc).__name__}: {exc}")
    names = board_names(board_dir)
    report.boards = names
    if not names:
        report.add(board_dir, "board", "no <name>-outputs.txt: not a board built by lfabench leaderboard")
    for name in names:
        try:
            _verify_board_files(board_dir, name, digests, report, allow_old_format, rebuild, checked.values())
        except BoardFileError as exc:
            report.add(board_dir, name, str(exc))
        except Exception as exc:  # noqa: BLE001 -- the next board of the folder is still checked
            report.add(board_dir, name, f"could not be checked further: {type(exc).__name__}: {exc}")


def _verify_board_files(board_dir: Path, name: str, digests: dict, report: Report, allow_old_format: bool,
                        rebuild: bool, records: Iterable[dict] = ()) -> None:
    """Checks 5 and 6 for board ``name``: its manifest against the records' digests, and the rebuild."""
    for own in (board_dir / f"{name}-outputs.txt", manifest_path(board_dir, name)):
        confined(board_dir, own, "board file")
    mpath = manifest_path(board_dir, name)
    if not mpath.is_file():
        report.add(mpath, "manifest", "missing: a board of the older format (republish it)", note=allow_old_format)
        return
    try:
        manifest = read_manifest(mpath)
    except ValueError as exc:
        report.add(mpath, "manifest", str(exc).removeprefix(f"{mpath}: "))
        return
    listed = {e.get("path"): e.get("digest") for e in manifest["records"] if isinstance(e, dict)}
    listed = {k: v for k, v in listed.items() if isinstance(k, str)}
    for rel in sorted(set(digests) - set(listed)):
        report.add(board_dir / rel, "manifest", f"a record the board's manifest ({mpath.name}) does not list")
    for rel in sorted(set(listed) - set(digests)):
        report.add(board_dir / rel, "manifest", f"listed in {mpath.name} but absent")
    for rel in sorted(set(listed) & set(digests)):
        if listed[rel] != digests[rel]:
            report.add(board_dir / rel, "digest", f"not the digest {mpath.name} lists for it")
    if rebuild:
        check_rebuild(board_dir, name, manifest, report, records)


__all__ = ["Finding", "Report", "FoundBoards", "verify_board", "discover_boards", "check_record_files", "RESULT_FILE"]
