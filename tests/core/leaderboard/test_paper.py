"""The "paper vs lfabench" table: the paper's numbers as transcribed, and the ranks in both."""

import re
from pathlib import Path

import pytest

from lfabench.leaderboard import build_leaderboard, find_records, records_frame, summarize
from lfabench.leaderboard.paper import paper_results, paper_table

from record_helpers import record

PROTOCOLS = Path(__file__).resolve().parents[4] / "shared" / "docs" / "protocols.md"
PAPER = PROTOCOLS.with_name("prolfa-paper.tex")


@pytest.mark.skipif(not PROTOCOLS.is_file(), reason=f"{PROTOCOLS} (the source of the paper's numbers) is absent")
def test_every_paper_number_is_read_from_the_protocols_document():
    section = PROTOCOLS.read_text().split("## The paper's own numbers", 1)[1]
    quoted = set(re.findall(r"\d+\.\d+", section))
    search = paper_results()[paper_results()["dataset"].isin(["oxford5k", "holidays"])]
    rest = paper_results().drop(search.index)
    for value in rest["value"]:
        assert any(float(q) == value for q in quoted), f"{value} is not in {PROTOCOLS}"
    assert len(rest) == 41


@pytest.mark.skipif(not PAPER.is_file(), reason=f"{PAPER} (the paper's search table) is absent")
def test_the_search_table_is_the_papers_cell_for_cell():
    """Every (dataset, descriptor, method) of the paper's search table, read from its LaTeX row by row: Oxford5k
    SIFT, DAISY, then Holidays SIFT, DAISY."""
    tex = PAPER.read_text().split("\\label{tab:search}", 1)[1].split("\\end{tabular}", 1)[0]
    names = {"BoW": "bow", "VLAD": "vlad", "FV": "fv", "SC": "sc", "jegou2014triangulation": "temb", "DM": "dm",
             "T_{1}": "t1", "UniVCG": "univcg", "LC-KSVD2": "lcksvd2", "DBoWs": "dbows", "EO-BoW": "eobow",
             "ProLFA": "prolfa", "Semi-ProLFA": "semi_prolfa"}
    table = paper_results().set_index(["dataset", "descriptor", "method"])["value"]
    seen = 0
    for line in tex.replace("\n", " ").split("\\\\"):
        cells = line.split("&")
        values = re.findall(r"(\d+\.\d+)\s*\$\\pm\$", line)
        if len(values) != 4:
            continue
        head = " ".join(cells[:-4])
        method = [m for k, m in names.items() if k in head]
        method = "semi_prolfa" if "semi_prolfa" in method else method[-1]
        for (dataset, descriptor), value in zip([("oxford5k", "sift"), ("oxford5k", "daisy"), ("holidays", "sift"),
                                                 ("holidays", "daisy")], values):
            if (dataset, descriptor, method) in table.index:
                assert table[(dataset, descriptor, method)] == float(value), (dataset, descriptor, method)
                seen += 1
    assert seen == len(table.loc[["oxford5k", "holidays"]]) == 52


def test_paper_table_ranks_the_methods_present_in_both(tmp_path):
    # the paper: prolfa 80.88 > temb 77.41 > bow 66.99; lfabench here: temb > prolfa > bow
    for seed in (0, 1):
        for method, acc in {"bow": 60.0, "temb": 75.0, "prolfa": 70.0}.items():
            record(tmp_path / f"runs/{method}{seed}", seed, acc + seed, aggregator=method, dataset="scene15")
    for path in (tmp_path / "runs").rglob("result.json"):  # the helper writes descriptor=patches
        path.write_text(path.read_text().replace('"patches"', '"sift"'))
    table = paper_table(summarize(records_frame(find_records([tmp_path / "runs"]))[0]))
    ran = table[(table["lfabench"] != "not run") & (table["metric"] == "accuracy")].set_index("method")
    assert ran.loc["prolfa", "paper rank"] == 1 and ran.loc["prolfa", "lfabench rank"] == 2
    assert ran.loc["temb", "paper rank"] == 2 and ran.loc["temb", "lfabench rank"] == 1
    assert ran.loc["bow", "paper"] == 66.99 and ran.loc["bow", "lfabench"] == "60.50 ± 0.71"
    assert set(table.loc[table["lfabench"] == "not run", "method"]) >= {"vlad", "lcksvd2"}
    assert set(table["dataset"]) == {"scene15"}  # only the tables the records cover
    assert set(table["metric"]) == {"accuracy", "aggregation_time_s"}
    md = build_leaderboard([tmp_path / "runs"], tmp_path / "lb")["markdown"].read_text()
    assert "## Paper vs lfabench" in md and "80.88" in md


