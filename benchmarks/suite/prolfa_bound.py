"""ProLFA's representational bound: 1-NN on each image's centred mean (lifted) descriptor, raw, L2-normalised and
after LDA (``docs/prolfa-bound.md``).

With the paper's linear kernel, ProLFA's vector for image i is ``mu_i^T P``, a linear map of its mean descriptor;
with a feature map phi it is a linear map of its mean *lifted* descriptor. So 1-NN on the mean itself and after
LDA (scikit-learn's shrinkage LDA, a strong supervised linear map) says what ProLFA can reach at best, per
feature map. A bound on a model, not a result of ProLFA.

Fifteen Scene SIFT-90. ``validation``: the training part of the seed-0 80/20 split, split again 80/20 (seed 1),
where settings were chosen; ``test``: the seed-0 split itself (reported, never tuned on). Maps: ``linear``,
``nystroem_rbf:G:D`` (gamma G, D components; base normalisation l2) and ``additive_chi2`` (on RootSIFT).
"""

from __future__ import annotations

from functools import cache

import numpy as np

from .cases import DESCRIPTOR_CAPS, one_nn_accuracy, shared_data

MAPS = ["linear", "nystroem_rbf:2:256", "nystroem_rbf:2:1024", "nystroem_rbf:1:1024", "nystroem_rbf:4:1024",
        "nystroem_rbf:2:4096", "nystroem_rbf:4:4096",
        "additive_chi2"]


@cache
def _scene15_sift():
    from lfabench.registry import get_plugin

    root = shared_data()
    if root is None:
        raise NotImplementedError("needs ../shared/data (or $LFABENCH_SHARED_DATA)")
    dataset = get_plugin("dataset", "scene15")(root=str(root / "scene15"))
    return get_plugin("descriptor", "sift")(**DESCRIPTOR_CAPS["sift"]).describe(dataset), np.asarray(dataset.labels)


def _unit(M: np.ndarray) -> np.ndarray:
    return M / np.maximum(np.linalg.norm(M, axis=1, keepdims=True), 1e-300)


@cache
def bound(spec: str, split: str) -> dict:
    """``{"mean", "unit_mean", "lda"}``: 1-NN accuracy (%) of the three read-outs of feature map ``spec``."""
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    from lfabench_plugins.aggregators.prolfa.featuremap import apply_feature_map, fit_feature_map
    from lfabench_plugins.aggregators.prolfa.normalize import normalize_descriptors
    from lfabench_plugins.evaluators.splits import stratified_split

    bags, labels = _scene15_sift()
    tr, te = stratified_split(labels, 0.2, 0)
    if split == "validation":
        fit_pos, val_pos = stratified_split(labels[tr], 0.2, 1)
        tr, te = tr[fit_pos], tr[val_pos]
    train, test = bags.subset(tr), bags.subset(te)
    name, *rest = spec.split(":")
    gamma, comps = (float(rest[0]), int(rest[1])) if rest else (2.0, 1024)
    base = "rootsift" if name == "additive_chi2" else "l2"
    Xtr = normalize_descriptors(train.descriptors, base)
    fmap = fit_feature_map(Xtr, name, comps, gamma, 20000, np.random.default_rng(0))
    Ftr = apply_feature_map(fmap, Xtr)
    mean = Ftr.mean(axis=0, dtype=np.float64)
    M_tr = np.asarray(train.with_descriptors(Ftr).means(), dtype=np.float64) - mean
    Fte = apply_feature_map(fmap, normalize_descriptors(test.descriptors, base))
    M_te = np.asarray(test.with_descriptors(Fte).means(), dtype=np.float64) - mean
    lda = LinearDiscriminantAnalysis(solver="eigen", shrinkage="auto").fit(M_tr, labels[tr])
    return {"mean": one_nn_accuracy(M_tr, labels[tr], M_te, labels[te]),
            "unit_mean": one_nn_accuracy(_unit(M_tr), labels[tr], _unit(M_te), labels[te]),
            "lda": one_nn_accuracy(lda.transform(M_tr), labels[tr], lda.transform(M_te), labels[te])}


