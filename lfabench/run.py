"""One benchmark run: dataset -> descriptors -> split -> fit -> transform -> evaluate -> result.json.

This module knows nothing of Hydra: it takes the resolved config as a plain dict
(``{"dataset": {"name", "params"}, "descriptor": ..., "aggregator": ...,
"evaluator": ..., "seed": int}``) and a run directory.
"""

from __future__ import annotations

import json
import signal
import sys
import warnings
from collections.abc import Collection
from pathlib import Path
from typing import Any

import numpy as np

from .aggregate import is_searcher
from .annotation import check_fit_labels, fit_samples, reads_labels
from .checks import check_features, check_metrics
from .fingerprint import array_digest, bags_fingerprint, fitted_fingerprint
from .heap import release_free_heap
from .images import DEFAULT_MAX_IMAGE_PIXELS
from .isolation import (ISOLATION_MODES, RunInterrupted, RunProcessDied, RunTimeLimitExceeded, call_in_child,
                        signals_interrupt_run, time_limit)
from .params import ConfigError, check_params, check_seed, check_setting
from .plugin import KINDS
from .prototypes import save_prototypes
from .record import RunRecorder, plugin_setting
from .redact import redact_config
from .registry import get_registry, with_introduced_defaults
from .storage import drain_cache_events, save_fallback
from .threads import (BLAS_THREADS, BlasKernelWarning, check_threads, fixed_threads, generic_kernel_problems,
                      pinned_pools)

#: Stages timed in every record, in order.
STAGES = ("config", "dataset", "descriptors", "split", "fit", "transform", "evaluate")


def _params(cfg: dict, kind: str) -> dict[str, Any]:
    section = cfg.get(kind) or {}
    if "name" not in section:
        raise ValueError(f"config has no {kind}.name: choose one with `{kind}=<name>` (see `lfabench plugins`)")
    return dict(section.get("params") or {})


def _build(spec, params: dict[str, Any], kind: str):
    """The plugin instance; a constructor that refuses its parameters, or needs an optional extra that is not
    installed (an ImportError), is a :class:`ConfigError` naming the plugin."""
    try:
        return spec.factory(**params)
    except ImportError as exc:  # an optional extra that is not installed: the plugin's message says which
        raise ConfigError(f"{kind} {spec.name!r} cannot be built here: {exc}") from exc
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{kind} {spec.name!r} refused its parameters: {exc}") from exc


def run_benchmark(cfg: dict[str, Any], run_dir: Path | str, setting: dict[str, Any] | None = None,
                  time_limit_s: float | None = None, isolate: str | None = "none",
                  on_stage=None, observe=None, sparse_fingerprint: str = "csr") -> dict[str, Any]:
    """Run one configuration and write ``run_dir/result.json``; returns the record.

    ``on_stage`` (optional) is called with each stage's name as it starts (``config``, ``dataset``,
    ``descriptors``, ``split``, ``fit``, ``transform``, ``evaluate``): ``lfabench run`` shows progress on a
    terminal with it. An isolated run (``isolate="process"``) calls it for none.

    ``observe`` (optional) is called as ``observe(stage, value)`` with what a stage hands to the next beyond
    the record's fingerprints: ``("descriptors", bags)`` (the :class:`~lfabench.bags.Bags`, keypoints
    included) and ``("split", split)`` (the :class:`~lfabench.evaluate.Split`, as drawn);
    :mod:`lfabench.testing.determinism` digests them. An isolated run calls it for none.

    ``setting`` is the config before interpolation (``random_state: ${seed}`` kept
    literal): runs that share it differ only by seed, and the leaderboard pools them.
    Default: ``cfg`` itself.

    The record is written whatever happens: a raising plugin leaves a record with
    ``status: "failed"`` and the error (type, message, stage, traceback), then the
    exception propagates. ``time_limit_s`` bounds the whole run (recorded); a plugin's
    ``SystemExit``/``KeyboardInterrupt`` is recorded like any other error.

    ``isolate`` (recorded): ``"none"`` runs here, the time limit raised by ``SIGALRM``
    (:func:`lfabench.isolation.time_limit`: Python code only); ``"process"`` runs every stage in a
    fresh child process that is killed at the time limit, however it hangs
    (:func:`lfabench.isolation.call_in_child`), and a child that crashes fails this run only
    (:class:`lfabench.isolation.RunProcessDied`).

    ``sparse_fingerprint``: how the ``fitted`` fingerprint digests a sparse fitted matrix
    (:data:`lfabench.fingerprint.SPARSE_SCHEMES`, recorded as ``fingerprints.fitted_sparse``); ``lfabench
    reproduce`` passes ``"dense"`` for a record without that field.
    """
    isolate = "none" if isolate is None else isolate
    if isolate == "process" and _time_limit_problem(time_limit_s) is None:
        return _run_isolated(cfg, Path(run_dir), setting, time_limit_s, sparse_fingerprint)
    return _run_here(cfg, run_dir, setting, time_limit_s, isolate, on_stage=on_stage, observe=observe,
                     sparse_fingerprint=sparse_fingerprint)


