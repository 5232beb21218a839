"""The solver's options: one validated object, each field named with its symbol in the paper.

:func:`~lfabench_plugins.aggregators.prolfa.solver.fit_prolfa` takes a
:class:`SolverOptions`; the plugin builds it once from its hyper-parameters
(:meth:`SolverOptions.from_params`). The model's own weights (``lambda1``,
``lambda2``) and data live in :class:`~lfabench_plugins.aggregators.prolfa.problem.Problem`;
everything here is about *how* eq. "ModelRelax2" is minimised, plus the
two documented model options ``n_prototypes`` (d̄) and ``max_support`` (k).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

__all__ = ["SolverOptions"]

STEPS = ("backtracking", "lipschitz")
BACKENDS = ("sparse", "dense", "cupy", "pairwise_fw", "pairwise_fw_cupy", "auto")
INITS = ("one_hot", "cancelling")


@dataclass(frozen=True)
class SolverOptions:
    """How to run the paper's Algorithm 2 (cBCD) with its Algorithm 1 (ADMM) inside.

    Attributes (paper symbol in brackets)
    -------------------------------------
    n_prototypes : int
        [d̄] number of prototypes, the output dimension (>= 1). Default 128: see the ``prolfa``
        plugin's docstring (these defaults are the plugin's; they are stated only here).
    mu : float
        [mu] ADMM penalty (> 0); ``mu >= 2 lambda1`` keeps every Z row problem convex.
    eps : float
        [epsilon] re-weighting smoothing in the Z-step (paper: 0.1; > 0).
    max_iter : int
        Cap on outer cBCD iterations (Algorithm 2's loop; >= 1). Reaching it is a
        :class:`~sklearn.exceptions.ConvergenceWarning`, not the stopping rule.
    tol : float
        Outer stopping rule: relative change of J below ``tol`` on a searched iteration (> 0).
    max_iter_admm : int
        Cap on ADMM iterations per outer iteration (Algorithm 1's loop; >= 1).
    admm_tol : float
        Algorithm 1's rule: ``||Z - C||_inf <= admm_tol`` and ``||Z^{t+1} - Z^t||_inf <= admm_tol``.
    max_iter_reweight, reweight_tol : int, float
        Re-weighting iterations of each Z-step (eq. "Zi", Kong et al. 2014) and their tolerance.
    n_candidates : int
        Rows searched per prototype at each candidate search (grown automatically when too few).
    step : {"backtracking", "lipschitz"}
        C-step size: backtracking on the exact descent-lemma test, or the paper's fixed ``1 / L``.
    extrapolate : float
        Largest multiple (>= 1) of the ADMM move the safeguard's exact line search may take
        (plain simplex only).
    max_support : int or None
        [k] model option ``||c_j||_0 <= k`` (the k-sparse simplex); None is the paper's simplex.
    search_every : int
        Exact candidate search on the first and then every ``search_every``-th outer iteration (>= 1).
    random_state : int, Generator, RandomState or None
        Seeds the start (its anchor rows).
    init : {"one_hot", "cancelling"}
        The starting ``C`` (:mod:`.start`): ``"one_hot"`` (default) one seeded random descriptor per
        prototype; ``"cancelling"`` up to ``max_support`` (4 without a cap) distinct descriptors per
        prototype that cancel in the image means' metric, from the same seeded anchors. Same J, same
        stopping rule.
    backend : {"sparse", "dense", "cupy", "pairwise_fw", "pairwise_fw_cupy", "auto"}
        ``"sparse"`` (default here): this module's solver, C sparse on working sets (CPU). ``"dense"`` /
        ``"cupy"``: C held whole, on the CPU (NumPy; small problems) or an NVIDIA GPU (CuPy), by
        projected-gradient C-steps with an exact line search (:mod:`.dense`; same J, same start,
        same stopping rule; ``mu``, the ADMM, re-weighting and search options are unused there).
        ``"pairwise_fw"``: the paper's plain simplex only (``max_support=None``), by block majorise-minimise
        steps (pairwise Frank-Wolfe on each column's bound) on searched working sets (:mod:`.pairwise`):
        ``search_every`` block steps per exact search of ``n_candidates`` rows per column, at most ``max_iter``
        searches, stopping on ``gap_tol``. ``"pairwise_fw_cupy"``: the same on an NVIDIA GPU (CuPy).
        ``"auto"`` (the plugin's default) resolves here, once: ``"pairwise_fw"`` for the plain simplex
        (``max_support=None``: the one CPU solver that reaches a certified stationary point of the paper's
        model, and 1.6-2.9x faster than cBCD on the authors' moon.mat, to a lower J), ``"sparse"`` for the capped model.
    face_step : bool
        Capped model (``max_support`` from 2 to 8) on ``backend="sparse"``: after the safeguard, the face step
        (:mod:`.facestep`): each column's exact minimiser of J on its own support, all columns at once, scaled
        by an exact line search (J never increases). Default True; unused in every other case.
    gap_tol : float
        The stopping rule of ``backend="pairwise_fw"`` and ``"pairwise_fw_cupy"``: the Frank-Wolfe gap of J
        (summed over columns) at most ``gap_tol`` times J at a search (> 0); a first-order stationarity
        certificate, unlike ``tol``.
    """

    n_prototypes: int = 128
    mu: float = 10.0
    eps: float = 0.1
    max_iter: int = 500
    tol: float = 1e-4
    max_iter_admm: int = 5
    admm_tol: float = 1e-4
    max_iter_reweight: int = 5
    reweight_tol: float = 1e-6
    n_candidates: int = 16
    step: str = "backtracking"
    extrapolate: float = 8.0
    max_support: int | None = 4
    search_every: int = 8
    random_state: object = None
    backend: str = "sparse"
    init: str = "one_hot"
    gap_tol: float = 1e-3
    face_step: bool = True

    def __post_init__(self):
        for name in ("n_prototypes", "max_iter", "max_iter_admm", "max_iter_reweight", "n_candidates", "search_every"):
            value = getattr(self, name)
            if int(value) != value or int(value) < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
            object.__setattr__(self, name, int(value))
        for name in ("mu", "eps", "tol", "gap_tol"):
            if not float(getattr(self, name)) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        for name in ("admm_tol", "reweight_tol"):
            if not float(getattr(self, name)) >= 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        if not float(self.extrapolate) >= 1:
            raise ValueError(f"extrapolate must be >= 1, got {self.extrapolate!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {self.backend!r}")
        if self.backend == "auto":
            object.__setattr__(self, "backend", "pairwise_fw" if self.max_support is None else "sparse")
        if self.init not in INITS:
            raise ValueError(f"init must be one of {INITS}, got {self.init!r}")
        if self.step not in STEPS:
            raise ValueError(f"step must be one of {STEPS}, got {self.step!r}")
        if self.face_step not in (True, False):
            raise ValueError(f"face_step must be True or False, got {self.face_step!r}")
        object.__setattr__(self, "face_step", bool(self.face_step))
        if self.max_support is not None:
            if int(self.max_support) != self.max_support or int(self.max_support) < 1:
                raise ValueError(f"max_support must be >= 1 or None, got {self.max_support!r}")
            object.__setattr__(self, "max_support", int(self.max_support))
        for name in ("mu", "eps", "tol", "gap_tol", "admm_tol", "reweight_tol", "extrapolate"):
            object.__setattr__(self, name, float(getattr(self, name)))

    @classmethod
    def from_params(cls, params: dict) -> "SolverOptions":
        """The options named in ``params`` (e.g. an estimator's ``get_params()``); other keys are ignored."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in params.items() if k in names})

    def rng(self) -> np.random.Generator:
        """A Generator from ``random_state`` (a legacy RandomState draws one seed from itself)."""
        rs = self.random_state
        if isinstance(rs, np.random.RandomState):
            rs = rs.randint(2**31 - 1)
        return np.random.default_rng(rs)
