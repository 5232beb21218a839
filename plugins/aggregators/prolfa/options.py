"""How J is minimised: :class:`SolverOptions`, the one object a user passes as ``solver``; :class:`FitOptions`,
what a solver reads (those options plus the model's shape and the seed).

The model's own parameters (``n_prototypes`` d̄, ``lambda1``, ``lambda2``, ``max_support`` k, the descriptor
map) are the plugin's keyword-only parameters; which solver runs follows from the model
(:func:`~lfabench_plugins.aggregators.prolfa.fit.solver_path`): cBCD for the capped model, pairwise Frank-Wolfe
for the paper's plain simplex. Every option here is one of those two solvers'.
"""

from __future__ import annotations

import numbers
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal, Mapping

import numpy as np

__all__ = ["REMOVED", "FitOptions", "SolverOptions", "solver_options"]

STEPS = ("backtracking", "lipschitz")
NORMS = ("auto", "basis", "svd")
W_SVDS = ("tall", "wide")

#: Options lfabench 0.2.0 removed, each with the one value a mapping may still name it at: what every fit does
#: now (the config of a record written before names all four, at these values; :func:`solver_options` reads
#: such a config). Any other value is refused by name.
REMOVED = {"backend": "auto", "init": "one_hot", "face_step": True, "extrapolate": 8.0}


def _is_integer(value, low: int) -> bool:
    """Whether ``value`` is an integer (not a bool; an integral float counts) of at least ``low``."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and int(value) == value and value >= low


def _is_real(value, low: float, strict: bool) -> bool:
    """Whether ``value`` is a real number (not a bool) above ``low`` (or at least ``low`` unless ``strict``)."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        return False
    return value > low if strict else value >= low


@dataclass(frozen=True)
class SolverOptions:
    """How eq. "ModelRelax2" is minimised: the options of the two solvers (the plugin's ``solver`` parameter).

    Shared
    ------
    max_iter : int
        cBCD: cap on outer iterations (Algorithm 2's loop); pairwise Frank-Wolfe: cap on exact searches (>= 1).
        Reaching it is a :class:`~sklearn.exceptions.ConvergenceWarning`, not the stopping rule.
    n_candidates : int
        Rows searched per prototype at each exact candidate search (grown automatically when too few; >= 1).
    search_every : int
        cBCD: the exact candidate search on the first and then every ``search_every``-th outer iteration
        (the ones between reuse the searched rows); pairwise Frank-Wolfe: block steps per search (>= 1).

    Pairwise Frank-Wolfe (the plain simplex, ``max_support=None``)
    --------------------------------------------------------------
    gap_tol : float
        Stop when J's Frank-Wolfe gap (summed over columns) is at most ``gap_tol`` times J at a search (> 0):
        a first-order stationarity certificate.

    cBCD (the capped model; paper Algorithms 1 and 2; paper symbol in brackets)
    ----------------------------------------------------------------------------
    tol : float
        Stop when the relative change of J falls below ``tol`` on a searched iteration (> 0).
    mu : float
        [mu] ADMM penalty (> 0); ``mu >= 2 lambda1`` keeps every Z row problem convex.
    eps : float
        [epsilon] re-weighting smoothing in the Z-step (paper: 0.1; > 0).
    max_iter_admm : int
        Cap on ADMM iterations per outer iteration (Algorithm 1's loop; >= 1).
    admm_tol : float
        Algorithm 1's rule: ``||Z - C||_inf <= admm_tol`` and ``||Z^{t+1} - Z^t||_inf <= admm_tol``.
    max_iter_reweight, reweight_tol : int, float
        Re-weighting iterations of each Z-step (eq. "Zi", Kong et al. 2014) and their tolerance.
    step : {"backtracking", "lipschitz"}
        C-step size: backtracking on the exact descent-lemma test, or the paper's fixed ``1 / L``.
    admm_patience : int or None
        An integer p (>= 1; default 1): after p consecutive outer iterations whose ADMM result the safeguard
        rejected, ADMM runs only on searched iterations (a new working set) until one is accepted again; the
        others take the safeguard's projected-gradient step directly, which is what a rejection keeps, so ``J``
        stays non-increasing. None: ADMM on every outer iteration (Algorithm 2 as written; what records made
        before this option ran). On the Fifteen Scene board's fits the safeguard rejected ADMM's point on 78-99 %
        of the iterations (``docs/prolfa-performance.md``).
    spectral_norm : {"auto", "basis", "svd"}
        How ``sigma_max(W)`` (in the Lipschitz bound and the first trial step) is computed after each W-step.
        "basis": the W-step's ``W`` has its columns in the row space of ``P`` (at most ``d`` dimensions), so
        ``sigma_max(W) = sigma_max(B^T W)`` for an orthonormal basis ``B`` of it (a ``d̄ x d`` QR, then a
        ``d x c`` SVD). "svd": the SVD of the ``d̄ x c`` matrix ``W`` itself (seconds per iteration at thousands
        of classes; at 15 classes 0.6 ms against the basis's 41 ms). "auto" (default): "basis" when there are
        more classes than descriptor dimensions, else "svd". The three agree to rounding.
    w_svd : {"tall", "wide"}
        Which LAPACK path the W-step's thin SVD of the ``d x d̄`` matrix ``R P`` takes. "tall" (default): the SVD
        of its ``d̄ x d`` transpose (QR first; 0.58x the time at d = 128-200, d̄ = 4,096). "wide": of ``R P``
        itself (what records made before this option ran). The same ``W`` to rounding.
    """

    max_iter: int = 500
    n_candidates: int = 16
    search_every: int = 8
    gap_tol: float = 1e-3
    tol: float = 1e-4
    mu: float = 10.0
    eps: float = 0.1
    max_iter_admm: int = 5
    admm_tol: float = 1e-4
    max_iter_reweight: int = 5
    reweight_tol: float = 1e-6
    step: Literal["backtracking", "lipschitz"] = "backtracking"
    admm_patience: int | None = 1
    spectral_norm: Literal["auto", "basis", "svd"] = "auto"
    w_svd: Literal["tall", "wide"] = "tall"

    def __post_init__(self):
        for name in ("max_iter", "max_iter_admm", "max_iter_reweight", "n_candidates", "search_every"):
            if not _is_integer(getattr(self, name), 1):
                raise ValueError(f"{name} must be an integer >= 1, got {getattr(self, name)!r}")
            object.__setattr__(self, name, int(getattr(self, name)))
        for name, low, strict in (("mu", 0, True), ("eps", 0, True), ("tol", 0, True), ("gap_tol", 0, True),
                                  ("admm_tol", 0, False), ("reweight_tol", 0, False)):
            if not _is_real(getattr(self, name), low, strict):
                raise ValueError(f"{name} must be a number {'>' if strict else '>='} {low}, got "
                                 f"{getattr(self, name)!r}")
        if self.admm_patience is not None:
            if not _is_integer(self.admm_patience, 1):
                raise ValueError(f"admm_patience must be an integer >= 1 or None, got {self.admm_patience!r}")
            object.__setattr__(self, "admm_patience", int(self.admm_patience))
        if self.step not in STEPS:
            raise ValueError(f"step must be one of {STEPS}, got {self.step!r}")
        if self.spectral_norm not in NORMS:
            raise ValueError(f"spectral_norm must be one of {NORMS}, got {self.spectral_norm!r}")
        if self.w_svd not in W_SVDS:
            raise ValueError(f"w_svd must be one of {W_SVDS}, got {self.w_svd!r}")
        for name in ("mu", "eps", "tol", "gap_tol", "admm_tol", "reweight_tol"):
            object.__setattr__(self, name, float(getattr(self, name)))

    def as_config(self) -> dict[str, Any]:
        """The options as plain data (the ``solver`` node of the generated Hydra config)."""
        return asdict(self)


