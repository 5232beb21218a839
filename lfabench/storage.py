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

Root: ``$LFABENCH_CACHE``, else ``$XDG_CACHE_HOME/lfabench``, else ``~/.cache/lfabench``.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
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
    and ``path`` is left as it was.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write: mode must be 'w' or 'wb', got {mode!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode, **({"encoding": "utf-8"} if mode == "w" else {})) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600 files; a written file gets the usual mode
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


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
        """The arrays of entry ``name``, or None when absent or incomplete."""
        npz, meta = self._paths(name)
        if not (npz.exists() and meta.exists()):
            return None
        with np.load(npz, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}

    def meta(self, name: str) -> dict[str, Any] | None:
        _, meta = self._paths(name)
        if not meta.exists():
            return None
        return json.loads(meta.read_text())

    def save(self, name: str, arrays: dict[str, np.ndarray], meta: dict[str, Any] | None = None) -> None:
        """Store ``arrays`` atomically under ``name`` (the ``.json`` marks completion, written last)."""
        npz, meta_path = self._paths(name)
        save_npz_atomic(npz, arrays)
        info = {"name": name, "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                "arrays": {k: [list(v.shape), str(v.dtype)] for k, v in arrays.items()}, **(meta or {})}
        write_json_atomic(meta_path, info)  # written last: marks the entry complete

    @contextlib.contextmanager
    def lock(self, name: str) -> Iterator[None]:
        """Hold the exclusive lock of entry ``name`` (``fcntl.flock`` on ``<root>/.locks/<name>.lock``).

        Runs that would compute the same entry take turns: the second one finds the entry complete
        when it gets the lock, instead of computing it again. Lock files are kept (removing a lock
        file others may be waiting on would break the exclusion); ``.locks/`` is not an entry.
        Where ``fcntl`` is missing (Windows) this is a no-op and concurrent runs compute twice,
        safely (every file is written atomically).
        """
        with file_lock(self.root / ".locks" / f"{name}.lock", wait=True):
            yield

    def entries(self) -> list[CacheEntry]:
        """Complete entries, sorted by name; a folder entry (e.g. resumable chunks) counts its files."""
        if not self.root.exists():
            return []
        out = []
        for meta_path in sorted(self.root.glob("*.json")):
            name = meta_path.stem
            size = meta_path.stat().st_size
            for p in (self.root / f"{name}.npz", self.root / name):
                if p.is_file():
                    size += p.stat().st_size
                elif p.is_dir():
                    size += sum(q.stat().st_size for q in p.rglob("*") if q.is_file())
            try:
                meta = json.loads(meta_path.read_text())
            except json.JSONDecodeError:
                meta = {"error": "unreadable metadata"}
            out.append(CacheEntry(name, meta_path, size, meta))
        return out

    def clear(self, prefix: str = "") -> int:
        """Delete entries whose name starts with ``prefix`` (all when empty); returns how many."""
        n = 0
        for entry in self.entries():
            if entry.name.startswith(prefix):
                for p in (self.root / f"{entry.name}.npz", self.root / f"{entry.name}.json"):
                    p.unlink(missing_ok=True)
                shutil.rmtree(self.root / entry.name, ignore_errors=True)
                n += 1
        return n


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
        h.update(a.tobytes())
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
