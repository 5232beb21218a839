"""A module of this repository as it was at another revision, for the scripts that time old code beside new.

    from revisions import module_at        # benchmarks/ is on sys.path when a script of it runs
    old = module_at("HEAD~1", "plugins/aggregators/omp_kernels.py", "lfabench_plugins.aggregators")
    seconds, result = cpu(lambda: old.gram_omp(...))    # CPU seconds of the process, and what it returned
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]


def module_at(revision: str, path: str, package: str) -> ModuleType:
    """The file ``path`` (relative to the repository root) at ``revision``, read with ``git show`` and imported from
    a temporary folder as ``<package>.<name>_at_revision``: its relative imports (``from .splits import ...``)
    resolve in the installed ``package``, so they load this checkout's sibling modules."""
    source = subprocess.run(["git", "show", f"{revision}:{path}"], cwd=REPO, check=True, capture_output=True,
                            text=True).stdout
    stem = f"{Path(path).stem}_at_revision"
    file = Path(tempfile.mkdtemp()) / f"{stem}.py"
    file.write_text(source)
    spec = importlib.util.spec_from_file_location(f"{package}.{stem}", file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module          # dataclasses look their module up there while it executes
    spec.loader.exec_module(module)
    return module


def cpu(fn) -> tuple[float, object]:
    """``(CPU seconds of this process, result)`` of ``fn()``: on one thread, the time the work took on its core
    whatever else the machine runs."""
    start = time.process_time()
    out = fn()
    return time.process_time() - start, out
