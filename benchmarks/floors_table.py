"""The floors table of ``docs/performance.md``, regenerated on the machine at hand by one command.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \\
        python benchmarks/floors_table.py --machine NAME [--descriptor sift] [--methods fv vlad ...] [--rates-only]

1. **Rates** (``suite/rates.py``'s ``machine_rates``): the float32 and float64 GEMM rates and the copy
   bandwidth, measured now in this process on one thread, stored with the CPU model, its flags, the core count
   and the BLAS in ``benchmarks/results/NAME/rates.json``: the denominators, tied to the hardware.
2. **Measured**: each method at the paper's settings (``suite/aggregators.py``'s ``paper_aggregator``, seed 0)
   fitted on the ``knn`` evaluator's seed-0 split of Fifteen Scene (``suite/cases.py``'s ``split_bags``; the
   array cache keeps the descriptors; Semi-ProLFA with 20 % of each class labelled, the board's setting, as
   ``suite/cases.py``'s ``labelled_fraction`` gives it) and its transform of the test images, CPU seconds of this
   process.
3. **Floors** (``suite/floors.py``) at those rates, counted with the iterations the fit reported it ran
   (FV's EM: ``fit_info["gmm_n_iter"]``; ProLFA's exact searches, C-step trials and working sets:
   ``fit_info["searches"]``, ``["c_trials"]``, ``["working_set_entries"]``), not at a cap.

The table goes to ``benchmarks/results/NAME/floors-<descriptor>.md`` and to the terminal. ``--rates-only``
stops after step 1 (a minute).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from revisions import cpu  # noqa: E402
from suite.cases import PAPER_VARIANTS, labelled_fraction, split_bags  # noqa: E402
from suite.floors import METHODS, Scale, floor_seconds, ops  # noqa: E402
from suite.rates import machine_rates  # noqa: E402

#: What the fit reports of the iterations it ran, per method: fit_info key -> keyword of the floor's counts.
_PROLFA_RAN = {"searches": "searches", "c_trials": "c_trials", "working_set_entries": "working_set_entries",
               "n_iter": "n_iter"}
RAN = {"fv": {"gmm_n_iter": "gmm_n_iter"}, "prolfa": _PROLFA_RAN, "semi_prolfa": _PROLFA_RAN}


def revision() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=HERE, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def measure(method: str, descriptor: str, scale: Scale, data: dict, rates: dict) -> list[dict]:
    """Two rows (fit, transform): measured CPU seconds, floor, ratio, the floor's operations. ``data``: the split
    (``split_bags``) per labelled fraction."""
    from suite.aggregators import paper_aggregator

    train, fit_labels, _, test, _ = data[labelled_fraction(method)]
    aggregator = paper_aggregator(PAPER_VARIANTS.get(method, method), descriptor)
    fit_s, _ = cpu(lambda: aggregator.fit(train, fit_labels))
    transform_s, _ = cpu(lambda: aggregator.transform(test))
    info = aggregator.record_info()
    ran = {keyword: info[key] for key, keyword in RAN.get(method, {}).items() if key in info}
    params = aggregator.get_params()
    rows = []
    for stage, seconds in (("fit", fit_s), ("transform", transform_s)):
        stage_ops = ops(method, params, scale, stage, **(ran if stage == "fit" else {}))
        floor = floor_seconds(stage_ops, rates)
        rows.append({"method": method, "stage": stage, "measured_s": seconds, "floor_s": floor,
                     "ratio": seconds / floor if floor else None, "ran": ran if stage == "fit" else {},
                     "ops": "; ".join(op.what for op in stage_ops)})
    return rows


def markdown(rows: list[dict], rates: dict, descriptor: str) -> str:
    m = rates["machine"]
    blas = ", ".join(f"{b.get('internal_api')} {b.get('version')} ({b.get('architecture')})" for b in m["blas"])
    lines = [f"Machine: {m.get('cpu_model')}, {m.get('cpu_count')} logical cores, SIMD "
             f"{' '.join(m.get('cpu_simd') or [])}; BLAS {blas}. Rates (one thread, best of 5): float32 GEMM "
             f"{rates['gemm_float32']:.1f} GFLOP/s, float64 GEMM {rates['gemm_float64']:.1f} GFLOP/s, copy "
             f"{rates['copy']:.1f} GB/s. Fifteen Scene {descriptor}, seed-0 split (Semi-ProLFA with 20 % of each "
             f"class labelled, as on the board; the others with every training image labelled), CPU seconds.", "",
             "| method | stage | measured (CPU) | floor | ratio | dominant operations |", "|---|---|---|---|---|---|"]
    for r in rows:
        ratio = f"{r['ratio']:.1f}x" if r["ratio"] else ""
        lines.append(f"| {r['method']} | {r['stage']} | {r['measured_s']:.3g} s | {r['floor_s']:.3g} s | {ratio} | "
                     f"{r['ops']} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--machine", required=True, help="folder name under benchmarks/results/")
    parser.add_argument("--descriptor", default="sift", choices=["sift", "daisy"])
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--rates-only", action="store_true")
    args = parser.parse_args(argv)
    out = HERE / "results" / args.machine
    out.mkdir(parents=True, exist_ok=True)
    with threadpool_limits(1):
        rates = machine_rates()
        rates["lfabench_revision"] = revision()
        (out / "rates.json").write_text(json.dumps(rates, indent=2, sort_keys=True) + "\n")
        print(f"rates: float32 {rates['gemm_float32']:.1f} GFLOP/s, float64 {rates['gemm_float64']:.1f} GFLOP/s, "
              f"copy {rates['copy']:.1f} GB/s on {rates['machine']['cpu_model']} -> {out / 'rates.json'}")
        if args.rates_only:
            return 0
        fractions = sorted({labelled_fraction(method) for method in args.methods})
        data = {f: split_bags("scene15", args.descriptor, f) for f in fractions}
        train, _, y_train, test, _ = data[fractions[-1]]
        scale = Scale.of(train, test, len(np.unique(y_train)))
        rows = []
        for method in args.methods:
            rows += measure(method, args.descriptor, scale, data, rates)
            print(f"  {method}: " + ", ".join(f"{r['stage']} {r['measured_s']:.2f} s / floor {r['floor_s']:.2f} s"
                                              for r in rows[-2:]), flush=True)
    table = markdown(rows, rates, args.descriptor)
    (out / f"floors-{args.descriptor}.md").write_text(table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
