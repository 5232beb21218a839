"""The paper's search claim on a retrieval board: Semi-ProLFA against each fully supervised setting, by the table's
own paired test, Holm over the comparisons, the difference read Semi-ProLFA - method."""

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import ttest_rel
from statsmodels.stats.multitest import multipletests

import lfabench.leaderboard.claims as claims
from lfabench.leaderboard.labels import plugin_name
from lfabench.leaderboard.statistics import summarize
from lfabench.recordset import dedupe_runs, find_records, labelled, records_frame

ROOT = Path(__file__).resolve().parents[3]
COPIES = ROOT / "leaderboards" / "copies" / "records"
METHODS = ("semi_prolfa", "sc", "dm")


def _seed_values(method: str) -> dict[int, float]:
    out = {}
    for path in (COPIES / f"copy_detection_sift_{method}_retrieval").glob("*/result.json"):
        record = json.loads(path.read_text())
        if record["status"] == "ok" and "labelled_unit" not in record["split"]:  # the paper's annotation rule
            out[record["seed"]] = record["metrics"]["mAP"]
    return out


@pytest.fixture(scope="module")
def table():
    # SC and DM stand in for fully supervised methods, so that the committed board's real per-query APs are tested
    patch = pytest.MonkeyPatch()
    patch.setattr(claims, "_is_fully_supervised", lambda name: name in ("sc", "dm"))
    df, _ = records_frame(find_records([COPIES / f"copy_detection_sift_{m}_retrieval" for m in METHODS]))
    table = claims.claim_table(labelled(dedupe_runs(df)), summarize(df))
    yield table[~table["reference"].str.contains("labelled_unit")]  # Semi-ProLFA under the paper's rule
    patch.undo()


def test_each_supervised_setting_is_compared_with_semi_prolfa_read_as_semi_minus_method(table):
    assert list(table["method"].map(plugin_name)) == ["dm", "sc"]
    semi = _seed_values("semi_prolfa")
    for _, row in table.iterrows():
        other = _seed_values(plugin_name(row["method"]))
        seeds = sorted(set(semi) & set(other))
        assert row["n_pairs"] == len(seeds) == 6
        assert row["diff"] == pytest.approx(np.mean([semi[s] - other[s] for s in seeds]), abs=1e-9)
        assert row["diff_ci_low"] < row["diff"] < row["diff_ci_high"]
        # the larger p of the per-query sign flip and the paired t over the seeds
        t_p = ttest_rel([semi[s] for s in seeds], [other[s] for s in seeds]).pvalue
        assert row["p"] >= t_p - 1e-12 and row["p"] >= 1 / 5000
        assert row["verdict"] == claims.BELOW  # Semi-ProLFA at ~50 mAP against SC ~75 and DM ~66 on this board


def test_holm_is_over_the_comparisons_of_one_semi_prolfa_setting(table):
    expected = multipletests(table["p"].to_numpy(), method="holm")[1]
    np.testing.assert_allclose(table["p_holm"].to_numpy(), expected)


def test_the_section_states_separations_only_below_alpha():
    assert claims._verdict(2.0, 0.01) == claims.ABOVE
    assert claims._verdict(-2.0, 0.01) == claims.BELOW
    assert claims._verdict(5.0, 0.2) == claims.NOT_SEPARATED
    assert claims._verdict(float("nan"), 0.01) == "not tested"


def test_a_board_without_both_sides_has_no_claim_section(tmp_path):
    df, _ = records_frame(find_records([COPIES / "copy_detection_sift_bow_retrieval"]))
    empty = claims.claim_table(labelled(dedupe_runs(df)), summarize(df))
    assert empty.empty and claims.claim_markdown(empty) == ""