def _time_limit_problem(time_limit_s) -> str | None:
    if time_limit_s is not None and (isinstance(time_limit_s, bool) or not isinstance(time_limit_s, (int, float))
                                     or not time_limit_s > 0):
        return f"time_limit={time_limit_s!r} must be a positive number of seconds or null"
    return None


def _recorder(cfg: dict[str, Any], run_dir: Path | str, setting: dict[str, Any] | None, time_limit_s,
              isolate) -> RunRecorder:
    raw_seed = cfg.get("seed", 0)
    valid_seed = isinstance(raw_seed, int) and not isinstance(raw_seed, bool)
    # values read from the environment (${oc.env:...}) are recorded as written, never as their values
    # parameters added since earlier records were written are named at their value now (lfabench reproduce reruns
    # a record lacking one as it ran before the parameter existed)
    recorded = with_introduced_defaults(redact_config(cfg, setting) if setting else cfg)
    rec = RunRecorder(Path(run_dir), recorded, raw_seed if valid_seed else None)
    rec.data["setting"] = plugin_setting(setting or cfg)
    rec.data["time_limit_s"] = time_limit_s
    rec.data["isolate"] = isolate if isinstance(isolate, str) else repr(isolate)
    return rec


def _run_here(cfg: dict[str, Any], run_dir: Path | str, setting: dict[str, Any] | None, time_limit_s,
              isolate, report=None, on_stage=None, observe=None, sparse_fingerprint: str = "csr") -> dict[str, Any]:
    """The run in this process; ``report`` (an isolated run's child) receives ``(stage, snapshot)`` as each
    stage starts, and the parent, not ``SIGALRM``, enforces the time limit."""
    rec = _recorder(cfg, run_dir, setting, time_limit_s, isolate)
    if report is not None:
        rec.listener = lambda stage, snapshot: report((stage, snapshot))
        report(("setup", rec.snapshot()))
    elif on_stage is not None:
        rec.listener = lambda stage, snapshot: on_stage(stage)
    try:
        problem = _time_limit_problem(time_limit_s)
        if problem:
            raise ConfigError(problem)
        if isolate not in ISOLATION_MODES:
            raise ConfigError(f"isolate={isolate!r} must be one of {', '.join(ISOLATION_MODES)}")
        threads = _threads(cfg)
        pools = pinned_pools()
        rec.data["determinism"] = {"threads": threads, "pinned": pools if threads is not None else []}
        environment = (rec.data.get("provenance") or {}).get("environment") or {}
        for problem in generic_kernel_problems(pools, environment.get("cpu_flags")):
            warnings.warn(problem, BlasKernelWarning, stacklevel=2)
        if threads is not None:  # the BLAS pools run this many threads whatever `threads` is (lfabench.threads)
            rec.data["determinism"]["blas_threads"] = BLAS_THREADS
        with signals_interrupt_run(), fixed_threads(threads), time_limit(None if report is not None else time_limit_s):
            metrics = _run_stages(rec, cfg, cfg.get("seed", 0), observe, sparse_fingerprint)
    except BaseException as exc:
        try:
            rec.finish_failed(exc, status="interrupted" if isinstance(exc, RunInterrupted) else "failed")
        except OSError as write_error:  # the run's own error goes on; where its record went is said first
            print(f"lfabench run: {_unsaved(rec, write_error)}", file=sys.stderr, flush=True)
        raise
    finally:
        release_free_heap()  # the next run of a sweep in this process starts without this one's freed heap
    try:
        rec.finish_ok(metrics)
    except OSError as write_error:  # disk full...: the metrics are not lost
        raise RecordNotSavedError(_unsaved(rec, write_error)) from write_error
    return rec.data


def _threads(cfg: dict[str, Any]) -> int | None:
    """The config's ``threads`` (default 1): every BLAS and OpenMP pool's size during the run (lfabench.threads);
    None leaves the pools as the environment sized them."""
    try:
        return check_threads(cfg.get("threads", 1))
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


