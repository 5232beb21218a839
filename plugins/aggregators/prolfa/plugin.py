"""ProLFA and Semi-ProLFA: supervised prototype-selection local feature aggregation.

Reference: X. Zhang, Z. Zhu and Y. Zhao, "ProLFA: Representative Prototype
Selection for Local Feature Aggregation" (the ``prolfa-paper.tex`` model, eqs.
"ModelRelax2", "ModelSemi", "TestSample"), and the authors' MATLAB demo
(GitHub ``indussky8/demo_ProLFA``), whose defects we do not reproduce (see the
project's ``prolfa-notes.md``).

The d̄ prototypes are convex combinations of training descriptors,
``P = X^T C`` (``C`` column-stochastic, sparse); a sample's aggregated vector is
its mean (normalised) descriptor times ``P`` (eq. "TestSample"). ``C`` and the
regression ``W`` minimise the forward/reverse regression loss plus the
exclusivity penalty ``lambda1 (||C||_{1,2}^2 - ||C||_F^2)`` and
``lambda2 ||W||^2``, by cBCD (the paper's Algorithm 2: ADMM Z-subproblem + Sylvester W-step) on
the capped model and by pairwise Frank-Wolfe on the paper's plain simplex, kernel-free and sparse: see :mod:`lfabench_plugins.aggregators.prolfa`.

``semi_prolfa``: ``y = -1`` (or NaN rows of a response matrix) marks unlabelled
samples; only labelled samples enter the loss, and every sample's descriptors
are prototype candidates (eq. "ModelSemi").
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import numpy as np

from lfabench.sdk import (NON_NEGATIVE, POSITIVE, Aggregator, Bags, PluginSpec, PrototypeSupport, StrOptions,
                          check_labels, default_params, hookimpl, not_fitted)

from . import (
    FitOptions,
    Problem,
    SolverOptions,
    center_descriptors,
    distinct_rows,
    expand_rows,
    fit_prolfa,
    normalize_descriptors,
    parse_normalization,
    solver_options,
)
from .featuremap import apply_feature_map, check_feature_map, fit_feature_map
from .options import REMOVED

log = logging.getLogger("lfabench_plugins.aggregators.prolfa")


class ProLFA(Aggregator):
    """Supervised ProLFA aggregator (output dimension ``n_prototypes``).

    Parameters (keyword-only; those of the model: they change J or the output)
    ---------------------------------------------------------------------------
    n_prototypes : int
        d̄, the number of prototypes (output dimension). At most the number of distinct training descriptors.
        With the linear kernel every ProLFA vector is a linear map of the mean d-dimensional descriptor
        (rank <= d), so on the embedded digits run (d = 9) a d̄ above 128 buys little. The paper's Scene-15
        setting is d̄ = 4096 (``conf/aggregator/prolfa_d4096.yaml``).
    lambda1 : float
        Exclusivity weight (>= 0). 0 lets prototypes share descriptors. The defaults ``lambda1 = 0.1``,
        ``lambda2 = 1`` and ``normalize = "l2_centered"`` were chosen on a validation split of the Scene-15
        training data (``docs/prolfa-bound.md``): centring matters most there; lambda1 in [0.1, 10] and
        lambda2 in [1e-3, 1] move 1-NN by less than the split noise.
    lambda2 : float
        Ridge weight on W (>= 0). 0 is allowed: the W-step then returns the minimum-norm solution wherever its
        Sylvester operator is singular.
    max_support : int or None
        Model option: at most this many non-zero weights per prototype (the k-sparse simplex, Kyrillidis et al.
        ICML 2013), so every prototype is a convex combination of at most ``max_support`` descriptors, solved by
        cBCD (the paper's Algorithm 2 with its ADMM). ``None`` is the paper's plain simplex, solved by pairwise
        Frank-Wolfe, which stops on a certified stationary point (``solver.gap_tol``). Default 4: without a cap,
        on l2 SIFT the fit term keeps lowering J by averaging ever more descriptors per prototype (convex
        combinations of unit vectors are shorter and shrink the reverse-regression term
        ``||xbar_i - y_i W^T||^2``); the exclusivity term does not stop it (it only penalises descriptors
        shared *between* prototypes). ``fit_info_["solver"]`` records the solver that ran.
    normalize : {"l2", "rootsift", "l2_centered", "rootsift_centered", "none"}
        Descriptor normalisation, at fit and transform; ``"none"`` uses them exactly as given. The
        ``*_centered`` variants then subtract the mean of the training descriptors (``descriptor_mean_``), as
        stored at fit; an empty sample's mean is the zero vector of that centred space. See
        :mod:`lfabench_plugins.aggregators.prolfa.normalize` for why centring matters on SIFT.
    feature_map : {"linear", "nystroem_rbf", "rff_rbf", "additive_chi2"}
        The kernel (:mod:`lfabench_plugins.aggregators.prolfa.featuremap`). ``"linear"`` is the paper's model
        exactly (``K = X^T X``). Otherwise every normalised descriptor is lifted by an explicit map ``phi``
        fitted on training descriptors (before centring), and the model is solved on ``phi(X)``:
        ``xbar_i = mean_phi_i^T phi(X)^T C``. The prototypes are still convex combinations of real descriptors.
        Why: with the linear kernel ProLFA's output is a linear map of each image's mean descriptor, which
        bounds its accuracy (docs/prolfa-bound.md).
    n_components : int
        Output dimension of ``nystroem_rbf`` / ``rff_rbf`` (unused otherwise).
    gamma : float
        RBF kernel width ``exp(-gamma ||x - x'||^2)`` (on l2 descriptors, squared distances lie in [0, 4]).
    feature_map_fit_size : int
        Training descriptors (drawn at random) the Nystroem map is fitted on.
    scale : float or "auto"
        Multiplies the (lifted, centred) descriptors by s, at fit and transform (1 is the paper's model).
        ``xbar`` scales with s^2 while the one-hot targets do not, so s sets the balance of the forward term
        ``||xbar W - y||^2`` against the reverse term ``||xbar - y W^T||^2`` (notes, pitfall 3). ``"auto"``
        makes ``xbar`` of order 1: ``s = 1 / sqrt(r_mu r_x)`` (RMS norms of the sample means and of the
        descriptors). Why: centred (lifted) image means are small, so at s = 1 both terms are met by ``W ~ 0``
        and the fit hardly shapes the prototypes.
    random_state : int, Generator or None
        Seeds the start (its distinct random anchor descriptors) and the feature map's sample.
    solver : SolverOptions or mapping
        How J is minimised (:class:`~lfabench_plugins.aggregators.prolfa.options.SolverOptions`: iteration caps,
        stopping rules, the candidate search, cBCD's ADMM settings). A mapping of its options (the Hydra
        config's ``solver`` node) is read the same way. Every option keeps the model and J; they change how
        close to a stationary point the fit stops and how fast it gets there.

    Attributes
    ----------
    selection_ : scipy.sparse.csc_matrix, (N, n_prototypes)
        C; every column on the probability simplex. Identical (normalised)
        descriptors are one candidate (:mod:`lfabench_plugins.aggregators.prolfa.dedup`): weights sit
        on the first occurrence of each descriptor value.
    projection_ : ndarray, (n_prototypes, c)
        W.
    prototypes_ : ndarray, (d, n_prototypes)
        ``X^T C`` (normalised descriptors).
    prototype_indices_ : ndarray of int, (n_prototypes, 2)
        For each prototype, ``(sample, descriptor within sample)`` of its largest weight.
    objective_history_ : ndarray
        J at the start (the seeded one-hot C, optimal W) then after every outer iteration (cBCD) or search
        (pairwise Frank-Wolfe).
    descriptor_mean_ : ndarray, (d,) or None
        The training mean subtracted by the ``*_centered`` normalisations (None otherwise); in the
        lifted space (dimension ``D``) when a feature map is used.
    scale_ : float
        The descriptor scale s used (``scale``, resolved).
    feature_map_ : fitted scikit-learn transformer or None
        ``phi`` (None for ``feature_map="linear"``). ``prototypes_`` is then ``(D, n_prototypes)``.
    n_iter_, converged_, fit_info_
    """

    supervised = True
    #: Solver options this plugin no longer has, at the value whose behaviour every fit has now: a record of an
    #: earlier release names them there (its config reads, :func:`~.options.solver_options`; its board label is
    #: unchanged).
    removed_params = {"solver": dict(REMOVED)}
    #: Options added after records were written, at the value that reproduces a record that does not name them
    #: (``lfabench reproduce``): records made before ``admm_patience`` ran ADMM on every outer iteration.
    introduced_params = {"solver": {"admm_patience": None, "spectral_norm": "svd", "w_svd": "wide"}}
    #: Earlier defaults that label as the default (board labels): the same fit to rounding.
    equivalent_defaults = {"solver": {"spectral_norm": "basis"}}
    _parameter_constraints = {"lambda1": [NON_NEGATIVE], "lambda2": [NON_NEGATIVE],
                              "scale": [POSITIVE, StrOptions({"auto"})], "solver": [SolverOptions, Mapping, None]}

    def __init__(self, *, n_prototypes: int = 128, lambda1: float = 0.1, lambda2: float = 1.0,
                 max_support: int | None = 4, normalize: str = "l2_centered", feature_map: str = "linear",
                 n_components: int = 1024, gamma: float = 2.0, feature_map_fit_size: int = 20000,
                 scale: float | str = 1.0, random_state=None, solver: SolverOptions | dict = SolverOptions()):
        self.n_prototypes = n_prototypes
        self.lambda1 = lambda1
        self.lambda2 = lambda2
        self.max_support = max_support
        self.normalize = normalize
        self.feature_map = feature_map
        self.n_components = n_components
        self.gamma = gamma
        self.feature_map_fit_size = feature_map_fit_size
        self.scale = scale
        self.random_state = random_state
        self.solver = solver
        # checked (not converted: get_params returns what was given) so that a bad option in a run's config
        # stops it before any work, naming the option; fit checks again (set_params may change it)
        try:
            solver_options(self.solver)
        except ValueError as exc:
            raise ValueError(f"{type(self).__name__}: {exc}") from None

    def _check_params(self) -> FitOptions:
        """Validate the model's own parameters and return what the solver reads (the ``solver`` options with the
        model's ``n_prototypes``, ``max_support`` and ``random_state``)."""
        name = type(self).__name__
        try:
            parse_normalization(self.normalize)
            check_feature_map(self.feature_map, self.n_components, self.gamma, self.feature_map_fit_size)
            return FitOptions.of(solver_options(self.solver), n_prototypes=self.n_prototypes,
                                 max_support=self.max_support, random_state=self.random_state)
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None

    def _responses(self, bags: Bags, y):
        if y is None:
            raise ValueError(f"{type(self).__name__} is supervised: fit(bags, y) needs labels or responses y")
        return check_labels(y, bags.n_samples, allow_unlabelled=self.semi_supervised)

    independent_rows = True  # each image's mean descriptor times the prototypes

    def _fit(self, bags: Bags, y):
        options = self._check_params()
        Y, labelled = self._responses(bags, y)
        if self.semi_supervised and labelled.all():
            log.warning("semi_prolfa: every training sample is labelled, so Semi-ProLFA equals ProLFA; set "
                        "the evaluator's labelled fraction (evaluator.params.labelled_fraction, e.g. 0.2) to "
                        "leave samples unlabelled")
        pb, n_rows, reps = self._problem(bags, Y, labelled, options)
        return self._set_fitted(fit_prolfa(pb, options), bags, n_rows, reps)

    def _set_fitted(self, res, bags: Bags, n_rows: int, reps: np.ndarray):
        """Store the solver's result ``res`` (rows = the distinct descriptors ``reps`` among the ``n_rows`` fit
        descriptors) as the fitted attributes; returns ``self``."""
        merged = reps.size < n_rows               # identical descriptors were merged into one candidate
        self.selection_ = expand_rows(res.selection, reps, n_rows) if merged else res.selection
        self.projection_ = res.projection
        self.prototypes_ = res.prototypes
        self.objective_history_ = np.asarray(res.objective_history)
        self.n_iter_ = res.n_iter
        self.converged_ = res.converged
        # the objective J after each outer iteration (J at the start first): the run record's training curve
        self.fit_info_ = dict(res.info, n_distinct_descriptors=int(reps.size),
                              training_curve=[float(j) for j in res.objective_history],
                              n_iter=int(res.n_iter), converged=bool(res.converged))
        best = np.asarray(self.selection_.argmax(axis=0)).ravel().astype(np.int64)
        sample = np.searchsorted(bags.offsets, best, side="right") - 1
        self.prototype_indices_ = np.stack([sample, best - bags.offsets[sample]], axis=1)
        return self

    def _problem(self, bags: Bags, Y: np.ndarray, labelled: np.ndarray, options: FitOptions):
        """The fit's :class:`Problem` (descriptors normalised, lifted, centred and scaled; identical ones merged),
        the number N of descriptors before merging and the rows kept (``reps``). Sets ``feature_map_``,
        ``descriptor_mean_`` and ``scale_``."""
        Xn = normalize_descriptors(bags.descriptors, self.normalize)
        # the kernel's feature map: fitted on training descriptors only (after the per-descriptor
        # normalisation, before centring), stored, and applied identically at transform
        self.feature_map_ = (None if self.feature_map == "linear" else
                             fit_feature_map(Xn, self.feature_map, self.n_components, self.gamma,
                                             self.feature_map_fit_size, options.rng()))
        Xn = apply_feature_map(self.feature_map_, Xn)
        centered = parse_normalization(self.normalize)[1]
        self.descriptor_mean_ = Xn.mean(axis=0, dtype=np.float64) if centered else None
        X, Mu = self._centred_and_pooled(bags, Xn)
        self._fit_pooled = Mu, bags.dtype         # every fit sample's mean: fit_transform's vectors, unscaled
        del Xn                                    # centred, X is a copy: one N x D array fewer from here on
        self.scale_ = self._fit_scale(X, Mu)
        if self.scale_ != 1.0:
            X, Mu = (X * self.scale_).astype(X.dtype, copy=False), Mu * self.scale_
        Mu = Mu[labelled]
        # identical descriptors are one candidate (lfabench_plugins.aggregators.prolfa.dedup); the means above use them all
        reps, _ = distinct_rows(X)
        if int(self.n_prototypes) > reps.size:
            raise ValueError(f"{type(self).__name__}: n_prototypes={self.n_prototypes} exceeds the number of "
                             f"distinct descriptors ({reps.size} of {X.shape[0]}, after normalize="
                             f"{self.normalize!r}); identical descriptors are one prototype candidate")
        n_rows = X.shape[0]
        if reps.size < n_rows:
            X = X[reps]                           # the merged copy only: one (N, D) array fewer during the fit
        return Problem.build(X, Mu, Y[labelled], self.lambda1, self.lambda2), n_rows, reps

    #: How :meth:`prototype_support` ranks prototypes (``lfabench explain`` shows the heaviest first).
    WEIGHT_DEFINITION = ("||W[p, :]||_2, the Euclidean norm of prototype p's row of the learned regression W "
                         "(projection_, d̄ x c): how strongly its feature moves the class responses")

    def prototype_support(self) -> PrototypeSupport:
        """``C`` (``selection_``, rows = the fit descriptors) and each prototype's weight ``||W[p, :]||_2``.

        The row norm of ``W`` is the size of the change in the predicted class responses ``x̄ W`` (the
        model's forward term) per unit of prototype ``p``'s feature. Every feature is the same
        normalised descriptors' mean against a convex combination of them, so the norms are on one
        scale; the weight ignores how much a feature varies across images.
        """
        not_fitted(self, "selection_")
        return PrototypeSupport(self.selection_, np.linalg.norm(self.projection_, axis=1), self.WEIGHT_DEFINITION)

    def _fit_scale(self, X: np.ndarray, Mu: np.ndarray) -> float:
        """The descriptor scale s (``scale``; ``"auto"``: ``1 / sqrt(r_mu r_x)`` with ``r_mu``, ``r_x`` the RMS
        norms of the sample means and of the descriptors, so that ``xbar = s^2 mu^T X^T c`` is of order 1,
        the scale of the one-hot targets)."""
        if self.scale != "auto":
            return float(self.scale)
        r_mu = float(np.sqrt(np.mean(np.einsum("ij,ij->i", Mu, Mu))))
        r_x = float(np.sqrt(np.mean(np.einsum("ij,ij->i", X, X, dtype=np.float64)))) if X.size else 0.0
        return 1.0 / np.sqrt(r_mu * r_x) if r_mu * r_x > 0 else 1.0

    def _centred_and_pooled(self, bags: Bags, Xn: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(X, Mu)``: the normalised descriptors ``Xn`` ``(N, d)`` less ``descriptor_mean_`` (if any), and
        each sample's mean of them, ``(m, d)`` float64 (an empty sample's is zero)."""
        X = center_descriptors(Xn, self.descriptor_mean_)
        Mu = bags.with_descriptors(X).means() if X is not bags.descriptors else bags.means()
        return X, np.asarray(Mu, dtype=np.float64)

    def fit_transform(self, bags, y=None) -> np.ndarray:
        """``fit`` then the vectors of ``bags``, from the sample means the fit computed (the same arithmetic as
        :meth:`transform`)."""
        self.fit(bags, y)
        (Mu, dtype), self._fit_pooled = self._fit_pooled, None
        return self._vectors(Mu, dtype)

    def _transform(self, bags: Bags) -> np.ndarray:
        self._fit_pooled = None                   # a plain fit's means: not needed once transforming
        Xn = apply_feature_map(self.feature_map_, normalize_descriptors(bags.descriptors, self.normalize))
        _, Mu = self._centred_and_pooled(bags, Xn)
        return self._vectors(Mu, bags.dtype)

    def _vectors(self, Mu: np.ndarray, dtype) -> np.ndarray:
        """``(m, d̄)`` vectors of the samples whose (centred, mapped) mean descriptors are ``Mu``."""
        out = (Mu * getattr(self, "scale_", 1.0)) @ self.prototypes_
        return out if dtype == np.float64 else out.astype(np.float32)


class SemiProLFA(ProLFA):
    """Semi-supervised ProLFA (eq. "ModelSemi"): ``y = -1`` marks unlabelled samples.

    Same parameters and attributes as :class:`ProLFA`. Unlabelled samples
    contribute their descriptors as prototype candidates but no loss term.

    When every sample is labelled (no ``-1`` in ``y``) the model *is* ProLFA:
    same problem, same result. The labelled fraction is not a parameter of
    this aggregator but of the evaluator (``evaluator.params.labelled_fraction``,
    default 1.0, which marks the rest of the training samples ``-1``); with the
    default, ``lfabench run aggregator=semi_prolfa`` therefore equals
    ``aggregator=prolfa``, and the fit logs a warning saying so.
    """

    semi_supervised = True


def _defaults(cls) -> dict:
    """The plugin's default config: its keyword defaults, the solver options as plain data (every option shown)."""
    return dict(default_params(cls), solver=SolverOptions().as_config())


@hookimpl
def lfabench_aggregators():
    return [
        PluginSpec("prolfa", ProLFA, "ProLFA: supervised prototype selection (cBCD with a support cap, pairwise "
                   "Frank-Wolfe on the plain simplex), kernel-free and sparse (Zhang, Zhu & Zhao)",
                   defaults=_defaults(ProLFA)),
        PluginSpec("semi_prolfa", SemiProLFA, "Semi-ProLFA: ProLFA with unlabelled samples (y=-1) as extra "
                   "prototype candidates", defaults=_defaults(SemiProLFA)),
    ]
