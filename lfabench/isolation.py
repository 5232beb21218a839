"""Per-run isolation inside a sweep: a time limit, and plugin exits that end one run, not the sweep.

:func:`time_limit` raises :class:`RunTimeLimitExceeded` in the running code once the limit is
reached (``SIGALRM``, so Python-level loops and sleeps are interrupted; a plugin stuck inside one
long C call is interrupted when that call returns). The exception derives from ``BaseException``
so that a plugin's ``except Exception`` cannot swallow it. The conductor records it, like a
``SystemExit`` or ``KeyboardInterrupt`` raised by a plugin, as the failure of that run.
"""

from __future__ import annotations

import signal
import threading
import warnings
from contextlib import contextmanager


class RunTimeLimitExceeded(BaseException):
    """The run went past its ``time_limit`` (seconds)."""


@contextmanager
def time_limit(seconds: float | None):
    """Interrupt the body with :class:`RunTimeLimitExceeded` after ``seconds`` (``None``/0: no limit)."""
    if not seconds:
        yield
        return
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        warnings.warn("time_limit needs the main thread of a POSIX process; the run has no time limit",
                      RuntimeWarning, stacklevel=3)
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
