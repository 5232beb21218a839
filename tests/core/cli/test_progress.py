"""A run on a terminal reports the running stage, its elapsed time and the last progress line a plugin logged;
a pipe or -v gets nothing more than before."""

from __future__ import annotations

import io
import logging

from lfabench.cli.progress import TerminalProgress, wanted


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class Tty(io.StringIO):
    def isatty(self):
        return True


def test_ticks_name_the_stage_its_time_and_the_last_logged_line():
    out, clock = io.StringIO(), Clock()
    progress = TerminalProgress(stream=out, every_s=3600, clock=clock)
    with progress:
        progress.tick()  # before any stage: nothing
        progress.on_stage("fit")
        clock.now += 42
        progress.tick()
        solver = logging.getLogger("lfabench_plugins.aggregators.someone")
        solver.setLevel(logging.INFO)  # as Hydra sets the run's loggers
        solver.info("iter 9: J=0.125\nsecond line")
        clock.now += 10
        progress.tick()
    progress.tick()  # after the run: nothing
    assert out.getvalue().splitlines() == ["lfabench run: fit 42 s", "lfabench run: fit 52 s (iter 9: J=0.125)"]
    assert progress not in logging.getLogger().handlers


def test_a_new_stage_restarts_the_clock_and_forgets_the_last_line():
    out, clock = io.StringIO(), Clock()
    progress = TerminalProgress(stream=out, every_s=3600, clock=clock)
    with progress:
        progress.on_stage("descriptors")
        logging.getLogger("x").warning("chunk 3 of 9")
        clock.now += 5
        progress.on_stage("fit")
        clock.now += 12
        progress.tick()
    assert out.getvalue() == "lfabench run: fit 12 s\n"


def test_shown_on_a_terminal_only_and_not_with_verbose():
    assert wanted(Tty()) and not wanted(Tty(), verbose=True) and not wanted(io.StringIO())
