"""Downloading datasets from their official sources (pooch), extracting archives safely, verifying copies.

Each dataset plugin declares its own downloads (``PluginSpec(..., sources=[Resource(...)], manual=...)``);
this module only fetches, extracts and verifies what it is given. Checksums are the ones published by well-known loaders (torchvision's VOC loader for the VOC 2007
tars; the CUB-200-2011 loaders of torchvision-based projects for ``CUB_200_2011.tgz``) or measured
on a real copy (``gnd_oxford5k.pkl``, md5 recorded in ``shared/data/README.md``). Where no checksum
is published (Oxford images and ground-truth tars, the Holidays tars) pooch downloads without one and
:func:`verify` checks the counts the dataset plugin expects instead. Fifteen Scene has no official
archive that is still online: ``lfabench data add scene15 PATH`` is the way in.

Downloads go to ``<dataset folder>/.downloads/`` and are kept: an interrupted fetch re-downloads
only the archives that are missing (pooch writes each file to a temporary name first), and an
archive already there is re-checked against its checksum instead of downloaded again.

Offline, :func:`fetch` fails on the first archive at once (short connect timeout) with the URL and
the manual alternative.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from .dataroot import data_root


@dataclass(frozen=True)
class Resource:
    """One file a dataset plugin downloads (declared in its ``PluginSpec(sources=[...])``)."""

    url: str
    filename: str
    known_hash: str | None  # "md5:..." / "sha256:..." or None where nothing is published
    extract_to: str | None  # folder (relative to the dataset folder) to extract into; None: keep the file there
    hash_source: str = ""


class FetchError(RuntimeError):
    """A download failed (offline, moved, or checksum mismatch); the message gives the URL and the manual way."""


class UnsafeArchiveError(ValueError):
    """An archive member would land outside the target folder, or is a link/device."""


class ArchiveTooLargeError(UnsafeArchiveError):
    """An archive would expand past the extraction limits (a decompression bomb, or a header that lies)."""


#: Most bytes one archive may expand to. The largest archive a dataset plugin declares (Oxford's images,
#: VOC 2007) expands to a few GB; 64 GiB leaves room for a large third-party dataset, not for a bomb.
MAX_EXTRACT_BYTES = 64 << 30

#: Largest ratio of expanded bytes to archive bytes. Images and descriptor files compress by 1-3x, text
#: ground truth by ~10x; a zip bomb by 1000x or more.
MAX_EXTRACT_RATIO = 100.0

#: Below this many expanded bytes the ratio is not checked (a tiny archive of a text file may compress well).
RATIO_EXEMPT_BYTES = 16 << 20

_BLOCK = 1 << 20


def _limits(archive: Path, declared: list[tuple[str, int]], max_bytes: int, max_ratio: float) -> None:
    """Refuse, before anything is written, an archive whose members' declared sizes pass a limit."""
    total, size = 0, max(archive.stat().st_size, 1)
    for name, n in declared:
        total += max(int(n), 0)
        if total > max_bytes:
            raise ArchiveTooLargeError(f"{archive}: expands to more than {max_bytes} bytes (the limit) at member "
                                       f"{name!r}; nothing was extracted")
    if total > RATIO_EXEMPT_BYTES and total / size > max_ratio:
        raise ArchiveTooLargeError(f"{archive}: expands {total / size:.0f}x ({total} bytes from {size}), past the "
                                   f"limit of {max_ratio:g}x (a decompression bomb?); nothing was extracted")


class _Budget:
    """Bytes still allowed while extracting (headers can lie: what is really written is counted too)."""

    def __init__(self, archive: Path, max_bytes: int, max_ratio: float):
        self.archive, self.left = archive, max_bytes
        size = max(archive.stat().st_size, 1)
        self.ratio_left = max(max_ratio * size, RATIO_EXEMPT_BYTES) if max_ratio else float("inf")
        self.max_bytes, self.max_ratio = max_bytes, max_ratio

    def spend(self, name: str, n: int, declared: int | None, written: int) -> None:
        self.left -= n
        self.ratio_left -= n
        if declared is not None and written > declared:
            raise ArchiveTooLargeError(f"{self.archive}: member {name!r} holds more than the {declared} bytes its "
                                       f"header declares; extraction stopped and its files removed")
        if self.left < 0 or self.ratio_left < 0:
            raise ArchiveTooLargeError(f"{self.archive}: member {name!r} takes the archive past the extraction limit "
                                       f"({self.max_bytes} bytes, {self.max_ratio:g}x its size); extraction stopped "
                                       f"and its files removed")