class RecordNotSavedError(RuntimeError):
    """``result.json`` could not be written (disk full, read-only...); the message holds the metrics and
    where the whole record was saved instead."""


def _unsaved(rec: RunRecorder, error: OSError) -> str:
    """Save the record to a fallback place (:func:`lfabench.storage.save_fallback`); the message naming both paths,
    with the metrics, or the whole record when no place took it."""
    record = rec.snapshot()
    metrics = ", ".join(f"{k}={v:.4f}" for k, v in (record.get("metrics") or {}).items()) or "none"
    saved = save_fallback(rec.path, record)
    where = (f"the whole record was saved to {saved} instead" if saved is not None else
             "it could not be saved anywhere else either; the record:\n" + json.dumps(record, indent=1, default=str))
    return (f"could not write the run record {rec.path} ({error}). Status {record.get('status')}, metrics: "
            f"{metrics}; {where}")


def _child_run(cfg: dict[str, Any], run_dir: str, setting: dict[str, Any] | None, time_limit_s, sparse_fingerprint,
               report):
    """What the child process of an isolated run does (module level: the child imports it by name)."""
    return _run_here(cfg, run_dir, setting, time_limit_s, "process", report=report,
                     sparse_fingerprint=sparse_fingerprint)


def _run_isolated(cfg: dict[str, Any], run_dir: Path, setting: dict[str, Any] | None, time_limit_s,
                  sparse_fingerprint: str = "csr") -> dict[str, Any]:
    """The run in a child process; when the child is killed at the time limit or dies, its record is
    finished here from its last report (stage, timings so far) and the error is raised."""
    try:
        with signals_interrupt_run():
            out = call_in_child(_child_run, (cfg, str(run_dir), setting, time_limit_s, sparse_fingerprint),
                                time_limit_s)
    except RunInterrupted as exc:  # the child was killed on the way out; its own record, if it wrote one, stays
        if not _finished_record(run_dir):
            _recorder(cfg, run_dir, setting, time_limit_s, "process").finish_failed(exc, status="interrupted")
        raise
    if out.status == "returned":
        return out.value
    if out.status == "raised":
        raise out.value
    stage = out.progress[0] if out.progress else "setup"
    if out.status == "timed_out":
        exc: BaseException = RunTimeLimitExceeded(
            f"the run exceeded its time limit of {time_limit_s:g} s (time_limit={time_limit_s:g}) in stage "
            f"{stage!r}; its process (pid {out.pid}) was killed (isolate=process)")
    else:
        how = f"exit code {out.exitcode}"
        if out.exitcode is not None and out.exitcode < 0:
            try:
                how = f"killed by signal {signal.Signals(-out.exitcode).name}"
            except ValueError:
                pass
        exc = RunProcessDied(f"the run's process (pid {out.pid}) ended without a result in stage {stage!r} "
                             f"({how}; isolate=process)")
    if out.progress:
        rec = RunRecorder.adopt(out.progress[1], stage, out.elapsed_s, out.progress_age_s, out.peak_rss_mb)
    else:  # the child never started its run (it hung or died while starting up)
        rec = _recorder(cfg, run_dir, setting, time_limit_s, "process")
    rec.finish_failed(exc, traceback_text=(out.hang_traceback or None) and
                      f"Python stacks of the run's process just before it was killed:\n{out.hang_traceback}")
    raise exc


