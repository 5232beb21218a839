"""What misled a reader of the old leaderboard, one test each (issue #14); each fails on the old code."""

import re
import struct

import pandas as pd
import pytest

from lfabench.leaderboard import build_leaderboard, find_records, rank_table, records_frame, summarize
from lfabench.leaderboard.cells import P_NOT_AVAILABLE

from record_helpers import record


def board(tmp_path):
    out = build_leaderboard([tmp_path / "runs"], tmp_path / "lb")
    return out, pd.read_csv(out["csv"]), out["markdown"].read_text()


def row(md: str, label: str) -> str:
    return next(line for line in md.splitlines() if f"| {label} " in line)


def test_p_is_not_shown_below_six_paired_seeds(tmp_path):
    # the best has one seed: the old board showed "1 (1)"; two seeds and a 31-point gap: "0.5 (2)"
    record(tmp_path / "runs/best0", 0, 95.0, aggregator="vlad")
    for seed in (0, 1):
        record(tmp_path / f"runs/bow{seed}", seed, 64.0 + seed)
    _, table, md = board(tmp_path)
    assert P_NOT_AVAILABLE in row(md, "bow") and "(1)" not in row(md, "bow")
    assert table.loc[table["aggregator"] == "bow", "p_vs_best"].isna().all()


def test_p_is_shown_from_six_paired_seeds(tmp_path):
    for seed in range(6):
        record(tmp_path / f"runs/vlad{seed}", seed, 95.0 + seed, aggregator="vlad")
        record(tmp_path / f"runs/bow{seed}", seed, 64.0 + seed)
    _, table, md = board(tmp_path)
    assert "0.03125 (6)" in row(md, "bow")
    assert table.loc[table["aggregator"] == "bow", "p_vs_best"].iloc[0] == pytest.approx(2 / 64)


def test_one_seed_has_an_unknown_spread_not_zero(tmp_path):
    record(tmp_path / "runs/a", 0, 70.0)
    _, table, md = board(tmp_path)
    assert "± 0.00" not in md and "70.00 (1 seed: spread unknown)" in md
    assert table["std"].isna().all()


def test_a_parameter_the_method_ignores_does_not_split_its_rows(tmp_path):
    # bow never reads labels: the run records the evaluator's labelled_fraction as ignored
    record(tmp_path / "runs/a", 0, 70.0, evaluator_params={"labelled_fraction": 1.0},
           ignored=["evaluator.labelled_fraction"])
    record(tmp_path / "runs/b", 1, 72.0, evaluator_params={"labelled_fraction": 0.2},
           ignored=["evaluator.labelled_fraction"])
    _, table, md = board(tmp_path)
    assert list(table["aggregator"]) == ["bow"] and table["n_seeds"].iloc[0] == 2
    assert "labelled_fraction" not in md


def test_a_parameter_a_semi_supervised_method_reads_still_splits(tmp_path):
    record(tmp_path / "runs/a", 0, 70.0, aggregator="semi_prolfa", evaluator_params={"labelled_fraction": 1.0},
           ignored=[])
    record(tmp_path / "runs/b", 0, 60.0, aggregator="semi_prolfa", evaluator_params={"labelled_fraction": 0.2},
           ignored=[])
    _, table, _ = board(tmp_path)
    assert len(table) == 2 and table["aggregator"].str.contains("labelled_fraction=0.2").any()


def test_unsupervised_aggregators_record_the_label_parameters_as_ignored():
    from lfabench.run import ignored_params

    class Unsupervised:
        pass

    class Semi:
        semi_supervised = True

    class Evaluator:
        label_params = ("labelled_fraction",)

    assert ignored_params(Unsupervised(), Evaluator()) == ["evaluator.labelled_fraction"]
    assert ignored_params(Semi(), Evaluator()) == []
    # an opt-in label parameter is listed only by the runs whose configuration sets it
    Evaluator.label_params = ("labelled_fraction", "labelled_unit")
    assert ignored_params(Unsupervised(), Evaluator(), {"labelled_fraction": 0.2}) == ["evaluator.labelled_fraction"]


