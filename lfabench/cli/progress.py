"""Progress of a run on a terminal: while a stage runs, every :data:`EVERY_S` seconds, the stage, its elapsed time
and the last progress line a plugin logged (``prolfa iter 9: J=...``); a run faster than that prints nothing more.

Shown only when stderr is a terminal (a sweep's log or a pipe gets the finished run's summary only, as before)
and not with ``-v``, which sends every log line to the terminal already. The lines go to stderr, the summary
stays on stdout.
"""

from __future__ import annotations

import logging
import sys
import threading
import time

#: Seconds between two progress lines of one stage.
EVERY_S = 10.0


class TerminalProgress(logging.Handler):
    """``on_stage`` for :func:`lfabench.run.run_benchmark`, and a logging handler that keeps the last line logged.

    Use as a context manager around the run: it starts the ticking thread and stops it, and detaches the handler.
    """

    def __init__(self, stream=None, every_s: float = EVERY_S, clock=time.monotonic):
        super().__init__(level=logging.INFO)
        self.stream = stream if stream is not None else sys.stderr
        self.every_s = every_s
        self.clock = clock
        self.stage: str | None = None
        self.started = 0.0
        self.last_line = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    # -- logging.Handler: remember what the plugins say, print nothing of it here
    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.last_line = record.getMessage().splitlines()[0][:100] if record.getMessage() else ""
        except Exception:  # noqa: BLE001 - a bad log call must not break the run
            pass

    def on_stage(self, stage: str) -> None:
        with self._lock:
            self.stage, self.started, self.last_line = stage, self.clock(), ""

    def tick(self) -> None:
        """One progress line for the running stage (the thread calls it every ``every_s``)."""
        with self._lock:
            if self.stage is None:
                return
            line = f"lfabench run: {self.stage} {self.clock() - self.started:.0f} s"
            if self.last_line:
                line += f" ({self.last_line})"
        self._write(line)

    def _write(self, line: str) -> None:
        try:
            print(line, file=self.stream, flush=True)
        except (OSError, ValueError):
            pass

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            self.tick()

    def __enter__(self) -> "TerminalProgress":
        logging.getLogger().addHandler(self)
        self._thread = threading.Thread(target=self._loop, name="lfabench-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        logging.getLogger().removeHandler(self)
        with self._lock:
            self.stage = None


def wanted(stream=None, verbose: bool = False) -> bool:
    """Whether to show progress: stderr is a terminal and ``-v`` is not given."""
    stream = stream if stream is not None else sys.stderr
    try:
        return not verbose and stream.isatty()
    except (AttributeError, ValueError):
        return False
