"""Which solver minimises J: decided here, once, from the model.

* the capped model (``max_support`` set, the k-sparse simplex): cBCD, the paper's Algorithm 2 with its ADMM
  (:func:`~lfabench_plugins.aggregators.prolfa.cbcd.fit_cbcd`);
* the paper's plain simplex (``max_support=None``): block majorise-minimise with pairwise Frank-Wolfe steps
  (:func:`~lfabench_plugins.aggregators.prolfa.pairwise_fw.fit_pairwise`), which stops on a certified
  stationary point; cBCD's moves stall far from one there at paper scale (docs/prolfa-solvers.md).

The deprecated ``backend`` names still route here for one release, with a :class:`FutureWarning`
(:data:`~lfabench_plugins.aggregators.prolfa.options.DEPRECATED`).
"""

from __future__ import annotations

from .options import FitOptions
from .problem import Problem
from .result import ProLFAResult
from .start import Start

__all__ = ["CBCD", "PAIRWISE_FW", "fit_prolfa", "solver_path"]

#: The two solver paths (``fit_info_["solver"]`` records the one that ran; a deprecated route by its old name).
CBCD, PAIRWISE_FW = "cbcd", "pairwise_fw"


def solver_path(opts: FitOptions) -> str:
    """The solver of ``opts``' model: :data:`CBCD` when ``max_support`` is set, :data:`PAIRWISE_FW` on the plain
    simplex; a deprecated ``backend`` name other than ``"auto"`` is that route's name (``"sparse"`` is cBCD)."""
    if opts.backend == "auto":
        return PAIRWISE_FW if opts.max_support is None else CBCD
    return CBCD if opts.backend == "sparse" else opts.backend


def fit_prolfa(pb: Problem, options: FitOptions | None = None, start: Start | None = None) -> ProLFAResult:
    """Minimise eq. "ModelRelax2" (or "ModelSemi": ``pb`` then holds only labelled means) by the model's solver.

    ``options`` (:class:`FitOptions`, defaults if None) says how; ``start`` (optional) is a given starting ``C``
    (:func:`~.start.selection_start`, e.g. a capped fit's solution, to continue on the paper's model), else the
    seeded start. Deprecated options emit a :class:`FutureWarning` naming their replacement.
    """
    opts = FitOptions() if options is None else options
    opts.warn_deprecated(stacklevel=2)
    path = solver_path(opts)
    if path == CBCD:
        from .cbcd import fit_cbcd

        res = fit_cbcd(pb, opts, start)
    elif path in (PAIRWISE_FW, "pairwise_fw_cupy"):
        from .pairwise_fw import fit_pairwise

        res = fit_pairwise(pb, opts, start, on_gpu=path == "pairwise_fw_cupy")
    else:
        from .dense import fit_dense

        res = fit_dense(pb, opts, start)
    res.info["solver"] = path
    return res
