"""Where a run came from: the code (version, revision, the diff of a dirty tree) and the environment.

Everything here is read, never changed: the packages installed (``importlib.metadata``: a lock of every
distribution and its version), the interpreter and OS, the CPU (model, the SIMD features NumPy dispatches
on, ``/proc/cpuinfo``'s flags that OpenCV and OpenBLAS dispatch on), the BLAS/OpenMP libraries loaded and
their thread counts (threadpoolctl), and the thread-count environment variables. A run record stores it
under ``provenance`` (``docs/records.md``), the one home of these facts in a record (``schema_version`` 3);
:func:`missing_provenance` says what a record lacks for publishing. The readers of a record's machine and code
facts (:func:`recorded_version`, :func:`recorded_revision`, :func:`recorded_machine`) read both layouts: records
of ``schema_version`` 1 and 2 also carry them at the top level (``lfabench_version``, ``git_revision``, ``host``).

The code's identity: :func:`source_version` is the release version (``lfabench/_version.py``) with, for a git
checkout, its commit as a PEP 440 local label (``0.2.0+gd0ec3b346``; ``.dirty`` appended for a dirty tree);
:func:`source_state` gives the revision and, for a dirty tree, the diff against it (tracked changes plus
untracked source files of the package folders), whose sha256 the record carries and whose text is kept
beside it. Both, and the package lock, are read once per process: a process runs the code it imported, whatever changes
on disk afterwards.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
import platform
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._version import __version__

#: Folders of the checkout whose files decide what a run computes (untracked files there make a tree dirty).
SOURCE_FOLDERS = ("lfabench", "plugins", "conf")
#: Environment variables that set thread counts (they can change the floats: reduction order).
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "LFABENCH_N_JOBS")
#: What a publishable record's ``provenance`` must hold.
REQUIRED_PROVENANCE = ("lfabench_version", "git_revision", "dirty", "environment", "packages")
REQUIRED_ENVIRONMENT = ("python", "os", "cpu_model", "cpu_simd", "threadpools")
#: ``/proc/cpuinfo`` flags that select SIMD code paths (OpenCV dispatches SIFT's kernels on them, OpenBLAS its
#: GEMM kernel): with each BLAS kernel, what makes floating-point results CPU-specific (:func:`recorded_machine`).
SIMD_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl")

_GIT_TIMEOUT_S = 10


def run_git(root: Path, *args: str) -> subprocess.CompletedProcess | None:
    """``git -C root ARGS`` with its output captured; None where git cannot run (absent, timed out)."""
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, timeout=_GIT_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return None


@functools.lru_cache(maxsize=1)
def checkout_root() -> Path | None:
    """The git checkout lfabench runs from (None when installed, or inside some unrelated repository)."""
    here = Path(__file__).resolve().parent
    top = run_git(here, "rev-parse", "--show-toplevel")
    if top is None or top.returncode != 0:
        return None
    root = Path(top.stdout.decode().strip())
    return root if (root / "lfabench" / "provenance.py").resolve() == Path(__file__).resolve() else None


@dataclass(frozen=True)
class SourceState:
    """The revision of the checkout and, when it differs from it, the diff (``b""`` for a clean tree)."""

    revision: str | None
    diff: bytes

    @property
    def dirty(self) -> bool:
        return bool(self.diff)

    @property
    def diff_sha256(self) -> str | None:
        return hashlib.sha256(self.diff).hexdigest() if self.diff else None


def source_state(root: Path | None = None) -> SourceState:
    """:func:`read_source_state` of ``root``; of lfabench's own checkout (read once per process) by default."""
    return _own_source_state() if root is None else read_source_state(Path(root))


@functools.lru_cache(maxsize=1)
def _own_source_state() -> SourceState:
    return read_source_state(None)


