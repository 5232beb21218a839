"""Storage: the one atomic file writer, the array cache, and the fitted-array cache (no pickle anywhere).

Every file lfabench writes (run records, cache entries, descriptor chunks, the data registry,
leaderboards, plots) goes through :func:`atomic_write`: a temporary file in the target folder,
flushed and fsynced, then renamed over the target, so a reader never sees a half-written file and a
crash leaves either the old file or the new one.

Every cache entry lives under a name derived from exactly the configuration that
produced it (hloc style): ``<kind>-<readable tag>-<sha256 of the parts>``, where
the parts always include lfabench's version. A rerun with the same parts reuses
the entry; any change of parts gives a new name, so nothing stale is reused.

An entry is ``<name>.npz`` (arrays, loaded with ``allow_pickle=False``) plus
``<name>.json`` (metadata: the parts, creation time, sizes). Both are written
to temporary files and renamed, so concurrent runs sharing a cache never see a
half-written entry; the ``.json`` is written last and marks the entry complete.

The ``.json`` carries the format tag ``"lfabench_cache": 1`` and the sha256 of the arrays
(:func:`arrays_digest`). Loading checks the digest: an entry whose arrays are not what was stored
(edited, replaced, bit rot) is reported by a warning naming it and treated as absent, so the caller
computes it again and overwrites it. ``lfabench cache clear`` removes only what carries this proof
(:meth:`ArrayCache.entries`, :meth:`ArrayCache.foreign`), never follows a symbolic link, and leaves a
folder that also holds files lfabench did not write alone unless told to skip them.

A cache write that fails (disk full, no permission) is a warning naming the entry's path; the run goes
on without storing it.

Root: ``$LFABENCH_CACHE``, else ``$XDG_CACHE_HOME/lfabench``, else ``~/.cache/lfabench``.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import os
import re
import tempfile
import time
import warnings
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ._version import __version__


@contextmanager
def atomic_write(path: Path | str, mode: str = "w") -> Iterator[Any]:
    """Open a temporary file beside ``path`` for writing; on success fsync it and rename it over ``path``.

    ``mode`` is ``"w"`` (text, UTF-8) or ``"wb"``. On any exception the temporary file is removed
    and ``path`` is left as it was; an ``OSError`` (ENOSPC...) comes out as a :class:`WriteError` naming ``path``.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write: mode must be 'w' or 'wb', got {mode!r}")
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise WriteError(exc.errno, exc.strerror or str(exc), str(path)) from exc
    try:
        with os.fdopen(fd, mode, **({"encoding": "utf-8"} if mode == "w" else {})) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600 files; a written file gets the usual mode
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError) and not isinstance(exc, WriteError):
            # a full disk says "[Errno 28] No space left on device" and nothing about where: name the file
            raise WriteError(exc.errno, exc.strerror or str(exc), str(path)) from exc
        raise


class WriteError(OSError):
    """Writing a file failed (disk full, read-only, no permission); ``filename`` is the file that was being
    written, so the message names it: ``[Errno 28] No space left on device: '<path>'``."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text_atomic(path: Path | str, text: str) -> None:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_write`)."""
    with atomic_write(path) as fh:
        fh.write(text)


def write_json_atomic(path: Path | str, payload: Any) -> None:
    """Write ``payload`` as indented JSON to ``path`` atomically (see :func:`atomic_write`)."""
    with atomic_write(path) as fh:
        json.dump(payload, fh, indent=2, default=str)
        fh.write("\n")


def save_npz_atomic(path: Path | str, arrays: dict[str, np.ndarray]) -> None:
    """Write ``arrays`` to ``path`` as an uncompressed ``.npz`` atomically (see :func:`atomic_write`)."""
    with atomic_write(path, "wb") as fh:
        np.savez(fh, **arrays)


def fallback_dirs() -> list[Path]:
    """Where a file that could not be written where it belongs is saved instead, in order: the system's
    temporary folder (often another file system than a full data disk), then the home folder."""
    return [Path(tempfile.gettempdir()) / "lfabench-unsaved", Path.home() / "lfabench-unsaved"]


def save_fallback(intended: Path | str, payload: Any) -> Path | None:
    """Write ``payload`` (JSON) to the first :func:`fallback_dirs` folder that takes it, as
    ``<parent name>-<file name>`` with a time stamp; returns the path, or None when no folder took it."""
    intended = Path(intended)
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    for folder in fallback_dirs():
        target = folder / f"{intended.parent.name}-{stamp}-{intended.name}"
        try:
            write_json_atomic(target, payload)
        except OSError:
            continue
        return target
    return None


