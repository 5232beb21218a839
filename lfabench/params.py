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
"""

from __future__ import annotations

import inspect
import numbers
import types
import typing
from numbers import Integral, Real
from typing import Any, Callable

_NO_RULE = object()


class Interval:
    """scikit-learn's ``Interval(type, left, right, closed=...)`` constraint, stated without importing
    scikit-learn (over a second at start-up, which every plugin module naming a range would pay).

    ``type``: ``numbers.Integral`` or ``numbers.Real``; ``left``/``right``: the bounds (``None``: unbounded);
    ``closed``: ``"left"``, ``"right"``, ``"both"`` or ``"neither"``. :func:`check_params` checks it as the
    scikit-learn ``Interval`` of the same arguments (:meth:`to_sklearn`); a plugin may use either class.
    """

    __slots__ = ("type", "left", "right", "closed")

    def __init__(self, type, left, right, *, closed: str):  # noqa: A002 - scikit-learn's signature
        self.type, self.left, self.right, self.closed = type, left, right, closed

    def __repr__(self) -> str:
        return f"Interval({self.type.__name__}, {self.left!r}, {self.right!r}, closed={self.closed!r})"

    def to_sklearn(self):
        """The same constraint as ``sklearn.utils._param_validation.Interval``."""
        from sklearn.utils._param_validation import Interval as SklearnInterval

        return SklearnInterval(self.type, self.left, self.right, closed=self.closed)


#: The largest seed: NumPy's legacy ``RandomState`` and scikit-learn take seeds in [0, 2**32 - 1].
MAX_SEED = 2**32 - 1
_COUNT = Interval(Integral, 1, None, closed="left")
#: A count where 0 is meaningful (e.g. ``max_iter=0``: the unsupervised start of a supervised method); a plugin
#: whose parameter takes 0 declares ``_parameter_constraints = {name: [COUNT_OR_ZERO]}``.
COUNT_OR_ZERO = Interval(Integral, 0, None, closed="left")
_SEED = Interval(Integral, 0, MAX_SEED, closed="both")

#: Constraints of parameter names that mean the same in every plugin (scikit-learn's constraint lists;
#: ``None`` is accepted as well wherever the plugin's signature allows it: see :func:`constraints`).
CONVENTIONS: dict[str, list] = {
    **{name: [_COUNT] for name in (
        "n_clusters", "n_components", "n_atoms", "n_prototypes", "n_anchors", "n_estimators", "n_neighbors",
        "kmeans_iter", "gmm_iter", "max_iter", "max_training_descriptors", "max_whitening_descriptors",
        "descriptors_per_image", "batch_size", "k")},
    "random_state": [_SEED],
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


def check_params(kind: str, name: str, factory: Callable, params: dict[str, Any]) -> None:
    """Raise :class:`ConfigError` for an unknown parameter, a value of the wrong type or out of its range."""
    expected, any_keyword = expectations(factory)
    for key, value in params.items():
        if key not in expected:
            if any_keyword:
                continue
            raise ConfigError(f"{kind} {name!r} has no parameter {key!r}; its parameters are "
                              f"{', '.join(expected) or '(none)'}")
        if not conforms(value, expected[key]):
            raise ConfigError(f"{kind} {name!r}: parameter {key}={value!r} must be {_describe(expected[key])} "
                              f"(`{kind}.params.{key}=...`)")
    rules = constraints(factory)
    checked = [key for key in params if key in rules]
    if not checked:
        return
    from sklearn.utils._param_validation import InvalidParameterError, validate_parameter_constraints

    for key in checked:
        value = params[key]
        rule = [c.to_sklearn() if isinstance(c, Interval) else c for c in rules[key]]
        try:
            validate_parameter_constraints({key: rule}, {key: value}, caller_name=f"{kind} {name!r}")
        except InvalidParameterError as exc:
            # scikit-learn's message names the parameter, the plugin, the range and the value
            raise ConfigError(f"{exc} (`{kind}.params.{key}=...`)") from None


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
