"""ProLFA at paper scale on a GPU (issue 12, targets 2 and 5): the dense CuPy backend against the CPU solver.

The problem is the Scene-15 board's ProLFA seed-0 fit: SIFT-90 on the shared copy, the ``knn``
evaluator's seed-0 80/20 split (3,588 training images, N = 316,030), d̄ = 4096, the plugin's defaults.
Three steps, because the GPU machine has no copy of the data and no network:

1. ``pack`` (here): the training images' SIFT descriptors as uint8 (OpenCV's SIFT values are integers
   in 0..255, so this is lossless; checked) with their offsets and labels, in one compressed file that
   travels with the working tree;
2. ``fit`` (on the GPU machine): the fits named by ``--fits`` (``capped``: ``max_support=4``, the default;
   ``exact``: ``max_support=None``, the paper's model) with ``backend=cupy``, each to ``--tol``; every
   fitted estimator is saved (joblib) with a JSON summary (J history, seconds, the GPU's name);
3. ``evaluate`` (here): recomputes each saved fit's J with the CPU code (``objective`` on the saved C and
   W: an independent check of the GPU's arithmetic) and its held-out 1-NN accuracy on the seed-0 test
   split, and prints them beside the CPU solver's figures.

Continuation (target 2, the paper's exact model): ``pack-start`` fits the capped model here (the CPU
solver, ``init=cancelling``: ~40 s) and saves its ``C``; ``fit --start FILE`` then starts every fit from
that ``C`` instead of the seeded start (``exact`` from it: the plain simplex continued from a feasible,
already low-J point).

    .venv/bin/python benchmarks/prolfa_gpu.py pack                       # writes benchmarks/gpu_pack/
    .venv/bin/python benchmarks/prolfa_gpu.py pack-start                 # the capped C, for --start
    python3 benchmarks/prolfa_gpu.py fit --out $OUT --fits capped exact  # GPU machine (CuPy)
    python3 benchmarks/prolfa_gpu.py fit --out $OUT --fits exact --start benchmarks/gpu_pack/start_capped_seed0.npz
    python3 benchmarks/prolfa_gpu.py fit --out $OUT --fits exact --backend pairwise_fw_cupy   # the paper's model, FW gap
    .venv/bin/python benchmarks/prolfa_gpu.py evaluate DIR               # DIR: where the fits came back
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import warnings
from pathlib import Path
from typing import ClassVar

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import fit_from_start, fit_problem, parse_param, prolfa_params, save_selection, selection_on_problem_rows

PACK = HERE / "gpu_pack" / "scene15_sift90_seed0.npz"
START = HERE / "gpu_pack" / "start_capped_seed0.npz"
SEED, N_PROTOTYPES = 0, 4096
FITS = {"capped": {"max_support": 4}, "exact": {"max_support": None}}


def _split_and_bags():
    from common import scene15_sift

    from lfabench_plugins.evaluators.splits import stratified_split

    bags, labels = scene15_sift(90)
    train_idx, test_idx = stratified_split(labels, 0.2, SEED)
    return bags, labels, train_idx, test_idx


def pack() -> None:
    bags, labels, train_idx, _ = _split_and_bags()
    train = bags.subset(train_idx)
    X = train.descriptors
    X8 = X.astype(np.uint8)
    if not np.array_equal(X8.astype(X.dtype), X):
        raise SystemExit("SIFT descriptors are not integers in 0..255: the uint8 pack would not be lossless")
    PACK.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(PACK, descriptors=X8, offsets=train.offsets, labels=np.asarray(labels)[train_idx],
                        train_idx=train_idx)
    print(f"{PACK}: {X.shape[0]} descriptors of {train.n_samples} images, {PACK.stat().st_size / 2**20:.1f} MiB")


def pack_start(path: Path, max_images: int | None, n_prototypes: int, init: str = "cancelling") -> None:
    """Fit the capped model here (CPU solver, from ``init``) on the packed problem; save its ``C`` for ``--start``."""
    from lfabench_plugins.aggregators.prolfa import SolverOptions
    from lfabench_plugins.aggregators.prolfa.plugin import ProLFA

    bags, y = _load_pack(max_images)
    est = ProLFA(n_prototypes=n_prototypes, random_state=SEED, solver=SolverOptions(init=init))
    t0 = time.perf_counter()
    est.fit(bags, y)
    C = selection_on_problem_rows(est, bags, y)
    save_selection(path, C, est.objective_history_[-1])
    print(f"{path}: capped fit, {est.n_iter_} iterations, {time.perf_counter() - t0:.1f} s, "
          f"J {est.objective_history_[-1]:.4f}, {C.nnz} non-zeros")


def _load_pack(max_images: int | None = None):
    from lfabench.bags import Bags

    z = np.load(PACK)
    bags, labels = Bags(z["descriptors"].astype(np.float32), z["offsets"]), z["labels"]
    if max_images:                        # a smoke test of this script on a CPU (backend=dense)
        keep = np.random.default_rng(0).permutation(bags.n_samples)[:max_images]
        bags, labels = bags.subset(np.sort(keep)), labels[np.sort(keep)]
    return bags, labels


class _Trajectory(logging.Handler):
    """Writes the GPU solver's per-iteration log lines to a CSV as they come (a fit cut off by the
    machine's time limit still leaves its trajectory); a context manager that attaches it to the solver's logger.
    ``backend="cupy"``: one row per iteration; ``"pairwise_fw_cupy"``: one row per search, with its FW gap."""

    HEADERS: ClassVar[dict[str, str]] = {"prolfa dense iter": "iteration,J,relative_change,s,t,wall_s",
               "prolfa pairwise iter": "search,J,gap,gap_over_J,nnz,K,wall_s"}

    def __init__(self, path: Path, backend: str = "cupy"):
        super().__init__(level=logging.DEBUG)
        self.path = path
        self.prefix = "prolfa pairwise iter" if backend.startswith("pairwise_fw") else "prolfa dense iter"
        path.write_text(self.HEADERS[self.prefix] + "\n")
        self.logger = logging.getLogger("lfabench_plugins.aggregators.prolfa")

    def emit(self, record):
        if str(record.msg).startswith(self.prefix):
            with self.path.open("a") as fh:
                fh.write(",".join(str(a) for a in record.args) + "\n")

    def __enter__(self):
        self.logger.addHandler(self)
        self.logger.setLevel(logging.DEBUG)
        return self

    def __exit__(self, *exc):
        self.logger.removeHandler(self)


def _gpu_name() -> str:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    except Exception as exc:  # the summary says why instead of failing the run
        return f"unknown ({exc})"


def _gpu_pool_gib() -> float | None:
    """GiB held by CuPy's memory pool (it keeps what it allocated, so after a fit: about the peak)."""
    try:
        import cupy

        return round(cupy.get_default_memory_pool().total_bytes() / 2**30, 2)
    except Exception:
        return None


