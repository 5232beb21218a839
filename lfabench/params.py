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
"""

from __future__ import annotations

import inspect
import numbers
import types
import typing
from typing import Any, Callable

_NO_RULE = object()


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


def check_params(kind: str, name: str, factory: Callable, params: dict[str, Any]) -> None:
    """Raise :class:`ConfigError` for an unknown parameter or a value of the wrong type."""
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


def check_seed(seed: Any) -> int:
    """The run's seed as an int; booleans, fractions and text are refused (never ``true`` read as 1)."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise ConfigError(f"seed={seed!r} must be an integer (e.g. seed=0)")
    return int(seed)
