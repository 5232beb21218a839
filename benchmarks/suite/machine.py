"""This machine's GEMM rate and memory bandwidth, and every method's floor at paper scale (seconds).

``MachineRates`` tracks the rates the floors divide by (``rates.py``); ``Floors`` tracks each method's
floor on Fifteen Scene SIFT-90 (the seed-0 split of ``cases.split_bags``) at the parameters its ``Paper*``
case runs with, so ``asv run --bench "MachineRates|Floors"`` prints the floor column of
``docs/performance.md`` beside the measured ``PaperFit.time_fit`` / ``PaperFitted.time_transform``.
ProLFA's fit floor is per exact candidate search (multiply by the fit's searches: one every
``search_every`` iterations).
"""

from __future__ import annotations

import numpy as np

from .cases import PAPER_VARIANTS, split_bags
from .floors import METHODS, Scale, floor_seconds, ops
from .rates import copy_bandwidth, gemm_rate


class MachineRates:
    """GFLOP/s of a 1024^3 matmul (float32, float64) and GB/s of a 256 MiB copy, best of 5."""

    params = [["float32", "float64"]]
    param_names = ["dtype"]
    number, repeat, rounds = 1, 1, 1

    def track_gemm_gflops(self, dtype):
        return gemm_rate(dtype)

    track_gemm_gflops.unit = "GFLOP/s"

    def track_copy_gbs(self, dtype):
        return copy_bandwidth() if dtype == "float64" else np.nan   # one bandwidth: reported once

    track_copy_gbs.unit = "GB/s"


class Floors:
    """Each method's fit and transform floor (seconds) on Fifteen Scene SIFT-90, at this machine's rates."""

    params = [list(METHODS), ["fit", "transform"]]
    param_names = ["method", "stage"]
    number, repeat, rounds, timeout = 1, 1, 1, 600

    def setup_cache(self):
        train, _, y_train, test, _ = split_bags("scene15", "sift")
        scale = Scale.of(train, test, len(np.unique(y_train)))
        rates = {"gemm_float32": gemm_rate("float32"), "gemm_float64": gemm_rate("float64"),
                 "copy": copy_bandwidth()}
        return scale, rates

    def track_floor_seconds(self, cached, method, stage):
        from .aggregators import paper_aggregator

        scale, rates = cached
        params = paper_aggregator(PAPER_VARIANTS.get(method, method), "sift").get_params()
        return floor_seconds(ops(method, params, scale, stage), rates)

    track_floor_seconds.unit = "s"
