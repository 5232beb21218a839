"""Which settings a board separates: the test each protocol gets, its difference and interval, Holm, the letter
display; and on the committed boards, every number recomputed independently (scipy, statsmodels, the records'
own per-query APs)."""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from lfabench.leaderboard import build_leaderboard
from lfabench.leaderboard.separation import letter_display

from record_helpers import record

ROOT = Path(__file__).resolve().parents[3]
BOARDS = ROOT / "leaderboards"


def _nb_p(d: np.ndarray, n_train: float, n_test: float) -> tuple[float, float, float]:
    """Nadeau & Bengio by hand: (p, ci_low, ci_high) of the corrected resampled t over the differences d."""
    k = d.size
    se = math.sqrt((1 / k + n_test / n_train) * d.var(ddof=1))
    t = d.mean() / se
    half = stats.t.ppf(0.975, k - 1) * se
    return 2 * stats.t.sf(abs(t), k - 1), d.mean() - half, d.mean() + half


@pytest.mark.parametrize("seed", range(6))
def test_settings_share_a_letter_exactly_when_no_test_separates_them(seed):
    rng = np.random.default_rng(seed)
    names = [f"m{i}" for i in range(8)]
    pairs = list(itertools.combinations(names, 2))
    separated = {frozenset(p) for p in pairs if rng.random() < 0.5}
    letters = letter_display(names, separated)
    for a, b in pairs:
        share = bool(set(letters[a]) & set(letters[b]))
        assert share == (frozenset((a, b)) not in separated), (a, b, letters)
    assert "a" in letters["m0"]  # the best's group comes first


def test_a_knn_table_on_seeded_splits_gets_the_corrected_t_with_its_interval(tmp_path):
    rng = np.random.default_rng(0)
    scores = {"vlad": 80 + rng.normal(0, 1, 6), "bow": 75 + rng.normal(0, 1, 6), "fv": 79.5 + rng.normal(0, 1, 6)}
    for name, values in scores.items():
        for seed, v in enumerate(values):
            record(tmp_path / f"runs/{name}{seed}", seed, float(v), aggregator=name,
                   split={"n_train": 800, "n_test": 200})
    out = build_leaderboard([tmp_path / "runs"], tmp_path / "lb")
    table = pd.read_csv(out["csv"]).set_index("aggregator")
    best = table["mean"].idxmax()
    assert set(table["test"]) == {"corrected t"}
    raw = {}
    for name in scores:
        if name == best:
            assert table.loc[name, "diff"] == 0 and math.isnan(table.loc[name, "p_vs_best"])
            continue
        p, lo, hi = _nb_p(scores[name] - scores[best], 800, 200)
        raw[name] = p
        assert table.loc[name, "p_vs_best"] == pytest.approx(p, rel=1e-9)
        assert table.loc[name, ["diff_ci_low", "diff_ci_high"]].tolist() == pytest.approx([lo, hi], rel=1e-9)
        assert table.loc[name, "diff"] == pytest.approx(np.mean(scores[name] - scores[best]))
    from statsmodels.stats.multitest import multipletests

    names = sorted(raw)
    holm = multipletests([raw[n] for n in names], method="holm")[1]
    assert table.loc[names, "p_holm"].tolist() == pytest.approx(list(holm), rel=1e-9)
    md = out["markdown"].read_text()
    for name in names:
        word = "below" if table.loc[name, "p_holm"] < 0.05 else "not separated"
        line = next(x for x in md.splitlines() if re.search(rf"\| {name} +\|", x))
        assert re.search(rf"\| {word} +\|", line)


def test_records_without_split_sizes_or_predictions_keep_the_exact_wilcoxon(tmp_path):
    for seed in range(6):
        record(tmp_path / f"runs/vlad{seed}", seed, 90.0 + seed, aggregator="vlad")
        record(tmp_path / f"runs/bow{seed}", seed, 60.0 + seed)
    table = pd.read_csv(build_leaderboard([tmp_path / "runs"], tmp_path / "lb")["csv"]).set_index("aggregator")
    assert table.loc["bow", "test"] == "wilcoxon" and table.loc["bow", "p_vs_best"] == pytest.approx(2 / 64)
    assert table.loc["bow", "diff"] == pytest.approx(-30.0) and math.isnan(table.loc["bow", "diff_ci_low"])


# --- the committed boards, recomputed from their own files ------------------------------------------------------

