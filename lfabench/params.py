"""Check a plugin's parameters against its factory's signature before anything is computed.

Hydra hands plugins whatever the command line or a YAML file says: ``n_clusters=2.5`` arrives as a
float, ``seed=true`` as a bool, ``n_clusters=abc`` as a string. Passed on, many factories would
truncate (``int(2.5) == 2``) or fail much later, after the descriptors were extracted, with a
message that does not name the parameter. :func:`check_params` refuses such values at once with a
:class:`ConfigError` naming the plugin, the parameter and what it expects.

What a parameter expects comes from the factory's type annotations (``int``, ``float | None``,
``Literal[...]``, ...) and, where a parameter has none, from the type of its default (an ``int``
default takes integers only, a ``float`` default any real number, a ``bool`` default booleans, a
``str`` default strings). Parameters whose expectation cannot be told (no annotation, ``None``
default) are left to the plugin.

What values a parameter takes (``n_clusters`` at least 1, ``test_fraction`` strictly between 0 and 1)
comes from scikit-learn's constraint convention: a factory's ``_parameter_constraints``
(``{name: [Interval(Integral, 1, None, closed="left"), None, ...]}``, checked with
:func:`sklearn.utils._param_validation.validate_parameter_constraints`), on top of
:data:`CONVENTIONS`, the constraints of the parameter names every plugin uses with one meaning
(a plugin's own ``_parameter_constraints`` entry replaces the convention of that name).
Checks that need the dataset (``k`` no larger than the training set) are the plugin's
``check_setting(dataset, seed)`` (:func:`check_setting`), called once the dataset is
listed and before any descriptor is extracted.

One rule, two routes, one message: :func:`parameter_problem` says what is wrong with one value
(``"parameter n_clusters=2.5 must be an integer"``). The command line (:func:`check_params`, a run's
config stage) prefixes the plugin (``aggregator 'vlad': ...``) and suffixes the override to change;
from Python, every :class:`~lfabench.estimator.Estimator` checks the arguments it is built with
(:func:`check_arguments`) and an aggregator its stored parameters again when it is fitted
(:func:`validate_params`): ``VLAD: parameter n_clusters=2.5 must be an integer``. Both raise
:class:`ConfigError`.
"""

from __future__ import annotations

import functools
import inspect
import numbers
import types
import typing
from numbers import Integral, Real
from typing import Any, Callable

import numpy as np

_NO_RULE = object()


class Interval:
    """scikit-learn's ``Interval(type, left, right, closed=...)`` constraint, stated without importing
    scikit-learn (over a second at start-up, which every plugin module naming a range would pay).

    ``type``: ``numbers.Integral`` or ``numbers.Real``; ``left``/``right``: the bounds (``None``: unbounded);
    ``closed``: ``"left"``, ``"right"``, ``"both"`` or ``"neither"``. It accepts and words a value as the
    scikit-learn ``Interval`` of the same arguments (:meth:`to_sklearn`) does; a plugin may use either class.
    """

    __slots__ = ("type", "left", "right", "closed")

    def __init__(self, type, left, right, *, closed: str):  # noqa: A002 - scikit-learn's signature
        self.type, self.left, self.right, self.closed = type, left, right, closed

    def __repr__(self) -> str:
        return f"Interval({self.type.__name__}, {self.left!r}, {self.right!r}, closed={self.closed!r})"

    def is_satisfied_by(self, value) -> bool:
        """scikit-learn's ``Interval.is_satisfied_by``: an instance of ``type`` (NaN excluded) within the bounds."""
        if not isinstance(value, self.type):
            return False
        if value != value:  # NaN: in no interval
            return False
        # a missing bound is an infinite one, open or closed as ``closed`` says (scikit-learn's rule: inf is outside
        # [0, inf) and inside [0, inf])
        left = -float("inf") if self.left is None else self.left
        right = float("inf") if self.right is None else self.right
        if value < left if self.closed in ("left", "both") else value <= left:
            return False
        return value <= right if self.closed in ("right", "both") else value < right

    def __str__(self) -> str:
        """scikit-learn's wording: ``an int in the range [1, inf)``, ``a float in the range (0.0, 1.0)``."""
        integral = self.type is Integral
        left = "-inf" if self.left is None else (self.left if integral else float(self.left))
        right = "inf" if self.right is None else (self.right if integral else float(self.right))
        return (f"{'an int' if integral else 'a float'} in the range {'[' if self.closed in ('left', 'both') else '('}"
                f"{left}, {right}{']' if self.closed in ('right', 'both') else ')'}")

    def to_sklearn(self):
        """The same constraint as ``sklearn.utils._param_validation.Interval``."""
        from sklearn.utils._param_validation import Interval as SklearnInterval

        return SklearnInterval(self.type, self.left, self.right, closed=self.closed)


