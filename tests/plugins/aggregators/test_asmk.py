"""ASMK through its authors' ``asmk`` package: the scores equal the package's own pipeline, runs with the
same seed are identical, and without the package the plugin says how to install it."""

from __future__ import annotations

import builtins
import json

import numpy as np
import pytest

from lfabench.bags import Bags
from lfabench.params import ConfigError
from lfabench.run import run_benchmark
from lfabench.testing import aggregator_checks, parametrize

pytestmark = pytest.mark.filterwarnings("ignore::lfabench.bags.EmptySampleWarning")

asmk = pytest.importorskip("asmk", reason="needs the asmk package: pip install 'lfabench[asmk]'")

from lfabench_plugins.aggregators.asmk import ASMK, descriptor_map  # noqa: E402


def _bags(seed: int, n: int = 40, dim: int = 32) -> Bags:
    """SIFT-like non-negative descriptors in 8 groups of images that share a pattern, a few samples empty."""
    rng = np.random.default_rng(seed)
    patterns = rng.gamma(1.0, 1.0, size=(8, 12, dim))
    arrays = []
    for i in range(n):
        base = patterns[i % 8][rng.choice(12, size=int(rng.integers(4, 12)), replace=False)]
        arrays.append((base + rng.gamma(1.0, 0.3, size=base.shape)).astype(np.float32) * 50)
    arrays[5] = np.empty((0, dim), np.float32)
    return Bags.from_list(arrays)


@parametrize(aggregator_checks(ASMK(n_clusters=8, query_multiple_assignment=2, random_state=0)))
def test_conformance(check):
    check()


def test_descriptor_map_is_rootsift_and_unit_norm():
    X = np.array([[1.0, 3.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [-4.0, 0.0, 0.0, 0.0]], np.float32)
    R = descriptor_map(X, root=True)
    np.testing.assert_allclose(R[0], [0.5, np.sqrt(0.75), 0, 0], rtol=1e-6)
    assert not R[1].any() and R[2, 0] == -1.0
    np.testing.assert_allclose(np.linalg.norm(descriptor_map(X[[0, 2]], root=False), axis=1), 1.0, rtol=1e-6)


@pytest.mark.parametrize("binary,alpha,tau,use_idf", [(True, 3.0, 0.0, False), (False, 3.0, 0.0, False),
                                                      (True, 1.0, 0.25, True)])
def test_scores_equal_the_asmk_package_used_directly(binary, alpha, tau, use_idf):
    """The package's documented pipeline (ASMKMethod: codebook, build_ivf, query_ivf) on the plugin's codebook and
    descriptor map gives every query's scores over the whole database; the plugin's rows are those scores."""
    from asmk import ASMKMethod
    from asmk import codebook as cdb_pkg
    from asmk import index as idx_pkg

    bags = _bags(0)
    est = ASMK(n_clusters=16, binary=binary, alpha=alpha, similarity_threshold=tau, use_idf=use_idf,
               random_state=0).fit(bags)
    est.index(bags)
    queries = bags.subset([0, 3, 9, 17, 22])
    ours = est.search(queries)

    params = {"index": {"gpu_id": None}, "train_codebook": {"codebook": {"size": 16}},
              "build_ivf": {"kernel": {"binary": binary}, "ivf": {"use_idf": use_idf},
                            "quantize": {"multiple_assignment": 1}, "aggregate": {}},
              "query_ivf": {"quantize": {"multiple_assignment": 5}, "aggregate": {}, "search": {"topk": None},
                            "similarity": {"similarity_threshold": tau, "alpha": alpha}}}
    method = ASMKMethod.initialize_untrained(params)
    method.codebook = cdb_pkg.Codebook(idx_pkg.initialize_index(None), size=16)
    method.codebook.index(est.centres_)
    X = descriptor_map(bags.descriptors, root=True)
    method = method.build_ivf(X, bags.sample_index())
    _, images, ranks, scores = method.query_ivf(descriptor_map(queries.descriptors, root=True),
                                                queries.sample_index())
    theirs = np.zeros((queries.n_samples, bags.n_samples))
    theirs[np.asarray(images)[:, None], ranks] = scores
    assert np.array_equal(ours, theirs.astype(np.float32))
    assert (ours > 0).sum(axis=1).min() > 0 and not ours[:, 5].any()  # matches found; the empty sample none


@pytest.mark.parametrize("use_idf", [False, True])
def test_index_in_chunks_equals_one_call(monkeypatch, use_idf):
    import lfabench_plugins.aggregators.asmk as plugin

    bags = _bags(1)
    one = ASMK(n_clusters=16, use_idf=use_idf, random_state=0).fit(bags).index(bags).search(bags)
    monkeypatch.setattr(plugin, "INDEX_CHUNK", 7)
    chunked = ASMK(n_clusters=16, use_idf=use_idf, random_state=0).fit(bags).index(bags).search(bags)
    assert np.array_equal(chunked, one)


def test_more_words_per_descriptor_than_the_codebook_has_is_refused():
    with pytest.raises(ConfigError, match="query_multiple_assignment=5 exceeds n_clusters=4"):
        ASMK(n_clusters=4, random_state=0).fit(_bags(0))


def _retrieval_cfg(seed: int) -> dict:
    return {"dataset": {"name": "synthetic", "params": {"task": "retrieval", "n_classes": 4, "samples_per_class": 10,
                                                        "dim": 16, "seed": 0}},
            "descriptor": {"name": "native", "params": {}},
            "aggregator": {"name": "asmk", "params": {"n_clusters": 16, "random_state": seed}},
            "evaluator": {"name": "retrieval", "params": {}}, "seed": seed, "cache": False}


def test_two_runs_with_one_seed_are_identical_and_another_seed_moves_the_codebook(tmp_path):
    a, b, c = (run_benchmark(_retrieval_cfg(seed), tmp_path / name) for seed, name in ((0, "a"), (0, "b"), (1, "c")))
    assert a["status"] == b["status"] == "ok"
    assert a["fingerprints"] == b["fingerprints"] and a["metrics"] == b["metrics"]
    assert c["fingerprints"]["fitted"] != a["fingerprints"]["fitted"]
    assert a["fit_info"]["index"]["images"] == 40 and a["fit_info"]["descriptor_map"] == "rootsift"
    assert json.loads((tmp_path / "a" / "result.json").read_text())["plugins"]["aggregator"]["name"] == "asmk"


def test_without_the_package_the_plugin_says_how_to_install_it(monkeypatch, tmp_path):
    real_import = builtins.__import__

    def no_asmk(name, *args, **kwargs):
        if name == "asmk" or name.startswith("asmk."):
            raise ModuleNotFoundError("No module named 'asmk'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_asmk)
    with pytest.raises(ImportError, match=r'pip install "lfabench\[asmk\]"'):
        ASMK()
    with pytest.raises(ConfigError, match=r"aggregator 'asmk' cannot be built here: .*pip install \"lfabench\[asmk\]\""):
        run_benchmark(_retrieval_cfg(0), tmp_path / "run")
