"""The run record's layout: the machine and code facts live once, under ``provenance`` (schema 3), and records
of the earlier layout (every committed board's) still validate and read the same."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from lfabench.provenance import SIMD_FLAGS, recorded_machine, recorded_revision, recorded_version
from lfabench.record import LEGACY_FIELDS, SCHEMA_VERSION, RunRecorder, read_record, validate_record
from lfabench.reproduce import cpu_kind

#: A committed record of schema 2 (the layout with the facts also at the top level).
OLD = Path(__file__).resolve().parents[2] / "leaderboards" / "scene15" / "records" / "scene15_sift_prolfa_knn" \
    / "c47cb05b6552_s0" / "result.json"


def _keys(value, found: dict) -> dict:
    """How many times each key occurs anywhere in ``value``."""
    if isinstance(value, dict):
        for k, v in value.items():
            found[k] = found.get(k, 0) + 1
            _keys(v, found)
    elif isinstance(value, list):
        for v in value:
            _keys(v, found)
    return found


@pytest.fixture
def new_record(tmp_path) -> dict:
    rec = RunRecorder(tmp_path / "run", {"seed": 0}, 0)
    rec.finish_ok({"accuracy": 50.0})
    return json.loads(rec.path.read_text())


def test_a_new_record_holds_each_machine_and_code_fact_once_under_provenance(new_record):
    assert new_record["schema_version"] == SCHEMA_VERSION == 3
    assert not set(LEGACY_FIELDS) & set(new_record)
    counts = _keys(new_record, {})
    for fact in ("lfabench_version", "git_revision", "cpu_model", "cpu_simd", "cpu_count", "python"):
        assert counts.get(fact) == 1, fact
    env = new_record["provenance"]["environment"]
    machine = recorded_machine(new_record)
    assert machine["cpu_model"] == env["cpu_model"] and machine["cpu_count"] == env["cpu_count"]
    flags = env["cpu_flags"]
    assert machine["simd_flags"] == (None if flags is None else [f for f in SIMD_FLAGS if f in flags])
    assert recorded_version(new_record) == new_record["provenance"]["lfabench_version"]
    rev = new_record["provenance"]["git_revision"]
    assert recorded_revision(new_record) == (None if rev is None else
                                             rev + ("+dirty" if new_record["provenance"]["dirty"] else ""))
    validate_record(new_record, "new")


def test_a_new_record_with_a_fact_at_the_top_level_is_refused(new_record):
    for field in LEGACY_FIELDS:
        with pytest.raises(ValueError, match=f"schema_version 3 has '{field}' at the top level"):
            validate_record(dict(new_record, **{field: {} if field == "host" else "x"}), "new")


def test_a_committed_record_of_the_earlier_layout_validates_and_reads_the_same_facts():
    old = read_record(OLD)
    assert old["schema_version"] == 2 and set(LEGACY_FIELDS) <= set(old)
    assert recorded_version(old) == old["lfabench_version"] == old["provenance"]["lfabench_version"]
    assert recorded_revision(old) == old["git_revision"]
    machine = recorded_machine(old)
    host = old["host"]
    assert (machine["cpu_model"], machine["cpu_count"]) == (host["cpu_model"], host["cpu_count"])
    assert machine["simd_flags"] == host["cpu_simd"]
    assert machine["blas_kernels"] == sorted(b["architecture"] for b in host["blas"])
    # either half of the old layout alone gives the same machine: a record of one layout compares with the other
    only_host = copy.deepcopy(old)
    del only_host["provenance"]["environment"]
    only_env = {k: v for k, v in old.items() if k not in LEGACY_FIELDS}
    assert recorded_machine(only_host) == recorded_machine(only_env) == machine
    assert cpu_kind(only_host) == cpu_kind(only_env) == (tuple(host["cpu_simd"]), tuple(machine["blas_kernels"]))
    assert recorded_version(dict(old, provenance={})) == old["lfabench_version"]     # schema 1: top level only