def test_cost_columns_and_right_aligned_numbers(tmp_path):
    for seed in (0, 1):
        record(tmp_path / f"runs/a{seed}", seed, 80.0 + seed, output_dim=512)
    _, table, md = board(tmp_path)
    assert {"transform_s_mean", "peak_rss_mb_max", "output_dim"} <= set(table.columns)
    header = next(line for line in md.splitlines() if line.startswith("|") and "rank" in line)
    for col in ("fit time (s)", "transform time (s)", "peak memory (MiB)", "output dim"):
        assert col in header
    assert "| 512 " in row(md, "bow") or "512 |" in row(md, "bow")
    separator = md.splitlines()[md.splitlines().index(header) + 1]
    cells = [c.strip() for c in separator.strip("|").split("|")]
    names = [c.strip() for c in header.strip("|").split("|")]
    aligned = dict(zip(names, cells))
    assert aligned["rank"].endswith(":") and aligned["accuracy"].endswith(":") and aligned["output dim"].endswith(":")
    assert not aligned["aggregator"].endswith(":")


def test_every_table_states_its_command_and_records(tmp_path):
    for seed in (0, 1):
        record(tmp_path / f"runs/a{seed}", seed, 80.0)
    out = build_leaderboard([tmp_path / "runs"], tmp_path / "lb", command="lfabench leaderboard runs")
    md = out["markdown"].read_text()
    assert "Made by `lfabench leaderboard runs` from 2 record(s)" in md


def test_overall_mean_rank_across_datasets(tmp_path):
    for ds, (bow, vlad) in {"digits": (70.0, 80.0), "synthetic": (90.0, 85.0), "scene15": (60.0, 65.0)}.items():
        record(tmp_path / f"runs/{ds}-bow", 0, bow, dataset=ds)
        record(tmp_path / f"runs/{ds}-vlad", 0, vlad, aggregator="vlad", dataset=ds)
    ranks = rank_table(summarize(records_frame(find_records([tmp_path / "runs"]))[0]))
    assert list(ranks["method"]) == ["vlad", "bow"]
    assert ranks["mean_rank"].tolist() == pytest.approx([4 / 3, 5 / 3]) and ranks["n_tasks"].tolist() == [3, 3]
    _, _, md = board(tmp_path)
    assert "## Overall: mean rank across tasks" in md


def _descriptor_study(runs):
    """bow and vlad on the default descriptor (6 seeds) and on a larger image (3 seeds, higher scores)."""
    for seed in range(6):
        record(runs / f"bow{seed}", seed, 60.0 + seed)
        record(runs / f"vlad{seed}", seed, 70.0 + seed, aggregator="vlad")
    for seed in range(3):
        record(runs / f"bow300-{seed}", seed, 80.0 + seed, descriptor_params={"long_side": 300})
        record(runs / f"vlad300-{seed}", seed, 85.0 + seed, aggregator="vlad", descriptor_params={"long_side": 300})


def test_a_descriptor_setting_is_another_task_not_another_method(tmp_path):
    # the old board labelled these rows bow[descriptor.long_side=None] ... and tested the 6-seed rows
    # against a 3-seed best on another descriptor ("n/a (needs 6 paired seeds)")
    _descriptor_study(tmp_path / "runs")
    _, table, md = board(tmp_path)
    assert set(table["aggregator"]) == {"bow", "vlad"}
    assert set(table["descriptor"]) == {"patches", "patches[long_side=300]"}  # each by its own setting
    default = table[table["descriptor"] == "patches"].set_index("aggregator")
    assert default.loc["vlad", "best"] and default.loc["bow", "p_vs_best"] == pytest.approx(2 / 64)
    assert "| patches | bow " in re.sub(" +", " ", md)
    ranks = rank_table(summarize(records_frame(find_records([tmp_path / "runs"]))[0])).set_index("method")
    assert ranks.loc["vlad", "n_tasks"] == 2 and ranks.loc["vlad", "mean_rank"] == 1.0
    assert ranks.loc["bow", "mean_rank"] == 2.0


def test_one_descriptor_setting_keeps_the_plain_descriptor_name(tmp_path):
    for seed in (0, 1):
        record(tmp_path / f"runs/bow{seed}", seed, 60.0, n_clusters=64)
        record(tmp_path / f"runs/bow64-{seed}", seed, 61.0, n_clusters=32)
    _, table, _ = board(tmp_path)
    assert set(table["descriptor"]) == {"patches"}
    assert set(table["aggregator"]) == {"bow[n_clusters=32]", "bow[n_clusters=64]"}


