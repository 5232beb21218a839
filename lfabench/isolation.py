"""Per-run isolation inside a sweep: a time limit, and plugin exits that end one run, not the sweep.

Two ways to bound a run (config ``isolate``):

* ``none`` (in-process): :func:`time_limit` raises :class:`RunTimeLimitExceeded` in the running code
  once the limit is reached (``SIGALRM``, so Python-level loops and sleeps are interrupted; a plugin
  stuck inside one long C call, or one that blocks signals, is interrupted only when that call
  returns, if ever). The exception derives from ``BaseException`` so that a plugin's
  ``except Exception`` cannot swallow it.
* ``process``: :func:`call_in_child` runs the run in a fresh child process (loky's spawn context:
  a new interpreter, no fork of the parent's thread pools, no ``if __name__ == "__main__":`` guard
  needed) and SIGKILLs it, with its own worker processes, when the limit passes. Nothing the
  plugin does in C can stop that. The child dies with its parent (Linux ``PR_SET_PDEATHSIG``,
  elsewhere a watcher thread), so a killed sweep leaves no orphan behind.

The conductor records either way of ending, like a ``SystemExit`` or ``KeyboardInterrupt`` raised
by a plugin, as the failure of that run.

Stopping a run from outside is another matter: :func:`signals_interrupt_run` turns the user's Ctrl-C
(SIGINT) and a ``kill`` (SIGTERM) that arrive while a run computes into :class:`RunInterrupted`, which
the conductor records as ``status: "interrupted"`` and the CLI turns into the end of the whole sweep
(exit status 130 or 143, whatever ``continue_on_error`` says). A ``KeyboardInterrupt`` that a plugin
raises itself is not a signal: it stays that run's failure.
"""

from __future__ import annotations

import faulthandler
import os
import pickle
import signal
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

#: Values of the ``isolate`` config option.
ISOLATION_MODES = ("none", "process")
#: Seconds a child may take to start its interpreter and import what it runs, before the time limit
#: starts counting (a larger time limit replaces it): start-up is lfabench's overhead, not the run's.
STARTUP_LIMIT_S = 120.0


class RunTimeLimitExceeded(BaseException):
    """The run went past its ``time_limit`` (seconds)."""


class RunInterrupted(KeyboardInterrupt):
    """A signal from outside (SIGINT: Ctrl-C; SIGTERM: ``kill``) stopped the run; the sweep ends with it.

    A ``KeyboardInterrupt`` so that code which cleans up on Ctrl-C (joblib aborting its workers) does so,
    and ``except Exception`` in a plugin cannot swallow it. ``exit_status`` is the shell's 128 + signal.
    """

    def __init__(self, signum: int):
        self.signum = int(signum)
        self.signal_name = signal.Signals(signum).name
        self.exit_status = 128 + self.signum
        how = "Ctrl-C" if signum == signal.SIGINT else "a kill"
        super().__init__(f"the run was interrupted by {self.signal_name} ({how})")

    def __reduce__(self):  # picklable (an isolated run's child sends it to its parent)
        return (type(self), (self.signum,))


