"""scikit-learn's parameter convention without importing scikit-learn.

:class:`Estimator` is the base of every plugin kind with hyper-parameters (aggregators, descriptors,
evaluators). It implements scikit-learn's ``BaseEstimator`` contract for parameters: ``__init__`` keyword
arguments stored unchanged under the same names; ``get_params(deep=True) -> dict``;
``set_params(**params) -> self`` (``<component>__<parameter>`` for nested estimators); so that
``sklearn.base.clone`` rebuilds an unfitted copy. ``import sklearn`` loads scipy.stats and pandas (over a
second of CPU), which every command and every run of a sweep would pay at start-up; this module loads
neither. :func:`not_fitted` raises scikit-learn's ``NotFittedError`` (imported only then).

Every estimator checks the arguments it is built with before its ``__init__`` runs
(:func:`lfabench.params.check_arguments`, the rule and the words of the command line): a subclass's
``__init__`` is wrapped, and the outermost constructor checks. :meth:`Estimator.validate_params` checks the
stored parameters again (an aggregator's ``fit`` does: ``set_params`` may have changed them).
"""

from __future__ import annotations

import functools
import inspect
from collections import defaultdict

from .params import check_arguments, validate_params

__all__ = ["Estimator", "not_fitted"]


class Estimator:
    """Hyper-parameters as ``__init__`` keyword arguments, with scikit-learn's ``get_params``/``set_params``."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None or getattr(init, "__validates__", False):
            return

        @functools.wraps(init)
        def __init__(self, *args, **kw):
            if type(self).__init__ is __init__:  # the outermost constructor: its arguments are the parameters
                check_arguments(type(self), args, kw)
            init(self, *args, **kw)

        __init__.__validates__ = True
        cls.__init__ = __init__

    def validate_params(self) -> None:
        """Raise :class:`lfabench.params.ConfigError` naming the first parameter whose value its declaration
        (annotation, default's type, ``_parameter_constraints``) refuses, in the command line's words."""
        validate_params(self)

    @classmethod
    def _get_param_names(cls) -> list[str]:
        """The sorted names of ``__init__``'s parameters (no ``*args``: scikit-learn's rule)."""
        init = cls.__init__
        if init is object.__init__:
            return []
        parameters = [p for p in inspect.signature(init).parameters.values()
                      if p.name != "self" and p.kind != p.VAR_KEYWORD]
        for p in parameters:
            if p.kind == p.VAR_POSITIONAL:
                raise RuntimeError(f"{cls.__name__}: an estimator states its parameters in the signature of its "
                                   f"__init__ (no *args)")
        return sorted(p.name for p in parameters)

    def get_params(self, deep: bool = True) -> dict:
        """Parameter names mapped to their values; ``deep`` adds ``<name>__<param>`` of nested estimators."""
        out = {}
        for key in self._get_param_names():
            value = getattr(self, key)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{key}__{k}", v) for k, v in value.get_params().items())
            out[key] = value
        return out

    def set_params(self, **params):
        """Set parameters (``<component>__<parameter>`` reaches a nested estimator); returns ``self``.

        An unknown name raises ``ValueError`` listing the valid ones, as scikit-learn does."""
        if not params:
            return self
        valid = self.get_params(deep=True)
        nested: dict[str, dict] = defaultdict(dict)
        for key, value in params.items():
            key, delim, sub_key = key.partition("__")
            if key not in valid:
                raise ValueError(f"Invalid parameter {key!r} for estimator {self}. "
                                 f"Valid parameters are: {self._get_param_names()!r}.")
            if delim:
                nested[key][sub_key] = value
            else:
                setattr(self, key, value)
                valid[key] = value
        for key, sub_params in nested.items():
            valid[key].set_params(**sub_params)
        return self

    def __repr__(self) -> str:
        """``Name(param=value, ...)`` with the parameters that differ from ``__init__``'s defaults (as
        scikit-learn prints an estimator)."""
        try:
            signature = inspect.signature(type(self).__init__).parameters
            changed = []
            for key, value in self.get_params(deep=False).items():
                default = signature[key].default
                same = value is default
                if not same:
                    try:
                        same = bool(type(value) is type(default) and value == default)
                    except Exception:  # arrays and other values without a truth value
                        same = False
                if not same:
                    changed.append(f"{key}={value!r}")
        except Exception:  # a half-built object (e.g. a failing __init__ in a debugger)
            return f"{type(self).__name__}(...)"
        return f"{type(self).__name__}({', '.join(changed)})"


def not_fitted(estimator, attribute: str) -> None:
    """Raise scikit-learn's ``NotFittedError`` unless ``estimator`` has ``attribute`` (set by ``fit``)."""
    if not hasattr(estimator, attribute):
        from sklearn.exceptions import NotFittedError

        raise NotFittedError(f"This {type(estimator).__name__} instance is not fitted yet. Call 'fit' with "
                             f"appropriate arguments before using this estimator.")
