"""Honest statistics on the board: exact ties, Holm beside the raw p, one primary metric per task, labels fixed by
a row's own setting, Friedman + critical difference, and wording that claims no more than a test shows."""

import dataclasses
import math
import re
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from lfabench.leaderboard import build_leaderboard, find_records, rank_table, records_frame, summarize
from lfabench.leaderboard.paper import agreement, paper_table
from lfabench.leaderboard.ranks import complete_block, friedman
from lfabench.recordset import exact_score
from lfabench.registry import get_plugin

from record_helpers import record

N_TEST = 897  # Scene-15's test split
#: DM and EO-BoW on DAISY, seeds 0-5: correct test images out of 897 (2363 each, other per-seed counts)
DM = (372, 398, 397, 403, 397, 396)
EOBOW = (392, 402, 402, 409, 385, 373)


def accuracy(correct: int, n: int = N_TEST) -> float:
    """What the knn evaluator records: ``100 * mean(correct)``."""
    return float(100.0 * np.mean(np.arange(n) < correct))


def _scene15_like(runs, methods: dict):
    for name, counts in methods.items():
        for seed, c in enumerate(counts):
            record(runs / f"{name}{seed}", seed, accuracy(c), aggregator=name, split={"n_test": N_TEST})


def board(tmp_path, name="leaderboard", runs="runs"):
    out = build_leaderboard([tmp_path / runs], tmp_path / f"lb-{name}", name=name)
    return out, pd.read_csv(out["csv"]), out["markdown"].read_text()


def row(md: str, label: str) -> str:
    return next(line for line in md.splitlines() if re.search(rf"\| {re.escape(label)} +\|", line))


def test_equal_counts_share_a_rank_although_their_float_means_differ(tmp_path):
    assert np.mean([accuracy(c) for c in DM]) != np.mean([accuracy(c) for c in EOBOW])  # the trap
    _scene15_like(tmp_path / "runs", {"vlad": (450,) * 6, "dm": DM, "eobow": EOBOW, "bow": (350,) * 6})
    _, table, md = board(tmp_path)
    ranks = table.set_index("aggregator")["rank"]
    assert ranks.to_dict() == {"vlad": 1.0, "dm": 2.5, "eobow": 2.5, "bow": 4.0}
    assert re.search(r"\|\s+2\.5 \| patches\s+\| dm ", md) and re.search(r"\|\s+2\.5 \| patches\s+\| eobow ", md)
    assert table.set_index("aggregator").loc["dm", "exact_mean"] == str(Fraction(100 * 2363, 6 * N_TEST))
    overall = rank_table(summarize(records_frame(find_records([tmp_path / "runs"]))[0])).set_index("method")
    assert overall.loc["dm", "mean_rank"] == overall.loc["eobow", "mean_rank"] == 2.5


def test_methods_tied_at_the_top_are_both_best(tmp_path):
    _scene15_like(tmp_path / "runs", {"dm": DM, "eobow": EOBOW, "bow": (350,) * 6})
    _, table, md = board(tmp_path)
    best = table.set_index("aggregator")["best"]
    assert best["dm"] and best["eobow"] and not best["bow"]
    assert "best" in row(md, "dm") and "best" in row(md, "eobow")


def test_exact_score_keeps_only_true_ratios_of_counts():
    rec = {"config": {"evaluator": {"name": "knn"}}, "split": {"n_test": N_TEST}}
    assert exact_score(rec, "accuracy", accuracy(372)) == Fraction(37200, 897)
    assert exact_score(rec, "accuracy", 41.5) is None  # no count of 897 gives it: a hand edit keeps its float
    assert exact_score({**rec, "split": {}}, "accuracy", accuracy(372)) is None
    assert exact_score({"config": {"evaluator": {"name": "retrieval"}}, "split": {"n_test": 5}}, "mAP", 40.0) is None


