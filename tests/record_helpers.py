"""Synthetic run records for leaderboard tests (written by the real RunRecorder)."""

from lfabench.record import RunRecorder


def record(path, seed, value, aggregator="bow", n_clusters=None, dataset="digits", evaluator_params=None,
           ignored=None, metric="accuracy", output_dim=64, params=None, fit_info=None, fit_cache=None,
           descriptor_params=None, evaluator="knn", split=None, metrics=None, descriptor="patches"):
    # n_clusters=None: the plugin's default (not in the config), so the label is the plain method name
    params = dict({"random_state": seed}, **({} if n_clusters is None else {"n_clusters": n_clusters}),
                  **(params or {}))
    evaluator = {"name": evaluator, "params": dict({"k": 1} if evaluator == "knn" else {}, **(evaluator_params or {}))}
    cfg = {"dataset": {"name": dataset, "params": {}},
           "descriptor": {"name": descriptor, "params": dict(descriptor_params or {})},
           "aggregator": {"name": aggregator, "params": params}, "evaluator": evaluator, "seed": seed}
    rec = RunRecorder(path, cfg, seed)
    rec.data["setting"] = {k: v for k, v in cfg.items() if k != "seed"}
    rec.data["setting"]["aggregator"] = {"name": aggregator, "params": dict(params, random_state="${seed}")}
    rec.data["timings_s"].update(fit=1.5, transform=0.25)
    rec.data["output_dim"] = output_dim
    if fit_info is not None:
        rec.data["fit_info"] = fit_info
    if ignored is not None:
        rec.data["ignored_params"] = ignored
    if fit_cache is not None:
        rec.data["fit_cache"] = fit_cache
    if split is not None:
        rec.data["split"] = split
    rec.finish_ok(metrics if metrics is not None else {metric: value})
