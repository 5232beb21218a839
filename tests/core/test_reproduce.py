"""`lfabench reproduce` reruns real digits records: identical here, and names the first stage that differs."""

from __future__ import annotations

import json

import pytest

from lfabench.reproduce import compare, draw, reproduce_board
from lfabench.registry import get_plugin
from lfabench.run import run_benchmark

from conftest import run_cli


def _run(root, seed, n_clusters=8, patch=None):
    cfg = {"dataset": {"name": "digits", "params": {"n_samples": 150}},
           "descriptor": {"name": "patches", "params": dict(patch or {})},
           "aggregator": {"name": "bow", "params": {"n_clusters": n_clusters, "random_state": seed}},
           "evaluator": {"name": "knn", "params": {"k": 1}}, "seed": seed, "cache": False}
    setting = dict(cfg, aggregator={"name": "bow", "params": {"n_clusters": n_clusters, "random_state": "${seed}"}})
    setting.pop("seed")
    run_benchmark(cfg, root / "records" / "g" / f"s{seed}", setting=setting)
    return root / "records" / "g" / f"s{seed}" / "result.json"


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    root = tmp_path_factory.mktemp("reproduce")
    for seed in (0, 1, 2):
        _run(root, seed)
    return root


def test_reruns_of_a_real_board_are_identical(board):
    outcomes = reproduce_board(board, sample=2, seed=3, use_cache=False)
    assert len(outcomes) == 2 and all(o.identical for o in outcomes), [str(o) for o in outcomes]
    assert [o.path for o in outcomes] == [str(p) for p in draw(sorted(board.glob("records/**/result.json")), 2, 3)]


def test_the_first_differing_stage_is_named(board, tmp_path):
    path = sorted(board.glob("records/**/result.json"))[0]
    rec = json.loads(path.read_text())
    # the record claims another codebook size than the one its fingerprints came from: descriptors agree, the
    # fitted codebook is the first to differ
    other = json.loads(json.dumps(rec))
    other["config"]["aggregator"]["params"]["n_clusters"] = 9
    copy = tmp_path / "b" / "records" / "r" / "result.json"
    copy.parent.mkdir(parents=True)
    copy.write_text(json.dumps(other))
    (outcome,) = reproduce_board(tmp_path / "b", sample=1)
    assert outcome.verdict == "differs at fitted" and outcome.first_difference == "fitted"
    # another descriptor setting: the descriptors already differ
    other = json.loads(json.dumps(rec))
    other["config"]["descriptor"]["params"]["patch_size"] = 5
    copy.write_text(json.dumps(other))
    (outcome,) = reproduce_board(tmp_path / "b", sample=1)
    assert outcome.verdict == "differs at descriptors"


def test_compare_by_hand():
    fp = {"descriptors": "a", "fitted": "b", "features": "c", "predictions": "d"}
    rec = {"metrics": {"accuracy": 50.0}, "fingerprints": fp}
    assert compare(rec, dict(rec), "x").verdict == "identical"
    assert compare(rec, {"metrics": {"accuracy": 50.0}, "fingerprints": dict(fp, features="z", predictions="y")},
                   "x").first_difference == "features"
    assert compare(rec, {"metrics": {"accuracy": 51.0}, "fingerprints": fp}, "x").verdict == "differs at metrics"
    old = {"metrics": {"accuracy": 50.0}}
    assert compare(old, rec, "x").verdict == "metrics only"


@pytest.mark.slow  # reruns through the command; the comparison is tested in-process above
def test_cli_reports_and_exits_0_when_identical(board, tmp_path):
    proc = run_cli(["reproduce", str(board), "--sample", "1", "--seed", "0"], cwd=tmp_path)
    assert "1 of 1 identical" in proc.stdout and "identical: " in proc.stdout


def test_a_parameter_added_since_a_record_takes_the_value_that_reproduces_it():
    """FV's records written before the float32 EM name no ``em``: their rerun runs scikit-learn's EM, as they did;
    those written before the occupancy sums moved into the GEMM name no ``occupancy_sum``: their rerun sums
    pairwise. A record that names a parameter keeps it, and plugins that declare nothing are left as they are."""
    from lfabench.reproduce import with_introduced_params

    old = {"aggregator": {"name": "fv", "params": {"n_components": 4}}, "descriptor": {"name": "patches", "params": {}},
           "seed": 3}
    assert with_introduced_params(old)["aggregator"]["params"] == \
        {"n_components": 4, "em": "sklearn", "occupancy_sum": "pairwise"}
    assert old["aggregator"]["params"] == {"n_components": 4}  # the record's own config is not changed
    float32_em = {"aggregator": {"name": "fv_nn", "params": {"em": "float32"}}}
    assert with_introduced_params(float32_em)["aggregator"]["params"] == {"em": "float32", "occupancy_sum": "pairwise"}
    new = {"aggregator": {"name": "fv_nn", "params": {"em": "float32", "occupancy_sum": "gemm"}}}
    assert with_introduced_params(new)["aggregator"]["params"] == {"em": "float32", "occupancy_sum": "gemm"}
    assert with_introduced_params({"aggregator": {"name": "bow", "params": {}}}) == \
        {"aggregator": {"name": "bow", "params": {}}}


