"""The machinery shared by every plugin kind's battery: named checks, bound cases, results.

A *check* is a plain function ``check_<what>(*subject)`` that raises ``AssertionError``
(or any exception) when the plugin breaks the contract. A :class:`Case` binds one check to
one subject (the plugin instance and its data) and carries the reason of a *declared
expected failure*, if any, so that a plugin author can say "this check does not apply to
me, because ..." instead of silently skipping it. An expected failure that passes is
reported (``xpass``): stale declarations do not survive.
"""

from __future__ import annotations

import sys
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence


class CheckSkip(Exception):
    """The battery cannot run on this plugin here (optional extra or real data missing...); the message says why."""


@dataclass
class Case:
    """One check bound to one subject; calling it runs the check."""

    kind: str
    name: str
    check: Callable[..., None]
    subject: tuple
    expected_failure: str | None = None

    @property
    def __name__(self) -> str:  # parametrize ids, ``aggregator_checks`` compatibility
        return self.name

    def run(self) -> None:
        """Run the check; raises :class:`CheckSkip` when it cannot run here."""
        try:
            self.check(*self.subject)
        except ModuleNotFoundError as exc:  # an optional extra the plugin imports lazily
            raise CheckSkip(f"needs an optional dependency that is not installed: {exc}") from exc

    def __call__(self) -> None:
        try:
            self.run()
        except CheckSkip as exc:
            if "pytest" in sys.modules:  # under pytest a skip is a skip, with its reason
                sys.modules["pytest"].skip(str(exc))
            raise

    def __repr__(self) -> str:
        return f"<Case {self.kind}:{self.name}>"


@dataclass
class CheckResult:
    """What running one case gave: ``pass``, ``fail``, ``xfail`` (declared, failed) or ``xpass`` (declared, passed)."""

    name: str
    status: str
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status in ("pass", "xfail")


def bind(kind: str, checks: Sequence[Callable], subject: tuple, select: Iterable[str] | None = None,
         skip: Iterable[str] = (), expected_failures: Mapping[str, str] | None = None) -> list[Case]:
    """Bind ``checks`` to ``subject``; ``select``/``skip`` pick checks by name; unknown names are an error."""
    names = [c.__name__ for c in checks]
    expected_failures = dict(expected_failures or {})
    wanted = None if select is None else list(select)
    for label, given in (("select", wanted or []), ("skip", list(skip)), ("expected_failures", expected_failures)):
        unknown = sorted(set(given) - set(names))
        if unknown:
            raise ValueError(f"{kind} checks: unknown check name(s) in {label}: {', '.join(unknown)}; "
                             f"the {kind} checks are {', '.join(names)}")
    for name, reason in expected_failures.items():
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError(f"{kind} checks: expected failure {name!r} needs a reason (a non-empty string)")
    out = []
    for check in checks:
        if check.__name__ in set(skip) or (wanted is not None and check.__name__ not in wanted):
            continue
        out.append(Case(kind, check.__name__, check, subject, expected_failures.get(check.__name__)))
    return out


def run_cases(cases: Sequence[Case]) -> list[CheckResult]:
    """Run every case (none stops the others); a declared expected failure that passes is ``xpass``."""
    results = []
    for case in cases:
        try:
            case.run()
        except CheckSkip as exc:
            results.append(CheckResult(case.name, "skip", str(exc)))
            continue
        except Exception as exc:  # noqa: BLE001 - a check's failure is a result, not a crash
            message = f"{type(exc).__name__}: {exc}".strip()
            if case.expected_failure:
                results.append(CheckResult(case.name, "xfail", case.expected_failure))
            else:
                tb = traceback.extract_tb(exc.__traceback__)
                where = f" (at {tb[-1].filename}:{tb[-1].lineno})" if tb else ""
                results.append(CheckResult(case.name, "fail", message + where))
            continue
        if case.expected_failure:
            results.append(CheckResult(case.name, "xpass", f"declared as an expected failure "
                                                           f"({case.expected_failure}) but it passes"))
        else:
            results.append(CheckResult(case.name, "pass"))
    return results


def parametrize(cases: Sequence[Case], argname: str = "check"):
    """A ``pytest.mark.parametrize`` over ``cases``: ids are the check names, declared failures are strict xfails."""
    import pytest

    params = []
    for case in cases:
        marks = [pytest.mark.xfail(reason=case.expected_failure, strict=True)] if case.expected_failure else []
        params.append(pytest.param(case, id=case.name, marks=marks))
    return pytest.mark.parametrize(argname, params)


def hints(factory: Any) -> dict[str, Any]:
    """The conformance hints a plugin factory declares in its ``conformance`` attribute (a dict).

    Keys: ``params`` (small parameters for the battery, merged over the shrunk defaults),
    ``expected_failures`` (``{check name: reason}``), ``skip`` (a reason: the battery cannot run
    this plugin without things the plugin's own tests provide).
    """
    declared = getattr(factory, "conformance", None) or {}
    if not isinstance(declared, Mapping):
        raise TypeError(f"{factory!r}.conformance must be a dict, got {type(declared).__name__}")
    unknown = set(declared) - {"params", "expected_failures", "skip"}
    if unknown:
        raise ValueError(f"{factory!r}.conformance: unknown key(s) {sorted(unknown)}; "
                         f"allowed: params, expected_failures, skip")
    return dict(declared)


def assert_json(obj: Any, what: str) -> None:
    """``obj`` is JSON once numpy scalars and arrays are turned into numbers and lists (as the record does)."""
    import json

    import numpy as np

    def numpy_only(o):
        if isinstance(o, (np.generic, np.ndarray)):
            return o.tolist()
        raise TypeError(f"{what} holds a {type(o).__name__} ({o!r:.80}), which is not JSON")

    json.dumps(obj, default=numpy_only)