def fit(out: Path, fits: list[str], tol: float, backend: str, max_iter: int, max_images: int | None,
        n_prototypes: int, start: Path | None = None, params: dict | None = None) -> None:
    import joblib

    from lfabench_plugins.aggregators.prolfa.plugin import ProLFA

    out.mkdir(parents=True, exist_ok=True)
    bags, y = _load_pack(max_images)
    print(f"N = {bags.n_descriptors}, images = {bags.n_samples}, device: {_gpu_name()}", flush=True)
    for name in fits:
        est = ProLFA(n_prototypes=n_prototypes, random_state=SEED,
                     **prolfa_params({"backend": backend, "tol": tol, "max_iter": max_iter, **FITS[name],
                                      **(params or {})}))
        t0, c0 = time.perf_counter(), time.process_time()
        with warnings.catch_warnings(record=True) as caught, _Trajectory(out / f"{name}_trajectory.csv", backend):
            warnings.simplefilter("always")
            est.fit(bags, y) if start is None else fit_from_start(est, bags, y, start)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        h = est.objective_history_
        summary = {"fit": name, "params": params or {}, "start": est.fit_info_["start"], "backend": backend, "device": _gpu_name(), "gpu_pool_gib": _gpu_pool_gib(), "tol": tol, "wall_s": round(wall, 2),
                   "cpu_s": round(cpu, 2), "solver_s": round(est.fit_info_["seconds"], 2), "n_iter": int(est.n_iter_),
                   "converged": bool(est.converged_), "J": float(h[-1]),
                   "nnz_per_column": float(est.selection_.nnz / n_prototypes),
                   "frank_wolfe_gap": est.fit_info_.get("frank_wolfe_gap"),
                   "warnings": [str(w.message) for w in caught], "J_history": [float(v) for v in h]}
        (out / f"{name}.json").write_text(json.dumps(summary, indent=1))
        joblib.dump(est, out / f"{name}.joblib", compress=3)
        print({k: v for k, v in summary.items() if k != "J_history"}, flush=True)


