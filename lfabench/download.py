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


def dataset_dir(name: str) -> Path:
    return data_root() / name


def _check_member_path(target: Path, name: str, archive: Path) -> Path:
    dest = (target / name).resolve()
    if os.path.isabs(name) or not (dest == target or target in dest.parents):
        raise UnsafeArchiveError(f"{archive}: member {name!r} would be written outside {target}")
    return dest


def safe_extract(archive: Path | str, target: Path | str) -> list[str]:
    """Extract a tar (any compression) or zip archive into ``target``; returns the member names.

    Refuses (before writing anything) absolute names, ``..`` escapes, symbolic or hard links whose
    destination leaves ``target``, and device or FIFO members.
    """
    archive, target = Path(archive), Path(target)
    target.mkdir(parents=True, exist_ok=True)
    target = target.resolve()
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            names = zf.namelist()
            for n in names:
                _check_member_path(target, n, archive)
                mode = (zf.getinfo(n).external_attr >> 16) & 0o170000
                if mode == 0o120000:
                    raise UnsafeArchiveError(f"{archive}: member {n!r} is a symbolic link")
            zf.extractall(target)
        return names
    with tarfile.open(archive) as tf:
        members = tf.getmembers()
        for m in members:
            dest = _check_member_path(target, m.name, archive)
            if m.issym() or m.islnk():
                link_base = dest.parent if m.issym() else target
                link_dest = (link_base / m.linkname).resolve()
                if os.path.isabs(m.linkname) or not (link_dest == target or target in link_dest.parents):
                    raise UnsafeArchiveError(f"{archive}: link {m.name!r} -> {m.linkname!r} points outside {target}")
            elif not (m.isfile() or m.isdir()):
                raise UnsafeArchiveError(f"{archive}: member {m.name!r} is a device or FIFO")
        if hasattr(tarfile, "data_filter"):
            tf.extractall(target, members=members, filter="data")
        else:  # pragma: no cover - Python < 3.11.4: the checks above are the filter
            tf.extractall(target, members=members)
        return [m.name for m in members]


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
