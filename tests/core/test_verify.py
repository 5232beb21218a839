"""`lfabench verify` passes on a board published from real runs and names the file of any single change."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import shutil

import numpy as np
import pytest

from lfabench.recordset.publish import UncleanRecords, publish_records
from lfabench.record import content_digest, file_sha256, load_predictions, save_predictions
from lfabench.run import run_benchmark
from lfabench.verify import verify_board

from conftest import run_cli


def _lfabench(args, cwd) -> tuple[int, str, str]:
    """``lfabench ARGS`` in this process, from ``cwd`` (what a subprocess would do, without its start-up):
    ``(exit status, stdout, stderr)``."""
    import contextlib
    import io
    import os

    from lfabench.cli import main

    out, err, here = io.StringIO(), io.StringIO(), os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(list(args))
    finally:
        os.chdir(here)
    return status, out.getvalue(), err.getvalue()


def _cfg(seed, n_clusters):
    return {"dataset": {"name": "digits", "params": {"n_samples": 200}},
            "descriptor": {"name": "patches", "params": {}},
            "aggregator": {"name": "bow", "params": {"n_clusters": n_clusters, "random_state": seed}},
            "evaluator": {"name": "knn", "params": {"k": 1}}, "seed": seed}


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    """A board published from four real runs (two settings, two seeds), built as `lfabench leaderboard` does."""
    root = tmp_path_factory.mktemp("verify")
    return _published(root, [({"n_clusters": k}, seed, f"g/k{k}_s{seed}") for seed in (0, 1) for k in (8, 16)])


def _published(root, runs):
    """``root/boards/demo``: a board published from BoW runs ``(params, seed, run folder)``, each recorded with
    ``random_state: ${seed}`` in its setting, built as `lfabench leaderboard` does."""
    for params, seed, folder in runs:
        cfg = dict(_cfg(seed, params["n_clusters"]),
                   aggregator={"name": "bow", "params": dict(params, random_state=seed)})
        setting = dict(cfg, aggregator={"name": "bow", "params": dict(params, random_state="${seed}")})
        run_benchmark(cfg, root / "sweep" / folder, setting=setting)
    board = root / "boards" / "demo"
    # the test tree is a working copy: its records may be dirty, published here only with the override
    publish_records([root / "sweep"], board, allow_unclean=True)
    assert _lfabench(["leaderboard", "boards/demo/records", "--out", "boards/demo", "--name", "demo"], root)[0] == 0
    return board


def _copy(board, tmp_path):
    dest = tmp_path / "boards" / "demo"
    shutil.copytree(board, dest)
    return dest


def _failures(board):
    # the board's records may come from this dirty working tree: that is tested apart (test_unclean_...)
    return [str(f) for f in verify_board(board, allow_unclean=True).failures]


def test_a_published_board_verifies(board):
    report = verify_board(board, allow_unclean=True)
    assert report.failures == [], "\n".join(map(str, report.failures))
    assert report.n_records == 4 and report.n_recomputed == 4 and report.boards == ["demo"]
    manifest = json.loads((board / "demo-records.json").read_text())
    assert len(manifest["records"]) == 4 and all(len(e["digest"]) == 64 for e in manifest["records"])


def test_one_changed_metric_fails_naming_the_record(board, tmp_path):
    copy = _copy(board, tmp_path)
    path = sorted(copy.glob("records/**/result.json"))[0]
    rec = json.loads(path.read_text())
    rec["metrics"]["accuracy"] = rec["metrics"]["accuracy"] + 1.0
    path.write_text(json.dumps(rec, indent=2))
    fails = _failures(copy)
    assert any(str(path) in f and "digest" in f for f in fails)
    assert any(str(path) in f and "metrics.accuracy" in f and "the predictions give" in f for f in fails)
    # a forger who also recomputes the digest is still caught by the manifest and the rebuilt board
    rec["digest"] = content_digest(rec)
    path.write_text(json.dumps(rec, indent=2))
    fails = _failures(copy)
    assert any(str(path) in f and "metrics.accuracy" in f for f in fails)
    assert any(str(path) in f and "demo-records.json" in f for f in fails)
    assert any("demo.csv" in f and "differs from what a rebuild" in f for f in fails)


def test_one_changed_prediction_fails_naming_the_file(board, tmp_path):
    copy = _copy(board, tmp_path)
    ppath = sorted(copy.glob("records/**/predictions.npz"))[0]
    arrays = load_predictions(ppath)
    arrays["predicted"] = arrays["predicted"].copy()
    i = int(np.flatnonzero((arrays["predicted"] == arrays["true"]) & ~arrays["counted_wrong"])[0])
    arrays["predicted"][i] = arrays["true"][i] + 1  # one correctly classified test sample now wrong
    save_predictions(ppath, arrays)
    fails = _failures(copy)
    assert any(str(ppath) in f and "predictions.sha256" in f and "not read further" in f for f in fails)
    # a file whose sha256 failed is not read: its content is judged only once the record names it
    rpath = ppath.parent / "result.json"
    rec = json.loads(rpath.read_text())
    rec["predictions"]["sha256"] = file_sha256(ppath)
    rpath.write_text(json.dumps(rec, indent=2))
    fails = _failures(copy)
    assert any(str(rpath) in f and "metrics.accuracy" in f for f in fails)
    assert any(str(ppath) in f and "fingerprints.predictions" in f for f in fails)


def test_one_changed_board_cell_fails_naming_the_file(board, tmp_path):
    copy = _copy(board, tmp_path)
    md = copy / "demo.md"
    lines = md.read_text().split("\n")
    score = r"\|(\s+)(\d+\.\d\d) ±"  # the first score cell (mean ± std)
    n = next(i for i, line in enumerate(lines) if re.search(score, line))
    lines[n] = re.sub(score, lambda m: f"|{m[1]}{float(m[2]) + 0.01:.2f} ±", lines[n], count=1)
    md.write_text("\n".join(lines))
    assert _failures(copy) == [f"FAIL: {md}: line {n + 1}: differs from what a rebuild from the records writes"]


def test_a_page_built_by_another_lfabench_verifies_but_a_changed_record_version_does_not(board, tmp_path):
    # the page's build stamp names the lfabench that built it; a later checkout (another version) verifies it
    copy = _copy(board, tmp_path)
    page = copy / "demo.html"
    text = page.read_text()
    stamp = re.search(r"Generated [0-9T:+.-]+ by lfabench ([^ <]+)", text)
    assert stamp is not None
    page.write_text(text.replace(stamp[0], stamp[0].replace(stamp[1], "9.9.9.dev1+gfeedbee")))
    assert _failures(copy) == []
    # what the page says of the records is content: a record version changed there is a discrepancy
    records_from = re.search(r"Records from lfabench ([^;<]+);", page.read_text())
    assert records_from is not None
    page.write_text(page.read_text().replace(records_from[0], "Records from lfabench 0.0.1;"))
    assert [f.split(": line")[0] for f in _failures(copy)] == [f"FAIL: {page}"]


def test_a_changed_diff_and_a_missing_record_are_named(board, tmp_path):
    copy = _copy(board, tmp_path)
    diffs = sorted(copy.glob("records/**/source.diff.gz"))
    if diffs:  # the tree the tests run from is dirty: its records carry the diff
        diffs[0].write_bytes(gzip.compress(b"another diff\n"))
        assert any(str(diffs[0]) in f and "diff_sha256" in f for f in _failures(copy))
    gone = sorted(copy.glob("records/**/result.json"))[-1]
    shutil.rmtree(gone.parent)
    assert any(str(gone) in f and "listed in demo-records.json but absent" in f for f in _failures(copy))


def test_old_format_records_are_reported(board, tmp_path):
    copy = _copy(board, tmp_path)
    path = sorted(copy.glob("records/**/result.json"))[0]
    rec = json.loads(path.read_text())
    rec["schema_version"] = 1
    path.write_text(json.dumps(rec))
    assert any(str(path) in f and "old-format record" in f for f in _failures(copy))
    status, _, err = _lfabench(["verify", str(copy), "--allow-unclean-records"], tmp_path)
    assert status == 1 and "old-format record" in err and "Traceback" not in err
    assert _lfabench(["verify", str(board), "--allow-unclean-records"], tmp_path)[0] == 0
    status, _, err = _lfabench(["verify", str(tmp_path / "nowhere")], tmp_path)
    assert status == 2 and "no board folder at" in err and "Traceback" not in err


@pytest.mark.slow
def test_verify_as_a_command_exits_1_on_a_discrepancy_and_names_it(board, tmp_path):
    """The same through the installed command, in a process of its own (exit statuses, no traceback)."""
    copy = _copy(board, tmp_path)
    path = sorted(copy.glob("records/**/result.json"))[0]
    rec = json.loads(path.read_text())
    rec["schema_version"] = 1
    path.write_text(json.dumps(rec))
    proc = run_cli(["verify", str(copy), "--allow-unclean-records"], cwd=tmp_path, check=False)
    assert proc.returncode == 1 and "old-format record" in proc.stderr and "Traceback" not in proc.stderr
    assert run_cli(["verify", str(board), "--allow-unclean-records"], cwd=tmp_path).returncode == 0


def test_publishing_refuses_dirty_records_unless_allowed(board, tmp_path):
    src = sorted(board.glob("records/**/result.json"))[0]
    run = tmp_path / "sweep" / "g" / "r"
    run.mkdir(parents=True)
    rec = json.loads(src.read_text())
    rec["provenance"]["dirty"], rec["provenance"]["diff_sha256"] = True, "0" * 64
    rec.pop("publication", None)
    (run / "result.json").write_text(json.dumps(rec))
    shutil.copy(src.parent / "predictions.npz", run / "predictions.npz")
    with pytest.raises(UncleanRecords, match=f"{run / 'result.json'}: dirty tree"):
        publish_records([tmp_path / "sweep"], tmp_path / "b")
    rec["provenance"]["dirty"], rec["provenance"]["diff_sha256"] = False, None
    rec["provenance"]["environment"] = {}
    (run / "result.json").write_text(json.dumps(rec))
    with pytest.raises(UncleanRecords, match="provenance.environment missing"):
        publish_records([tmp_path / "sweep"], tmp_path / "b")
    rec["provenance"] = json.loads(src.read_text())["provenance"] | {"dirty": False, "diff_sha256": None}
    (run / "result.json").write_text(json.dumps(rec))
    report = publish_records([tmp_path / "sweep"], tmp_path / "b")  # clean and complete: published
    (dest,) = report.written
    published = json.loads(dest.read_text())
    assert "publication" not in published and published["digest"] == content_digest(published)
    assert np.array_equal(load_predictions(dest.parent / "predictions.npz")["predicted"],
                          load_predictions(src.parent / "predictions.npz")["predicted"])


def test_unclean_rows_are_marked_on_the_board(board):
    recs = [json.loads(p.read_text()) for p in board.glob("records/**/result.json")]
    if all("publication" not in r for r in recs):
        pytest.skip("the tests run from a clean commit: no unclean record to mark")
    assert "(unclean record)" in (board / "demo.md").read_text()


def test_unclean_records_fail_verify_unless_allowed(board, tmp_path):
    copy = _copy(board, tmp_path)
    path = sorted(copy.glob("records/**/result.json"))[0]
    for other in copy.glob("records/**/result.json"):  # every record made clean ...
        r = json.loads(other.read_text())
        r["provenance"].update(dirty=False, diff_sha256=None, diff_file=None)
        r.pop("publication", None)
        r["digest"] = content_digest(r)
        other.write_text(json.dumps(r, indent=2))
    assert _lfabench(["leaderboard", "boards/demo/records", "--out", "boards/demo", "--name", "demo"], tmp_path)[0] == 0
    assert verify_board(copy).failures == []
    r = json.loads(path.read_text())  # ... then one of them dirty, its digest and the board made to match
    r["provenance"].update(dirty=True, diff_sha256=hashlib.sha256(b"d").hexdigest(), diff_file="source.diff.gz")
    (path.parent / "source.diff.gz").write_bytes(gzip.compress(b"d"))
    r["digest"] = content_digest(r)
    path.write_text(json.dumps(r, indent=2))
    assert _lfabench(["leaderboard", "boards/demo/records", "--out", "boards/demo", "--name", "demo"], tmp_path)[0] == 0
    assert [str(f) for f in verify_board(copy).failures] == [
        f"FAIL: {path}: provenance: unclean record: dirty tree (revision {r['provenance']['git_revision']} plus a "
        f"diff, sha256 {r['provenance']['diff_sha256'][:12]})"]
    assert verify_board(copy, allow_unclean=True).failures == []


def test_revisited_metrics_recompute_and_a_changed_prediction_or_metric_is_named(tmp_path):
    """A real run on a roxford5k folder in the official gnd layout: every Easy / Medium / Hard metric recomputes
    from the stored predictions; one hard positive stored as easy, or one changed mP@k, fails naming the file."""
    from data_helpers import revisited_folder
    from lfabench.verify import Report, check_record_files

    revisited_folder(tmp_path / "roxford5k", np.random.default_rng(0), "roxford5k", n_db=30, n_q=6, size=(32, 32))
    cfg = {"dataset": {"name": "roxford5k", "params": {"root": str(tmp_path / "roxford5k"), "strict": False}},
           "descriptor": {"name": "patches", "params": {"patch_size": 4, "stride": 4}},
           "aggregator": {"name": "bow", "params": {"n_clusters": 6, "random_state": 0}},
           "evaluator": {"name": "retrieval", "params": {"precision_at": [1, 5]}}, "seed": 0, "cache": False}
    run_benchmark(cfg, tmp_path / "run")
    path = tmp_path / "run" / "result.json"
    rec = json.loads(path.read_text())
    assert {"mAP_easy", "mAP_medium", "mAP_hard", "mP@5_hard"} <= set(rec["metrics"])
    report = Report()
    check_record_files(path, report, allow_unclean=True)
    assert report.failures == [] and report.n_recomputed == 1, [str(f) for f in report.failures]

    ppath = tmp_path / "run" / "predictions.npz"
    arrays = load_predictions(ppath)
    original = arrays["positive_difficulty"].copy()
    arrays["positive_difficulty"][np.flatnonzero(original == 2)[0]] = 1   # one hard positive stored as easy
    save_predictions(ppath, arrays)
    report = Report()
    check_record_files(path, report, allow_unclean=True)
    assert [str(f) for f in report.failures] == [
        f"FAIL: {ppath}: predictions.sha256: the file is not the one the record names (changed or replaced): "
        f"not read further"]
    forged = dict(rec, predictions=dict(rec["predictions"], sha256=file_sha256(ppath)))
    path.write_text(json.dumps(forged))   # the record names the changed file: now it is read, and disagrees
    report = Report()
    check_record_files(path, report, allow_unclean=True)
    fails = [str(f) for f in report.failures]
    assert any(f.startswith(f"FAIL: {path}: metrics.mAP_hard: recorded ") for f in fails), fails
    assert not any("metrics.mAP_medium" in f or "metrics.mAP:" in f for f in fails)   # Medium is unchanged

    save_predictions(ppath, dict(arrays, positive_difficulty=original))
    recorded = rec["metrics"]["mP@1_easy"]
    rec["metrics"]["mP@1_easy"] = recorded + 20.0   # one more easy query (of 5) with its first result right
    rec["predictions"]["sha256"] = file_sha256(ppath)
    rec["digest"] = content_digest(rec)
    path.write_text(json.dumps(rec))
    report = Report()
    check_record_files(path, report, allow_unclean=True)
    assert [str(f) for f in report.failures] == [
        f"FAIL: {path}: metrics.mP@1_easy: recorded {rec['metrics']['mP@1_easy']!r}, the predictions give "
        f"{recorded!r}"]


def test_a_rebuild_without_a_plugin_the_records_name_says_which_to_install(tmp_path, monkeypatch):
    """Labels show a parameter where it is not the installed plugin's default: a verifier without the plugin
    rebuilds other labels, and is told which plugin is missing instead of only that the files differ."""
    from lfabench.recordset import frame
    from lfabench.registry import PluginRegistry, UnknownPluginError

    # `normalize: l1` is BoW's default: a label shows it only where that is unknown
    board = _published(tmp_path, [({"n_clusters": 8, "normalize": "l1"}, seed, f"s{seed}") for seed in (0, 1)])
    assert _failures(board) == []

    original = PluginRegistry.get_spec

    def without_bow(self, kind, name):
        if (kind, name) == ("aggregator", "bow"):
            raise UnknownPluginError(f"unknown {kind} plugin {name!r}")
        return original(self, kind, name)

    frame._default_values.cache_clear()
    monkeypatch.setattr(PluginRegistry, "get_spec", without_bow)
    try:
        fails = _failures(board)
    finally:
        monkeypatch.undo()
        frame._default_values.cache_clear()
    assert any("demo.md" in f and "differs from what a rebuild" in f for f in fails), fails
    named = [f for f in fails if "not installed here" in f]
    assert len(named) == 1 and "aggregator 'bow'" in named[0] and "install" in named[0], fails
    # with the plugin back, the same board verifies and no plugin is named
    assert _failures(board) == []
