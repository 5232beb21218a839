"""The retrieval evaluator on revisitop-format fixtures: Easy / Medium / Hard equal an independent evaluation."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from lfabench.registry import get_plugin
from lfabench_plugins.datasets.revisited import load_roxford5k

from data_helpers import textured_image, write_jpeg
from revisited_reference import reference_scores


def _fixture(tmp_path, rng, n_db=30, n_q=6):
    """A roxford5k folder in the official layout (gnd_roxford5k.pkl + jpg/) with junk and empty setups."""
    names = [f"im{i:03d}" for i in range(n_db + n_q)]
    for i, n in enumerate(names):
        write_jpeg(tmp_path / "jpg" / f"{n}.jpg", textured_image(i, (24, 24)))
    gnd = []
    for q in range(n_q):
        items = rng.permutation(n_db)
        n_easy = 0 if q == 1 else int(rng.integers(1, 5))            # query 1: no easy image
        n_hard = 0 if q in (2, 4) else int(rng.integers(1, 5))        # queries 2, 4: no hard image
        n_junk = int(rng.integers(1, 4))
        gnd.append({"easy": items[:n_easy].tolist(), "hard": items[n_easy:n_easy + n_hard].tolist(),
                    "junk": items[n_easy + n_hard:n_easy + n_hard + n_junk].tolist(), "bbx": [0.0, 0.0, 20.0, 20.0]})
    (tmp_path / "gnd_roxford5k.pkl").write_bytes(
        pickle.dumps({"imlist": names[:n_db], "qimlist": names[n_db:], "gnd": gnd}, protocol=2))
    return gnd


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_easy_medium_hard_equal_the_independent_implementation(tmp_path, seed):
    rng = np.random.default_rng(seed)
    gnd = _fixture(tmp_path, rng)
    ds = load_roxford5k(root=str(tmp_path), strict=False)
    evaluator = get_plugin("evaluator", "retrieval")(query_region="full", precision_at=[1, 5, 10])
    split = evaluator.split(ds, seed=0)
    features = rng.normal(size=(ds.n_samples, 5))
    split.empty_rows = np.zeros(ds.n_samples, dtype=bool)
    metrics = evaluator.evaluate(features, ds, split)
    # rankings as revisitop makes them: the database sorted by distance to each query (queries are not in it)
    db, queries = features[:30], features[30:]
    rankings = [np.argsort(((db - q) ** 2).sum(axis=1), kind="stable") for q in queries]
    ref = reference_scores(rankings, gnd)
    for setup in ("easy", "medium", "hard"):
        assert metrics[f"mAP_{setup}"] == pytest.approx(100 * ref[setup][0], abs=1e-9)
        for k in (1, 5, 10):
            assert metrics[f"mP@{k}_{setup}"] == pytest.approx(100 * ref[setup][1][k], abs=1e-9)
    assert metrics["mAP"] == pytest.approx(metrics["mAP_medium"], abs=1e-9)   # positives easy + hard, junk skipped
    assert split.info["revisited_queries_scored"] == {"easy": 5, "medium": 6, "hard": 4}
