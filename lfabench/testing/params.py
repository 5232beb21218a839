"""The parameter check of every plugin kind (scikit-learn's ``check_param_validation``).

:func:`check_param_validation` holds a plugin to the one validator (:mod:`lfabench.params`): every
parameter is declared (an annotation, a default of a plain type or a ``_parameter_constraints`` entry),
the defaults pass, and a value of no declared type is refused, naming the parameter, by the command
line's check and, for a plugin class (an :class:`~lfabench.estimator.Estimator`), by its constructor
and, for an aggregator, by ``fit`` after ``set_params``, in the same words.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from ..params import ConfigError, check_params, expectations, undeclared_params


class InvalidValue:
    """A value no parameter declares (scikit-learn's check uses an instance of a fresh class the same way)."""

    def __repr__(self) -> str:
        return "InvalidValue()"


def _defaults(factory: Callable) -> dict[str, Any]:
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in parameters
            if p.default is not p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}


def _core(message: str) -> str:
    """The words both routes share: the message without its owner and the command line's override hint."""
    words = message.split(": ", 1)[-1]
    return words.rsplit(" (`", 1)[0]


def check_param_validation(kind: str, name: str, factory: Callable, params: dict[str, Any], bags=None, y=None):
    """Every parameter of ``factory`` declared and checked by the one validator.

    ``params``: values the plugin builds with (the battery's); ``bags``/``y``: fit data for an aggregator (the
    check then also sets each invalid value with ``set_params`` and expects ``fit`` to refuse it)."""
    undeclared = undeclared_params(factory)
    assert not undeclared, (f"{kind} {name!r}: parameter(s) {', '.join(undeclared)} declare nothing the validator can "
                            f"check: annotate them (int, float | None, Literal[...], ...) or give them a "
                            f"_parameter_constraints entry")
    try:
        check_params(kind, name, factory, _defaults(factory))
    except ConfigError as exc:
        raise AssertionError(f"a default is refused by its own declaration: {exc}") from None
    is_class = inspect.isclass(factory)
    for key in expectations(factory)[0]:
        bad = InvalidValue()
        try:
            check_params(kind, name, factory, {key: bad})
        except ConfigError as exc:
            cli = str(exc)
        else:
            raise AssertionError(f"{kind} {name!r}: {key}={bad!r} is accepted by the command line's check")
        assert f"parameter {key}=" in cli, f"the command line's refusal does not name {key}: {cli}"
        if not is_class:
            continue
        routes = [("the constructor", lambda: factory(**{**params, key: bad}))]
        if bags is not None and callable(getattr(factory, "fit", None)):
            routes.append(("fit after set_params", lambda: factory(**params).set_params(**{key: bad}).fit(bags, y)))
        for route, call in routes:
            try:
                call()
            except ConfigError as exc:
                assert _core(str(exc)) == _core(cli), (f"{route} words {key}'s refusal otherwise than the command "
                                                       f"line: {exc!s} / {cli}")
            else:
                raise AssertionError(f"{kind} {name!r}: {route} accepts {key}={bad!r}")
