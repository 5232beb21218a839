"""Resumable sweeps: a run's directory is named after its setting and seed, never the clock.

``lfabench run`` puts each run under ``<root>/<dataset>_<descriptor>_<aggregator>_<evaluator>/<key>_s<seed>``
where ``<key>`` (:func:`setting_key`) hashes the plugin configs before interpolation
(``random_state: ${seed}`` literal) and the seed. Rerunning the same sweep therefore reaches the
same directories, and a directory that already holds a complete record (status ``ok``, same
setting, same seed) is skipped (:func:`complete_record`) unless the run is forced (``force=true``).
A run killed midway leaves no complete record, so it is run again; nothing is duplicated.

Two sweeps may share one root (two shells filling one board on two cores). Each run holds its
directory's claim (:func:`claim_run`) while it checks for a complete record and computes, so the
second sweep to reach a run still in progress skips it, naming the process that holds it, instead of
computing it a second time.
"""

from __future__ import annotations

import datetime as _dt
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .record import RESULT_FILE, _canonical, plugin_setting, read_record, setting_key
from .storage import file_lock

#: The claim file inside a run directory (a lock file; the run's record never depends on it).
CLAIM_FILE = ".lfabench-run.lock"


def complete_record(run_dir: Path | str, setting: dict[str, Any], seed: Any) -> dict | None:
    """The record in ``run_dir`` when it is complete (``ok``) for this setting and seed, else ``None``."""
    path = Path(run_dir) / RESULT_FILE
    if not path.is_file():
        return None
    try:
        rec = read_record(path)
    except ValueError:  # unreadable: run again (the recorder keeps the old file aside)
        return None
    same = (_canonical(plugin_setting(rec.get("setting") or {})) == _canonical(plugin_setting(setting))
            and rec.get("seed") == seed)
    return rec if rec.get("status") == "ok" and same else None


@contextmanager
def claim_run(run_dir: Path | str) -> Iterator[str | None]:
    """Claim ``run_dir`` for this process for the duration of the block.

    Yields ``None`` when the claim is this process's: it may check for a complete record and run.
    Yields a description of the holder (``"pid 123 on host, since 2026-11-26T16:30:00+00:00"``) when
    another process is running this directory now; the caller must leave it alone. The claim is a
    non-blocking ``fcntl.flock`` on ``<run_dir>/.lfabench-run.lock``, released by the operating system
    when the holder ends, killed or not, so an interrupted sweep never leaves a stale claim.
    """
    with file_lock(Path(run_dir) / CLAIM_FILE, wait=False) as fh:
        if fh is None:
            try:
                holder = (Path(run_dir) / CLAIM_FILE).read_text().strip()
            except OSError:
                holder = ""
            yield holder or "another process"
            return
        since = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()} on {socket.gethostname()}, since {since}\n")
        fh.flush()
        yield None


def register_resolver() -> None:
    """``${lfabench_key:}`` in Hydra configs: :func:`setting_key` of the config being composed."""
    from omegaconf import OmegaConf

    def key(*, _root_) -> str:
        from .plugin import KINDS

        setting = {k: OmegaConf.to_container(_root_[k], resolve=False) for k in KINDS if k in _root_}
        return setting_key(setting, _root_.get("seed"))

    OmegaConf.register_new_resolver("lfabench_key", key, replace=True)
