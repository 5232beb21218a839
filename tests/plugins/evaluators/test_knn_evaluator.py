"""The ``knn`` evaluator end to end (runner, CLI) on the embedded digits, and ``lfabench compare``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.covariance import LedoitWolf
from sklearn.neighbors import KNeighborsClassifier

from lfabench.cli import main as cli_main
from lfabench.evaluation import knn_predict
from lfabench.registry import get_plugin
from lfabench.run import run_benchmark
from lfabench_plugins.evaluators.splits import stratified_split

from knn_reference import determined as _determined
from knn_reference import distances as _distances

N_SAMPLES, N_CLUSTERS = 300, 16


def config(seed=0, n_clusters=N_CLUSTERS, **evaluator):
    return {"dataset": {"name": "digits", "params": {"n_samples": N_SAMPLES}},
            "descriptor": {"name": "patches", "params": {"patch_size": 3, "stride": 1, "normalize": "none",
                                                         "scale": 16.0}},
            "aggregator": {"name": "bow", "params": {"n_clusters": n_clusters, "random_state": seed}},
            "evaluator": {"name": "knn", "params": evaluator}, "seed": seed}


@pytest.fixture(scope="module")
def digits_features():
    """BoW features of the digits subset for seed 0, built exactly as the runner does."""
    dataset = get_plugin("dataset", "digits")(n_samples=N_SAMPLES)
    bags = get_plugin("descriptor", "patches")(patch_size=3).describe(dataset, progress=False)
    train, test = stratified_split(dataset.labels, 0.2, 0)
    bow = get_plugin("aggregator", "bow")(n_clusters=N_CLUSTERS, random_state=0).fit(bags.subset(train),
                                                                                    dataset.labels[train])
    return bow.transform(bags), dataset.labels, train, test


@pytest.mark.parametrize("params,sk", [
    ({"metric": "euclidean", "k": 1}, {"metric": "euclidean"}),
    ({"metric": "cosine", "k": 2}, {"metric": "cosine"}),
    ({"metric": "minkowski", "p": 3, "k": 3}, {"metric": "minkowski", "p": 3}),
    ({"metric": "mahalanobis", "k": 5}, {"metric": "mahalanobis"}),
])
def test_runner_accuracy_equals_sklearn(tmp_path, digits_features, params, sk):
    """The recorded accuracy is knn_predict's, and knn_predict equals scikit-learn on every test vector whose
    vote does not hinge on equidistant neighbours (BoW histograms are discrete: such near-ties exist, and
    both libraries then decide by float rounding)."""
    record = run_benchmark(config(**params), tmp_path)
    X, y, train, test = digits_features
    VI = None
    if sk["metric"] == "mahalanobis":   # BoW L1 histograms: singular covariance -> auto picks Ledoit-Wolf
        assert record["split"]["knn_metric"]["covariance"] == "ledoit_wolf"
        VI = LedoitWolf().fit(X[train]).precision_
        sk = dict(sk, metric_params={"VI": VI})
    mine = knn_predict(X[train], y[train], X[test], params["k"], params["metric"], params.get("p"))
    assert record["metrics"]["accuracy"] == pytest.approx(100 * np.mean(mine == y[test]), abs=1e-9)
    ref = KNeighborsClassifier(n_neighbors=params["k"], algorithm="brute", **sk).fit(X[train], y[train])
    D = _distances(X[test], X[train], sk["metric"], params.get("p"), VI)
    det = _determined(D, y[train], params["k"])
    assert det.mean() > 0.8
    np.testing.assert_array_equal(mine[det], ref.predict(X[test])[det])
    assert record["split"]["n_test"] == test.size and record["split"]["k"] == params["k"]
    if "p" in params:
        assert record["split"]["knn_metric"]["p"] == 3.0


def test_semi_supervised_labelled_fraction(tmp_path):
    Knn = get_plugin("evaluator", "knn")
    dataset = get_plugin("dataset", "digits")(n_samples=N_SAMPLES)
    split = Knn(labelled_fraction=0.2).split(dataset, seed=1)
    full = Knn().split(dataset, seed=1)
    np.testing.assert_array_equal(split.fit_indices, full.fit_indices)      # same split, fewer labels
    labelled = split.fit_labels >= 0
    for c in range(10):
        n_c = int((full.fit_labels == c).sum())
        assert int((split.fit_labels[labelled] == c).sum()) == int(np.ceil(0.2 * n_c))
    np.testing.assert_array_equal(split.fit_labels[labelled], full.fit_labels[labelled])


def test_bad_parameters_are_named():
    Knn = get_plugin("evaluator", "knn")
    with pytest.raises(ValueError, match="needs the exponent p"):
        Knn(metric="minkowski")
    with pytest.raises(ValueError, match="metric must be one of"):
        Knn(metric="chebyshev")
    with pytest.raises(ValueError, match="covariance must be one of"):
        Knn(metric="mahalanobis", covariance="shrunk")


@pytest.mark.slow  # an end-to-end run through the command; the metric is tested in-process
def test_cli_run_cosine(tmp_path):
    """`lfabench run evaluator=knn evaluator.params.metric=cosine` through Hydra and the runner."""
    exe = Path(sys.executable).with_name("lfabench")
    cmd = [str(exe) if exe.exists() else "lfabench", "run", "aggregator=bow", "evaluator=knn",
           "evaluator.params.metric=cosine", "evaluator.params.k=2", f"dataset.params.n_samples={N_SAMPLES}",
           f"aggregator.params.n_clusters={N_CLUSTERS}", f"hydra.run.dir={tmp_path}"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=dict(os.environ, TQDM_DISABLE="1"))
    assert out.returncode == 0, out.stderr[-2000:]
    record = json.loads((tmp_path / "result.json").read_text())
    assert record["status"] == "ok" and record["config"]["evaluator"]["params"]["metric"] == "cosine"
    assert record["split"]["knn_metric"] == {"metric": "cosine"}
    assert 0.0 < record["metrics"]["accuracy"] <= 100.0


def test_compare_reports_mean_std_and_the_corrected_resampled_t(tmp_path, capsys):
    from scipy import stats

    scores, sizes = {8: [], 16: []}, set()
    for seed in range(3):
        for n_clusters in scores:
            setting = config(seed="${seed}", n_clusters=n_clusters)     # seed-free: the seeds pool
            rec = run_benchmark(config(seed=seed, n_clusters=n_clusters), tmp_path / f"k{n_clusters}_s{seed}",
                                setting=setting)
            scores[n_clusters].append(rec["metrics"]["accuracy"])
            sizes.add((rec["split"]["n_train"], rec["split"]["n_test"]))
    assert cli_main(["compare", str(tmp_path), "--csv", str(tmp_path / "cmp.csv")]) == 0
    text = capsys.readouterr().out
    best, other = (16, 8) if np.mean(scores[16]) >= np.mean(scores[8]) else (8, 16)
    assert f"{np.mean(scores[best]):.2f} ± {np.std(scores[best], ddof=1):.2f}" in text and "best" in text
    # k-NN on seeded splits: Nadeau and Bengio's corrected resampled t over the 3 paired seeds, by hand
    (n_train, n_test), = sizes
    d = np.array(scores[other]) - np.array(scores[best])
    import pandas as pd

    table = pd.read_csv(tmp_path / "cmp.csv")
    row = table[table["best"] == False].iloc[0]  # noqa: E712
    if d.var(ddof=1) > 0:
        t = d.mean() / np.sqrt((1 / 3 + n_test / n_train) * d.var(ddof=1))
        assert row["p_vs_best"] == pytest.approx(2 * stats.t.sf(abs(t), 2), rel=1e-9)
    assert row["test"] == "corrected t" and row["diff"] == pytest.approx(d.mean())


def test_samples_without_descriptors_neither_match_nor_score():
    """Zero vectors of empty samples are at distance 1 from every unit vector, closer than any two nearly
    orthogonal unit vectors (sqrt 2): left in the database they would be every query's nearest neighbour."""
    from lfabench.dataset import Dataset

    KNN = get_plugin("evaluator", "knn")
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(3), 10)
    centres = np.linalg.qr(rng.normal(size=(400, 3)))[0].T            # three orthonormal class directions
    X = centres[labels] + 1.5 * rng.normal(size=(30, 400)) / np.sqrt(400)  # same-class cosine ~0.3: distance > 1
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    ds = Dataset(name="toy", task="classification", sample_ids=[f"s{i}" for i in range(30)], labels=labels,
                 images=[np.zeros((2, 2))] * 30)
    ev = KNN()
    split = ev.split(ds, 0)
    empty_train = split.train_indices[labels[split.train_indices] == 0][:1]
    X[empty_train] = 0.0
    without_fix = ev.evaluate(X, ds, split)["accuracy"]              # no empty_rows: the zero row is a hub
    split.empty_rows = np.isin(np.arange(30), empty_train)
    assert ev.evaluate(X, ds, split)["accuracy"] == 100.0 > without_fix
    assert split.info["empty_samples"] == {"train_left_out": 1, "test_counted_wrong": 0}
    empty_test = split.test_indices[:1]
    X[empty_test] = 0.0
    split.empty_rows = np.isin(np.arange(30), np.concatenate([empty_train, empty_test]))
    expected = 100.0 * (split.test_indices.size - 1) / split.test_indices.size
    assert ev.evaluate(X, ds, split)["accuracy"] == pytest.approx(expected)
    assert split.info["empty_samples"]["test_counted_wrong"] == 1


