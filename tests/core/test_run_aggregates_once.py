"""A run aggregates each image once: ``fit_transform`` on the fit samples, ``transform`` on the others.

For every built-in aggregator (smoke sizes, embedded digits): the work is counted (each sample's passes
through the methods that aggregate it, in ``fit`` and in ``transform``) and the run's features are compared,
bit for bit, with those of a plain ``fit`` then ``transform`` of every sample, the pipeline's reference.
"""

from __future__ import annotations

from collections import Counter
from contextlib import contextmanager

import numpy as np
import pytest

from lfabench.aggregate import Aggregator
from lfabench.bags import Bags
from lfabench.fingerprint import array_digest
from lfabench.gemm_rows import gemm_rows_are_own
from lfabench.registry import get_registry
from lfabench.run import run_benchmark, scored_features
from lfabench.threads import fixed_threads

from test_determinism import SMOKE, smoke_aggregator

DIGITS = {"name": "digits", "params": {"n_samples": 300}}
PATCHES = {"name": "patches", "params": {}}
#: Aggregators whose fit aggregates the training images in batches whose last bits differ from those of the
#: scored set's transform (zero-padded batches sized by their company): reusing them would change the
#: record's features, so the run aggregates those images twice.
AGGREGATED_TWICE: dict[str, str] = {
    "temb,batches=padded": "the per-image sums of padded batches depend on the batch: transform sums the training "
                           "images again (their phi taken from the fit)"}
#: Aggregators whose rows are their own only through matrix products: on a BLAS whose products' rows depend on
#: the others (:func:`lfabench.gemm_rows.gemm_rows_are_own` False) they declare ``independent_rows`` False and a
#: run transforms every sample after ``fit``.
ROWS_BY_PRODUCTS = {"temb", "fv", "fv_nn"}
#: Of those, the ones that aggregate each image once all the same: T-emb's transform takes the fit's sums for the
#: images fit aggregated.
ONCE_ALL_THE_SAME = {"temb"}
NOT_OWN_PHI = ("this BLAS computes a product's rows with bits that depend on the other rows: phi of a fit image taken "
               "from the fit would not be the bits of embedding it in the transform's batches, so T-emb embeds it again")


def names() -> list[str]:
    return sorted(p.stem for p in SMOKE.glob("*.yaml")) + ["bow,normalize=tfidf", "temb,batches=padded"]


#: Methods through which an aggregator aggregates samples, beyond ``_transform``: class name -> method names.
#: T-emb's costly work is phi of each descriptor, counted by the test below.
IN_FIT = {"BoW": ("_counts",), "ProLFA": ("_centred_and_pooled",),
          "SemiProLFA": ("_centred_and_pooled",), "TriangulationEmbedding": ("_aggregate",)}
#: Classes whose ``_transform`` only dispatches: their aggregating method (:data:`IN_FIT`) is counted instead
#: (T-emb's transform takes the fit's sums for the samples fit aggregated, and aggregates the others).
DISPATCHING = {"TriangulationEmbedding"}


@contextmanager
def counting(aggregator_class) -> Counter:
    """Count, per sample id, the outermost calls that aggregate it: every ``Aggregator._transform`` (nested
    estimators too: FV+NN's Fisher vectors) and the class's own in-fit aggregation (:data:`IN_FIT`)."""
    seen: Counter = Counter()
    depth = [0]
    targets = [(cls, "_transform") for cls in _aggregator_classes() if cls.__name__ not in DISPATCHING]
    targets += [(next(c for c in aggregator_class.__mro__ if m in c.__dict__), m)
                for m in IN_FIT.get(aggregator_class.__name__, ())]
    saved = [(cls, name, cls.__dict__[name]) for cls, name in targets if name in cls.__dict__]

    def wrap(fn):
        def wrapped(self, bags, *args, **kwargs):
            if depth[0] == 0 and isinstance(bags, Bags):
                seen.update(bags.ids)
            depth[0] += 1
            try:
                return fn(self, bags, *args, **kwargs)
            finally:
                depth[0] -= 1
        return wrapped

    for cls, name, fn in saved:
        setattr(cls, name, wrap(fn))
    try:
        yield seen
    finally:
        for cls, name, fn in saved:
            setattr(cls, name, fn)


def _aggregator_classes() -> set[type]:
    """Every aggregator class and the classes it inherits from (mixins hold some ``_transform``)."""
    out, todo = set(), [Aggregator]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub not in out:
                out.update(sub.__mro__)
                todo.append(sub)
    return out - {object}


def config(name: str) -> dict:
    """``name``'s smoke config on digits (``<name>,<param>=<value>``: one parameter changed)."""
    name, _, change = name.partition(",")
    aggregator = smoke_aggregator(name)
    if change:
        key, value = change.split("=")
        aggregator["params"][key] = value
    return {"dataset": DIGITS, "descriptor": PATCHES, "aggregator": aggregator,
            "evaluator": {"name": "knn", "params": {}}, "seed": 1, "cache": False}


