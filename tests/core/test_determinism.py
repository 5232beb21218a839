"""Bit-identical runs under 1 and 2 threads, for every built-in plugin; each thread count in a fresh process.

Every configuration runs twice, once in a process started with every thread pool (and descriptor
worker count) at 1 and once at 2 (:func:`lfabench.testing.determinism.digests_with_threads`), and
the sha256 of each stage's output of the conductor's run must agree: descriptors and keypoints, split,
fitted arrays, features, predictions, metrics. Images: a small real subset of Fifteen Scene (skipped with a reason when the
shared data is absent), and small retrieval folders in the official layouts built here (Revisited
Oxford / Paris, ``retrieval_folder``); aggregators at their smoke sizes (``conf/aggregator/smoke``).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import yaml

from conftest import REPO, shared_data_dir
from data_helpers import scene15_subset
from lfabench.registry import get_registry
from lfabench.testing.determinism import digests_with_threads, first_difference

SEED = 1
SMOKE = REPO / "conf" / "aggregator" / "smoke"
#: Built-in plugins that no configuration below can run here, and why.
NOT_RUN = {
    ("descriptor", "cnn"): "needs torch and local VGG-16 weights (an optional extra)",
    ("dataset", "oxford5k"): "no images on this machine (ground truth only); a loader, no thread pool",
    ("dataset", "holidays"): "no images on this machine (image list only); a loader, no thread pool",
    ("dataset", "voc2007"): "no images on this machine (image sets only); a loader, no thread pool",
    ("dataset", "cub200"): "no images on this machine; a loader, no thread pool",
}


def smoke_aggregator(name: str) -> dict:
    """The smoke-size config of aggregator ``name``, with the run's seed and no cache."""
    section = yaml.safe_load((SMOKE / f"{name}.yaml").read_text())
    values = {"${seed}": SEED, "${cache}": False}
    return {"name": section["name"],
            "params": {k: values.get(v, v) if isinstance(v, str) else v for k, v in section["params"].items()}}


def precomputed_files(dataset: dict, folder: Path) -> dict:
    """Seeded 32-D descriptors in one ``.npy`` per sample of ``dataset``: a ``precomputed`` descriptor config."""
    scene = get_registry().get_spec("dataset", "scene15").factory(**dataset["params"])
    rng = np.random.default_rng(0)
    for sample_id in scene.sample_ids:
        path = folder / Path(sample_id).with_suffix(".npy")
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, rng.standard_normal((int(rng.integers(5, 40)), 32)).astype(np.float32))
    return {"name": "precomputed", "params": {"path": str(folder)}}


def retrieval_folders(tmp: Path) -> dict[str, dict]:
    """Small retrieval datasets in their official layouts, built here: ``roxford5k`` and ``rparis6k`` (revisitop's
    ``gnd_<name>.pkl`` + ``jpg/``: easy / hard / junk lists and query boxes, queries outside the database) and
    ``retrieval_folder`` (``groundtruth.json``: queries are database images, removed from their own ranking, one
    with a box). Dataset name -> dataset config."""
    import json

    from data_helpers import revisited_folder, textured_image, write_jpeg

    out = {}
    for i, name in enumerate(("roxford5k", "rparis6k")):
        revisited_folder(tmp / name, np.random.default_rng(i), name, n_db=30, n_q=6, size=(48, 48))
        out[name] = {"name": name, "params": {"root": str(tmp / name), "strict": False}}
    root = tmp / "retrieval_folder"
    names = [f"jpg/img{i:02d}.jpg" for i in range(24)]
    for i, n in enumerate(names):
        write_jpeg(root / n, textured_image(200 + i, (48, 48)))
    queries = [{"query": names[q], "positives": [names[q + 1], names[q + 2]], "junk": [names[q + 3]]}
               for q in range(0, 20, 5)]
    queries[0]["bbox"] = [4, 4, 40, 40]
    (root / "groundtruth.json").write_text(json.dumps({"queries": queries}))
    out["retrieval_folder"] = {"name": "retrieval_folder", "params": {"root": str(root)}}
    return out


