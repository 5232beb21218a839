"""Which solver minimises J: decided here, once, from the model.

* the capped model (``max_support`` set, the k-sparse simplex): cBCD, the paper's Algorithm 2 with its ADMM
  (:func:`~lfabench_plugins.aggregators.prolfa.cbcd.fit_cbcd`);
* the paper's plain simplex (``max_support=None``): block majorise-minimise with pairwise Frank-Wolfe steps
  (:func:`~lfabench_plugins.aggregators.prolfa.pairwise_fw.fit_pairwise`), which stops on a certified
  stationary point; cBCD's moves stall far from one there at paper scale (docs/prolfa-solvers.md).
"""

from __future__ import annotations

from .options import FitOptions
from .problem import Problem
from .result import ProLFAResult
from .start import Start

__all__ = ["CBCD", "PAIRWISE_FW", "fit_prolfa", "solver_path"]

#: The two solver paths (``fit_info_["solver"]`` records the one that ran).
CBCD, PAIRWISE_FW = "cbcd", "pairwise_fw"


def solver_path(opts: FitOptions) -> str:
    """The solver of ``opts``' model: :data:`CBCD` when ``max_support`` is set, :data:`PAIRWISE_FW` on the plain
    simplex."""
    return PAIRWISE_FW if opts.max_support is None else CBCD


def fit_prolfa(pb: Problem, options: FitOptions | None = None, start: Start | None = None) -> ProLFAResult:
    """Minimise eq. "ModelRelax2" (or "ModelSemi": ``pb`` then holds only labelled means) by the model's solver.

    ``options`` (:class:`FitOptions`, defaults if None) says how; ``start`` (optional) is a given starting ``C``
    (:func:`~.start.selection_start`, e.g. a capped fit's solution, to continue on the paper's model), else the
    seeded start.
    """
    opts = FitOptions() if options is None else options
    path = solver_path(opts)
    if path == CBCD:
        from .cbcd import fit_cbcd

        res = fit_cbcd(pb, opts, start)
    else:
        from .pairwise_fw import fit_pairwise

        res = fit_pairwise(pb, opts, start)
    res.info["solver"] = path
    return res