def _remove_written(files: list[Path], dirs: list[Path]) -> None:
    """Undo an extraction that was refused half-way: the files it wrote, then the folders it made (if empty)."""
    for f in files:
        if f.is_file() or f.is_symlink():
            f.unlink()
    for d in sorted(dirs, key=lambda p: len(p.parts), reverse=True):
        try:
            d.rmdir()
        except OSError:
            pass


def _new_dirs(target: Path, dest: Path) -> list[Path]:
    """The folders between ``target`` and ``dest`` (itself included) that do not exist yet."""
    out = []
    for p in [dest, *dest.parents]:
        if p == target or target not in p.parents:
            break
        if not p.exists():
            out.append(p)
    return out


def dataset_dir(name: str) -> Path:
    return data_root() / name


def _check_member_path(target: Path, name: str, archive: Path) -> Path:
    dest = (target / name).resolve()
    if os.path.isabs(name) or not (dest == target or target in dest.parents):
        raise UnsafeArchiveError(f"{archive}: member {name!r} would be written outside {target}")
    return dest


def _norm(name: str) -> str:
    return "/".join(p for p in name.split("/") if p not in ("", "."))


def _virtual_resolve(parts: list[str], links: dict[str, str], follow_last: bool = True,
                     depth: int = 0) -> list[str] | None:
    """``parts`` (a path inside the archive root) with the archive's symbolic ``links`` followed.

    Returns the resolved components, or ``None`` when the path leaves the root (or loops). With
    ``follow_last=False`` a link in the last place is not followed (the member replaces it).
    """
    if depth > 40:
        return None
    out: list[str] = []
    for i, part in enumerate(parts):
        if part in ("", "."):
            continue
        if part == "..":
            if not out:
                return None
            out.pop()
            continue
        out.append(part)
        link = links.get("/".join(out))
        if link is not None and (follow_last or i < len(parts) - 1):
            if os.path.isabs(link):
                return None
            resolved = _virtual_resolve(out[:-1] + link.split("/"), links, True, depth + 1)
            if resolved is None:
                return None
            out = resolved
    return out


def safe_extract(archive: Path | str, target: Path | str, max_bytes: int = MAX_EXTRACT_BYTES,
                 max_ratio: float = MAX_EXTRACT_RATIO) -> list[str]:
    """Extract a tar (any compression) or zip archive into ``target``; returns the member names.

    Refuses (before writing anything, on every Python, with or without tarfile's ``data`` filter)
    absolute names, ``..`` escapes, symbolic or hard links whose destination leaves ``target`` (also
    through a chain of the archive's own links), and device or FIFO members.

    Decompression bombs: the members' declared sizes may not add up to more than ``max_bytes``, nor to
    more than ``max_ratio`` times the archive's size (checked before writing); what is really written is
    counted as it is written, and a member that holds more than its header declares, or passes either
    limit, stops the extraction. A refused extraction removes the files it wrote. Either is an
    :class:`ArchiveTooLargeError` naming the archive and the member.
    """
    archive, target = Path(archive), Path(target)
    target.mkdir(parents=True, exist_ok=True)
    target = target.resolve()
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            infos = zf.infolist()
            for info in infos:
                _check_member_path(target, info.filename, archive)
                mode = (info.external_attr >> 16) & 0o170000
                if mode == 0o120000:
                    raise UnsafeArchiveError(f"{archive}: member {info.filename!r} is a symbolic link")
            _limits(archive, [(i.filename, i.file_size) for i in infos], max_bytes, max_ratio)
            _extract_zip(zf, infos, archive, target, _Budget(archive, max_bytes, max_ratio))
        return [i.filename for i in infos]
    with tarfile.open(archive) as tf:
        members = tf.getmembers()
        # The archive's own symbolic links, resolved without touching the disk: a chain such as
        # `a -> .`, `b -> a/..`, `b/evil.txt` looks harmless link by link on an empty target.
        links = {_norm(m.name): m.linkname for m in members if m.issym()}
        for m in members:
            _check_member_path(target, m.name, archive)
            parts = _norm(m.name).split("/")
            inside = _virtual_resolve(parts[:-1], links) if m.issym() else _virtual_resolve(parts, links, follow_last=False)
            if inside is None:
                raise UnsafeArchiveError(f"{archive}: member {m.name!r} would be written outside {target} "
                                         f"through the archive's links")
            if m.issym() or m.islnk():
                base = inside if m.issym() else []
                if os.path.isabs(m.linkname) or _virtual_resolve(base + m.linkname.split("/"), links) is None:
                    raise UnsafeArchiveError(f"{archive}: link {m.name!r} -> {m.linkname!r} points outside {target}")
            elif not (m.isfile() or m.isdir()):
                raise UnsafeArchiveError(f"{archive}: member {m.name!r} is a device or FIFO")
        _limits(archive, [(m.name, m.size) for m in members if m.isfile()], max_bytes, max_ratio)
        _extract_tar(tf, members, archive, target, _Budget(archive, max_bytes, max_ratio))
        return [m.name for m in members]


