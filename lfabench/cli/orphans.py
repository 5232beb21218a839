"""A sweep's launcher workers end with the sweep: no orphan goes on computing after ``kill SWEEP_PID``.

Hydra's joblib launcher runs jobs in loky worker processes. ``kill`` (SIGTERM) of a sweep ends its main
process only: the workers are re-parented to init and finish the run they hold (minutes of CPU, gigabytes
of memory, a record written after the user stopped the sweep), then idle forever (seen on this project:
workers of a sweep killed 90 minutes earlier were still alive). Ctrl-C is not affected (it signals the
whole foreground process group).

:func:`mark_sweep_process` (the sweep's main process) records its pid in the environment, which workers
inherit, and installs a SIGTERM handler that sends SIGTERM to the process's children (idle workers, and
workers still starting, included) before it exits with status 143, as the default action would.
:func:`exit_with_sweep`, called when a worker imports ``lfabench.cli.run`` (before its first job), starts (once
per worker process) a daemon thread that polls the worker's parent once a second and ends the worker the
moment it is no longer the process it started under: this covers a sweep killed by SIGKILL, which no
handler sees. Child processes of the worker (``isolate=process``) die with it through their own
``PR_SET_PDEATHSIG``. Children are found in ``/proc`` (Linux); elsewhere only the watchdog applies.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

SWEEP_PID_ENV = "LFABENCH_SWEEP_PID"
POLL_S = 1.0
_watching = False


def mark_sweep_process() -> None:
    """Record this process as the sweep's main process (inherited by every worker it starts), and make
    SIGTERM end its children with it."""
    os.environ[SWEEP_PID_ENV] = str(os.getpid())
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate_children_and_exit)


def children(pid: int) -> list[int]:
    """Pids of the processes whose parent is ``pid`` (``/proc``; empty where there is none)."""
    found = []
    proc = Path("/proc")
    if not proc.is_dir():
        return found
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 1 and fields[1] == str(pid):
            found.append(int(entry.name))
    return found


def _terminate_children_and_exit(signum, frame) -> None:
    for child in children(os.getpid()):
        try:
            os.kill(child, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
    os._exit(128 + signal.SIGTERM)


def exit_with_sweep(poll_s: float = POLL_S) -> bool:
    """In a worker of a sweep, end this process when its parent changes; returns whether it now watches.

    Does nothing in the sweep's own process, outside a sweep, or when already watching.
    """
    global _watching
    sweep_pid = os.environ.get(SWEEP_PID_ENV)
    if _watching or not sweep_pid or int(sweep_pid) == os.getpid():
        return _watching
    parent = os.getppid()

    def watch() -> None:
        stop = threading.Event()
        while not stop.wait(poll_s):
            if os.getppid() != parent:  # the sweep (or whatever started this worker) is gone
                os._exit(1)

    threading.Thread(target=watch, name="lfabench-exit-with-sweep", daemon=True).start()
    _watching = True
    return True