def read_source_state(root: Path | None) -> SourceState:
    """The checkout's HEAD and the diff that turns it into the tree that runs now.

    The diff is ``git diff --binary HEAD`` (staged and unstaged changes of tracked files) followed by one
    ``git diff --no-index`` per untracked, not ignored file under :data:`SOURCE_FOLDERS`: applying it
    (``git apply``) to the revision gives back the code. Outside a checkout: ``SourceState(None, b"")``.
    """
    root = checkout_root() if root is None else Path(root)
    if root is None:
        return SourceState(None, b"")
    head = run_git(root, "rev-parse", "HEAD")
    if head is None or head.returncode != 0:
        return SourceState(None, b"")
    tracked = run_git(root, "diff", "--binary", "HEAD", "--")
    parts = [tracked.stdout if tracked is not None and tracked.returncode == 0 else b""]
    untracked = run_git(root, "ls-files", "--others", "--exclude-standard", "-z", "--", *SOURCE_FOLDERS)
    for name in sorted(n for n in (untracked.stdout.decode().split("\0") if untracked else []) if n):
        added = run_git(root, "diff", "--binary", "--no-index", "--", "/dev/null", name)
        if added is not None:  # exit status 1: the files differ, as they must
            parts.append(added.stdout)
    return SourceState(head.stdout.decode().strip(), b"".join(parts))


@functools.lru_cache(maxsize=1)
def source_version() -> str:
    """lfabench's version as the code that runs now: the release (``lfabench/_version.py``), with the commit of the
    checkout it runs from as a PEP 440 local label (``0.2.0+gd0ec3b346``, ``0.2.0+gd0ec3b346.dirty`` for a dirty
    tree: :func:`source_state`); the release alone outside a checkout. Its release part is what validation
    compares (a record of a newer release series is refused)."""
    state = _own_source_state()
    if state.revision is None:
        return __version__
    return f"{__version__}+g{state.revision[:9]}" + (".dirty" if state.dirty else "")


def installed_version() -> str | None:
    """The version the installed distribution's metadata states (None when lfabench is not installed): that of
    the last install, which an editable install keeps while its checkout moves on."""
    try:
        return importlib.metadata.version("lfabench")
    except importlib.metadata.PackageNotFoundError:
        return None


def package_lock() -> dict[str, str]:
    """Every installed distribution visible to this interpreter, ``{name: version}`` sorted by name
    (normalized names, PEP 503; the first of duplicates on ``sys.path`` wins, as for imports). Read once
    per process (reading every distribution's metadata takes ~0.2 s): a copy of that reading."""
    return dict(_package_lock())


@functools.lru_cache(maxsize=1)
def _package_lock() -> dict[str, str]:
    lock: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata.get("Name")
        if not name:
            continue
        key = name.lower().replace("_", "-").replace(".", "-")
        lock.setdefault(key, dist.version)
    return dict(sorted(lock.items()))


def lock_digest(lock: dict[str, str]) -> str:
    """sha256 of a package lock as ``name==version`` lines: equal locks, equal digests."""
    return hashlib.sha256("".join(f"{k}=={v}\n" for k, v in sorted(lock.items())).encode()).hexdigest()


def cpuinfo_value(key: str) -> str | None:
    """The value of the first ``key`` line of Linux's ``/proc/cpuinfo`` (None where there is none)."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith(key):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def cpu_features() -> dict[str, Any]:
    """The CPU: model, NumPy's dispatch features present (``numpy __cpu_features__``), and every
    ``/proc/cpuinfo`` flag (Linux; None elsewhere), sorted."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:  # NumPy < 2
        from numpy.core._multiarray_umath import __cpu_features__
    flags = cpuinfo_value("flags")
    return {"cpu_model": cpuinfo_value("model name") or platform.processor() or None,
            "cpu_simd": sorted(k for k, v in __cpu_features__.items() if v),
            "cpu_flags": sorted(flags.split()) if flags is not None else None,
            "machine": platform.machine()}


def threadpools() -> list[dict[str, Any]]:
    """Each native thread pool loaded now (threadpoolctl): BLAS and OpenMP libraries, their version,
    kernel architecture (OpenBLAS's ``Haswell``, ``SkylakeX``...) and thread count."""
    from threadpoolctl import threadpool_info

    keys = ("user_api", "internal_api", "prefix", "version", "architecture", "threading_layer", "num_threads")
    return [{k: lib.get(k) for k in keys} for lib in threadpool_info()]


def environment() -> dict[str, Any]:
    """The interpreter, OS, CPU, thread pools and thread-count variables of this process."""
    return {"python": platform.python_version(), "python_implementation": platform.python_implementation(),
            "python_build": " ".join(platform.python_build()), "executable_prefix": sys.prefix != sys.base_prefix,
            "os": platform.platform(), "system": platform.system(), "release": platform.release(),
            **cpu_features(), "cpu_count": os.cpu_count(),
            "affinity_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            "threadpools": threadpools(),
            "thread_variables": {k: os.environ[k] for k in THREAD_VARIABLES if k in os.environ}}


