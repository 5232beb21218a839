"""Resumable sweeps: a run's directory is named after its setting and seed, never the clock.

``lfabench run`` puts each run under ``<root>/<dataset>_<descriptor>_<aggregator>_<evaluator>/<key>_s<seed>``
where ``<key>`` (:func:`setting_key`) hashes the plugin configs before interpolation
(``random_state: ${seed}`` literal) and the seed. Rerunning the same sweep therefore reaches the
same directories, and a directory that already holds a complete record (status ``ok``, same
setting, same seed) is skipped (:func:`complete_record`) unless the run is forced (``force=true``).
A run killed midway leaves no complete record, so it is run again; nothing is duplicated.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .record import RESULT_FILE, _canonical, plugin_setting, read_record, setting_key


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


def register_resolver() -> None:
    """``${lfabench_key:}`` in Hydra configs: :func:`setting_key` of the config being composed."""
    from omegaconf import OmegaConf

    def key(*, _root_) -> str:
        from .plugin import KINDS

        setting = {k: OmegaConf.to_container(_root_[k], resolve=False) for k in KINDS if k in _root_}
        return setting_key(setting, _root_.get("seed"))

    OmegaConf.register_new_resolver("lfabench_key", key, replace=True)