class StrOptions:
    """scikit-learn's ``StrOptions(options)`` constraint (a string among ``options``), stated without importing
    scikit-learn; accepted and worded as scikit-learn's (``a str among {'auto'}``)."""

    __slots__ = ("options",)

    def __init__(self, options):
        self.options = frozenset(options)

    def __repr__(self) -> str:
        return f"StrOptions({set(self.options)!r})"

    def is_satisfied_by(self, value) -> bool:
        return isinstance(value, str) and value in self.options

    def __str__(self) -> str:
        return f"a str among {{{', '.join(repr(o) for o in sorted(self.options))}}}"


#: The largest seed: NumPy's legacy ``RandomState`` and scikit-learn take seeds in [0, 2**32 - 1].
MAX_SEED = 2**32 - 1
#: A count: an integer >= 1 (the convention of ``n_clusters``, ``max_iter``, ... in :data:`CONVENTIONS`).
COUNT = Interval(Integral, 1, None, closed="left")
#: A count where 0 is meaningful (e.g. ``max_iter=0``: the unsupervised start of a supervised method); a plugin
#: whose parameter takes 0 declares ``_parameter_constraints = {name: [COUNT_OR_ZERO]}``.
COUNT_OR_ZERO = Interval(Integral, 0, None, closed="left")
#: A real number > 0 (a scale, a softness).
POSITIVE = Interval(Real, 0, None, closed="neither")
#: A real number >= 0 (a regularisation weight).
NON_NEGATIVE = Interval(Real, 0, None, closed="left")
_SEED = Interval(Integral, 0, MAX_SEED, closed="both")

#: Constraints of parameter names that mean the same in every plugin (scikit-learn's constraint lists;
#: ``None`` is accepted as well wherever the plugin's signature allows it: see :func:`constraints`).
CONVENTIONS: dict[str, list] = {
    **{name: [COUNT] for name in (
        "n_clusters", "n_components", "n_atoms", "n_prototypes", "n_anchors", "n_estimators", "n_neighbors",
        "kmeans_iter", "gmm_iter", "max_iter", "max_training_descriptors", "max_whitening_descriptors",
        "descriptors_per_image", "batch_size", "k")},
    # a RandomState as scikit-learn's ``random_state`` takes (from Python; a config holds ints)
    "random_state": [_SEED, np.random.RandomState],
    "seed": [_SEED],
    "test_fraction": [Interval(Real, 0, 1, closed="neither")],
    "labelled_fraction": [Interval(Real, 0, 1, closed="right")],
}


class ConfigError(ValueError):
    """A configuration value a user gave is wrong (the message names the setting and what it expects)."""


def _describe(annotation) -> str:
    if annotation is type(None):
        return "null"
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(a) for a in typing.get_args(annotation))
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(annotation))
    return {bool: "a boolean", int: "an integer", float: "a real number", str: "a string",
            list: "a list", tuple: "a list", dict: "a mapping"}.get(annotation, getattr(annotation, "__name__",
                                                                                         str(annotation)))


