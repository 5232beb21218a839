"""Where datasets live: the data root and the registry of local copies.

* The **data root** is ``$LFABENCH_DATA``, else ``$XDG_DATA_HOME/lfabench``, else
  ``~/.local/share/lfabench`` (a per-user directory; nothing is shared with the array
  cache, which may be wiped at any time).
* ``lfabench data add NAME PATH`` records an existing copy in ``<data root>/registry.json``
  (``{"name": "/absolute/path"}``); ``lfabench data fetch NAME`` downloads into
  ``<data root>/<name>`` (see :mod:`lfabench.download`).
* ``lfabench data add NAME PATH --as PLUGIN`` registers a folder under a name of its own, read by the
  folder plugin ``PLUGIN`` (``{"name": {"path": "/absolute/path", "as": "imagefolder"}}``): several
  folders, each a dataset ``NAME`` of its own (:func:`registered_as`; the built-in ``folders`` plugin
  module declares them).
* A dataset plugin asks :func:`dataset_root` where its files are: an explicit ``root``
  argument wins, then the registry, then ``<data root>/<name>``.

:func:`missing_error` builds the one error every loader raises for absent or partial data:
it names the dataset, the expected path and the commands that fix it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .dataset import DatasetNotFoundError
from .storage import write_json_atomic

REGISTRY_FILE = "registry.json"


def data_root() -> Path:
    """The data root (not created)."""
    if os.environ.get("LFABENCH_DATA"):
        return Path(os.environ["LFABENCH_DATA"]).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "lfabench"


def _registry_path() -> Path:
    return data_root() / REGISTRY_FILE


def registered() -> dict[str, str]:
    """``{dataset name: path}`` of the copies registered with ``lfabench data add`` (with ``--as`` or without)."""
    return {name: entry["path"] if isinstance(entry, dict) else entry for name, entry in _entries().items()}


def registered_as() -> dict[str, str]:
    """``{name: folder plugin}`` of the folders registered under names of their own (``data add ... --as``)."""
    return {name: entry["as"] for name, entry in _entries().items() if isinstance(entry, dict)}


def _entries() -> dict[str, str | dict]:
    """The registry's entries as stored: a path, or ``{"path": ..., "as": plugin}``."""
    path = _registry_path()
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"data registry {path} is not valid JSON ({exc}); fix or delete it") from exc
    if not isinstance(data, dict):
        raise ValueError(f"data registry {path} must hold a JSON object {{name: path}}")
    out: dict[str, str | dict] = {}
    for name, entry in data.items():
        if isinstance(entry, dict):
            if not isinstance(entry.get("path"), str) or not isinstance(entry.get("as"), str):
                raise ValueError(f"data registry {path}: entry {name!r} must be a path or "
                                 f'{{"path": ..., "as": plugin}}, got {entry!r}')
            out[str(name)] = {"path": entry["path"], "as": entry["as"]}
        else:
            out[str(name)] = str(entry)
    return out


def register(name: str, path: Path | str, as_plugin: str | None = None) -> Path:
    """Record ``path`` as the local copy of dataset ``name`` (atomic rewrite of the registry); with ``as_plugin``,
    as a dataset of its own called ``name`` that the folder plugin ``as_plugin`` reads."""
    path = Path(path).expanduser().resolve()
    entries = _entries()
    entries[name] = {"path": str(path), "as": as_plugin} if as_plugin else str(path)
    write_json_atomic(_registry_path(), dict(sorted(entries.items())))
    return path


def unregister(name: str) -> bool:
    """Forget the registered copy of ``name``; True when there was one."""
    entries = _entries()
    if name not in entries:
        return False
    del entries[name]
    write_json_atomic(_registry_path(), dict(sorted(entries.items())))
    return True


def dataset_root(name: str, root: Path | str | None = None) -> Path:
    """Where dataset ``name`` is: ``root`` if given, else its registered copy, else ``<data root>/<name>``."""
    if root is not None and str(root) != "":
        return Path(root).expanduser()
    entries = registered()
    if name in entries:
        return Path(entries[name])
    return data_root() / name


def missing_error(name: str, expected: Path | str, what: str, fetchable: bool = True) -> DatasetNotFoundError:
    """The error for absent or partial data: dataset, expected path, what is wrong, and the fix."""
    fix = f"`lfabench data add {name} /path/to/your/copy`"
    if fetchable:
        fix = f"`lfabench data fetch {name}` (downloads into {data_root() / name}) or " + fix
    return DatasetNotFoundError(
        f"dataset {name!r}: {what} (expected at {expected}). Fix: {fix}, or pass dataset.params.root=PATH. "
        f"`lfabench data verify {name}` lists what is missing.")
