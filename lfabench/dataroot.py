"""Where datasets live: the data root and the registry of local copies.

* The **data root** is ``$LFABENCH_DATA``, else ``$XDG_DATA_HOME/lfabench``, else
  ``~/.local/share/lfabench`` (a per-user directory; nothing is shared with the array
  cache, which may be wiped at any time).
* ``lfabench data add NAME PATH`` records an existing copy in ``<data root>/registry.json``
  (``{"name": "/absolute/path"}``); ``lfabench data fetch NAME`` downloads into
  ``<data root>/<name>`` (see :mod:`lfabench.download`).
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
    """``{dataset name: path}`` of the copies registered with ``lfabench data add``."""
    path = _registry_path()
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"data registry {path} is not valid JSON ({exc}); fix or delete it") from exc
    if not isinstance(data, dict):
        raise ValueError(f"data registry {path} must hold a JSON object {{name: path}}")
    return {str(k): str(v) for k, v in data.items()}


def register(name: str, path: Path | str) -> Path:
    """Record ``path`` as the local copy of dataset ``name`` (atomic rewrite of the registry)."""
    path = Path(path).expanduser().resolve()
    entries = registered()
    entries[name] = str(path)
    write_json_atomic(_registry_path(), dict(sorted(entries.items())))
    return path


def unregister(name: str) -> bool:
    """Forget the registered copy of ``name``; True when there was one."""
    entries = registered()
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
