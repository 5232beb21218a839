"""The asv suite's cases build what they name (``benchmarks/suite/``), without the shared data."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from suite.aggregators import PaperFit, PaperFitted, SmokeFitted
from suite.cases import labelled_fraction, variant


def test_every_fit_and_fitted_case_builds_its_aggregator_from_an_instance():
    # asv calls setup on an instance: the builder must not receive it as an argument
    for case in (PaperFit(), PaperFitted()):
        agg = case.build("bow", "sift")
        assert type(agg).__name__ == "BoW" and agg.get_params()["random_state"] == 0
    assert SmokeFitted().build("bow", "patches").get_params()["n_clusters"] > 0


def test_the_paper_cases_run_prolfa_with_the_papers_prototypes():
    assert "prolfa_d4096" in PaperFit.params[0] and "prolfa" not in PaperFit.params[0]
    agg = PaperFit().build("prolfa_d4096", "sift")
    assert agg.get_params()["n_prototypes"] == 4096 and agg.get_params()["random_state"] == 0
    assert PaperFit().build("semi_prolfa_d4096", "sift").get_params()["n_prototypes"] == 4096
    assert variant("semi_prolfa_d4096")[0] == "semi_prolfa"
    assert labelled_fraction("semi_prolfa_d4096") == 0.2 and labelled_fraction("prolfa_d4096") == 1.0


def test_the_copies_mean_descriptor_is_each_images_centred_mean_of_unit_descriptors():
    import numpy as np
    from suite.retrieval import centred_means

    from lfabench.bags import Bags

    rng = np.random.default_rng(0)
    X = rng.standard_normal((9, 4)).astype(np.float32)
    bags = Bags(X, np.array([0, 2, 7, 9]))
    unit = X / np.linalg.norm(X, axis=1, keepdims=True)
    expected = np.stack([unit[0:2].mean(0), unit[2:7].mean(0), unit[7:9].mean(0)]) - unit.mean(0)
    got = centred_means(bags)
    np.testing.assert_allclose(got["centred mean"], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["unit centred mean"], expected / np.linalg.norm(expected, axis=1, keepdims=True),
                               rtol=1e-5, atol=1e-6)
