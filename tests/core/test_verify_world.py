"""`lfabench verify` proves integrity and consistency; what a consistent forgery still cannot hide from it (a
revision outside the history, a dropped seed, labels or a split that are not the dataset's), and what only
`lfabench reproduce` catches (predictions changed consistently)."""

from __future__ import annotations

import json

import numpy as np

from lfabench.evaluation.predictions import predictions_fingerprint, recompute_metrics
from lfabench.record import file_sha256, load_predictions, save_predictions
from lfabench.reproduce import rerun
from lfabench.verify import verify_board

from test_verify_hostile import _copy, _fails, _records, _rewrite, board, rebuild  # noqa: F401 -- the fixture


def _forge(path, change):
    """Change a record's predictions with ``change(arrays)`` and make everything consistent with them: the
    metrics, the file's sha256, the fingerprint, the digest, the manifest and the rebuilt board."""
    ppath = path.parent / "predictions.npz"
    arrays = load_predictions(ppath)
    change(arrays)
    save_predictions(ppath, arrays)
    rec = json.loads(path.read_text())
    rec["metrics"] = recompute_metrics(arrays)
    rec["predictions"]["sha256"] = file_sha256(ppath)
    rec["fingerprints"]["predictions"] = predictions_fingerprint(arrays)
    _rewrite(path, rec)
    rebuild(path.parents[5])
    return rec


def test_a_consistent_forgery_passes_verify_and_reproduce_catches_it(board, tmp_path):
    copy = _copy(board, tmp_path)
    path = _records(copy)[0]

    def all_right(arrays):
        arrays["predicted"] = arrays["true"].copy()

    rec = _forge(path, all_right)
    assert rec["metrics"]["accuracy"] == 100.0
    assert _fails(copy) == []   # integrity and consistency: verify cannot tell, by design
    outcome = rerun(path, use_cache=False)
    assert outcome.verdict == "differs at predictions", str(outcome)
    assert outcome.metrics_before["accuracy"] == 100.0 and outcome.metrics_after["accuracy"] < 100.0


def test_a_revision_outside_the_history_fails(board, tmp_path):
    copy = _copy(board, tmp_path)
    path = _records(copy)[0]
    rec = json.loads(path.read_text())
    real = rec["provenance"]["git_revision"]
    rec["provenance"]["git_revision"] = "f" * 40
    _rewrite(path, rec)
    fails = _fails(copy, rebuild=False)
    assert fails == [f"FAIL: {path}: provenance.git_revision: {'f' * 40} is no commit of the lfabench checkout "
                     f"here ({fails[0].split('checkout here (')[1]}"], fails
    rec["provenance"]["git_revision"] = "not a hash"
    _rewrite(path, rec)
    assert any("'not a hash' is not a full commit hash" in f for f in _fails(copy, rebuild=False))
    assert len(real) == 40


def test_a_dropped_seed_fails_after_a_rebuild(board, tmp_path):
    copy = _copy(board, tmp_path)
    gone = copy / "records" / "k8" / "s1"
    for f in gone.iterdir():
        f.unlink()
    gone.rmdir()
    rebuild(copy.parents[1])
    fails = _fails(copy)
    assert len(fails) == 1 and str(copy / "records" / "k8" / "s0" / "result.json") in fails[0], fails
    assert "this setting lacks seed(s) 1 that the other settings of its table hold (1 of 2 seeds)" in fails[0]


def test_labels_that_are_not_the_datasets_fail(board, tmp_path):
    copy = _copy(board, tmp_path)
    path = _records(copy)[0]

    def relabel(arrays):  # every test sample "correct": its true label replaced by the prediction
        arrays["true"] = arrays["predicted"].copy()

    _forge(path, relabel)
    fails = _fails(copy)
    assert fails == [f"FAIL: {path.parent / 'predictions.npz'}: true: not the labels dataset 'digits' gives its "
                     f"test samples"], fails


def test_a_split_that_is_not_the_evaluators_fails(board, tmp_path):
    copy = _copy(board, tmp_path)
    path = _records(copy)[0]

    def swap(arrays):  # one hard test sample moved into training, an easy one out
        arrays["train_indices"] = arrays["train_indices"].copy()
        arrays["test_indices"] = arrays["test_indices"].copy()
        arrays["train_indices"][0], arrays["test_indices"][0] = arrays["test_indices"][0], arrays["train_indices"][0]

    _forge(path, swap)
    fails = _fails(copy)
    ppath = path.parent / "predictions.npz"
    assert f"FAIL: {ppath}: train_indices: not the split the evaluator draws from dataset 'digits' for this seed" \
        in fails and f"FAIL: {ppath}: test_indices: not the split the evaluator draws from dataset 'digits' for " \
        f"this seed" in fails, fails


def test_data_on_disk_is_compared_only_when_asked(board, tmp_path, monkeypatch):
    copy = _copy(board, tmp_path)
    monkeypatch.setattr("lfabench.verify_world.EMBEDDED_DATASETS", ())
    path = _records(copy)[0]

    def relabel(arrays):
        arrays["true"] = arrays["predicted"].copy()

    _forge(path, relabel)
    assert _fails(copy, rebuild=False) == []
    assert any("true: not the labels" in f for f in _fails(copy, rebuild=False, check_data=True))
    report = verify_board(copy, allow_unclean=True, rebuild=False, check_data=True)
    assert np.sum([f.field == "true" for f in report.failures]) == 1


def test_reproduce_accepts_another_cpu_kind_only_when_asked_and_only_with_the_same_metrics(board, tmp_path):
    """A record made on another CPU kind (SIMD features, BLAS kernel) whose fitted arrays differ in their last
    bits: identical metrics are accepted with --across-cpus; changed metrics never are."""
    from conftest import run_cli

    copy = _copy(board, tmp_path)
    for path in _records(copy):
        rec = json.loads(path.read_text())
        rec["host"]["cpu_simd"] = ["SSE2"]          # the record's machine: another CPU kind
        rec["fingerprints"]["fitted"] = "0" * 64     # its codebook differed in its last bits
        path.write_text(json.dumps(rec))
    outcome = rerun(_records(copy)[0], use_cache=False)
    assert outcome.verdict == "differs at fitted" and outcome.other_cpu and outcome.same_metrics_on_another_cpu
    assert "on another CPU kind than the record's" in str(outcome)
    args = ["reproduce", str(copy), "--sample", "1", "--no-cache"]
    assert run_cli(args, cwd=tmp_path, check=False).returncode == 1
    proc = run_cli(args + ["--across-cpus"], cwd=tmp_path, check=False)
    assert proc.returncode == 0 and "1 with identical metrics on another CPU kind" in proc.stdout, proc.stdout
    path = _records(copy)[0]
    rec = json.loads(path.read_text())
    rec["metrics"]["accuracy"] += 1.0               # a changed metric is never a CPU difference
    path.write_text(json.dumps(rec))
    assert not rerun(path, use_cache=False).same_metrics_on_another_cpu