class ProLFABound:
    """1-NN on the centred mean (lifted) descriptor: raw, L2-normalised, after LDA (the bound)."""

    params = [MAPS, ["validation", "test"]]
    param_names = ["feature_map", "split"]
    timeout = 1800

    def track_mean_accuracy(self, spec, split):
        return bound(spec, split)["mean"]

    def track_unit_mean_accuracy(self, spec, split):
        return bound(spec, split)["unit_mean"]

    def track_lda_accuracy(self, spec, split):
        return bound(spec, split)["lda"]

    track_mean_accuracy.unit = track_unit_mean_accuracy.unit = track_lda_accuracy.unit = "%"


@cache
def validation_fit(spec: str, scale: str) -> dict:
    """ProLFA (d̄ = 256, the plugin's defaults otherwise, seed 0) fitted on the validation split's fit images.

    Returns 1-NN accuracy (%) on ``xbar`` (the ProLFA vectors), on ``xbar`` L2-normalised, on the class
    responses ``xbar W`` and the arg-max of ``xbar W`` as a classifier, and the final J.
    """
    from lfabench_plugins.aggregators.prolfa.plugin import ProLFA
    from lfabench_plugins.evaluators.splits import stratified_split

    bags, labels = _scene15_sift()
    tr, _ = stratified_split(labels, 0.2, 0)
    fit_pos, val_pos = stratified_split(labels[tr], 0.2, 1)
    fit_idx, val_idx = tr[fit_pos], tr[val_pos]
    name, *rest = spec.split(":")
    kernel = {} if name == "linear" else {"feature_map": name, "gamma": float(rest[0]), "n_components": int(rest[1])}
    est = ProLFA(n_prototypes=256, scale=scale if scale == "auto" else float(scale), random_state=0, **kernel)
    y_fit, y_val = labels[fit_idx], labels[val_idx]
    est.fit(bags.subset(fit_idx), y_fit)
    F_fit, F_val = est.transform(bags.subset(fit_idx)), est.transform(bags.subset(val_idx))
    R_fit, R_val = F_fit @ est.projection_, F_val @ est.projection_
    return {"xbar": one_nn_accuracy(F_fit, y_fit, F_val, y_val),
            "xbar_unit": one_nn_accuracy(_unit(F_fit), y_fit, _unit(F_val), y_val),
            "responses": one_nn_accuracy(R_fit, y_fit, R_val, y_val),
            "argmax": 100.0 * float(np.mean(np.unique(y_fit)[R_val.argmax(axis=1)] == y_val)),
            "J": float(est.objective_history_[-1])}


class ProLFAValidation:
    """ProLFA (d̄ = 256) on the validation split: 1-NN on its vectors and on its class responses, per kernel.

    Every track fits once in its own process (asv runs each in a fresh one): 40-120 s per fit on one core.
    """

    params = [["linear", "nystroem_rbf:1:256", "nystroem_rbf:2:256", "nystroem_rbf:4:256"], ["1.0", "auto"]]
    param_names = ["feature_map", "scale"]
    timeout = 1800
    number, repeat, rounds = 1, 1, 1

    def track_accuracy(self, spec, scale):
        return validation_fit(spec, scale)["xbar"]

    def track_unit_accuracy(self, spec, scale):
        return validation_fit(spec, scale)["xbar_unit"]

    def track_responses_accuracy(self, spec, scale):
        return validation_fit(spec, scale)["responses"]

    def track_responses_argmax_accuracy(self, spec, scale):
        return validation_fit(spec, scale)["argmax"]

    def track_objective(self, spec, scale):
        return validation_fit(spec, scale)["J"]

    track_accuracy.unit = track_unit_accuracy.unit = track_responses_accuracy.unit = "%"
    track_responses_argmax_accuracy.unit = "%"
