"""The data and settings every case draws on: smoke (embedded digits, tiny settings) and paper scale.

Smoke cases use each aggregator's tiny configuration from ``conf/aggregator/smoke/`` on the embedded
digits (3x3 patches): they check that every method runs and give a timing in seconds. Paper cases use
each aggregator's defaults (the paper's settings) on Fifteen Scene SIFT-90 or DAISY-150 from
``../shared/data``, the same data as the committed board, with the ``knn`` evaluator's seed-0 split.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

import numpy as np
import yaml

from lfabench.registry import get_plugin

REPO = Path(__file__).resolve().parents[2]
AGGREGATORS = ("bow", "vlad", "fv", "sc", "temb", "dm", "gamma_democratic", "t1", "univcg", "lcksvd2",
               "dbows", "eobow", "fv_nn", "prolfa", "semi_prolfa")
DESCRIPTOR_CAPS = {"sift": {"max_keypoints": 90}, "daisy": {"max_keypoints": 150}}
#: The paper's settings of each aggregator: its defaults, except where a named variant of ``conf/aggregator/``
#: holds them (ProLFA and Semi-ProLFA with d̄ = 4,096 prototypes, as the ``classification`` preset runs them).
PAPER_VARIANTS = {"prolfa": "prolfa_d4096", "semi_prolfa": "semi_prolfa_d4096"}
PAPER_AGGREGATORS = tuple(PAPER_VARIANTS.get(m, m) for m in AGGREGATORS)


def shared_data() -> Path | None:
    """``$LFABENCH_SHARED_DATA``, else ``../shared/data`` beside the repository, or None."""
    for cand in (os.environ.get("LFABENCH_SHARED_DATA"), REPO.parent / "shared" / "data"):
        if cand and Path(cand).is_dir():
            return Path(cand)
    return None


#: What the run-level interpolations of a smoke config become in a case: seed 0, and no cache (a case times
#: the fit itself, never a cached codebook).
RUN_LEVEL = {"${seed}": 0, "${cache}": False}


def smoke_params(method: str) -> dict:
    """The tiny settings of ``conf/aggregator/smoke/<method>.yaml``, with seed 0 and no cache."""
    params = yaml.safe_load((REPO / "conf" / "aggregator" / "smoke" / f"{method}.yaml").read_text())["params"]
    return {k: RUN_LEVEL.get(v, v) if isinstance(v, str) else v for k, v in params.items()}


@cache
def split_bags(dataset_name: str, descriptor_name: str, labelled_fraction: float = 1.0):
    """``(train bags, fit labels, train labels, test bags, test labels)`` of the ``knn`` evaluator's seed-0 split.

    The fit labels are what the aggregator is given: the training labels, ``-1`` for the samples the
    evaluator leaves unlabelled (``labelled_fraction`` of each class is labelled: Semi-ProLFA's cases use
    0.2, as the board). The 1-NN gallery is every training sample with its label, as in the evaluator.
    Raises NotImplementedError (asv's "skip this case") when the data is absent.
    """
    if dataset_name == "digits":
        dataset = get_plugin("dataset", "digits")()
        descriptor = get_plugin("descriptor", "patches")()
    else:
        root = shared_data()
        if root is None:
            raise NotImplementedError("needs ../shared/data (or $LFABENCH_SHARED_DATA)")
        dataset = get_plugin("dataset", dataset_name)(root=str(root / dataset_name))
        descriptor = get_plugin("descriptor", descriptor_name)(**DESCRIPTOR_CAPS[descriptor_name])
    bags = descriptor.describe(dataset)
    split = get_plugin("evaluator", "knn")(labelled_fraction=labelled_fraction).split(dataset, 0)
    labels = np.asarray(dataset.labels)
    train, test = split.train_indices, split.test_indices
    return bags.subset(train), split.fit_labels, labels[train], bags.subset(test), labels[test]


def variant(name: str) -> tuple[str, dict]:
    """``(plugin, params)`` of an aggregator name: a plugin (its defaults) or a variant in ``conf/aggregator/``."""
    path = REPO / "conf" / "aggregator" / f"{name}.yaml"
    if not path.is_file():
        return name, {}
    conf = yaml.safe_load(path.read_text())
    plugin = next(d for d in conf["defaults"] if d != "_self_")
    return plugin, dict(conf.get("params") or {})


def labelled_fraction(method: str) -> float:
    """The fraction of each class labelled for ``method``'s fit: 0.2 for Semi-ProLFA (the board's), else 1."""
    return 0.2 if variant(method)[0] == "semi_prolfa" else 1.0


def one_nn_accuracy(train_features, train_labels, test_features, test_labels) -> float:
    """1-NN Euclidean accuracy in percent (the paper's classifier)."""
    from lfabench.evaluation import knn_predict

    predicted = knn_predict(train_features, train_labels, test_features, 1, metric="euclidean")
    return 100.0 * float(np.mean(predicted == np.asarray(test_labels)))