@contextmanager
def file_lock(path: Path | str, *, wait: bool) -> Iterator[Any]:
    """Hold an exclusive ``fcntl.flock`` on ``path`` (created, with its folder) for the block.

    Yields the open lock file (text, read-write) once the lock is held. With ``wait=False`` it yields
    ``None`` at once when another process holds the lock, and the caller must not do the locked work.
    The operating system releases the lock when its holder exits, killed or not, so a crash never
    leaves a stale lock; the file itself is kept (removing a file others may wait on breaks the
    exclusion). Where ``fcntl`` is missing (Windows) no lock is taken and the file is yielded as if held.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            yield fh
            return
        try:
            fcntl.flock(fh, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield None
            return
        try:
            yield fh
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def cache_root() -> Path:
    """The cache directory (not created)."""
    if os.environ.get("LFABENCH_CACHE"):
        return Path(os.environ["LFABENCH_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "lfabench"


def _canonical(parts: dict[str, Any]) -> str:
    return json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))


def cache_key(kind: str, tag: str, parts: dict[str, Any]) -> str:
    """``<kind>-<tag>-<hash>``: ``tag`` is for humans, ``parts`` (plus lfabench's version) decide identity."""
    full = dict(parts, lfabench_version=__version__)
    digest = hashlib.sha256(_canonical(full).encode()).hexdigest()[:16]
    safe_tag = re.sub(r"[^A-Za-z0-9_.=+-]+", "_", tag)[:80]
    return f"{kind}-{safe_tag}-{digest}"


#: The format tag in every entry's ``.json``: what proves an entry is lfabench's (with its name and digest).
CACHE_FORMAT = 1

#: An entry's name, as :func:`cache_key` makes it: ``<kind>-<tag>-<16 hex digits>``.
_ENTRY_NAME = re.compile(r"^[A-Za-z0-9_.=+-]+-[0-9a-f]{16}$")
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_=+-][A-Za-z0-9_.=+-]*$")
_CHUNK_NAME = re.compile(r"^(chunk-[0-9]+-of-[0-9]+\.npz|\.chunk-[0-9]+-of-[0-9]+\.npz\..*\.tmp)$")