def _board(name: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    return pd.read_csv(BOARDS / name / f"{name}.csv"), pd.read_csv(BOARDS / name / f"{name}-runs.csv")


def test_scene15_p_holm_is_the_corrected_t_with_holm_recomputed_from_the_runs_csv():
    from statsmodels.stats.multitest import multipletests

    summary, runs = _board("scene15")
    for descriptor, table in summary.groupby("descriptor"):
        wide = runs[runs["descriptor"] == descriptor].pivot(index="seed", columns="aggregator", values="value")
        best = table.loc[table["best"], "aggregator"].iloc[0]
        rest = table[~table["best"]]
        raw = [_nb_p((wide[a] - wide[best]).to_numpy(), 3588, 897)[0] for a in rest["aggregator"]]
        holm = multipletests(raw, method="holm")[1]
        assert rest["p_holm"].to_numpy() == pytest.approx(holm, rel=1e-9)
        assert (rest["p_holm"] < 0.05).sum() >= 10  # separated from the best: at least 10 of 14


def test_scene15_per_image_mcnemar_is_statsmodels_on_the_stored_predictions():
    from statsmodels.stats.contingency_tables import mcnemar

    summary, runs = _board("scene15")
    row = summary[(summary["descriptor"] == "sift") & (summary["aggregator"] == "fv")].iloc[0]
    best = summary[(summary["descriptor"] == "sift") & summary["best"]].iloc[0]

    def right(label):
        out = {}
        for _, r in runs[(runs["descriptor"] == "sift") & (runs["aggregator"] == label)].iterrows():
            with np.load(ROOT / Path(r["path"]).parent / "predictions.npz") as z:
                out[r["seed"]] = (z["predicted"] == z["true"]) & ~z["counted_wrong"]
        return out

    a, b = right("fv"), right(best["aggregator"])
    n10 = sum(int((a[s] & ~b[s]).sum()) for s in a)
    n01 = sum(int((~a[s] & b[s]).sum()) for s in a)
    assert row["p_per_sample"] == pytest.approx(mcnemar([[0, n10], [n01, 0]], exact=True).pvalue, rel=1e-9)


def _per_query_ap(label: str, descriptor: str, runs: pd.DataFrame) -> np.ndarray:
    """(seeds, queries) AP x 100 from the records' own ``split.per_query_ap`` (not from the predictions)."""
    rows = runs[(runs["descriptor"] == descriptor) & (runs["aggregator"] == label) & (runs["metric"] == "mAP")]
    out = []
    for _, r in rows.sort_values("seed").iterrows():
        per_query = json.loads((ROOT / r["path"]).read_text())["split"]["per_query_ap"]
        out.append([100.0 * per_query[q] for q in sorted(per_query)])
    return np.array(out)


def test_copies_every_row_but_the_closest_is_separated_by_both_the_queries_and_the_fits():
    summary, runs = _board("copies")
    for descriptor, table in summary[summary["metric"] == "mAP"].groupby("descriptor"):
        rest = table[~table["best"]].sort_values("diff", ascending=False)
        assert (rest["p_holm"].iloc[1:] < 0.05).all()  # every row but the closest to the best
        assert set(rest["test"]) == {"sign flip + seed t"}
        best = table.loc[table["best"], "aggregator"].iloc[0]
        closest = rest.iloc[0]
        per_seed = (_per_query_ap(closest["aggregator"], descriptor, runs)
                    - _per_query_ap(best, descriptor, runs))  # (seeds, queries), from the records' own APs
        d = per_seed.mean(axis=0)
        assert closest["diff"] == pytest.approx(d.mean(), abs=1e-9)
        # the fits: scipy's paired t over the seeds' mAPs; the queries: the randomization test by other draws
        wide = runs[(runs["descriptor"] == descriptor) & (runs["metric"] == "mAP")].pivot(
            index="seed", columns="aggregator", values="value")
        seed_p = stats.ttest_rel(wide[closest["aggregator"]], wide[best]).pvalue
        rng = np.random.default_rng(1)
        flips = rng.choice([-1.0, 1.0], (999, d.size)) @ d
        query_p = (1 + np.sum(np.abs(flips) >= abs(d.sum()))) / 1000
        assert closest["p_vs_best"] >= seed_p - 1e-12  # never smaller than the fits' test
        assert (closest["p_vs_best"] < 0.01) == (max(seed_p, query_p) < 0.01)
        # the interval: seeds and queries resampled together, by a plain loop
        means = [per_seed[rng.integers(0, 6, 6)][:, rng.integers(0, d.size, d.size)].mean() for _ in range(1000)]
        low, high = np.quantile(means, [0.025, 0.975])
        width = high - low
        assert abs(closest["diff_ci_low"] - low) < 0.15 * width and abs(closest["diff_ci_high"] - high) < 0.15 * width
