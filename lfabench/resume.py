"""Resumable sweeps: a run's directory is named after its setting and seed, never the clock.

``lfabench run`` puts each run under ``<root>/<dataset>_<descriptor>_<aggregator>_<evaluator>/<key>_s<seed>``
where ``<key>`` (:func:`setting_key`) hashes the run's :func:`run_setting` and the seed. The setting is
the plugin configs with every interpolation resolved (``n_clusters: ${k}`` becomes the sweep's value of
``k``) except the run-level ``${seed}`` and ``${cache}``, kept literal: the seed is hashed on its own (so
runs that differ only by seed share their setting, and the leaderboard pools them) and the cache policy
does not change a result. Rerunning the same sweep therefore reaches the same directories, and a
directory that already holds a complete record (status ``ok``, same setting, same seed) is skipped
(:func:`complete_record`) unless the run is forced (``force=true``) or differs in what the setting does
not hold (:func:`record_mismatch`): the record's dataset fingerprint (ids, labels and the bytes of every
image) must be the dataset's now (images added under the same root make another dataset), and its fixed
thread count the config's ``threads``; else the run is computed again. A run killed midway leaves no
complete record, so it is run again; nothing is duplicated.

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

from .plugin import KINDS
from .record import RESULT_FILE, canonical_value, plugin_setting, read_record, setting_key
from .redact import reads_environment
from .storage import file_lock

#: Run-level settings kept as their interpolation in a run's setting (see the module docstring).
LITERAL_RUN_LEVEL = ("seed", "cache")

#: The claim file inside a run directory (a lock file; the run's record never depends on it).
CLAIM_FILE = ".lfabench-run.lock"


def run_setting(cfg) -> dict[str, Any]:
    """The plugin part of a composed config (``DictConfig``), resolved except ``${seed}`` and ``${cache}``.

    What a run's key hashes and its record's ``setting`` holds: ``{kind: {name, params}}`` where
    ``aggregator.params.n_clusters=${k}`` reads the value of ``k`` and ``random_state: ${seed}`` stays
    the literal string. An interpolation that cannot resolve without the seed's or the cache's value
    (a resolver doing arithmetic on it) is resolved whole instead: the key then includes the seed twice,
    which is still one key per run.
    """
    from omegaconf import OmegaConf

    plain = _environment_as_written(OmegaConf.to_container(cfg, resolve=False))
    plain.pop("hydra", None)  # Hydra's own node (run dirs, launcher) is no setting, and holds this key itself
    for name in LITERAL_RUN_LEVEL:
        if name in plain:
            plain[name] = "\\${" + name + "}"  # OmegaConf's escape: resolves to the literal "${name}"
    try:
        resolved = OmegaConf.to_container(OmegaConf.create(plain), resolve=True)
    except Exception:  # noqa: BLE001 -- any resolver may raise on the literal; the full resolution is exact
        # the plugin nodes only: resolving the whole config would resolve Hydra's run dir, which holds this key
        resolved = {k: OmegaConf.to_container(cfg[k], resolve=True) for k in KINDS if k in cfg}
    return plugin_setting(resolved)


def _environment_as_written(value: Any) -> Any:
    """``value`` with every string that reads the environment (``${oc.env:NAME}``) escaped, so that it resolves to
    its own text: a setting (hashed into the run's key, stored in the record) never holds an environment value,
    which may be a secret (:mod:`lfabench.redact`)."""
    if isinstance(value, dict):
        return {k: _environment_as_written(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_environment_as_written(v) for v in value]
    return value.replace("${", "\\${") if reads_environment(value) else value


def complete_record(run_dir: Path | str, setting: dict[str, Any], seed: Any) -> dict | None:
    """The record in ``run_dir`` when it is complete (``ok``) for this setting and seed, else ``None``."""
    path = Path(run_dir) / RESULT_FILE
    if not path.is_file():
        return None
    try:
        rec = read_record(path)
    except ValueError:  # unreadable: run again (the recorder keeps the old file aside)
        return None
    same = (canonical_value(plugin_setting(rec.get("setting") or {})) == canonical_value(plugin_setting(setting))
            and rec.get("seed") == seed)
    return rec if rec.get("status") == "ok" and same else None


#: Fingerprints computed in this process, by dataset config: a sweep's jobs share their dataset.
_FINGERPRINTS: dict[str, tuple[str, int]] = {}


def dataset_change(record: dict[str, Any], config: dict[str, Any]) -> str | None:
    """Why ``record`` was computed on other data than ``config``'s dataset holds now, or ``None``.

    Compares the record's ``dataset.fingerprint`` with the fingerprint of the dataset that
    ``config`` (resolved) builds now (:meth:`lfabench.dataset.Dataset.fingerprint`: ids, labels,
    ground truth, every image's bytes). A record without a fingerprint, or a dataset that cannot be
    loaded now (the data is elsewhere), leaves nothing to compare: ``None``. The fingerprint is
    computed once per dataset config in a process.
    """
    import json

    from .registry import get_registry

    then = (record.get("dataset") or {})
    if not isinstance(then.get("fingerprint"), str):
        return None
    section = config.get("dataset") or {}
    memo = json.dumps(canonical_value(section), sort_keys=True, default=str)
    if memo not in _FINGERPRINTS:
        try:
            dataset = get_registry().get_spec("dataset", section.get("name", "")).factory(
                **dict(section.get("params") or {}))
            _FINGERPRINTS[memo] = (dataset.fingerprint(), dataset.n_samples)
        except Exception:  # noqa: BLE001 -- absent or unreadable data: nothing to compare against
            return None
    now, n_now = _FINGERPRINTS[memo]
    if now == then["fingerprint"]:
        return None
    return (f"its dataset changed: {then.get('n_samples', '?')} samples (fingerprint {then['fingerprint'][:12]}) "
            f"when recorded, {n_now} samples (fingerprint {now[:12]}) now")


def threads_change(record: dict[str, Any], config: dict[str, Any]) -> str | None:
    """Why ``record`` ran under another fixed thread count than ``config``'s ``threads``, or ``None``.

    The thread count orders the sums (:mod:`lfabench.threads`), so it is part of what a run computed.
    A record without ``determinism`` predates the setting: nothing to compare.
    """
    determinism = record.get("determinism")
    if not isinstance(determinism, dict) or "threads" not in determinism:
        return None
    then, now = determinism["threads"], config.get("threads", 1)
    return None if then == now else f"it ran with threads={then}, this run has threads={now}"


def record_mismatch(record: dict[str, Any], config: dict[str, Any]) -> str | None:
    """Why a complete record of the same setting and seed is not this run's result (:func:`threads_change`,
    :func:`dataset_change`), or ``None``."""
    return threads_change(record, config) or dataset_change(record, config)


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
    """``${lfabench_key:}`` in Hydra configs: :func:`setting_key` of the :func:`run_setting` being composed."""
    from omegaconf import OmegaConf

    def key(*, _root_) -> str:
        return setting_key(run_setting(_root_), _root_.get("seed"))

    OmegaConf.register_new_resolver("lfabench_key", key, replace=True)