def test_holm_adjusted_p_stands_beside_the_raw_p_and_decides_the_words(tmp_path):
    runs = tmp_path / "runs"
    for seed in range(6):
        record(runs / f"vlad{seed}", seed, 90.0 + seed, aggregator="vlad")
        record(runs / f"bow{seed}", seed, 60.0 + seed)
        record(runs / f"fv{seed}", seed, 80.0 + seed * (1 if seed % 2 else -1) * 0.1, aggregator="fv")
    _, table, md = board(tmp_path)
    t = table.set_index("aggregator")
    raw = t.loc[["bow", "fv"], "p_vs_best"].to_numpy()
    # Holm by hand: m = 2 tests, sorted p_(1) <= p_(2): adj_(1) = 2 p_(1), adj_(2) = max(adj_(1), p_(2))
    lo, hi = sorted(raw)
    want = {min(1.0, 2 * lo), max(min(1.0, 2 * lo), hi)}
    assert set(t.loc[["bow", "fv"], "p_holm"]) == want
    assert t.loc["bow", "p_vs_best"] == pytest.approx(2 / 64) and t.loc["bow", "p_holm"] == pytest.approx(2 / 32)
    assert "Holm p" in md and re.search(r"\| +0.0625 \|", row(md, "bow"))
    assert re.search(r"\| not separated +\|", row(md, "bow"))  # Holm p 0.0625 >= 0.05: no separation stated
    assert math.isnan(t.loc["vlad", "p_holm"])
    assert "no difference could reach significance: more seeds are needed" in md


def test_generated_text_never_states_equality_from_a_test(tmp_path):
    _scene15_like(tmp_path / "runs", {"dm": DM, "eobow": EOBOW, "bow": (350,) * 6, "vlad": (351,) * 6})
    for path in (tmp_path / "runs").rglob("result.json"):
        path.write_text(path.read_text().replace('"digits"', '"scene15"').replace('"patches"', '"daisy"'))
    _, _, md = board(tmp_path)
    for claim in ("level with", "no different", "unrelated", "the same as", "equivalent", "indistinguishable"):
        assert claim not in md.lower()
    assert "does not show that they are equal" in md
    assert "Not significant at alpha=0.05 (Holm)" in md  # Kendall's tau over 4 methods


def test_one_primary_metric_per_task_the_others_shown_not_ranked(tmp_path):
    runs = tmp_path / "runs"
    # retrieval reports mAP and precision@k: bow leads precision@1, vlad leads mAP (the primary metric)
    for seed in (0, 1):
        for name, (ap, p1) in {"bow": (40.0, 90.0), "vlad": (50.0, 80.0)}.items():
            record(runs / f"{name}{seed}", seed, None, aggregator=name, evaluator="retrieval", dataset="holidays",
                   metrics={"mAP": ap, "precision@1": p1, "precision@5": p1 - 10})
    _, table, md = board(tmp_path)
    assert {"mAP", "precision@1", "precision@5"} <= set(table["metric"])  # shown
    overall = rank_table(summarize(records_frame(find_records([runs]))[0])).set_index("method")
    assert overall["n_tasks"].tolist() == [1, 1]  # the old board counted three tasks
    assert overall.loc["vlad", "mean_rank"] == 1.0 and overall.loc["bow", "mean_rank"] == 2.0
    assert [c for c in overall.columns if "/" in c] == ["holidays / patches / retrieval / mAP"]


def test_a_retrieval_boards_tables_come_in_the_order_of_k(tmp_path):
    # string order would put precision@10 before precision@5 (and "10" before "5" in the CSV)
    for seed in (0, 1):
        record(tmp_path / "runs" / f"bow{seed}", seed, None, aggregator="bow", evaluator="retrieval",
               dataset="holidays", metrics={"mAP": 40.0, "precision@1": 90.0, "precision@10": 20.0,
                                            "precision@5": 35.0})
    _, table, md = board(tmp_path)
    headings = [line.rsplit(" ", 1)[-1] for line in md.splitlines() if line.startswith("## ") and "retrieval" in line]
    assert headings == ["mAP", "precision@1", "precision@5", "precision@10"]
    assert list(dict.fromkeys(table["metric"])) == ["mAP", "precision@1", "precision@5", "precision@10"]