def test_an_option_added_inside_a_group_is_filled_key_by_key():
    """ProLFA's records written before ``admm_patience``, ``spectral_norm`` and ``w_svd`` hold a ``solver`` group
    without them: their rerun runs ADMM on every iteration (None), takes W's own SVD ("svd") and R P's as it was
    ("wide"), the other options of the group kept; a record naming one keeps its value."""
    from lfabench.reproduce import with_introduced_params

    old = {"aggregator": {"name": "prolfa", "params": {"n_prototypes": 8, "solver": {"mu": 10.0, "tol": 1e-4}}}}
    assert with_introduced_params(old)["aggregator"]["params"] == \
        {"n_prototypes": 8, "solver": {"mu": 10.0, "tol": 1e-4, "admm_patience": None, "spectral_norm": "svd",
                                       "w_svd": "wide"}}
    assert old["aggregator"]["params"]["solver"] == {"mu": 10.0, "tol": 1e-4}
    named = {"aggregator": {"name": "semi_prolfa", "params": {"solver": {"admm_patience": 3}}}}
    assert with_introduced_params(named)["aggregator"]["params"]["solver"] == \
        {"admm_patience": 3, "spectral_norm": "svd", "w_svd": "wide"}
    bare = {"aggregator": {"name": "prolfa", "params": {}}}
    assert with_introduced_params(bare)["aggregator"]["params"] == \
        {"solver": {"admm_patience": None, "spectral_norm": "svd", "w_svd": "wide"}}


def test_a_run_names_the_parameters_added_since_earlier_records_at_their_value_now():
    """A run records ProLFA's solver options and FV's EM that earlier records lack at today's defaults (a config
    naming one keeps its value), so its rerun does not take them for an earlier record's."""
    from lfabench.registry import with_introduced_defaults

    bare = {"aggregator": {"name": "prolfa", "params": {"n_prototypes": 8, "solver": {"admm_patience": 3}}}}
    assert with_introduced_defaults(bare)["aggregator"]["params"] == \
        {"n_prototypes": 8, "solver": {"admm_patience": 3, "spectral_norm": "auto", "w_svd": "tall"}}
    assert bare["aggregator"]["params"]["solver"] == {"admm_patience": 3}
    fv = with_introduced_defaults({"aggregator": {"name": "fv", "params": {}}})["aggregator"]["params"]
    assert fv["em"] == "float32" and fv["em"] != get_plugin("aggregator", "fv").introduced_params["em"]
    assert with_introduced_defaults({"aggregator": {"name": "bow", "params": {}}}) == \
        {"aggregator": {"name": "bow", "params": {}}}


def test_a_record_digests_sparse_fitted_matrices_as_its_rerun_does(tmp_path):
    """ProLFA's selection is sparse: a run records it in the CSR scheme and names it; a record without the name
    reruns in the dense scheme, so both reproduce identically; a dense digest relabelled as CSR is the first
    difference, and an unknown scheme fails before a rerun."""
    from lfabench.fingerprint import fitted_fingerprint

    cfg = {"dataset": {"name": "digits", "params": {"n_samples": 100}}, "descriptor": {"name": "patches"},
           "aggregator": {"name": "prolfa", "params": {"n_prototypes": 8, "random_state": 0}},
           "evaluator": {"name": "knn", "params": {"k": 1}}, "seed": 0, "cache": False}
    now = run_benchmark(cfg, tmp_path / "now" / "records" / "r")
    assert now["fingerprints"]["fitted_sparse"] == "csr"
    assert now["config"]["aggregator"]["params"]["solver"]["w_svd"] == "tall"      # named, so rerun as it ran
    old_path = tmp_path / "old" / "records" / "r" / "result.json"
    old = run_benchmark(cfg, old_path.parent, sparse_fingerprint="dense")
    assert old["fingerprints"]["fitted"] != now["fingerprints"]["fitted"]
    assert {k: v for k, v in old["fingerprints"].items() if k not in ("fitted", "fitted_sparse")} == \
        {k: v for k, v in now["fingerprints"].items() if k not in ("fitted", "fitted_sparse")}
    del old["fingerprints"]["fitted_sparse"]
    old_path.write_text(json.dumps(old))
    for root in (tmp_path / "now", tmp_path / "old"):
        (outcome,) = reproduce_board(root, sample=1)
        assert outcome.identical, str(outcome)
    old["fingerprints"]["fitted_sparse"] = "csr"
    old_path.write_text(json.dumps(old))
    (outcome,) = reproduce_board(tmp_path / "old", sample=1)
    assert outcome.first_difference == "fitted"
    with pytest.raises(ValueError, match="sparse='coo'"):
        fitted_fingerprint(object(), sparse="coo")
    old["fingerprints"]["fitted_sparse"] = "coo"   # a record naming no scheme there is: failed, before a rerun
    old_path.write_text(json.dumps(old))
    (outcome,) = reproduce_board(tmp_path / "old", sample=1)
    assert outcome.verdict == "failed" and "fingerprints.fitted_sparse='coo' is none of csr, dense" in outcome.detail
