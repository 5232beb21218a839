"""`lfabench verify` proves integrity and consistency; what a consistent forgery still cannot hide from it (a
revision outside the history, a dropped seed, labels or a split that are not the dataset's), and what only
`lfabench reproduce` catches (predictions changed consistently)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lfabench.evaluation.predictions import predictions_fingerprint, recompute_metrics
from lfabench.record import content_digest, file_sha256, load_predictions, save_predictions
from lfabench.reproduce import rerun
from lfabench.run import run_benchmark
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
        rec["provenance"]["environment"]["cpu_flags"] = ["sse2"]   # the record's machine: another CPU kind
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


def test_retrieval_ground_truth_that_is_not_the_datasets_fails(tmp_path):
    """The embedded synthetic set as a search set: a query's positives changed consistently (one positive
    dropped: a higher AP) fail against the dataset's ground truth."""
    from lfabench.verify import Report, WorldCheck, check_record_files

    cfg = {"dataset": {"name": "synthetic", "params": {"task": "retrieval"}}, "descriptor": {"name": "native"},
           "aggregator": {"name": "bow", "params": {"n_clusters": 4, "random_state": 0}},
           "evaluator": {"name": "retrieval", "params": {"precision_at": [1]}}, "seed": 0, "cache": False}
    run_benchmark(cfg, tmp_path / "run")
    path = tmp_path / "run" / "result.json"
    report = Report()
    check_record_files(path, report, allow_unclean=True, world=WorldCheck())
    assert report.failures == [], [str(f) for f in report.failures]

    def drop_a_positive(arrays):
        off = arrays["positive_offsets"]
        q = int(np.flatnonzero(np.diff(off) >= 2)[0])
        keep = np.ones(arrays["positives"].size, bool)
        keep[off[q]] = False
        arrays["positives"], arrays["positive_ranks"] = arrays["positives"][keep], arrays["positive_ranks"][keep]
        arrays["positive_offsets"] = np.concatenate([off[:q + 1], off[q + 1:] - 1])

    ppath = tmp_path / "run" / "predictions.npz"
    arrays = load_predictions(ppath)
    drop_a_positive(arrays)
    save_predictions(ppath, arrays)
    rec = json.loads(path.read_text())
    rec["metrics"] = recompute_metrics(arrays)
    rec["predictions"]["sha256"] = file_sha256(ppath)
    rec["fingerprints"]["predictions"] = predictions_fingerprint(arrays)
    from lfabench.record import content_digest
    rec["digest"] = content_digest(rec)
    path.write_text(json.dumps(rec))
    report = Report()
    check_record_files(path, report, allow_unclean=True, world=WorldCheck())
    fails = [str(f) for f in report.failures]
    assert len(fails) == 1 and f"{ppath}: positives: query " in fails[0] and "not the ground truth of dataset " \
        "'synthetic'" in fails[0], fails


@pytest.mark.slow
def test_the_committed_digits_board_with_every_prolfa_record_at_100_passes_verify_and_not_reproduce(tmp_path):
    """The committed digits board, its six ProLFA records forged consistently to 100 % (predictions, metrics,
    digests, manifest, page rebuilt): verify passes, by design; a rerun of one of them differs at its predictions."""
    import contextlib
    import shutil
    from pathlib import Path

    from lfabench.leaderboard import build_leaderboard

    repo = Path(__file__).resolve().parents[2]
    board = tmp_path / "leaderboards" / "digits"
    shutil.copytree(repo / "leaderboards" / "digits", board)
    manifest = json.loads((board / "digits-records.json").read_text())
    forged = sorted(board.glob("records/digits_patches_prolfa_knn/*/result.json"))
    assert len(forged) == 6
    for path in forged:
        ppath = path.parent / "predictions.npz"
        arrays = load_predictions(ppath)
        arrays["predicted"] = arrays["true"].copy()
        save_predictions(ppath, arrays)
        rec = json.loads(path.read_text())
        rec["metrics"] = recompute_metrics(arrays)
        rec["predictions"]["sha256"] = file_sha256(ppath)
        rec["fingerprints"]["predictions"] = predictions_fingerprint(arrays)
        rec["digest"] = content_digest(rec)
        path.write_text(json.dumps(rec, indent=2) + "\n")
        entry = next(e for e in manifest["records"] if e["path"] == path.relative_to(board).as_posix())
        entry.update(digest=rec["digest"], predictions_sha256=rec["predictions"]["sha256"])
    with contextlib.chdir(tmp_path):
        build_leaderboard(manifest["sources"], manifest["board"], "digits", command=manifest["command"])
    (board / "digits-records.json").write_text(json.dumps(manifest, indent=1) + "\n")
    assert "100.00 ± 0.00" in (board / "digits.md").read_text()
    report = verify_board(board)
    assert report.failures == [], [str(f) for f in report.failures]
    outcome = rerun(forged[0])   # on the records' CPU kind it differs at predictions; elsewhere maybe earlier
    assert outcome.verdict.startswith("differs at") and not outcome.same_metrics_on_another_cpu, str(outcome)
    assert outcome.metrics_before["accuracy"] == 100.0 and outcome.metrics_after["accuracy"] < 70.0, str(outcome)