#: The signals that interrupt a run (:func:`signals_interrupt_run`).
INTERRUPT_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def signals_interrupt_run():
    """While the body runs, SIGINT and SIGTERM raise :class:`RunInterrupted` where the main thread is.

    The previous handlers come back when the body ends, before the conductor writes the record (a second
    Ctrl-C while it does is an ordinary one). Outside the main thread (a launcher's worker thread) this
    does nothing: Python delivers signals to the main thread only.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise RunInterrupted(signum)

    previous = {}
    try:
        for signum in INTERRUPT_SIGNALS:
            previous[signum] = signal.signal(signum, interrupt)
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)


class RunProcessDied(RuntimeError):
    """The child process of an isolated run ended without a result (a crash, ``os._exit``, a signal)."""


@contextmanager
def time_limit(seconds: float | None):
    """Interrupt the body with :class:`RunTimeLimitExceeded` after ``seconds`` (``None``/0: no limit)."""
    if not seconds:
        yield
        return
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        warnings.warn("time_limit needs the main thread of a POSIX process; the run has no time limit "
                      "(isolate=process enforces it from any thread)", RuntimeWarning, stacklevel=3)
        yield
        return

    def expire(signum, frame):
        raise RunTimeLimitExceeded(f"the run exceeded its time limit of {seconds:g} s (time_limit={seconds:g})")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, float(seconds))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ------------------------------------------------------------------ threads a plugin leaves behind
#: Seconds the CLI waits, after its last run, for threads that plugins started and did not end.
LINGER_JOIN_S = 5.0


def _thread_origin(thread: threading.Thread) -> str:
    target = getattr(thread, "_target", None)
    module = getattr(target, "__module__", None) or type(thread).__module__
    return f"{thread.name!r} (started by {module}.{getattr(target, '__qualname__', type(thread).__qualname__)})"


#: Modules whose non-daemon threads end by themselves when the interpreter exits (their pools register an exit
#: hook that Python runs before it waits for threads): joblib's loky executor, concurrent.futures, multiprocessing.
SELF_ENDING_THREAD_MODULES = ("joblib.", "concurrent.futures.", "multiprocessing.")


def _ends_at_exit(thread: threading.Thread) -> bool:
    target = getattr(thread, "_target", None)
    modules = (type(thread).__module__ or "", getattr(target, "__module__", None) or "")
    return any(m.startswith(SELF_ENDING_THREAD_MODULES) for m in modules)


def lingering_threads(join_s: float = LINGER_JOIN_S) -> list[threading.Thread]:
    """Non-daemon threads other than this one that are still alive after waiting up to ``join_s`` seconds
    in all for them to end. Python waits for every such thread before a process exits: a plugin's
    forgotten worker thread would keep the CLI alive forever after its results are written."""
    deadline = time.monotonic() + join_s
    alive = []
    for thread in threading.enumerate():
        if thread is threading.current_thread() or thread.daemon or not thread.is_alive() or _ends_at_exit(thread):
            continue
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            alive.append(thread)
    return alive


def exit_despite_threads(status: int, join_s: float = LINGER_JOIN_S) -> None:
    """End the process with ``status`` once every record is written: wait up to ``join_s`` seconds for
    non-daemon threads that plugins left running, then, if some still run, warn naming each and leave
    through ``os._exit`` (after flushing stdout and stderr) instead of waiting for them forever.
    Returns (and the caller exits normally) when no such thread is left."""
    alive = lingering_threads(join_s)
    if not alive:
        return
    names = ", ".join(_thread_origin(t) for t in alive)
    print(f"lfabench: warning: {len(alive)} thread(s) that a plugin started still run {join_s:g} s after the last "
          f"run ended: {names}; exiting without them (the records are written)", file=sys.stderr)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


# ------------------------------------------------------------------ one run in a child process
@dataclass
class ChildOutcome:
    """How :func:`call_in_child` ended.

    ``status``: ``returned`` (``value`` is the result), ``raised`` (``value`` is the exception),
    ``timed_out`` (killed at the limit) or ``died`` (ended without a result; ``exitcode`` says how,
    negative for a signal). For the last two, ``progress`` is the last payload the child reported
    (``None`` if none) and ``progress_age_s`` how long before the end it arrived; ``elapsed_s`` counts
    from the child's start (after its interpreter came up), ``peak_rss_mb`` is the child's peak
    resident memory where the platform tells it, ``hang_traceback`` the Python stacks of the child
    dumped just before the kill (``faulthandler``; empty when not available).
    """

    status: str
    value: Any = None
    progress: Any = None
    progress_age_s: float = 0.0
    elapsed_s: float = 0.0
    exitcode: int | None = None
    peak_rss_mb: float | None = None
    hang_traceback: str = ""
    pid: int | None = None


def call_in_child(fn: Callable[..., Any], args: tuple, time_limit_s: float | None = None) -> ChildOutcome:
    """Run ``fn(*args, report=report)`` in a fresh child process and wait for it.

    ``fn`` must be importable by reference (a module-level function); ``report(payload)`` sends a
    picklable progress payload to the parent (the last one is kept in the outcome). With
    ``time_limit_s``, the child and its descendants are SIGKILLed once the limit has passed since
    the child started running ``fn`` (its interpreter start-up is bounded apart, by
    ``max(time_limit_s, STARTUP_LIMIT_S)``).
    The caller's thread must stay alive while the child runs (Linux ties the child's life to it).
    """
    from multiprocessing.connection import wait

    from joblib.externals.loky.backend import get_context
    from joblib.externals.loky.backend.utils import kill_process_tree

    ctx = get_context("loky")
    receiver, sender = ctx.Pipe(duplex=False)
    fd, dump_path = tempfile.mkstemp(prefix="lfabench-hang-", suffix=".txt")
    os.close(fd)
    proc = ctx.Process(target=_child_main, args=(sender, os.getpid(), fn, args, time_limit_s, dump_path),
                       name="lfabench-isolated-run")
    outcome = ChildOutcome(status="died")
    t_start = time.monotonic()
    deadline = t_start + max(time_limit_s, STARTUP_LIMIT_S) if time_limit_s else None
    started = t_start
    progress_at = t_start
    try:
        proc.start()
        outcome.pid = proc.pid
        sender.close()  # the child holds the only writer: its exit is an EOF here
        while True:
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready = wait([receiver, proc.sentinel], timeout)
            if not ready:
                outcome.status = "timed_out"
                outcome.peak_rss_mb = _peak_rss_mb(proc.pid)
                kill_process_tree(proc)
                outcome.hang_traceback = _read_text(dump_path)
                break
            if receiver in ready or receiver.poll():
                try:
                    kind, payload = receiver.recv()
                except (EOFError, OSError):  # the child is gone without a word
                    proc.join(5)
                    break
                if kind == "started":
                    started = progress_at = time.monotonic()
                    deadline = started + time_limit_s if time_limit_s else None
                elif kind == "progress":
                    outcome.progress, progress_at = payload, time.monotonic()
                else:
                    outcome.status, outcome.value = kind, payload
                    proc.join(10)  # a plugin may leave non-daemon threads behind: do not wait for them
                    break
            else:  # the process ended and nothing more is to be read
                proc.join(5)
                break
    finally:
        if proc.is_alive():
            kill_process_tree(proc)
        receiver.close()
        try:
            os.unlink(dump_path)
        except OSError:
            pass
    now = time.monotonic()
    outcome.elapsed_s, outcome.progress_age_s = now - started, now - progress_at
    outcome.exitcode = proc.exitcode
    return outcome


def _child_main(conn, parent: int, fn, args: tuple, time_limit_s: float | None, dump_path: str) -> None:
    """The child's side of :func:`call_in_child`."""
    die_with_parent(parent)
    conn.send(("started", None))
    if time_limit_s:
        # the parent kills at the limit; dump every thread's Python stack just before, from faulthandler's
        # own C thread (it needs neither the GIL holder's cooperation nor signals)
        dump = open(dump_path, "w")  # noqa: SIM115 (kept open for the watchdog thread)
        faulthandler.dump_traceback_later(max(time_limit_s - min(0.25, time_limit_s / 4), 0.001), file=dump)
    try:
        message = ("returned", fn(*args, report=lambda payload: conn.send(("progress", payload))))
    except BaseException as exc:  # noqa: BLE001 (SystemExit/KeyboardInterrupt of a plugin end this run only)
        message = ("raised", _picklable(exc))
    if time_limit_s:
        faulthandler.cancel_dump_traceback_later()
    try:
        conn.send(message)
    except Exception as exc:  # an unpicklable result
        conn.send(("raised", RuntimeError(f"the isolated run's result could not be sent back: {exc}")))
    conn.close()


def _picklable(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling, else a RuntimeError carrying its type and message."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")


def die_with_parent(parent: int) -> None:
    """Make this process end when ``parent`` does (call first thing in a child).

    Linux: the kernel sends SIGKILL on the parent's death (``PR_SET_PDEATHSIG``), whatever this
    process is doing, even inside C code holding the GIL. Elsewhere, a daemon thread checks every
    0.2 s (it needs the GIL now and then).
    """
    if os.getppid() != parent:  # the parent died before we got here
        os._exit(1)
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            pr_set_pdeathsig = 1
            if libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0) == 0:
                if os.getppid() != parent:  # it died between the check above and prctl
                    os._exit(1)
                return
        except (OSError, AttributeError):
            pass

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(1)

    threading.Thread(target=watch, name="lfabench-parent-watch", daemon=True).start()


def _peak_rss_mb(pid: int) -> float | None:
    """Peak resident memory of process ``pid`` in MiB (Linux ``/proc/<pid>/status`` VmHWM), else None."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def _read_text(path: str) -> str:
    try:
        with open(path, errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""