def configs(tmp: Path) -> dict[str, dict]:
    """Configuration id -> resolved run config: every built-in aggregator, descriptor, evaluator, dataset."""
    def run(dataset, descriptor, aggregator, evaluator=None):
        return {"dataset": dataset, "descriptor": descriptor, "aggregator": aggregator,
                "evaluator": evaluator or {"name": "knn", "params": {}}, "seed": SEED}

    bow, vlad = smoke_aggregator("bow"), smoke_aggregator("vlad")
    synthetic = {"name": "synthetic", "params": {"n_classes": 3, "samples_per_class": 20, "dim": 8, "seed": 0}}
    native = {"name": "native", "params": {}}
    out = {
        "dataset=digits": run({"name": "digits", "params": {"n_samples": 200}}, {"name": "patches", "params": {}}, bow),
        "dataset=synthetic,descriptor=native": run(synthetic, native, bow),
        "evaluator=retrieval": run({"name": "synthetic", "params": dict(synthetic["params"], task="retrieval")},
                                   native, vlad, {"name": "retrieval", "params": {}}),
    }
    if importlib.util.find_spec("asmk") is not None:  # a searcher: it indexes the database and searches it itself
        out["aggregator=asmk"] = run({"name": "synthetic", "params": dict(synthetic["params"], task="retrieval")},
                                     native, {"name": "asmk", "params": {"n_clusters": 8, "random_state": SEED}},
                                     {"name": "retrieval", "params": {}})
    patches = {"name": "patches", "params": {"patch_size": 8, "stride": 4}}  # keypoints (x, y): query boxes apply
    for name, dataset in retrieval_folders(tmp).items():
        out[f"dataset={name}"] = run(dataset, patches, vlad, {"name": "retrieval", "params": {}})
    if shared_data_dir() is None or not (shared_data_dir() / "scene15").is_dir():
        return out
    scene = scene15_subset(tmp / "scene15", per_class=4)
    sift = {"name": "sift", "params": {}}
    for path in sorted(SMOKE.glob("*.yaml")):
        out[f"aggregator={path.stem}"] = run(scene, sift, smoke_aggregator(path.stem))
    for name, params in [("sift", {}), ("daisy", {}), ("dense_sift", {}), ("hesaff", {}),
                         ("patches", {"patch_size": 8, "stride": 8})]:
        out[f"descriptor={name}"] = run(scene, {"name": name, "params": params}, bow)
    out["descriptor=precomputed"] = run(scene, precomputed_files(scene, tmp / "precomputed"), bow)
    out["dataset=imagefolder"] = run({"name": "imagefolder", "params": {"root": scene["params"]["root"]}}, sift, bow)
    out["dataset=copy_detection"] = run({"name": "copy_detection", "params": {"root": "sklearn:sample_images"}}, sift,
                                        bow, {"name": "retrieval", "params": {"query_region": "full"}})
    for metric, extra in [("euclidean", {}), ("cosine", {}), ("mahalanobis", {}), ("minkowski", {"p": 3})]:
        out[f"evaluator=knn,metric={metric}"] = run(scene, sift, vlad,
                                                    {"name": "knn", "params": {"k": 3, "metric": metric, **extra}})
    return out


@pytest.fixture(scope="module")
def digests(tmp_path_factory):
    """{config id: (config, digests with 1 thread, digests with 2 threads)}."""
    tmp = tmp_path_factory.mktemp("determinism")
    cases = configs(tmp)
    env = {"LFABENCH_CACHE": str(tmp / "cache")}
    one, two = (digests_with_threads(list(cases.values()), threads, env=env) for threads in (1, 2))
    return {key: (cfg, a, b) for (key, cfg), a, b in zip(cases.items(), one, two)}


@pytest.mark.slow
def test_every_built_in_plugin_runs_bit_identically_under_1_and_2_threads(digests):
    differ = {key: f"{first_difference(a, b)} (metrics {a['metric_values']} vs {b['metric_values']})"
              for key, (_, a, b) in digests.items() if first_difference(a, b) is not None}
    assert not differ, f"results depend on the thread count: {differ}"


def test_every_built_in_plugin_is_covered(tmp_path):
    covered = {(kind, cfg[kind]["name"]) for cfg in configs(tmp_path).values()
               for kind in ("dataset", "descriptor", "aggregator", "evaluator")}
    if ("dataset", "scene15") not in covered:
        pytest.skip("needs the real Fifteen Scene images in ../shared/data (absent here): images plugins not run")
    built_in = {(spec.kind, spec.name) for spec in get_registry().specs() if spec.distribution == "lfabench"}
    not_run = set(NOT_RUN) | ({("aggregator", "asmk")} if importlib.util.find_spec("asmk") is None else set())
    missing = built_in - covered - not_run
    assert not missing, f"built-in plugins without a determinism configuration: {sorted(missing)}"


@pytest.mark.slow
def test_daisy_bow_at_a_real_codebook_size_is_bit_identical_under_1_and_2_threads(tmp_path, shared_data):
    """The full-size case: DAISY BoW with 64 words on 20 images per class (300). Without the fixed thread
    count, OpenBLAS's GEMM inside FAISS's k-means moves the codebook: accuracy 35.0 with 1 thread, 36.7 with 2."""
    cfg = {"dataset": scene15_subset(tmp_path / "scene15", per_class=20), "descriptor": {"name": "daisy", "params": {}},
           "aggregator": {"name": "bow", "params": {"n_clusters": 64, "random_state": SEED}},
           "evaluator": {"name": "knn", "params": {}}, "seed": SEED}
    env = {"LFABENCH_CACHE": str(tmp_path / "cache")}
    (one,), (two,) = (digests_with_threads([cfg], threads, env=env) for threads in (1, 2))
    assert first_difference(one, two) is None, (one["metric_values"], two["metric_values"])


def test_the_record_says_how_many_threads_blas_ran_whatever_threads_is(tmp_path):
    from lfabench.run import run_benchmark
    from lfabench.threads import BLAS_THREADS

    cfg = {"dataset": {"name": "synthetic", "params": {}}, "descriptor": {"name": "native", "params": {}},
           "aggregator": {"name": "bow", "params": {"n_clusters": 4, "random_state": 0}},
           "evaluator": {"name": "knn", "params": {"k": 1}}, "seed": 0, "threads": 2}
    determinism = run_benchmark(cfg, tmp_path / "two")["determinism"]
    assert determinism["threads"] == 2 and determinism["blas_threads"] == BLAS_THREADS == 1
    assert "blas_threads" not in run_benchmark(dict(cfg, threads=None), tmp_path / "env")["determinism"]