def conforms(value: Any, annotation) -> bool:
    """Whether ``value`` fits ``annotation`` (unknown annotations accept anything)."""
    if annotation is _NO_RULE or annotation is Any or annotation is inspect.Parameter.empty:
        return True
    if annotation is type(None) or annotation is None:
        return value is None
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(conforms(value, a) for a in typing.get_args(annotation))
    if origin is typing.Literal:
        return value in typing.get_args(annotation)
    if origin in (list, tuple, typing.Sequence) or annotation in (list, tuple):
        return isinstance(value, (list, tuple))
    if origin is dict or annotation is dict:
        return isinstance(value, dict)
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if annotation is float:
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    if annotation is str:
        return isinstance(value, str)
    return True


def expectations(factory: Callable) -> tuple[dict[str, Any], bool]:
    """``({parameter: annotation or rule}, takes_any_keyword)`` for ``factory``'s keyword parameters."""
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):
        return {}, True
    target = factory.__init__ if inspect.isclass(factory) else factory
    try:
        hints = typing.get_type_hints(target)
    except Exception:  # noqa: BLE001 - unresolvable annotations: fall back to the defaults' types
        hints = {}
    out, any_keyword = {}, False
    for p in sig.parameters.values():
        if p.kind == p.VAR_KEYWORD:
            any_keyword = True
            continue
        if p.kind == p.VAR_POSITIONAL:
            continue
        if p.name in hints:
            out[p.name] = hints[p.name]
        elif p.default is not p.empty and type(p.default) in (bool, int, float, str):
            out[p.name] = type(p.default)
        else:
            out[p.name] = _NO_RULE
    return out, any_keyword


def _allows_none(factory: Callable, name: str, annotation) -> bool:
    if annotation is not _NO_RULE and conforms(None, annotation) and annotation is not inspect.Parameter.empty:
        return True
    try:
        param = inspect.signature(factory).parameters.get(name)
    except (TypeError, ValueError):
        return False
    return param is not None and param.default is None


def constraints(factory: Callable) -> dict[str, list]:
    """The value constraints of ``factory``'s parameters (scikit-learn's format): :data:`CONVENTIONS` for
    the names it takes (plus ``None`` where its signature allows it), replaced by its own
    ``_parameter_constraints``."""
    expected, _ = expectations(factory)
    out = {}
    for name, annotation in expected.items():
        if name in CONVENTIONS:
            out[name] = list(CONVENTIONS[name]) + ([None] if _allows_none(factory, name, annotation) else [])
    out.update(getattr(factory, "_parameter_constraints", None) or {})
    return out


@functools.lru_cache(maxsize=None)
def _rules(factory: Callable) -> tuple[dict[str, Any], bool, dict[str, list]]:
    """``(expectations, takes_any_keyword, constraints)`` of ``factory``, read once per factory."""
    expected, any_keyword = expectations(factory)
    return expected, any_keyword, constraints(factory)


def _satisfies(value: Any, constraint) -> bool:
    if constraint is None:
        return value is None
    if isinstance(constraint, (Interval, StrOptions)):
        return constraint.is_satisfied_by(value)
    if isinstance(constraint, type):
        return isinstance(value, constraint)
    from sklearn.utils._param_validation import make_constraint  # another scikit-learn constraint

    return make_constraint(constraint).is_satisfied_by(value)


def _describe_constraint(constraint) -> str:
    if constraint is None:
        return "None"
    if isinstance(constraint, (Interval, StrOptions)):
        return str(constraint)
    if isinstance(constraint, type):
        return f"an instance of {constraint.__name__!r}"
    from sklearn.utils._param_validation import make_constraint

    return str(make_constraint(constraint))


def parameter_problem(factory: Callable, key: str, value: Any) -> str | None:
    """What is wrong with ``value`` for ``factory``'s parameter ``key`` (``"parameter n_clusters=0 must be an int in
    the range [1, inf)"``), or None when it is accepted: its type (annotation or default), then its constraints
    (scikit-learn's rule: any one of the list satisfied). Every route of a value into a plugin asks this."""
    expected, _, rules = _rules(factory)
    annotation = expected.get(key, _NO_RULE)
    if not conforms(value, annotation):
        return f"parameter {key}={value!r} must be {_describe(annotation)}"
    rule = rules.get(key)
    if not rule or rule == "no_validation" or any(_satisfies(value, c) for c in rule):
        return None
    words = [_describe_constraint(c) for c in rule]
    return f"parameter {key}={value!r} must be " + (f"{', '.join(words[:-1])} or {words[-1]}" if len(words) > 1
                                                    else words[0])