def _extract_zip(zf: zipfile.ZipFile, infos, archive: Path, target: Path, budget: _Budget) -> None:
    """Write the members of ``zf`` block by block, counting (a member's bytes are never trusted to its header)."""
    files: list[Path] = []
    dirs: list[Path] = []
    try:
        for info in infos:
            dest = _check_member_path(target, info.filename, archive)
            if info.is_dir():
                dirs += _new_dirs(target, dest)
                dest.mkdir(parents=True, exist_ok=True)
                continue
            dirs += _new_dirs(target, dest.parent)
            dest.parent.mkdir(parents=True, exist_ok=True)
            files.append(dest)
            written = 0
            with zf.open(info) as src, open(dest, "wb") as out:
                while block := src.read(_BLOCK):
                    written += len(block)
                    budget.spend(info.filename, len(block), info.file_size, written)
                    out.write(block)
    except zipfile.BadZipFile as exc:  # e.g. a header whose size disagrees with the data (bad CRC)
        _remove_written(files, dirs)
        raise UnsafeArchiveError(f"{archive}: member {info.filename!r} is corrupt ({exc}); extraction stopped "
                                 f"and its files removed") from exc
    except BaseException:
        _remove_written(files, dirs)
        raise


def _extract_tar(tf: tarfile.TarFile, members, archive: Path, target: Path, budget: _Budget) -> None:
    """Extract member by member (tarfile's ``data`` filter where it exists), counting what each one wrote."""
    files: list[Path] = []
    dirs: list[Path] = []
    try:
        for m in members:
            dest = target / _norm(m.name)
            dirs += _new_dirs(target, dest if m.isdir() else dest.parent)
            if not m.isdir():
                files.append(dest)
            if hasattr(tarfile, "data_filter"):
                tf.extract(m, target, filter="data")
            else:  # pragma: no cover - Python < 3.11.4: the checks above are the filter
                tf.extract(m, target)
            if m.isfile():
                n = dest.stat().st_size
                budget.spend(m.name, n, m.size, n)
    except BaseException:
        _remove_written(files, dirs)
        raise


def fetch(name: str, sources: list[Resource], manual: str = "", dest: Path | str | None = None,
          timeout: float = 15.0, progress: bool = True) -> Path:
    """Download ``sources`` of dataset ``name`` and extract them into ``dest`` (default ``<data root>/<name>``).

    Returns the dataset folder. No sources: a :class:`FetchError` with ``manual`` (how to get it by hand).
    """
    import pooch

    target = Path(dest) if dest is not None else dataset_dir(name)
    if not sources:
        raise FetchError(f"dataset {name!r} cannot be fetched: {manual or 'its plugin declares no download source'}")
    downloads = target / ".downloads"
    for res in sources:
        if res.url.startswith("ftp://"):
            downloader = pooch.FTPDownloader(timeout=timeout, progressbar=progress)
        else:
            downloader = pooch.HTTPDownloader(timeout=timeout, progressbar=progress)
        try:
            path = Path(pooch.retrieve(res.url, known_hash=res.known_hash, fname=res.filename, path=downloads,
                                       downloader=downloader, progressbar=progress))
        except Exception as exc:  # noqa: BLE001 - network, HTTP, checksum: all end in the same advice
            raise FetchError(
                f"could not download {res.url} for dataset {name!r} ({type(exc).__name__}: {exc}). Manual "
                f"alternative: download it yourself (e.g. `curl -O {res.url}`), place it as {downloads / res.filename}"
                f" and rerun `lfabench data fetch {name}`, or unpack a complete copy anywhere and run "
                f"`lfabench data add {name} PATH`.") from exc
        if res.extract_to is not None:
            safe_extract(path, target / res.extract_to)
        else:  # a plain file: a copy beside the data, the download kept so a rerun is a checksum check
            shutil.copy2(path, target / res.filename)
    return target


def file_hash(path: Path, algorithm: str) -> str:
    import hashlib

    h = hashlib.new(algorithm)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify_checksums(sources: list[Resource], root: Path) -> list[tuple[str, str]]:
    """``(file, status)`` for every file of ``sources`` present under ``root`` (or its ``.downloads``)."""
    out = []
    for res in sources:
        for cand in (root / ".downloads" / res.filename, root / res.filename):
            if cand.is_file():
                if res.known_hash is None:
                    out.append((str(cand), "present (no published checksum)"))
                else:
                    alg, _, want = res.known_hash.partition(":")
                    got = file_hash(cand, alg)
                    out.append((str(cand), f"{alg} OK" if got == want else f"{alg} MISMATCH (got {got}, want {want})"))
                break
    return out