def _finished_record(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds a record that a run finished (the child of an isolated run writes its own)."""
    try:
        import json

        return json.loads((run_dir / "result.json").read_text()).get("status") not in (None, "running")
    except (OSError, ValueError):
        return False


def _run_stages(rec: RunRecorder, cfg: dict[str, Any], raw_seed, observe=None,
                sparse_fingerprint: str = "csr") -> dict[str, float]:
    """The stages of one run, each timed in ``rec``; returns the metrics. ``observe``: see :func:`run_benchmark`."""
    observe = observe or (lambda stage, value: None)
    with rec.stage("config"):  # every parameter is checked, every plugin built, before anything is computed
        seed = check_seed(raw_seed)
        skip_corrupt = cfg.get("skip_corrupt_images", False)
        if not isinstance(skip_corrupt, bool):
            raise ConfigError(f"skip_corrupt_images={skip_corrupt!r} must be true or false")
        max_pixels = cfg.get("max_image_pixels", DEFAULT_MAX_IMAGE_PIXELS)
        if max_pixels is not None and (isinstance(max_pixels, bool) or not isinstance(max_pixels, int)
                                       or max_pixels < 1):
            raise ConfigError(f"max_image_pixels={max_pixels!r} must be a positive integer or null (no cap)")
        registry = get_registry()
        specs = {kind: registry.get_spec(kind, (cfg.get(kind) or {}).get("name", "")) for kind in KINDS}
        rec.data["plugins"] = {k: {"name": s.name, "version": s.version, "distribution": s.distribution,
                                   "module": s.module} for k, s in specs.items()}
        for kind, spec in specs.items():
            check_params(kind, spec.name, spec.factory, _params(cfg, kind))
        descriptor, evaluator, aggregator = (_build(specs[k], _params(cfg, k), k)
                                             for k in ("descriptor", "evaluator", "aggregator"))
        rec.data["ignored_params"] = ignored_params(aggregator, evaluator, _params(cfg, "evaluator"))
        check_task(specs["dataset"], _params(cfg, "dataset"), specs["evaluator"].name, evaluator, registry)
        searches = is_searcher(aggregator)
        if searches:
            check_searcher(specs["aggregator"].name, specs["evaluator"].name, evaluator, registry)
    with rec.stage("dataset"):
        try:
            dataset = specs["dataset"].factory(**_params(cfg, "dataset"))
        except (ValueError, TypeError) as exc:  # a dataset factory checks its parameters as it lists the files
            raise ConfigError(f"dataset {specs['dataset'].name!r}: {exc}") from exc
        dataset.skip_corrupt_images = skip_corrupt
        dataset.max_image_pixels = max_pixels
        rec.data["dataset"] = dataset.summary()
        for kind, plugin in (("descriptor", descriptor), ("evaluator", evaluator), ("aggregator", aggregator)):
            check_setting(kind, specs[kind].name, plugin, dataset, seed)  # parameters against the data, before work
        planned = None
        if reads_labels(aggregator):
            # the labels the fit will see, from the protocol's split (labels only: cheap), checked before any
            # extraction; the split stage then records this split rather than drawing it again
            split = evaluator.split(dataset, seed)
            planned = split, fit_samples(aggregator, split, specs["aggregator"].name, specs["evaluator"].name)
            check_fit_labels(aggregator, planned[1])
    with rec.stage("descriptors"):
        # descriptors have their own switch: a timing run refits codebooks (cache=false) but need not
        # re-extract SIFT for every method, which it does not time as aggregation anyway
        bags = descriptor.describe(dataset, cache=bool(cfg.get("cache_descriptors", cfg.get("cache", True))))
        rec.data["descriptors"] = {"n_descriptors": bags.n_descriptors, "dim": bags.dim,
                                   "empty_samples": int(bags.empty_samples().size)}
        if callable(getattr(descriptor, "record_info", None)):  # cap rule, cache hit/miss (additive)
            rec.data["descriptors"].update(descriptor.record_info())
        release_free_heap()  # an extraction's freed arrays would stay resident through every later stage
    rec.data["fingerprints"]["descriptors"] = bags_fingerprint(bags)  # untimed: where a rerun first differs
    observe("descriptors", bags)
    with rec.stage("split"):
        if planned is None:
            split = evaluator.split(dataset, seed)
            planned = split, fit_samples(aggregator, split, specs["aggregator"].name, specs["evaluator"].name)
        split, fit = planned
        rec.data["split"] = dict(split.info, **fit.record())
    observe("split", split)
    drain_cache_events()
    with rec.stage("fit"):
        fit_bags = bags.subset(fit.indices)
        fit_features = fit_aggregator(aggregator, fit_bags, fit.labels)
    rec.data["fit_cache"] = drain_cache_events()  # fitted arrays (codebooks, GMMs) reused from the cache
    rec.data["fingerprints"]["fitted"] = fitted_fingerprint(aggregator, sparse_fingerprint)
    rec.data["fingerprints"]["fitted_sparse"] = sparse_fingerprint
    if callable(getattr(aggregator, "record_info", None)):  # plain scikit-learn style plugins may lack it
        rec.data["fit_info"] = aggregator.record_info()
    support = aggregator.prototype_support() if callable(getattr(aggregator, "prototype_support", None)) else None
    if support is not None:  # what `lfabench explain` shows, kept beside the record (untimed, small)
        rec.data["prototypes"] = save_prototypes(rec.run_dir, support, fit_bags, fit.indices)
    del fit_bags
    with rec.stage("transform"):  # a searcher: the database indexed (its aggregation), no vectors
        scored = evaluator.prepare_bags(bags, dataset, split)
        if searches:
            index_database(aggregator, evaluator, scored, dataset, split)
        else:
            features = check_features(scored_features(aggregator, scored, bags, fit.indices, fit_features),
                                      specs["aggregator"].name, scored.ids)
            rec.data["output_dim"] = int(features.shape[1])
        del fit_features
        split.empty_rows = scored.counts == 0  # protocols keep samples without descriptors from matching
    if searches:  # what it scores with: its fitted arrays and its index (the plugin's ``name_`` attributes)
        rec.data["fingerprints"]["features"] = fitted_fingerprint(aggregator, sparse_fingerprint)
        if callable(getattr(aggregator, "record_info", None)):  # index statistics join the fit's
            rec.data["fit_info"] = aggregator.record_info()
    else:
        rec.data["fingerprints"]["features"] = array_digest(features)
    with rec.stage("evaluate"):
        result = (evaluator.evaluate_search(aggregator, scored, dataset, split) if searches else
                  evaluator.evaluate(features, dataset, split))
        metrics = check_metrics(result, evaluator, specs["evaluator"].name)
        rec.data["split"].update(split.info)  # evaluators may add per-query results (e.g. AP)
    rec.store_predictions(getattr(split, "predictions", None))  # untimed; None for evaluators that give none
    return metrics


def fit_aggregator(aggregator, fit_bags, labels) -> np.ndarray | None:
    """Fit ``aggregator`` on ``fit_bags``; the fit samples' vectors when its rows are independent
    (``Aggregator.independent_rows``: ``fit_transform``, each image aggregated once), else None (``fit`` alone).
    A plugin without ``fit_transform`` (plain scikit-learn style) is fitted alone."""
    if getattr(aggregator, "independent_rows", False) is True and callable(getattr(aggregator, "fit_transform", None)):
        out = np.asarray(aggregator.fit_transform(fit_bags, labels))
        if out.ndim != 2 or out.shape[0] != fit_bags.n_samples:
            raise RuntimeError(f"{type(aggregator).__name__}.fit_transform returned shape {out.shape} for "
                               f"{fit_bags.n_samples} samples")
        return out
    aggregator.fit(fit_bags, labels)
    return None


def scored_features(aggregator, scored, bags, fit_indices, fit_features: np.ndarray | None) -> np.ndarray:
    """The ``(len(scored), D)`` vectors of ``scored`` (the evaluator's bags: ``bags``, maybe followed by extra
    samples), in its order: the rows of the fit samples (``fit_indices`` into ``bags``) from ``fit_features``,
    the others from one ``transform``. Without ``fit_features`` (rows not independent), or when ``scored``
    does not begin with ``bags`` unchanged, every sample is transformed in one call."""
    fit_indices = np.asarray(fit_indices, dtype=np.int64)
    if (fit_features is None or not _begins_with(scored, bags)
            or np.unique(fit_indices).size != fit_indices.size):
        return aggregator.transform(scored)
    others = np.setdiff1d(np.arange(scored.n_samples), fit_indices)
    if not others.size:
        rest = np.empty((0, fit_features.shape[1]), dtype=fit_features.dtype)
    else:
        # one sample alone would take other BLAS paths (a matrix-vector product) than in company: a fit sample
        # keeps it company
        company = others if others.size > 1 else np.append(others, fit_indices[:1])
        rest = np.asarray(aggregator.transform(scored.subset(company)))[:others.size]
        if rest.ndim != 2 or rest.shape != (others.size, fit_features.shape[1]):
            raise RuntimeError(f"{type(aggregator).__name__}.transform returned shape {rest.shape} for "
                               f"{others.size} samples, fit_transform {fit_features.shape[1]} columns")
    out = np.empty((scored.n_samples, fit_features.shape[1]), dtype=np.result_type(fit_features, rest))
    out[fit_indices] = fit_features
    out[others] = rest
    return out


def _begins_with(scored, bags) -> bool:
    """Whether the first samples of ``scored`` are those of ``bags``, descriptors and offsets unchanged."""
    if scored is bags:
        return True
    n, N = bags.n_samples, bags.n_descriptors
    return (scored.n_samples >= n and scored.dim == bags.dim and np.array_equal(scored.offsets[:n + 1], bags.offsets)
            and np.array_equal(scored.descriptors[:N], bags.descriptors))


def index_database(searcher, evaluator, scored, dataset, split) -> None:
    """Index the database rows of ``scored`` (``evaluator.database_rows``) with ``searcher``: a view of the bags
    when the rows are one consecutive run (every retrieval database of the built-in datasets), no copy."""
    rows = np.asarray(evaluator.database_rows(dataset, split, scored.n_samples), dtype=np.int64)
    if rows.ndim != 1 or (rows.size and (rows.min() < 0 or rows.max() >= scored.n_samples)):
        raise RuntimeError(f"{type(evaluator).__name__}.database_rows gave rows outside the {scored.n_samples} "
                           f"scored samples")
    searcher.index(_row_run(scored, rows))


def _row_run(bags, rows: np.ndarray):
    """``bags.subset(rows)``, as views of ``bags``' arrays when ``rows`` is one run of consecutive samples."""
    if not rows.size or not np.array_equal(rows, np.arange(rows[0], rows[0] + rows.size)):
        return bags.subset(rows)
    a, b = int(rows[0]), int(rows[-1]) + 1
    lo, hi = int(bags.offsets[a]), int(bags.offsets[b])
    if a == 0 and b == bags.n_samples:
        return bags
    return type(bags)(bags.descriptors[lo:hi], bags.offsets[a:b + 1] - lo,
                      keypoints=None if bags.keypoints is None else bags.keypoints[lo:hi], ids=bags.ids[a:b],
                      keypoint_fields=bags.keypoint_fields if bags.keypoints is not None else None, validate=False)


def check_searcher(aggregator_name: str, evaluator_name: str, evaluator, registry) -> None:
    """A :class:`ConfigError` when the evaluator, as configured, cannot score a searcher (an aggregator that
    indexes the database and searches it itself: :class:`lfabench.aggregate.Searcher`), naming the evaluators
    that can and the way out; decided at the config stage, before any work."""
    problem = evaluator.searcher_problem() if callable(getattr(evaluator, "searcher_problem", None)) else \
        "it scores one vector per image only"
    if problem is None:
        return
    able = sorted(s.name for s in registry.specs("evaluator") if getattr(s.factory, "scores_searchers", False) is True)
    vectors = sorted(s.name for s in registry.specs("aggregator") if not is_searcher(s.factory))
    raise ConfigError(f"aggregator {aggregator_name!r} is a searcher: it indexes the database and scores each query "
                      f"itself, with no vector per image; evaluator {evaluator_name!r} cannot score it ({problem}). "
                      f"Score it with evaluator={' or evaluator='.join(able) or '(none registered)'} on a retrieval "
                      f"dataset, or choose an aggregator that gives vectors: {', '.join(vectors) or 'none registered'}")


def check_task(dataset_spec, dataset_params: dict[str, Any], evaluator_name: str, evaluator, registry) -> None:
    """A :class:`ConfigError` when the evaluator scores another task than the dataset's declared protocol.

    Decided from declarations only (``PluginSpec.protocol``, ``Evaluator.task``), before the dataset is
    loaded: a retrieval evaluator on a classification set is refused before any work. A dataset or an
    evaluator that declares no task is left to the evaluator's own check on the loaded dataset.
    """
    protocol = getattr(dataset_spec, "protocol", None)
    wanted = getattr(evaluator, "task", None)
    if protocol is None or wanted is None:
        return
    task = protocol.task_for(dataset_params)
    if task == wanted:
        return
    fits = sorted(s.name for s in registry.specs("dataset")
                  if getattr(s, "protocol", None) is not None and s.protocol.task == wanted)
    own = f" (its own protocol: evaluator={protocol.evaluator})" if protocol.evaluator else ""
    raise ConfigError(f"evaluator {evaluator_name!r} scores {wanted} datasets, but dataset "
                      f"{dataset_spec.name!r} is a {task} dataset{own}: drop evaluator=..., or choose a "
                      f"{wanted} dataset ({', '.join(fits) or 'none registered'})")


def ignored_params(aggregator, evaluator, setting: Collection[str] | None = None) -> list[str]:
    """The evaluator's label parameters (``Evaluator.label_params``) when the aggregator never reads labels;
    with ``setting`` (the evaluator parameters the run's configuration holds) only those among them, so that an
    opt-in label parameter is listed only by the runs that set it.

    An aggregator reads labels when it declares ``supervised`` or ``semi_supervised``
    (:func:`lfabench.annotation.reads_labels`); a plain scikit-learn style plugin without them ignores ``y``.
    """
    return [] if reads_labels(aggregator) else [f"evaluator.{p}" for p in getattr(evaluator, "label_params", ())
                                   if setting is None or p in setting]