def check_params(kind: str, name: str, factory: Callable, params: dict[str, Any]) -> None:
    """The command line's route: raise :class:`ConfigError` for an unknown parameter, a value of the wrong type
    or out of its range, naming the plugin and the override (``aggregator 'vlad': parameter n_clusters=2.5 must
    be an integer (`aggregator.params.n_clusters=...`)``)."""
    expected, any_keyword, _ = _rules(factory)
    for key, value in params.items():
        if key not in expected:
            if any_keyword:
                continue
            raise ConfigError(f"{kind} {name!r} has no parameter {key!r}; its parameters are "
                              f"{', '.join(expected) or '(none)'}")
        problem = parameter_problem(factory, key, value)
        if problem is not None:
            raise ConfigError(f"{kind} {name!r}: {problem} (`{kind}.params.{key}=...`)")


def check_arguments(factory: Callable, args: tuple, kwargs: dict[str, Any]) -> None:
    """The Python route at construction: raise :class:`ConfigError` for the first argument of ``factory(*args,
    **kwargs)`` that :func:`parameter_problem` refuses (``BoW: parameter n_clusters='4' must be an integer``),
    before the factory runs. Arguments that do not bind to its signature are left to Python's own TypeError."""
    try:
        bound = inspect.signature(factory).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return
    expected, _, _ = _rules(factory)
    for key, value in bound.arguments.items():
        if key in expected:
            problem = parameter_problem(factory, key, value)
            if problem is not None:
                raise ConfigError(f"{getattr(factory, '__name__', factory)}: {problem}")


def validate_params(estimator: Any) -> None:
    """The Python route: raise :class:`ConfigError` for the first parameter of ``estimator`` (its ``__init__``
    arguments, read back under the same names) that :func:`parameter_problem` refuses, in the words of the
    command line (``VLAD: parameter n_clusters=2.5 must be an integer``)."""
    factory = type(estimator)
    expected, _, _ = _rules(factory)
    for key in expected:
        value = getattr(estimator, key, _NO_RULE)
        if value is _NO_RULE:  # not stored under its name: get_params reports it missing, not this check
            continue
        problem = parameter_problem(factory, key, value)
        if problem is not None:
            raise ConfigError(f"{factory.__name__}: {problem}")


def undeclared_params(factory: Callable) -> list[str]:
    """The parameters of ``factory`` with no rule (no annotation, no typed default, no constraint): values
    the validator cannot refuse."""
    expected, _, rules = _rules(factory)
    return [key for key, annotation in expected.items()
            if (annotation is _NO_RULE or annotation is Any) and key not in rules]


def check_setting(kind: str, name: str, plugin: Any, dataset: Any, seed: int) -> None:
    """Run ``plugin.check_setting(dataset, seed)`` where the plugin declares it: the checks of its parameters
    against the dataset (e.g. ``k`` against the number of training samples), before anything is computed.
    A ``ValueError`` it raises becomes a :class:`ConfigError` naming the plugin."""
    check = getattr(plugin, "check_setting", None)
    if not callable(check):
        return
    try:
        check(dataset, seed)
    except ConfigError:
        raise
    except ValueError as exc:
        raise ConfigError(f"{kind} {name!r}: {exc}") from exc


def check_seed(seed: Any) -> int:
    """The run's seed as an int in [0, 2**32 - 1]; booleans, fractions, text and negative numbers are refused
    (never ``true`` read as 1; NumPy's and scikit-learn's generators take no negative seed)."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise ConfigError(f"seed={seed!r} must be an integer (e.g. seed=0)")
    if not 0 <= seed <= MAX_SEED:
        raise ConfigError(f"seed={seed!r} must be an integer from 0 to {MAX_SEED} (e.g. seed=0)")
    return int(seed)
