"""ProLFA core: prototype-selection local feature aggregation.

Zhang, Zhu & Zhao, "ProLFA: Representative Prototype Selection for Local Feature
Aggregation" (``prolfa-paper.tex``, eq. "ModelRelax2").

One solver per model, chosen in :mod:`.fit` (:func:`fit_prolfa`): cBCD for the capped model
(``max_support`` set), pairwise Frank-Wolfe for the paper's plain simplex. One idea per module:

* shared by both solvers: :mod:`.problem` (the fit's data and its kernel-free quantities: J, gradient,
  Lipschitz bound), :mod:`.wstep` (the Sylvester W-step), :mod:`.search` (the exact candidate search),
  :mod:`.start` (the seeded one-hot start), :mod:`.result` (the result), :mod:`.options` (the solver
  options, one validated object), :mod:`.simplex` (projection onto the simplex, Duchi et al. 2008),
  :mod:`.sparsecols` (column-sparse matrices as sorted keys and values), :mod:`.threads`;
* cBCD (paper Algorithms 1 and 2): :mod:`.cbcd` (the driver), :mod:`.cbcd_zstep` (the re-weighted ADMM
  Z-step), :mod:`.cbcd_cstep` (the sparse, column-blocked projected-gradient C-step), :mod:`.cbcd_facestep`
  (each column's exact weights on its support);
* pairwise Frank-Wolfe: :mod:`.pairwise_fw` (block majorise-minimise with pairwise steps, stopping on the
  Frank-Wolfe gap);
* the descriptors: :mod:`.normalize` (normalisation), :mod:`.featuremap` (the explicit kernel feature map),
  :mod:`.dedup` (identical descriptors are one candidate).

The aggregator plugins ``prolfa`` and ``semi_prolfa`` (``plugin.py`` beside it) wrap :func:`fit_prolfa`. The public
surface (the plugins' parameters, :class:`SolverOptions`, what a fit records) is documented in docs/methods/prolfa.md.
"""

from .dedup import distinct_rows, expand_rows
from .fit import fit_prolfa, solver_path
from .normalize import NORMALIZATIONS, center_descriptors, normalize_descriptors, parse_normalization
from .options import FitOptions, SolverOptions, solver_options
from .problem import Problem, exclusivity, fit_loss, frank_wolfe_gap, gradient_factor, lipschitz_bound, objective
from .result import ProLFAResult
from .simplex import project_columns, project_segments
from .start import Start, selection_start
from .wstep import solve_w

__all__ = ["distinct_rows", "expand_rows", "NORMALIZATIONS", "center_descriptors", "normalize_descriptors",
           "parse_normalization", "Problem", "exclusivity", "fit_loss", "frank_wolfe_gap", "gradient_factor",
           "lipschitz_bound", "objective", "project_columns", "project_segments", "ProLFAResult", "fit_prolfa",
           "solver_path", "FitOptions", "SolverOptions", "solver_options", "Start", "selection_start", "solve_w"]
