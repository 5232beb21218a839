"""A plugin cannot take the sweep down: sys.exit, KeyboardInterrupt or a hang in fit end that run only
(with continue_on_error=true), and sys.exit at import is a reported plugin failure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import warnings

import pytest

from lfabench.isolation import RunTimeLimitExceeded, time_limit
from lfabench.registry import PluginLoadWarning, PluginRegistry

pytestmark = pytest.mark.slow  # the slow tier: sweeps through hanging and exiting plugins

SCRIPT = textwrap.dedent('''
    import sys, time
    from lfabench import Aggregator, PluginSpec, hookimpl
    from lfabench.registry import get_registry

    class Exiter(Aggregator):
        def __init__(self, random_state=None):
            self.random_state = random_state
        def _fit(self, bags, y):
            sys.exit(3)

    class Hanger(Exiter):
        def _fit(self, bags, y):
            while True:
                try:
                    time.sleep(0.05)
                except Exception:  # a plugin that swallows errors cannot swallow the time limit
                    pass

    class Interrupter(Exiter):
        def _fit(self, bags, y):
            raise KeyboardInterrupt

    class Misbehaving:
        @hookimpl
        def lfabench_aggregators(self):
            return [PluginSpec("exiter", Exiter, "calls sys.exit in fit"),
                    PluginSpec("hanger", Hanger, "never returns from fit"),
                    PluginSpec("interrupter", Interrupter, "raises KeyboardInterrupt in fit")]

    get_registry().register(Misbehaving(), name="misbehaving")
    from lfabench.cli import main
    main(sys.argv[1:])
    print("SWEEP DONE")
''')


def test_sweep_survives_exit_interrupt_and_hang_in_fit(tmp_path):
    (tmp_path / "sweep.py").write_text(SCRIPT)
    proc = subprocess.run([sys.executable, "sweep.py", "run", "-m", "aggregator=exiter,hanger,interrupter,bow",
                           "aggregator.params.random_state=0", "dataset.params.n_samples=100",
                           "continue_on_error=true", "time_limit=10", "cache=false"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, LFABENCH_N_JOBS="1"))  # extraction in-process: fast, no workers
    assert proc.returncode == 0 and "SWEEP DONE" in proc.stdout, proc.stderr[-3000:]
    records = {}
    for path in tmp_path.glob("lfabench_multirun/**/result.json"):
        rec = json.loads(path.read_text())
        records[rec["config"]["aggregator"]["name"]] = rec
    assert set(records) == {"exiter", "hanger", "interrupter", "bow"}
    assert records["bow"]["status"] == "ok"
    for name, error in (("exiter", "SystemExit"), ("hanger", "RunTimeLimitExceeded"),
                        ("interrupter", "KeyboardInterrupt")):
        rec = records[name]
        assert rec["status"] == "failed" and rec["error"]["type"] == error and rec["error"]["stage"] == "fit", name
        assert rec["time_limit_s"] == 10
    assert "time limit of 10 s" in records["hanger"]["error"]["message"]


def test_time_limit_interrupts_python_code_and_is_lifted_afterwards():
    t0 = time.monotonic()
    with pytest.raises(RunTimeLimitExceeded):
        with time_limit(0.2):
            while True:
                time.sleep(0.01)
    assert time.monotonic() - t0 < 5
    with time_limit(0.2):
        pass
    time.sleep(0.4)  # no alarm left behind


class _ExitingEntryPoint:
    name, value, dist = "bad", "bad_plugin", None

    def load(self):
        sys.exit("a plugin called sys.exit at import")


def test_sys_exit_at_import_is_a_reported_failure(monkeypatch):
    import lfabench.registry as registry_mod

    monkeypatch.setattr(registry_mod.importlib_metadata, "entry_points", lambda group: [_ExitingEntryPoint()])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reg = PluginRegistry()
    assert len(reg.failures) == 1 and "SystemExit" in reg.failures[0].error
    assert any(issubclass(w.category, PluginLoadWarning) for w in caught)