def reference_features(cfg: dict) -> str:
    """sha256 of ``fit`` on the run's fit samples then ``transform`` of every sample: the pipeline's reference."""
    registry = get_registry()

    def build(kind):
        return registry.get_spec(kind, cfg[kind]["name"]).factory(**cfg[kind]["params"])

    with fixed_threads(1):
        dataset, descriptor, evaluator, aggregator = (build(k) for k in ("dataset", "descriptor", "evaluator",
                                                                         "aggregator"))
        bags = descriptor.describe(dataset, cache=False, progress=False)
        split = evaluator.split(dataset, cfg["seed"])
        aggregator.fit(bags.subset(split.fit_indices), split.fit_labels)
        return array_digest(np.asarray(aggregator.transform(bags)))


@pytest.mark.parametrize("name", names())
def test_a_run_aggregates_no_training_image_twice_and_its_features_are_those_of_fit_then_transform(name, tmp_path):
    cfg = config(name)
    spec = get_registry().get_spec("aggregator", cfg["aggregator"]["name"])
    with counting(spec.factory) as seen:
        record = run_benchmark(cfg, tmp_path / "run")
    assert record["status"] == "ok"
    assert record["fingerprints"]["features"] == reference_features(cfg)
    twice = sorted(i for i, n in seen.items() if n > 1)
    if name in ROWS_BY_PRODUCTS and not gemm_rows_are_own():
        assert not spec.factory(**cfg["aggregator"]["params"]).independent_rows
    if name in ROWS_BY_PRODUCTS - ONCE_ALL_THE_SAME and not gemm_rows_are_own():
        pytest.skip(f"{name}: this BLAS computes a product's rows with bits that depend on the other rows, so the "
                    f"run transforms every image after fit (its features checked above)")
    if name in AGGREGATED_TWICE:
        assert twice, f"{name} aggregates each image once now: drop it from AGGREGATED_TWICE"
        return
    assert not twice, f"{name} aggregated {len(twice)} images more than once (e.g. {twice[:3]})"
    assert len(seen) == DIGITS["params"]["n_samples"]  # and every image once


@pytest.mark.parametrize("name", names())
def test_fit_transform_equals_fit_then_transform_bit_for_bit(name):
    cfg = config(name)
    registry = get_registry()
    build = registry.get_spec("aggregator", cfg["aggregator"]["name"]).factory
    dataset = registry.get_spec("dataset", "digits").factory(**DIGITS["params"])
    bags = registry.get_spec("descriptor", "patches").factory().describe(dataset, cache=False, progress=False)
    labels = np.asarray(dataset.labels)
    fit = np.arange(0, bags.n_samples, 3)
    with fixed_threads(1):
        reference = build(**cfg["aggregator"]["params"]).fit(bags.subset(fit), labels[fit]).transform(bags)
        alone = build(**cfg["aggregator"]["params"]).fit(bags.subset(fit), labels[fit]).transform(bags.subset(fit))
        aggregator = build(**cfg["aggregator"]["params"])
        once = aggregator.fit_transform(bags.subset(fit), labels[fit])
        assembled = scored_features(aggregator, bags, bags, fit, once if aggregator.independent_rows else None)
    # the contract: fit then transform of the same bags; with independent rows, the same rows in any company
    assert np.array_equal(once.view(np.uint8), np.ascontiguousarray(alone).view(np.uint8))
    if aggregator.independent_rows or gemm_rows_are_own():
        assert np.array_equal(once.view(np.uint8), np.ascontiguousarray(reference[fit]).view(np.uint8))
    assert assembled.dtype == reference.dtype and np.array_equal(assembled.view(np.uint8), reference.view(np.uint8))


class CountingBoW:
    """A BoW whose ``transform`` calls are kept (the samples each call got)."""

    def __init__(self):
        self.inner = get_registry().get_spec("aggregator", "bow").factory(n_clusters=4, random_state=0)
        self.calls: list[list[str]] = []
        self.independent_rows = True

    def fit_transform(self, bags, y=None):
        return self.inner.fit_transform(bags, y)

    def transform(self, bags):
        self.calls.append(list(bags.ids))
        return self.inner.transform(bags)


def digits_bags(n: int = 40) -> Bags:
    dataset = get_registry().get_spec("dataset", "digits").factory(n_samples=n)
    return get_registry().get_spec("descriptor", "patches").factory().describe(dataset, cache=False, progress=False)


def test_samples_an_evaluator_adds_after_the_dataset_are_transformed_with_the_others_and_rows_keep_their_order():
    bags = digits_bags()
    crops = bags.subset([3, 5])
    crops = Bags(crops.descriptors[:2].copy(), np.array([0, 1, 2]), ids=["a#box", "b#box"])  # one descriptor each
    scored = Bags.concatenate([bags, crops])
    fit = np.array([7, 2, 30, 11])                      # any order
    aggregator = CountingBoW()
    features = scored_features(aggregator, scored, bags, fit, aggregator.fit_transform(bags.subset(fit)))
    others = [i for i in range(scored.n_samples) if i not in set(fit.tolist())]
    assert aggregator.calls == [[scored.ids[i] for i in others]]
    assert np.array_equal(features, aggregator.inner.transform(scored))


