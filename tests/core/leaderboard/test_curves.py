"""The paper's curves from records: one numeric parameter against the score, and training curves."""

import hashlib

from lfabench.leaderboard import build_leaderboard, find_records, records_frame
from lfabench.leaderboard.curves import parameter_curves
from lfabench.leaderboard.plot import label_slug

from record_helpers import record


def test_a_parameter_curve_per_sweep_even_when_sweeps_are_pooled(tmp_path):
    # a lambda1 sweep at 16 prototypes, and a d̄ sweep at lambda1 = 0.1, in one folder
    for seed in (0, 1):
        for lam in (0.01, 0.1, 1.0):
            record(tmp_path / f"runs/l{lam}-{seed}", seed, 50 + 10 * lam + seed, aggregator="prolfa",
                   params={"lambda1": lam, "n_prototypes": 16})
        for n in (8, 32, 64):
            record(tmp_path / f"runs/n{n}-{seed}", seed, 40 + n / 8, aggregator="prolfa",
                   params={"lambda1": 0.1, "n_prototypes": n})
    df = records_frame(find_records([tmp_path / "runs"]))[0]
    curves = {param: lines for _, param, lines in parameter_curves(df)}
    assert set(curves) == {"aggregator.lambda1", "aggregator.n_prototypes"}
    (lam_line,) = curves["aggregator.lambda1"].values()
    assert lam_line["x"].tolist() == [0.01, 0.1, 1.0] and lam_line["mean"].tolist()[2] == 60.5
    (n_line,) = curves["aggregator.n_prototypes"].values()
    assert n_line["x"].tolist() == [8, 16, 32, 64]  # 16 comes from the lambda1 sweep's 0.1 point
    out = build_leaderboard([tmp_path / "runs"], tmp_path / "lb")
    names = {p.name for p in out["plots"]}
    assert "leaderboard-digits-patches-prolfa-aggregator.lambda1-curve.png" in names


def test_two_values_are_no_curve_and_training_curves_are_drawn(tmp_path):
    for seed in (0, 1):
        record(tmp_path / f"runs/a{seed}", seed, 50.0, n_clusters=8, fit_info={"training_curve": [3.0, 2.0, 1.5]})
        record(tmp_path / f"runs/b{seed}", seed, 60.0, n_clusters=16)
    assert parameter_curves(records_frame(find_records([tmp_path / "runs"]))[0]) == []  # n_clusters: 8, 16 only
    out = build_leaderboard([tmp_path / "runs"], tmp_path / "lb")
    # one convergence plot per setting, named by its task and a digest of its label (no settings in the name);
    # the setting without a curve has none
    drawn = {p.name for p in out["plots"] if p.name.endswith("-convergence.png")}
    assert drawn == {f"leaderboard-digits-patches-{label_slug('bow[n_clusters=8]')}-convergence.png"}
    assert label_slug("bow[n_clusters=8]") == "bow-" + hashlib.sha256(b"bow[n_clusters=8]").hexdigest()[:6]


def test_a_rebuild_removes_the_plots_of_labels_that_are_gone(tmp_path):
    curve = {"training_curve": [3.0, 2.0, 1.5]}
    for seed in (0, 1):
        record(tmp_path / f"runs/a{seed}", seed, 50.0, n_clusters=8, fit_info=curve)
    out = build_leaderboard([tmp_path / "runs"], tmp_path / "lb")
    old = tmp_path / f"lb/leaderboard-digits-patches-{label_slug('bow[n_clusters=8]')}-convergence.png"
    mine = tmp_path / "lb/notes.txt"  # not written by a build: never deleted
    mine.write_text("keep")
    assert old in out["plots"] and out["removed"] == []
    for seed in (0, 1):  # the same records at BoW's default: the label, and so the plot's name, changes
        record(tmp_path / f"runs/a{seed}", seed, 50.0, fit_info=curve)
    out = build_leaderboard([tmp_path / "runs"], tmp_path / "lb")
    new = tmp_path / "lb/leaderboard-digits-patches-bow-convergence.png"
    assert out["removed"] == [old] and not old.exists() and new.is_file() and mine.read_text() == "keep"
    listed = set(out["manifest"].read_text().split())
    assert new.name in listed and "leaderboard.md" in listed and old.name not in listed
