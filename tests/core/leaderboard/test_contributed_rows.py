"""A board with rows from outside packages: each such plugin is named with its package and version; the paper's
section appears only where the paper's methods are; the title of a board of several tasks is one line; a dataset
scored by two evaluators counts once in the mean rank."""

from __future__ import annotations

import json

import pandas as pd

from lfabench.leaderboard import build_leaderboard
from lfabench.leaderboard.ranks import primary_evaluators, rank_table
from lfabench.leaderboard.titles import board_title

from record_helpers import record


def _from_package(path, name, distribution="lfabench-gempool", version="0.1.0"):
    rec = json.loads((path / "result.json").read_text())
    rec["plugins"] = {"aggregator": {"name": name, "version": version, "distribution": distribution,
                                     "module": f"{distribution.replace('-', '_')}.plugin"}}
    (path / "result.json").write_text(json.dumps(rec))


def test_outside_rows_name_their_package_and_version_and_no_paper_section_without_the_papers_methods(tmp_path):
    for seed in range(2):
        record(tmp_path / "runs" / f"g{seed}", seed, 60.0 + seed, aggregator="gempool", dataset="scene15",
               descriptor="sift")
        _from_package(tmp_path / "runs" / f"g{seed}", "gempool")
    out = build_leaderboard([tmp_path / "runs"], tmp_path / "board", name="b")
    page = out["markdown"].read_text()
    assert "## Plugins from other packages" in page and "| aggregator | gempool  | lfabench-gempool | 0.1.0" in page
    assert "`pip install lfabench-gempool==0.1.0`" in page
    assert "Paper vs lfabench" not in page and "not run" not in page  # only an outside method on the paper's table
    assert "Plugins from other packages" in out["html"].read_text()


def test_the_paper_section_appears_with_one_of_the_papers_methods(tmp_path):
    for seed in range(2):
        record(tmp_path / "runs" / f"g{seed}", seed, 60.0, aggregator="gempool", dataset="scene15", descriptor="sift")
        record(tmp_path / "runs" / f"b{seed}", seed, 55.0, aggregator="bow", dataset="scene15", descriptor="sift")
    page = build_leaderboard([tmp_path / "runs"], tmp_path / "board", name="b")["markdown"].read_text()
    assert "## Paper vs lfabench" in page and "Plugins from other packages" not in page  # built-ins: no section


def test_a_board_of_several_tasks_has_a_one_line_title_and_each_dataset_counts_once(tmp_path):
    summary = pd.DataFrame({"dataset": ["digits", "digits", "synthetic", "digits", "digits"],
                            "evaluator": ["knn", "logreg", "knn", "knn", "logreg"],
                            "aggregator": ["bow", "bow", "bow", "vlad", "vlad"], "seeds": ["0,1"] * 5})
    title = board_title(summary)
    assert "\n" not in title and title.endswith(": knn, logreg; 2 seeds") and "; " in title
    assert len(title) < 120
    assert primary_evaluators(summary) == {"digits": "knn", "synthetic": "knn"}


def test_mean_rank_counts_one_protocol_per_dataset(tmp_path):
    for seed in range(2):
        for method, knn, other in (("bow", 50.0, 90.0), ("vlad", 60.0, 10.0)):
            record(tmp_path / "runs" / f"{method}k{seed}", seed, knn, aggregator=method)
            record(tmp_path / "runs" / f"{method}e{seed}", seed, other, aggregator=method, evaluator="otherproto",
                   evaluator_params={})
    out = build_leaderboard([tmp_path / "runs"], tmp_path / "board", name="b")
    from lfabench.leaderboard import find_records, records_frame, summarize

    summary = summarize(records_frame(find_records([tmp_path / "runs"]))[0])
    ranks = rank_table(summary)
    assert list(ranks["method"]) == ["vlad", "bow"] and list(ranks["n_tasks"]) == [1, 1]  # knn's order only
    assert "`digits` by `knn`, not `otherproto`" in out["markdown"].read_text()
