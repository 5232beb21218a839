"""Secrets in overrides: a value read from the environment is recorded as written, and never published."""

from __future__ import annotations

import json

import pytest

from lfabench.recordset.publish import publish_records
from lfabench.redact import redact_config, secret_problems

from conftest import run_cli

SECRET = "s3cr3t-Zq8-do-not-publish"
RUN = ["aggregator=bow", "dataset.params.n_samples=120", "aggregator.params.n_clusters=8"]


@pytest.mark.slow
def test_an_env_override_is_recorded_as_written_and_the_board_never_shows_it(tmp_path):
    env = {"LFABENCH_CACHE": str(tmp_path / "cache"), "LFA_TEST_API_TOKEN": SECRET, "LFA_TEST_METRIC": "cosine"}
    run_cli(["run", "hydra.run.dir=runs/r", *RUN, "+note=token ${oc.env:LFA_TEST_API_TOKEN}",
             "evaluator.params.metric=${oc.env:LFA_TEST_METRIC}"], cwd=tmp_path, env=env)
    text = (tmp_path / "runs" / "r" / "result.json").read_text()
    assert SECRET not in text
    rec = json.loads(text)
    assert rec["config"]["note"] == "token ${oc.env:LFA_TEST_API_TOKEN}"
    assert rec["config"]["evaluator"]["params"]["metric"] == "${oc.env:LFA_TEST_METRIC}"
    assert rec["setting"]["evaluator"]["params"]["metric"] == "${oc.env:LFA_TEST_METRIC}"
    assert rec["status"] == "ok" and rec["output_dim"] == 8  # the plugins got the values all the same
    run_cli(["leaderboard", "runs", "--out", "board"], cwd=tmp_path, env=env)
    for page in (tmp_path / "board").iterdir():
        if page.suffix in (".html", ".md", ".csv"):
            assert SECRET not in page.read_text(), page


def test_publish_refuses_a_record_holding_a_resolved_secret(tmp_path, monkeypatch):
    # a record as an lfabench without redaction wrote it: the resolved value beside the written expression (an old
    # record, so without provenance: allowed unclean here, since a secret is refused even then)
    run = tmp_path / "sweep" / "g" / "r"
    run.mkdir(parents=True)
    rec = {"schema_version": 1, "status": "ok", "seed": 0, "metrics": {"accuracy": 50.0}, "timings_s": {},
           "config": {"dataset": {"name": "digits", "params": {"root": "s3cr3t-by-env"}}, "seed": 0},
           "setting": {"dataset": {"name": "digits", "params": {"root": "${oc.env:LFA_ROOT}"}}},
           "run_dir": "x", "finished_at": "2000"}
    (run / "result.json").write_text(json.dumps(rec))
    with pytest.raises(ValueError, match=r"result.json: would publish a secret: config.dataset.params.root holds "
                                         r"the value of \$\{oc.env:LFA_ROOT\}"):
        publish_records([tmp_path / "sweep"], tmp_path / "board", allow_unclean=True)
    assert not (tmp_path / "board" / "records").exists()
    # a secret-named variable's value anywhere in a record (here an error message) is refused too
    rec["setting"]["dataset"]["params"]["root"] = "plain"
    rec["config"]["dataset"]["params"]["root"] = "plain"
    rec["metrics_note"] = f"failed with {SECRET}"
    (run / "result.json").write_text(json.dumps(rec))
    monkeypatch.setenv("MY_SERVICE_PASSWORD", SECRET)
    with pytest.raises(ValueError, match=r"metrics_note holds the value of the environment variable "
                                         r"\$MY_SERVICE_PASSWORD"):
        publish_records([tmp_path / "sweep"], tmp_path / "board", allow_unclean=True)


def test_redact_config_replaces_exactly_the_fields_read_from_the_environment():
    written = {"a": {"x": "${oc.env:HOME}", "y": 3, "z": ["${env:USER}", "k"]}, "b": "${seed}", "seed": 1}
    resolved = {"a": {"x": "/root", "y": 3, "z": ["me", "k"]}, "b": 1, "seed": 1}
    assert redact_config(resolved, written) == {"a": {"x": "${oc.env:HOME}", "y": 3, "z": ["${env:USER}", "k"]},
                                                "b": 1, "seed": 1}
    assert resolved["a"]["x"] == "/root"  # a copy: the run's own config keeps the value
    assert secret_problems({"config": resolved, "setting": written}, environ={}) == [
        "config.a.x holds the value of ${oc.env:HOME} (read from the environment)",
        "config.a.z[0] holds the value of ${env:USER} (read from the environment)"]
    assert secret_problems({"config": redact_config(resolved, written), "setting": written}, environ={}) == []