def test_a_label_is_fixed_by_the_rows_own_setting_not_by_its_table(tmp_path):
    # the same default bow setting on two boards; board A also has a bow setting with n_clusters=64
    for seed in (0, 1):
        for runs in ("runs-a", "runs-b"):
            record(tmp_path / runs / f"bow{seed}", seed, 60.0 + seed)
        record(tmp_path / "runs-a" / f"bow64-{seed}", seed, 62.0 + seed, n_clusters=64)
        record(tmp_path / "runs-a" / f"dsc-{seed}", seed, 70.0, descriptor_params={"long_side": 300})
        record(tmp_path / "runs-b" / f"t1-{seed}", seed, 50.0, aggregator="t1", params={"max_iter": 50})
    _, a, _ = board(tmp_path, "a", "runs-a")
    _, b, _ = board(tmp_path, "b", "runs-b")
    # the old board labelled it bow[n_clusters=default] on board A and bow on board B: two methods
    default_a = a[(a["aggregator"].str.startswith("bow")) & (a["descriptor"] == "patches")]
    assert set(default_a["aggregator"]) == {"bow", "bow[n_clusters=64]"}
    assert set(b["aggregator"]) == {"bow", "t1[max_iter=50]"}
    assert set(a["descriptor"]) == {"patches", "patches[long_side=300]"} and set(b["descriptor"]) == {"patches"}
    assert default_a.loc[default_a["aggregator"] == "bow", "setting"].iloc[0] == \
        b.loc[b["aggregator"] == "bow", "setting"].iloc[0]  # one setting, one label


def test_settings_that_no_label_tells_apart_get_their_setting_id(tmp_path):
    # one writes BoW's default n_clusters out, the other leaves it unset: two settings, one label "bow"
    for seed in (0, 1):
        record(tmp_path / "runs" / f"a{seed}", seed, 60.0)
        record(tmp_path / "runs" / f"b{seed}", seed, 61.0, n_clusters=256)
    _, table, _ = board(tmp_path)
    assert len(table) == 2 and set(table["aggregator"]) == {f"bow{{{s}}}" for s in table["setting"]}


def _two_descriptor_board(runs):
    """Five methods on three descriptors (tasks), 2 seeds; vlad everywhere best, t1 missing on one task."""
    scores = {"sift": {"vlad": 70, "fv": 65, "bow": 60, "dm": 65, "t1": 50},
              "daisy": {"vlad": 80, "fv": 70, "bow": 72, "dm": 60, "t1": 55},
              "hesaff": {"vlad": 75, "fv": 73, "bow": 61, "dm": 62}}
    for descriptor, by_method in scores.items():
        for method, acc in by_method.items():
            for seed in (0, 1):
                record(runs / f"{descriptor}-{method}{seed}", seed, acc + seed, aggregator=method,
                       params={"max_iter": 50} if method == "t1" else None)
        for path in runs.rglob("result.json"):
            text = path.read_text()
            if f"/{descriptor}-" in str(path) and '"patches"' in text:
                path.write_text(text.replace('"patches"', f'"{descriptor}"'))
    return scores