@dataclass(frozen=True)
class FitOptions(SolverOptions):
    """What a solver reads: the :class:`SolverOptions` plus the model's shape and the seed.

    n_prototypes : int
        [d̄] number of prototypes, the output dimension (>= 1).
    max_support : int or None
        [k] model option ``||c_j||_0 <= k`` (the k-sparse simplex); None is the paper's plain simplex.
    random_state : int, Generator, RandomState or None
        Seeds the start (its anchor rows).
    """

    n_prototypes: int = 128
    max_support: int | None = 4
    random_state: object = None

    def __post_init__(self):
        super().__post_init__()
        if not _is_integer(self.n_prototypes, 1):
            raise ValueError(f"n_prototypes must be an integer >= 1, got {self.n_prototypes!r}")
        object.__setattr__(self, "n_prototypes", int(self.n_prototypes))
        if self.max_support is not None:
            if not _is_integer(self.max_support, 1):
                raise ValueError(f"max_support must be an integer >= 1 or None, got {self.max_support!r}")
            object.__setattr__(self, "max_support", int(self.max_support))

    @classmethod
    def of(cls, solver: SolverOptions, **model) -> FitOptions:
        """``solver``'s options with the model's ``n_prototypes``, ``max_support`` and ``random_state``."""
        return cls(**{f.name: getattr(solver, f.name) for f in fields(SolverOptions)}, **model)

    def rng(self) -> np.random.Generator:
        """A Generator from ``random_state`` (a legacy RandomState draws one seed from itself)."""
        rs = self.random_state
        if isinstance(rs, np.random.RandomState):
            rs = rs.randint(2**31 - 1)
        return np.random.default_rng(rs)


def solver_options(solver: SolverOptions | Mapping[str, Any] | None) -> SolverOptions:
    """``solver`` as a :class:`SolverOptions`: itself, the defaults for None, or built from a mapping (a Hydra
    config node), whose unknown keys are refused by name. A mapping may name a :data:`REMOVED` option at its
    value (what every fit does now; a record's config of an earlier release does), at no other."""
    if solver is None:
        return SolverOptions()
    if isinstance(solver, SolverOptions):
        return solver
    if isinstance(solver, Mapping):
        known = [f.name for f in fields(SolverOptions)]
        for name, value in REMOVED.items():
            if name in solver and not _same_value(solver[name], value):
                raise ValueError(f"solver option {name!r} was removed in lfabench 0.2.0; every fit now does what "
                                 f"{name}={value!r} did (got {name}={solver[name]!r})")
        solver = {k: v for k, v in solver.items() if k not in REMOVED}
        unknown = sorted(set(solver) - set(known))
        if unknown:
            raise ValueError(f"solver has no option {', '.join(map(repr, unknown))}; its options are "
                             f"{', '.join(known)}")
        return SolverOptions(**solver)
    raise ValueError(f"solver must be a SolverOptions or a mapping of its options, got {type(solver).__name__}")


def _same_value(given: Any, value: Any) -> bool:
    """Whether a config's ``given`` is ``value`` (a bool only as a bool, a number as any equal number)."""
    if isinstance(value, bool) or isinstance(given, bool):
        return given is value
    if isinstance(value, numbers.Real):
        return isinstance(given, numbers.Real) and given == value
    return given == value
