"""ProLFA core: prototype-selection local feature aggregation.

Zhang, Zhu & Zhao, "ProLFA: Representative Prototype Selection for Local Feature
Aggregation" (``prolfa-paper.tex``, eq. "ModelRelax2").

One idea per module:

* :mod:`.problem` — the fit's data and its kernel-free quantities (J, gradient, Lipschitz bound);
* :mod:`.simplex` — projection onto the probability simplex (Duchi et al. 2008);
* :mod:`.zstep` — the re-weighted ADMM Z-step;
* :mod:`.cstep` — the sparse, column-blocked projected-gradient C-step;
* :mod:`.wstep` — the Sylvester W-step;
* :mod:`.facestep` — the face step: each column's exact weights on its support (capped model, default);
* :mod:`.options` — the solver's options, one validated object;
* :mod:`.result` — what every solver shares: the seeded one-hot start and the result;
* :mod:`.start` — the starting selection (``init``: one-hot, or cancelling descriptors);
* :mod:`.solver` — the cBCD driver (Algorithms 1 and 2);
* :mod:`.dense` — the same model with C held whole, on NumPy or a GPU (CuPy): ``backend="dense"``/``"cupy"``;
* :mod:`.pairwise` — block pairwise Frank-Wolfe for the paper's exact model: ``backend="pairwise_fw"``;
  :mod:`.pairwise_cuda` — its GPU-only parts (``"pairwise_fw_cupy"``);
* :mod:`.featuremap` — the explicit kernel feature map (a model option);
* :mod:`.sparsecols` — column-sparse matrices as sorted keys and values;
* :mod:`.normalize` — descriptor normalisation;
* :mod:`.dedup` — identical descriptors are one candidate (the rule and the row maps).

The aggregator plugins ``prolfa`` and ``semi_prolfa`` (``plugin.py`` beside it) wrap :func:`fit_prolfa`.
"""

from .dedup import distinct_rows, expand_rows
from .normalize import NORMALIZATIONS, center_descriptors, normalize_descriptors, parse_normalization
from .options import SolverOptions
from .problem import Problem, exclusivity, fit_loss, frank_wolfe_gap, gradient_factor, lipschitz_bound, objective
from .simplex import project_columns, project_segments
from .solver import ProLFAResult, fit_prolfa
from .start import Start, selection_start
from .wstep import solve_w

__all__ = ["distinct_rows", "expand_rows", "NORMALIZATIONS", "center_descriptors", "normalize_descriptors",
           "parse_normalization", "Problem", "exclusivity", "fit_loss", "frank_wolfe_gap", "gradient_factor",
           "lipschitz_bound", "objective", "project_columns", "project_segments", "ProLFAResult", "fit_prolfa", "SolverOptions",
           "Start", "selection_start", "solve_w"]