def test_friedman_and_critical_difference_over_the_methods_on_every_task(tmp_path):
    runs = tmp_path / "runs"
    scores = _two_descriptor_board(runs)
    summary = summarize(records_frame(find_records([runs]))[0])
    matrix, left_out = complete_block(summary)
    assert left_out == ["t1[max_iter=50]"] and list(matrix.columns) == ["bow", "dm", "fv", "vlad"]
    result, cd, _, _ = friedman(summary)
    methods = ["bow", "dm", "fv", "vlad"]
    want = stats.friedmanchisquare(*[[scores[d][m] for d in scores] for m in methods])  # scipy ranks the raw scores
    assert result.chi2 == pytest.approx(want.statistic) and result.p_chi2 == pytest.approx(want.pvalue)
    q = stats.studentized_range.ppf(0.95, 4, np.inf) / np.sqrt(2)
    assert cd == pytest.approx(q * np.sqrt(4 * 5 / (6 * 3)))
    out, _, md = board(tmp_path)
    cd_png = [p for p in out["plots"] if p.name == "leaderboard-cd.png"]
    assert cd_png and cd_png[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"chi2_F = {want.statistic:.3f}" in md and f"CD = {cd:.3f}" in md
    assert "Left out for missing a task: `t1[max_iter=50]`" in md
    assert "leaderboard-cd.png" in (tmp_path / "lb-leaderboard" / "leaderboard-outputs.txt").read_text()


def test_cd_diagram_bars_join_methods_closer_than_the_cd():
    from lfabench.leaderboard.cd_diagram import cliques

    ranks = {"a": 1.0, "b": 1.5, "c": 2.4, "d": 3.9}
    assert cliques(ranks, 1.0) == [["a", "b"], ["b", "c"]]
    assert cliques(ranks, 2.5) == [["a", "b", "c"], ["b", "c", "d"]]  # 3.9 - 1.0 = 2.9 is not below 2.5
    assert cliques(ranks, 3.0) == [["a", "b", "c", "d"]]
    assert cliques(ranks, 0.1) == []


def test_paper_times_are_side_by_side_with_their_hardware_never_subtracted(tmp_path):
    for seed in (0, 1):
        for method, acc in {"bow": 60.0, "vlad": 65.0, "fv": 62.0}.items():
            record(tmp_path / f"runs/{method}{seed}", seed, acc, aggregator=method, dataset="scene15")
    for path in (tmp_path / "runs").rglob("result.json"):
        path.write_text(path.read_text().replace('"patches"', '"sift"'))
    table = paper_table(summarize(records_frame(find_records([tmp_path / "runs"]))[0]))
    assert "lfabench - paper" not in table.columns
    times = table[(table["metric"] == "aggregation_time_s") & (table["lfabench"] != "not run")]
    assert set(times["paper hardware"]) == {"one 2.3 GHz Xeon core"}
    assert times["lfabench hardware"].str.contains("logical CPUs").all()
    md = build_leaderboard([tmp_path / "runs"], tmp_path / "lb")["markdown"].read_text()
    assert "lfabench - paper" not in md and "not subtracted" in md


def test_kendall_tau_b_counts_an_exact_tie_as_a_tie_not_a_reversal(tmp_path):
    # the paper orders eobow (75.6) above dm (71.21); lfabench has them exactly tied (DM / EO-BoW on DAISY)
    counts = {"temb": (470,) * 6, "eobow": EOBOW, "dm": DM, "bow": (350,) * 6}
    _scene15_like(tmp_path / "runs", counts)
    for path in (tmp_path / "runs").rglob("result.json"):
        path.write_text(path.read_text().replace('"digits"', '"scene15"').replace('"patches"', '"daisy"'))
    summary = summarize(records_frame(find_records([tmp_path / "runs"]))[0])
    tau = agreement(summary).set_index("metric").loc["accuracy"]
    paper = [76.3, 75.6, 71.21, 64.88]  # temb, eobow, dm, bow in the paper
    ours = [470, 2363 / 6, 2363 / 6, 350]  # lfabench's mean counts, the tie exact
    want = stats.kendalltau(paper, ours, variant="b")
    assert tau["tau_b"] == pytest.approx(want.statistic) and tau["p"] == pytest.approx(want.pvalue)
    reversal = stats.kendalltau(paper, [470, 393, 394, 350], variant="b").statistic
    assert reversal < tau["tau_b"] < 1.0  # a tie lies between keeping the paper's order and reversing it
    assert tau["lfabench ties"] == 1


def test_compare_ranks_ties_and_adjusts_within_its_section(tmp_path):
    from lfabench.cli.compare import compare_table, to_markdown

    _scene15_like(tmp_path / "runs", {"vlad": (450,) * 6, "dm": DM, "eobow": EOBOW})
    table = compare_table([tmp_path / "runs"]).set_index("method")
    assert table["rank"].to_dict() == {"vlad": 1.0, "dm": 2.5, "eobow": 2.5}
    assert table.loc["dm", "p_vs_best"] == pytest.approx(2 / 64) and table.loc["dm", "p_holm"] == pytest.approx(4 / 64)
    assert re.search(r"\| dm .*\| not separated +\|", to_markdown(table.reset_index()))


def test_a_nested_option_set_away_from_its_default_labels_the_row_alone(tmp_path):
    # ProLFA's solver options are one nested parameter (a dataclass default): the default options add nothing to
    # the label, one changed option shows by itself, never the fifteen options left at their defaults
    from lfabench.plugin import default_params

    default_solver = dataclasses.asdict(default_params(get_plugin("aggregator", "prolfa"))["solver"])
    for seed in (0, 1):
        record(tmp_path / "runs" / f"d{seed}", seed, 60.0, aggregator="prolfa", params={"solver": default_solver})
        record(tmp_path / "runs" / f"m{seed}", seed, 61.0, aggregator="prolfa",
               params={"solver": dict(default_solver, max_iter=50)})
    _, table, _ = board(tmp_path)
    assert set(table["aggregator"]) == {"prolfa", "prolfa[solver.max_iter=50]"}