def first_below(history, tol: float) -> tuple[int, float]:
    """``(iteration, J)`` where the relative change of J first falls below ``tol`` (the stopping rule at ``tol``)."""
    h = np.asarray(history)
    rel = np.abs(np.diff(h)) / np.maximum(np.abs(h[:-1]), 1e-300)
    hit = np.flatnonzero(rel < tol)
    i = int(hit[0]) + 1 if hit.size else h.size - 1
    return i, float(h[i])


def evaluate(directory: Path) -> None:
    import joblib
    from common import one_nn_accuracy

    from lfabench_plugins.aggregators.prolfa import frank_wolfe_gap, objective
    from lfabench_plugins.aggregators.prolfa.plugin import ProLFA

    bags, labels, train_idx, test_idx = _split_and_bags()
    train, test = bags.subset(train_idx), bags.subset(test_idx)
    for path in sorted(directory.glob("*.joblib")):
        est: ProLFA = joblib.load(path)
        summary = json.loads(path.with_suffix(".json").read_text())
        # J again, on the CPU: the saved C (sparse) and W in the numpy objective, on a Problem built here
        # from the local descriptors by the plugin's own construction
        pb, n_rows, reps = fit_problem(ProLFA(**est.get_params()), train, labels[train_idx])
        C = est.selection_.tocsr()[reps].tocsc() if reps.size != n_rows else est.selection_
        J_cpu = objective(pb, C, est.projection_)
        acc = one_nn_accuracy(est.transform(train), labels[train_idx], est.transform(test), labels[test_idx])
        it4, J4 = first_below(summary["J_history"], 1e-4)
        gap = ""
        if summary.get("frank_wolfe_gap") is not None:      # the exact model: its gap again, by the dense formula
            gap_cpu = float(frank_wolfe_gap(pb, C, est.projection_).sum())
            gap = (f"FW gap (GPU) {summary['frank_wolfe_gap']:.4f}, recomputed on the CPU {gap_cpu:.4f} "
                   f"({gap_cpu / J_cpu:.3e} of J), ")
        print(f"{path.stem}: device {summary['device']}, {summary['n_iter']} iterations, solver "
              f"{summary['solver_s']} s, J(GPU) {summary['J']:.4f}, J recomputed on the CPU {J_cpu:.4f}, {gap}"
              f"held-out 1-NN {acc:.2f} %, nnz/column {summary['nnz_per_column']:.1f}; rule at tol 1e-4: "
              f"iteration {it4}, J {J4:.4f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("pack")
    ps = sub.add_parser("pack-start")
    ps.add_argument("--out", type=Path, default=START)
    ps.add_argument("--max-images", type=int, default=None, help="a random subset of the images (smoke test)")
    ps.add_argument("--n-prototypes", type=int, default=N_PROTOTYPES)
    ps.add_argument("--init", default="cancelling", help="the capped fit's start: cancelling (~50 s) or one_hot")
    f = sub.add_parser("fit")
    f.add_argument("--out", type=Path, required=True)
    f.add_argument("--fits", nargs="+", choices=sorted(FITS), default=["capped", "exact"])
    f.add_argument("--tol", type=float, default=1e-5)
    f.add_argument("--backend", default="cupy")
    f.add_argument("--max-iter", type=int, default=3000)
    f.add_argument("--max-images", type=int, default=None, help="a random subset of the images (smoke test)")
    f.add_argument("--n-prototypes", type=int, default=N_PROTOTYPES)
    f.add_argument("--start", type=Path, default=None, help="start every fit from this C (written by pack-start)")
    f.add_argument("--param", action="append", default=[], type=parse_param, metavar="KEY=VALUE",
                   help="another ProLFA parameter for every fit, e.g. feature_map=nystroem_rbf (repeatable)")
    e = sub.add_parser("evaluate")
    e.add_argument("directory", type=Path)
    args = ap.parse_args()
    if args.cmd == "pack":
        pack()
    elif args.cmd == "pack-start":
        pack_start(args.out, args.max_images, args.n_prototypes, args.init)
    elif args.cmd == "fit":
        fit(args.out, args.fits, args.tol, args.backend, args.max_iter, args.max_images,
            args.n_prototypes, args.start, dict(args.param))
    else:
        evaluate(args.directory)


if __name__ == "__main__":
    main()