def arrays_digest(arrays: dict[str, np.ndarray]) -> str:
    """sha256 over the names, dtypes, shapes and bytes of ``arrays``, in name order: an entry's content digest."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        h.update(f"{name}\0".encode())
        h.update(array_fingerprint(arrays[name]).encode())
    return h.hexdigest()


@dataclass
class CacheEntry:
    name: str
    path: Path
    size_bytes: int
    meta: dict[str, Any]


class ArrayCache:
    """A folder of ``.npz`` + ``.json`` entries."""

    def __init__(self, root: Path | str | None = None):
        self.root = Path(root) if root is not None else cache_root()

    def _paths(self, name: str) -> tuple[Path, Path]:
        return self.root / f"{name}.npz", self.root / f"{name}.json"

    def load(self, name: str) -> dict[str, np.ndarray] | None:
        """The arrays of entry ``name``, or None when absent, incomplete, unreadable or not what was stored.

        An entry whose ``.json`` records a digest is checked against it: a mismatch (or an unreadable file)
        warns, naming the entry, and gives None, so that the caller computes the arrays again (and its
        :meth:`save` replaces the entry). Entries stored before digests were recorded load unchecked.
        """
        npz, meta_path = self._paths(name)
        if not (npz.exists() and meta_path.exists()):
            return None
        meta = self.meta(name)
        try:
            with np.load(npz, allow_pickle=False) as data:
                arrays = {k: data[k] for k in data.files}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            warnings.warn(f"cache entry {name} ({npz}) is unreadable ({exc}); computing it again", CacheWarning)
            return None
        want = (meta or {}).get("sha256")
        if want is not None and arrays_digest(arrays) != want:
            warnings.warn(f"cache entry {name} ({npz}) does not match its recorded digest (edited or corrupt); "
                          f"computing it again", CacheWarning)
            return None
        return arrays

    def meta(self, name: str) -> dict[str, Any] | None:
        _, meta = self._paths(name)
        try:
            value = json.loads(meta.read_text())
        except (OSError, ValueError):
            return None
        return value if isinstance(value, dict) else None

    def save(self, name: str, arrays: dict[str, np.ndarray], meta: dict[str, Any] | None = None) -> bool:
        """Store ``arrays`` atomically under ``name`` (the ``.json`` marks completion, written last), with the
        format tag and their digest. A write that fails (disk full...) warns, naming the path, leaves no part
        of the entry behind and returns False: the caller goes on with its arrays, uncached."""
        npz, meta_path = self._paths(name)
        info = {"created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), **(meta or {}),
                "name": name, "lfabench_cache": CACHE_FORMAT,
                "arrays": {k: [list(v.shape), str(v.dtype)] for k, v in arrays.items()}, "sha256": arrays_digest(arrays)}
        try:
            meta_path.unlink(missing_ok=True)  # an older entry of this name is incomplete until the new one is
            save_npz_atomic(npz, arrays)
            write_json_atomic(meta_path, info)  # written last: marks the entry complete
        except OSError as exc:
            with contextlib.suppress(OSError):  # nothing to remove where nothing could be written
                npz.unlink(missing_ok=True)
            warnings.warn(f"could not store cache entry {name}: {exc}; going on without caching it", CacheWarning)
            return False
        return True

    @contextlib.contextmanager
    def lock(self, name: str) -> Iterator[None]:
        """Hold the exclusive lock of entry ``name`` (``fcntl.flock`` on ``<root>/.locks/<name>.lock``).

        Runs that would compute the same entry take turns: the second one finds the entry complete
        when it gets the lock, instead of computing it again. Lock files are kept (removing a lock
        file others may be waiting on would break the exclusion); ``.locks/`` is not an entry.
        Where ``fcntl`` is missing (Windows) this is a no-op and concurrent runs compute twice,
        safely (every file is written atomically). A cache folder where the lock file cannot be made (a
        read-only mount, a path under a regular file) warns, naming it, and the block runs unlocked: nothing
        will be stored there, and the caller goes on with the arrays it computes.
        """
        with contextlib.ExitStack() as stack:
            try:
                stack.enter_context(file_lock(self.root / ".locks" / f"{name}.lock", wait=True))
            except OSError as exc:
                warnings.warn(f"cache folder {self.root} cannot be written ({exc}); computing {name} without "
                              f"storing it", CacheWarning)
            yield

    def _is_entry(self, meta_path: Path) -> dict[str, Any] | None:
        """The metadata of ``meta_path`` when it is an lfabench entry's ``.json``, else None.

        Proof: a regular file (not a link) holding JSON whose ``name`` is the file's name, and either the
        format tag, or (entries of an lfabench before the tag) a name as :func:`cache_key` makes them and an
        ``.npz`` beside it, not a link, whose arrays are exactly the ones the metadata lists.
        """
        name = meta_path.stem
        if meta_path.is_symlink() or not meta_path.is_file() or not _SAFE_NAME.match(name):
            return None
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(meta, dict) or meta.get("name") != name:
            return None
        if meta.get("lfabench_cache") == CACHE_FORMAT:
            return meta
        npz = self.root / f"{name}.npz"
        if not _ENTRY_NAME.match(name):
            return None
        if npz.is_symlink() or not npz.is_file() or not isinstance(meta.get("arrays"), dict):
            return None
        try:
            with zipfile.ZipFile(npz) as zf:
                stored = {n[:-4] for n in zf.namelist() if n.endswith(".npy")}
        except (OSError, zipfile.BadZipFile):
            return None
        return meta if stored == set(meta["arrays"]) else None

    def _is_partial(self, path: Path) -> bool:
        """An unfinished descriptor extraction: ``<entry name>.partial/`` holding chunk files only (no link)."""
        if path.is_symlink() or not path.is_dir() or not _SAFE_NAME.match(path.name[:-len(".partial")]):
            return False
        return all(_CHUNK_NAME.match(p.name) and p.is_file() and not p.is_symlink() for p in path.iterdir())

    def entries(self) -> list[CacheEntry]:
        """Complete lfabench entries (see :meth:`_is_entry`), sorted by name; sizes count the ``.npz``."""
        if not self.root.is_dir():
            return []
        out = []
        for meta_path in sorted(self.root.glob("*.json")):
            meta = self._is_entry(meta_path)
            if meta is None:
                continue
            npz = self.root / f"{meta_path.stem}.npz"
            size = meta_path.stat().st_size + (npz.stat().st_size if npz.is_file() and not npz.is_symlink() else 0)
            out.append(CacheEntry(meta_path.stem, meta_path, size, meta))
        return out

    def partials(self) -> list[Path]:
        """Unfinished descriptor extractions (``<key>.partial/`` folders of chunks), sorted."""
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.glob("*.partial") if self._is_partial(p))

    def foreign(self) -> list[Path]:
        """What lies at the top of the root that lfabench did not write: anything but entries (``.json`` +
        ``.npz``), unfinished extractions, ``.locks/`` and the atomic writer's temporary files."""
        if not self.root.is_dir():
            return []
        names = {e.name for e in self.entries()}
        partials = set(self.partials())
        out = []
        for p in sorted(self.root.iterdir()):
            if p in partials or (p.name == ".locks" and p.is_dir() and not p.is_symlink()):
                continue
            if not p.is_symlink() and p.is_file() and (
                    (p.suffix in (".json", ".npz") and p.stem in names)
                    or re.match(r"^\.[A-Za-z0-9_.=+-]+\.(json|npz)\..*\.tmp$", p.name)):
                continue
            out.append(p)
        return out

    def clear(self, prefix: str = "", dry_run: bool = False) -> list[str]:
        """Delete the lfabench entries and unfinished extractions whose name starts with ``prefix`` (all when
        empty); returns their names (``dry_run``: only the names). Nothing else is touched: no file without
        the entry proof, no symbolic link (nor what it points to), nothing outside the root."""
        removed = []
        for entry in self.entries():
            if entry.name.startswith(prefix):
                removed.append(entry.name)
                if not dry_run:
                    for p in self._paths(entry.name):
                        p.unlink(missing_ok=True)
        for partial in self.partials():
            if partial.name.startswith(prefix):
                removed.append(partial.name)
                if not dry_run:
                    for chunk in partial.iterdir():
                        if not chunk.is_symlink() and _CHUNK_NAME.match(chunk.name):
                            chunk.unlink(missing_ok=True)
                    with contextlib.suppress(OSError):
                        partial.rmdir()
        return removed