def test_a_method_run_away_from_its_defaults_says_so(tmp_path):
    # the old board showed t1 run with 50 iterations (default 100) as plain "t1", beside the paper's number
    for seed in (0, 1):
        record(tmp_path / f"runs/t1-{seed}", seed, 60.0, aggregator="t1", params={"max_iter": 50})
        record(tmp_path / f"runs/bow-{seed}", seed, 50.0, n_clusters=256)  # BoW's default, written out
        record(tmp_path / f"runs/x-{seed}", seed, 40.0, aggregator="not_installed_here", params={"k": 3})
        record(tmp_path / f"runs/semi-{seed}", seed, 70.0, aggregator="semi_prolfa",
               evaluator_params={"labelled_fraction": 0.2}, ignored=[])
    _, table, md = board(tmp_path)
    # a plugin not installed here has no known defaults: every parameter its setting sets is shown
    assert set(table["aggregator"]) == {"t1[max_iter=50]", "bow", "not_installed_here[k=3]",
                                        "semi_prolfa[evaluator.labelled_fraction=0.2]"}
    assert "| t1[max_iter=50] " in md


def _png_size(path):
    width, height = struct.unpack(">II", path.read_bytes()[16:24])
    return width, height


def test_plot_axis_spans_the_scores_and_grows_with_long_labels(tmp_path):
    from lfabench.leaderboard.plot import score_range

    lo, hi = score_range([90.0], [97.0])
    assert 85 < lo < 90 and 97 < hi < 100  # a 90-97 spread is not flattened against 0
    long = "bow_with_a_very_long_descriptive_aggregator_name_for_labels"
    for seed in (0, 1):
        record(tmp_path / f"runs/a{seed}", seed, 90.0 + seed, aggregator=long)
        record(tmp_path / f"runs/b{seed}", seed, 96.0 + seed, aggregator="vlad")
    out, _, _ = board(tmp_path)
    plot = next(p for p in out["plots"] if re.fullmatch(r"leaderboard-digits-patches-knn-accuracy-scores\.png", p.name))
    assert _png_size(plot)[0] > 880  # the old fixed 8-inch figure squeezed the axes to fit the labels


def test_tradeoff_plots_mark_the_pareto_front(tmp_path):
    from lfabench.leaderboard.tradeoff import pareto_front

    assert pareto_front([1, 2, 3, 4], [50, 60, 55, 70]).tolist() == [True, True, False, True]
    assert pareto_front([1, 1], [50, 50]).tolist() == [True, True]  # equal points dominate neither
    record(tmp_path / "runs/a", 0, 80.0, output_dim=64)
    record(tmp_path / "runs/b", 0, 85.0, aggregator="vlad", output_dim=4096)
    out, _, _ = board(tmp_path)
    names = {p.name for p in out["plots"]}
    assert {"leaderboard-digits-patches-knn-accuracy-time.png", "leaderboard-digits-patches-knn-accuracy-dim.png"} \
        <= names


def test_memory_is_the_aggregation_stages_not_the_sweep_process_peak(tmp_path):
    import json

    record(tmp_path / "runs/a", 0, 80.0)
    path = tmp_path / "runs/a/result.json"
    data = json.loads(path.read_text())
    # one process runs a whole sweep: its ru_maxrss peak (1000) carries earlier jobs' memory
    data.update(peak_rss_mb=1000.0, peak_rss_mb_by_stage={"descriptors": 900.0, "fit": 300.0, "transform": 250.0})
    path.write_text(json.dumps(data))
    _, table, _ = board(tmp_path)
    assert table["peak_rss_mb_max"].tolist() == [300.0]


def test_fit_time_counts_what_a_reused_codebook_cost_and_marks_an_unknown_cost(tmp_path):
    """A run that loaded its codebook from the cache only took 1.5 s to "fit" (the helper's timing): the board
    charges it the codebook's recorded cost, and marks the cell where a reused entry's cost is unknown."""
    timed = [{"entry": "kmeans-a", "hit": True, "fit_seconds": 40.0}]
    for seed in (0, 1):
        record(tmp_path / f"runs/vlad{seed}", seed, 90.0, aggregator="vlad",
               fit_cache=timed if seed else [{"entry": "kmeans-b", "hit": False, "fit_seconds": 38.5}])
        record(tmp_path / f"runs/bow{seed}", seed, 80.0, fit_cache=[{"entry": "kmeans-c", "hit": True}])
    _, table, md = board(tmp_path)
    vlad = table.loc[table["aggregator"] == "vlad"].iloc[0]
    # seed 0 computed it (its 1.5 s fit includes the k-means); seed 1 loaded it: 1.5 + 40 s
    assert vlad["fit_s_mean"] == pytest.approx((1.5 + 41.5) / 2) and not vlad["fit_s_lower_bound"]
    bow = table.loc[table["aggregator"] == "bow"].iloc[0]
    assert bow["fit_s_mean"] == pytest.approx(1.5) and bow["fit_s_lower_bound"]
    assert " 1.50* |" in row(md, "bow") and " 21.50 |" in row(md, "vlad")
