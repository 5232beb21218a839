"""A third-party plugin distribution written into a folder that a subprocess puts on ``PYTHONPATH``."""

from __future__ import annotations

import textwrap
from pathlib import Path


def write_distribution(site: Path, dist: str, module: str, source: str, entry_points: str | None = None,
                       version: str = "1.0", files: dict[str, str] | None = None) -> Path:
    """Package ``module`` (``__init__.py`` = ``source``, plus ``files`` relative to it) and the ``dist``
    distribution's metadata under ``site``; ``entry_points`` (dedented) defaults to ``[lfabench] module = module``.
    Returns ``site``."""
    pkg = site / module
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(source)
    for rel, text in (files or {}).items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(
        textwrap.dedent(entry_points) if entry_points is not None else f"[lfabench]\n{module} = {module}\n")
    (info / "RECORD").write_text("")
    return site