class CacheWarning(UserWarning):
    """A cache entry was unreadable, did not match its digest, or could not be stored (the run goes on)."""


# ------------------------------------------------------------------ fitted arrays
# Cache fitted arrays (codebooks, GMMs, dictionaries, projections) keyed on their training sample: the
# entry name is cache_key over the caller's params plus the sha256 of the training sample.

# Hits and misses since the last drain: the runner records them, so a fit time that came from the
# cache is never mistaken for a training time.
_events: list[dict[str, Any]] = []


def drain_cache_events() -> list[dict[str, Any]]:
    """The ``{"entry", "hit", "fit_seconds"}`` cache look-ups made since the previous call (then forgotten).

    ``fit_seconds``: how long computing the entry took (measured now on a miss; read from the entry on a hit;
    None for an entry stored before lfabench recorded it), so that a run that reused a fitted codebook can still
    be charged what fitting it costs."""
    events = list(_events)
    _events.clear()
    return events


def array_fingerprint(*arrays: np.ndarray) -> str:
    """sha256 over the dtype, shape and bytes of each array, in order."""
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype}{a.shape}".encode())
        # the array's own buffer, not a tobytes() copy: a cache entry's digest is checked at every load
        h.update(a.reshape(-1).view(np.uint8) if a.dtype.hasobject is False and a.size else a.tobytes())
    return h.hexdigest()


def resolve_cache(cache) -> ArrayCache | None:
    """The one reading of a ``cache`` argument, for every plugin kind.

    ``False``/``None`` -> no cache; ``True`` -> the default root (:func:`cache_root`); a str/Path ->
    that folder; an :class:`ArrayCache` -> itself. Aggregators default to ``False`` (library use has
    no side effects); ``Descriptor.describe`` defaults to ``True``.
    """
    if cache is None or cache is False:
        return None
    if cache is True:
        return ArrayCache()
    if isinstance(cache, (str, Path)):
        return ArrayCache(cache)
    if isinstance(cache, ArrayCache):
        return cache
    raise TypeError(f"cache must be a bool, a folder path, an ArrayCache or None, got {type(cache).__name__}")


def cached_fit(kind: str, tag: str, sample: np.ndarray, params: dict[str, Any],
               fit: Callable[[], dict[str, np.ndarray]], cache=False) -> dict[str, np.ndarray]:
    """The arrays ``fit()`` returns for this training ``sample`` and ``params``, from the cache when stored.

    ``params`` must hold every hyper-parameter that changes the result (including
    the seed); the sample enters the key through its fingerprint.
    """
    store = resolve_cache(cache)
    if store is None:
        return fit()
    parts = dict(params, kind=kind, training_sample_sha256=array_fingerprint(sample),
                 training_sample_shape=list(np.shape(sample)))
    name = cache_key(kind, tag, parts)
    hit = store.load(name)
    if hit is not None:
        seconds = (store.meta(name) or {}).get("fit_seconds")
        _events.append({"entry": name, "hit": True, "fit_seconds": seconds})
        return hit
    t0 = time.perf_counter()
    arrays = {k: np.asarray(v) for k, v in fit().items()}
    seconds = round(time.perf_counter() - t0, 6)
    _events.append({"entry": name, "hit": False, "fit_seconds": seconds})
    store.save(name, arrays, meta={"parts": parts, "fit_seconds": seconds})
    return arrays


def cacheable_seed(random_state) -> int | None:
    """The int seed when ``random_state`` is an int (a reproducible fit), else None (do not cache)."""
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return int(random_state)
    return None