def test_bags_an_evaluator_changed_are_transformed_whole():
    bags = digits_bags()
    changed = Bags(bags.descriptors + 1, bags.offsets, ids=bags.ids)
    fit = np.arange(10)
    aggregator = CountingBoW()
    features = scored_features(aggregator, changed, bags, fit, aggregator.fit_transform(bags.subset(fit)))
    assert aggregator.calls == [list(changed.ids)]
    assert np.array_equal(features, aggregator.inner.transform(changed))


@pytest.mark.parametrize("name", ["temb", "temb,batches=padded"])
def test_a_temb_run_embeds_each_descriptor_once(name, tmp_path, monkeypatch):
    """phi (the (A*d, D) product per descriptor, T-emb's cost) of a training descriptor is computed in fit, and
    either the run transforms only the other images (unpadded batches) or transform takes phi from the fit (padded
    ones): no descriptor row is embedded more often than it occurs in the data."""
    from lfabench_plugins.aggregators.temb import TriangulationEmbedding

    if name.endswith("padded") and not gemm_rows_are_own():
        pytest.skip(NOT_OWN_PHI)
    cfg = config(name)
    reference = reference_features(cfg)
    embedded: Counter = Counter()
    embed = TriangulationEmbedding.embed

    def counting_embed(self, X):
        rows = np.asarray(X, dtype=np.float32).reshape(-1, np.shape(X)[-1])   # (N, d), or a batch (B, n, d)
        embedded.update(row.tobytes() for row in rows if row.any())  # padding: zero rows
        return embed(self, X)

    monkeypatch.setattr(TriangulationEmbedding, "embed", counting_embed)
    assert run_benchmark(cfg, tmp_path / "run")["fingerprints"]["features"] == reference
    bags = digits_bags(DIGITS["params"]["n_samples"])
    occurs = Counter(row.tobytes() for row in bags.descriptors.astype(np.float32) if row.any())
    assert set(embedded) == set(occurs)
    assert not [row for row, n in embedded.items() if n > occurs[row]]


class MeanProjection(Aggregator):
    """Each sample's mean descriptor times a fixed (d, 64) matrix: ProLFA's and DM's kind of vectors (one product
    of samples by a matrix); its rows are independent, but one row alone is a matrix-vector product."""

    independent_rows = True

    def _fit(self, bags, y):
        self.projection_ = np.random.default_rng(0).standard_normal((bags.dim, 64))

    def _transform(self, bags):
        return bags.means().astype(np.float64) @ self.projection_


def test_a_single_other_sample_is_transformed_in_company_as_in_the_whole_transform():
    """One row alone takes BLAS's matrix-vector path, whose last bits differ from the same row of a product of
    several; the lone sample is transformed beside a fit sample."""
    if not gemm_rows_are_own():
        pytest.skip("this BLAS computes a product's rows with bits that depend on the other rows: no row of a "
                    "product is the same in another company, alone or not")
    bags = digits_bags(60)
    fit = np.arange(1, 60)
    with fixed_threads(1):
        reference = MeanProjection().fit(bags.subset(fit)).transform(bags)
        aggregator = MeanProjection()
        features = scored_features(aggregator, bags, bags, fit, aggregator.fit_transform(bags.subset(fit)))
    assert np.array_equal(features, reference)


def test_temb_keeps_phi_within_its_budget_and_its_features_do_not_change(tmp_path, monkeypatch):
    """With room for part of the fit descriptors' phi, the rest is embedded again: same features, bit for bit."""
    from lfabench_plugins.aggregators.temb import FitEmbeddings, TriangulationEmbedding

    if not gemm_rows_are_own():
        pytest.skip(NOT_OWN_PHI)
    cfg = config("temb,batches=padded")   # unpadded batches keep no phi: a run transforms only the other images
    reference = reference_features(cfg)
    kept = []
    keep = FitEmbeddings.keep

    def recording_keep(self, *args):
        keep(self, *args)
        kept.append((self.used, self.phi.shape[0]))

    monkeypatch.setattr(FitEmbeddings, "keep", recording_keep)
    monkeypatch.setattr(TriangulationEmbedding, "REUSE_BYTES", 1000 * 4 * 27)   # 1,000 rows of D = (A - 1) d = 27
    record = run_benchmark(cfg, tmp_path / "run")
    assert record["fingerprints"]["features"] == reference
    used, capacity = kept[-1]
    assert 0 < used <= capacity == 1000 < 0.5 * record["descriptors"]["n_descriptors"]   # the fit has more
