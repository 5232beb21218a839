"""Files a board or a record names, read as untrusted data: confined to the board's folder, sized before read.

A published board is made by someone else. Every path it names (a record's ``predictions.file`` and
``provenance.diff_file``, ``prototypes.file``, a manifest's ``sources``, the files ``<name>-outputs.txt``
lists) is resolved by :func:`inside`: a relative path without ``..`` that stays, symbolic links followed,
within the folder it is relative to. A file found by walking a board is held to the same rule by
:func:`confined`.

A ``.npz`` (a zip of ``.npy`` members) is read by :func:`load_npz` in two passes: first every member's
``.npy`` header (shape and dtype, a few hundred bytes decompressed), checked by the caller against what the
record says the arrays hold (their counts) and against a byte budget, and only then the arrays. An array is
never allocated from a header that was not checked, a member that holds more or fewer bytes than its header
declares is refused, and no pickled (object) array is read. Every refusal is a :class:`BoardFileError` (a
``ValueError``) naming the file and the member.
"""

from __future__ import annotations

import math
import os
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["BoardFileError", "ArrayHeader", "inside", "confined", "npz_headers", "load_npz", "MAX_HEADER_BYTES",
           "MAX_MEMBERS"]

#: The longest ``.npy`` header read (numpy's own default limit).
MAX_HEADER_BYTES = 10_000
#: The most members an ``.npz`` of lfabench holds is a dozen; more is refused before any is opened.
MAX_MEMBERS = 64


class BoardFileError(ValueError):
    """A path or file of a board refused as unsafe or malformed (the message names it)."""


def _within(path: Path, base: Path) -> bool:
    try:
        path.resolve().relative_to(base.resolve())
        return True
    except (ValueError, OSError, RuntimeError):  # RuntimeError: a symbolic link loop
        return False


def inside(base: Path | str, name: object, what: str = "path") -> Path:
    """``base / name`` when ``name`` is a relative path without ``..`` that stays inside ``base`` once every
    symbolic link is followed; else a :class:`BoardFileError` naming ``what`` and the path. The file need
    not exist."""
    base = Path(base)
    if not isinstance(name, str) or not name or "\0" in name:
        raise BoardFileError(f"{base}: {what} {name!r} is not a file name")
    rel = Path(name)
    if rel.is_absolute() or rel.drive or ".." in rel.parts:
        raise BoardFileError(f"{base}: {what} {name!r} leaves the board's folder (an absolute path or '..'): refused")
    full = base / rel
    if not _within(full, base):
        raise BoardFileError(f"{full}: {what} leaves the board's folder through a symbolic link: refused")
    return full


def confined(base: Path | str, path: Path | str, what: str = "file") -> Path:
    """``path`` (found under ``base``) when it resolves inside ``base``; else a :class:`BoardFileError`."""
    if not _within(Path(path), Path(base)):
        raise BoardFileError(f"{path}: {what} leaves the board's folder through a symbolic link: refused")
    return Path(path)


@dataclass(frozen=True)
class ArrayHeader:
    """What one ``.npy`` member of an ``.npz`` declares, read without reading its data."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    fortran_order: bool
    member_size: int              # the uncompressed size the zip declares for the member

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize


def _read_header(fp, path: Path, member: str):
    fmt = np.lib.format
    version = fmt.read_magic(fp)
    if version == (1, 0):
        return fmt.read_array_header_1_0(fp, max_header_size=MAX_HEADER_BYTES)
    if version == (2, 0):
        return fmt.read_array_header_2_0(fp, max_header_size=MAX_HEADER_BYTES)
    raise BoardFileError(f"{path}: member {member!r}: .npy format version {version} is not read")


def npz_headers(path: Path | str) -> dict[str, ArrayHeader]:
    """Every array an ``.npz`` holds, by name, from the members' headers alone (module docstring)."""
    path = Path(path)
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
            if len(infos) > MAX_MEMBERS:
                raise BoardFileError(f"{path}: {len(infos)} members (at most {MAX_MEMBERS} are read)")
            headers: dict[str, ArrayHeader] = {}
            for info in infos:
                if not info.filename.endswith(".npy") or info.is_dir():
                    raise BoardFileError(f"{path}: member {info.filename!r} is not a .npy array")
                name = info.filename[:-4]
                if name in headers:
                    raise BoardFileError(f"{path}: member {info.filename!r} appears twice")
                with zf.open(info) as fp:
                    try:
                        shape, fortran, dtype = _read_header(fp, path, info.filename)
                    except (ValueError, EOFError, SyntaxError) as exc:  # numpy: a malformed header
                        raise BoardFileError(f"{path}: member {info.filename!r}: not a .npy header "
                                             f"({type(exc).__name__}: {exc})") from exc
                    offset = fp.tell()
                if dtype.hasobject:
                    raise BoardFileError(f"{path}: member {info.filename!r} holds Python objects (a pickle): refused")
                header = ArrayHeader(name, tuple(int(n) for n in shape), dtype, bool(fortran), info.file_size)
                if offset + header.nbytes != info.file_size:
                    raise BoardFileError(
                        f"{path}: member {info.filename!r} declares a {dtype.str} array of shape {header.shape} "
                        f"({header.nbytes:,} bytes) in a member of {info.file_size - offset:,} bytes")
                headers[name] = header
            return headers
    except BoardFileError:
        raise
    except (OSError, EOFError, ValueError, zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError,
            RuntimeError) as exc:  # numpy refuses a malformed header with ValueError; zipfile a bad archive
        raise BoardFileError(f"{path}: not a readable .npz ({type(exc).__name__}: {exc})") from exc


def load_npz(path: Path | str, check: Callable[[dict[str, ArrayHeader]], None] | None = None,
             max_bytes: int | None = None) -> dict[str, np.ndarray]:
    """The arrays of an ``.npz``, read only after their headers passed: the total of the declared sizes within
    ``max_bytes`` and ``check(headers)`` (raising a ``ValueError`` for arrays the caller does not expect).
    A :class:`BoardFileError` names the file for every refusal."""
    path = Path(path)
    headers = npz_headers(path)
    if check is not None:
        try:
            check(headers)
        except BoardFileError:
            raise
        except ValueError as exc:
            raise BoardFileError(f"{path}: {exc}: refused before decompressing") from exc
    total = sum(h.nbytes for h in headers.values())
    if max_bytes is not None and total > max_bytes:
        raise BoardFileError(f"{path}: its arrays declare {total:,} bytes, more than the {max_bytes:,} this "
                             f"{os.path.getsize(path):,}-byte file may hold: refused before decompressing")
    try:
        with zipfile.ZipFile(path) as zf:
            out = {}
            for name in headers:
                with zf.open(f"{name}.npy") as fp:
                    out[name] = np.lib.format.read_array(fp, allow_pickle=False, max_header_size=MAX_HEADER_BYTES)
            return out
    except (OSError, EOFError, ValueError, zipfile.BadZipFile, RuntimeError) as exc:  # zipfile: bad CRC
        raise BoardFileError(f"{path}: unreadable .npz ({type(exc).__name__}: {exc})") from exc