def test_each_setting_of_the_papers_descriptor_is_its_own_block(tmp_path):
    for seed in (0, 1):
        for method, acc in {"bow": 60.0, "vlad": 65.0}.items():
            record(tmp_path / f"runs/{method}{seed}", seed, acc, aggregator=method, dataset="scene15")
            record(tmp_path / f"runs/{method}300-{seed}", seed, acc + 10, aggregator=method, dataset="scene15",
                   descriptor_params={"long_side": 300})
    for path in (tmp_path / "runs").rglob("result.json"):
        path.write_text(path.read_text().replace('"patches"', '"sift"'))
    table = paper_table(summarize(records_frame(find_records([tmp_path / "runs"]))[0]))
    ran = table[(table["lfabench"] != "not run") & (table["metric"] == "accuracy")]
    by_descriptor = ran.set_index(["descriptor", "method"])["lfabench"]
    assert by_descriptor[("sift", "bow")] == "60.00 ± 0.00"
    assert by_descriptor[("sift[long_side=300]", "bow")] == "70.00 ± 0.00"
    assert by_descriptor[("sift[long_side=300]", "vlad")] == "75.00 ± 0.00"


def test_paper_table_keeps_the_papers_exact_wilcoxon_on_six_pairs(tmp_path):
    from scipy.stats import wilcoxon

    from lfabench.leaderboard.paper import WILCOXON_COLUMN

    scores = {"temb": [75.0, 76.0, 74.5, 75.5, 77.0, 74.0], "prolfa": [70.0, 76.5, 71.0, 72.5, 73.0, 70.5]}
    for method, values in scores.items():
        for seed, acc in enumerate(values):
            record(tmp_path / f"runs/{method}{seed}", seed, acc, aggregator=method, dataset="scene15",
                   descriptor="sift", split={"n_train": 3588, "n_test": 897})
    table = paper_table(summarize(records_frame(find_records([tmp_path / "runs"]))[0]))
    ran = table[(table["lfabench"] != "not run") & (table["metric"] == "accuracy")].set_index("method")
    want = wilcoxon(scores["prolfa"], scores["temb"], method="exact").pvalue
    assert ran.loc["temb", WILCOXON_COLUMN] == "best"
    assert ran.loc["prolfa", WILCOXON_COLUMN] == f"{want:.4g}"


def test_the_copies_board_stands_in_for_the_papers_search_datasets_rule_rows_first(tmp_path):
    # ProLFA under the paper's rule (50) and on whole groups (70): the rule's row stands for the method, although
    # lower; DBoWs has whole groups only (the rule leaves its criterion undefined): that row stands, and says so
    for seed in (0, 1):
        for method, value, unit in [("prolfa", 50.0, None), ("prolfa", 70.0, "class"), ("dbows", 40.0, "class"),
                                    ("semi_prolfa", 60.0, None)]:
            params = {"labelled_fraction": 0.2, **({"labelled_unit": unit} if unit else {})}
            record(tmp_path / f"runs/{method}{unit}{seed}", seed, None, aggregator=method, dataset="copy_detection",
                   evaluator="retrieval", evaluator_params=params, metrics={"mAP": value + seed})
    for path in (tmp_path / "runs").rglob("result.json"):
        path.write_text(path.read_text().replace('"patches"', '"sift"'))
    table = paper_table(summarize(records_frame(find_records([tmp_path / "runs"]))[0]))
    assert set(table["dataset"]) == {"oxford5k (stand-in: copy_detection)", "holidays (stand-in: copy_detection)"}
    oxford = table[table["dataset"] == "oxford5k (stand-in: copy_detection)"].set_index("method")
    assert oxford.loc["prolfa", "lfabench"] == "50.50 ± 0.71"
    assert oxford.loc["dbows", "lfabench"] == "40.50 ± 0.71 (whole groups annotated)"
    # the paper: semi_prolfa 69.90 > prolfa 63.40 > dbows 53.30; here the same order
    assert list(oxford.loc[["semi_prolfa", "prolfa", "dbows"], "lfabench rank"]) == [1, 2, 3]
    assert oxford.loc["bow", "lfabench"] == "not run"
    md = build_leaderboard([tmp_path / "runs"], tmp_path / "lb")["markdown"].read_text()
    assert "stands in for the paper's search datasets" in md