def _toy_with_official(official):
    from lfabench.dataset import Dataset

    labels = np.repeat(np.arange(3), 10)
    return Dataset(name="toy", task="classification", sample_ids=[f"s{i}" for i in range(30)], labels=labels,
                   images=[np.zeros((2, 2))] * 30, official_split=official)


def test_an_official_split_is_used_by_default_and_the_seeded_one_on_request():
    KNN = get_plugin("evaluator", "knn")
    official = (np.arange(0, 30, 2)[::-1], np.arange(1, 30, 2))      # even ids train, odd ids test
    ds = _toy_with_official(official)
    for seed in (0, 3):
        split = KNN().split(ds, seed)
        np.testing.assert_array_equal(split.train_indices, np.arange(0, 30, 2))
        np.testing.assert_array_equal(split.test_indices, np.arange(1, 30, 2))
        assert split.info["protocol"] == "official" and "test_fraction" not in split.info
    forced = KNN(split_protocol="stratified").split(ds, 3)
    train, test = stratified_split(ds.labels, 0.2, 3)
    np.testing.assert_array_equal(forced.train_indices, train)
    np.testing.assert_array_equal(forced.test_indices, test)
    assert forced.info["protocol"] == "stratified" and forced.info["test_fraction"] == 0.2


def test_official_split_required_but_absent_names_the_dataset():
    KNN = get_plugin("evaluator", "knn")
    with pytest.raises(ValueError, match="'toy' publishes no official split"):
        KNN(split_protocol="official").split(_toy_with_official(None), 0)
    with pytest.raises(ValueError, match="split_protocol must be one of"):
        KNN(split_protocol="random")


def test_split_protocol_is_opt_in_so_existing_run_keys_stay():
    from lfabench.cli.run import plugin_config
    from lfabench.registry import get_registry

    (spec,) = [s for s in get_registry().specs() if s.kind == "evaluator" and s.name == "knn"]
    assert "split_protocol" not in plugin_config(spec)["params"]
    assert {"k", "metric", "test_fraction", "labelled_fraction"} <= set(plugin_config(spec)["params"])