def collect(state: SourceState | None = None) -> dict[str, Any]:
    """A record's ``provenance`` (without the diff file's name, which the recorder adds when it writes it)."""
    state = source_state() if state is None else state
    lock = package_lock()
    return {"lfabench_version": source_version(), "installed_version": installed_version(),
            "git_revision": state.revision, "dirty": state.dirty, "diff_sha256": state.diff_sha256,
            "diff_file": None, "environment": environment(),
            "packages": lock, "packages_sha256": lock_digest(lock)}


def missing_provenance(record: dict) -> list[str]:
    """What keeps a record from being published: a dirty tree, a missing revision, missing environment
    fields. Empty for a complete record of a clean commit."""
    prov = record.get("provenance")
    if not isinstance(prov, dict):
        return ["no provenance (a record of an older format)"]
    problems = [f"provenance.{k} missing" for k in REQUIRED_PROVENANCE if prov.get(k) in (None, {}, "")]
    env = prov.get("environment") if isinstance(prov.get("environment"), dict) else {}
    problems += [f"provenance.environment.{k} missing" for k in REQUIRED_ENVIRONMENT
                 if env and env.get(k) in (None, [], "")]
    if prov.get("dirty"):
        problems.append(f"dirty tree (revision {prov.get('git_revision')} plus a diff, sha256 "
                        f"{str(prov.get('diff_sha256'))[:12]})")
    return problems


# ---------------------------------------------------------------------------------------- reading a record's facts


def _section(record: dict, *keys: str) -> dict:
    """``record[keys[0]][keys[1]]...`` where each is a dict, else ``{}`` (a record is untrusted data)."""
    node = record
    for key in keys:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else {}


def recorded_version(record: dict) -> str | None:
    """The lfabench version that wrote ``record``: ``provenance.lfabench_version``, else (a record of schema 1)
    the top-level ``lfabench_version``."""
    version = _section(record, "provenance").get("lfabench_version")
    return version if version is not None else record.get("lfabench_version")


def recorded_revision(record: dict) -> str | None:
    """The revision ``record`` names for its code, as a board shows it: the top-level ``git_revision`` of a record
    of schema 1 or 2 as written (``+dirty`` appended for a modified tree), else ``provenance.git_revision`` with
    ``+dirty`` appended when ``provenance.dirty``."""
    if "git_revision" in record:
        return record["git_revision"]
    prov = _section(record, "provenance")
    rev = prov.get("git_revision")
    return None if rev is None else f"{rev}+dirty" if prov.get("dirty") else rev


def recorded_machine(record: dict) -> dict[str, Any]:
    """The machine that ran ``record``: ``cpu_model``, ``cpu_count``, ``simd_flags`` (which of :data:`SIMD_FLAGS`
    the CPU has; None where unknown) and ``blas_kernels`` (each loaded BLAS library's kernel architecture, sorted).

    From ``provenance.environment`` (``cpu_flags``, ``threadpools``), else from the ``host`` of a record of schema
    1 or 2, which states the same facts (its ``cpu_simd`` is this ``simd_flags``); the two give one answer for one
    machine, so a record of either layout compares with a rerun."""
    host, env = _section(record, "host"), _section(record, "provenance", "environment")
    if host and not env:
        simd = host.get("cpu_simd")
        blas = [b.get("architecture") for b in host.get("blas") or () if isinstance(b, dict)]
        return {"cpu_model": host.get("cpu_model"), "cpu_count": host.get("cpu_count"),
                "simd_flags": list(simd) if isinstance(simd, list) else None,
                "blas_kernels": sorted(str(a) for a in blas)}
    flags = env.get("cpu_flags")
    pools = [p for p in env.get("threadpools") or () if isinstance(p, dict) and p.get("user_api") == "blas"]
    return {"cpu_model": env.get("cpu_model") if env else host.get("cpu_model"),
            "cpu_count": env.get("cpu_count") if env else host.get("cpu_count"),
            "simd_flags": [f for f in SIMD_FLAGS if f in flags] if isinstance(flags, list) else None,
            "blas_kernels": sorted(str(p.get("architecture")) for p in pools)}
