"""A full disk: the computed metrics are never lost, and every failed write names its path."""

from __future__ import annotations

import errno
import json
import subprocess
import sys
import tempfile

import pytest

import lfabench.record
from lfabench.run import RecordNotSavedError, run_benchmark

CFG = {"dataset": {"name": "digits", "params": {"n_samples": 120}}, "descriptor": {"name": "patches", "params": {}},
       "aggregator": {"name": "bow", "params": {"n_clusters": 8, "random_state": 0}},
       "evaluator": {"name": "knn", "params": {}}, "seed": 0, "cache": False}


def _full_disk_for_records(monkeypatch):
    real = lfabench.record.write_json_atomic

    def write(path, payload):
        if str(path).endswith("result.json"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, payload)

    monkeypatch.setattr(lfabench.record, "write_json_atomic", write)


def test_metrics_survive_a_record_that_cannot_be_written(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    _full_disk_for_records(monkeypatch)
    with pytest.raises(RecordNotSavedError) as info:
        run_benchmark(CFG, tmp_path / "run")
    message = str(info.value)
    assert f"could not write the run record {tmp_path / 'run' / 'result.json'}" in message
    assert "No space left on device" in message
    (saved,) = (tmp_path / "tmp" / "lfabench-unsaved").glob("run-*-result.json")
    assert f"saved to {saved} instead" in message
    record = json.loads(saved.read_text())
    assert record["status"] == "ok" and set(record["metrics"]) == {"accuracy"}
    assert f"accuracy={record['metrics']['accuracy']:.4f}" in message
    assert not (tmp_path / "run" / "result.json").exists()


def test_a_failed_run_whose_record_cannot_be_written_keeps_its_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    _full_disk_for_records(monkeypatch)
    bad = dict(CFG, aggregator={"name": "bow", "params": {"n_clusters": 10_000, "random_state": 0}})
    with pytest.raises(Exception) as info:
        run_benchmark(bad, tmp_path / "run")
    assert not isinstance(info.value, OSError)  # the run's own error, not the write's
    err = capsys.readouterr().err
    (saved,) = (tmp_path / "tmp" / "lfabench-unsaved").glob("run-*-result.json")
    assert "could not write the run record" in err and str(saved) in err
    assert json.loads(saved.read_text())["status"] == "failed"


@pytest.mark.slow  # a run through the command; the writes are tested in-process above
def test_cli_exits_2_naming_both_paths_without_traceback(tmp_path):
    script = ("import errno, sys, lfabench.record as r\n"
              "real = r.write_json_atomic\n"
              "def write(path, payload):\n"
              "    if str(path).endswith('result.json'):\n"
              "        raise OSError(errno.ENOSPC, 'No space left on device')\n"
              "    return real(path, payload)\n"
              "r.write_json_atomic = write\n"
              "from lfabench.cli import main\n"
              "sys.exit(main())\n")
    (tmp_path / "tmp").mkdir()
    proc = subprocess.run([sys.executable, "-c", script, "run", "hydra.run.dir=out", "aggregator=bow",
                           "dataset.params.n_samples=120", "aggregator.params.n_clusters=8"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env={"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path / "tmp"),
                               "LFABENCH_CACHE": str(tmp_path / "cache"), "HOME": str(tmp_path)})
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    (saved,) = (tmp_path / "tmp" / "lfabench-unsaved").glob("out-*-result.json")
    assert f"could not write the run record {tmp_path / 'out' / 'result.json'}" in proc.stderr
    assert str(saved) in proc.stderr and "accuracy=" in proc.stderr
