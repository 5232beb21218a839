"""The common tests: every registered plugin of every kind runs its kind's conformance battery.

Like scikit-learn's common tests over all estimators, a new plugin (built-in or installed) is
checked here without any wiring: it is built from its defaults shrunk to the tiny check data
(``lfabench.testing.small_params``) and its own ``conformance`` hints. Plugins that need real data
or an optional extra that is absent are skipped with the reason.
"""

from __future__ import annotations

import pytest

from lfabench import KINDS, get_registry
from lfabench.testing import CheckSkip, plugin_checks

from conftest import shared_data_dir


@pytest.fixture(autouse=True)
def _real_datasets_from_shared_data(monkeypatch):
    """Dataset plugins find their default folders under ../shared/data when it is there (as in CI)."""
    base = shared_data_dir()
    if base is not None:
        monkeypatch.setenv("LFABENCH_DATA", str(base))


def _params():
    out = []
    for kind in KINDS:
        for spec in get_registry().specs(kind):
            try:
                cases = plugin_checks(kind, spec)
            except CheckSkip as exc:
                out.append(pytest.param(None, str(exc), id=f"{kind}-{spec.name}"))
                continue
            for case in cases:
                marks = [pytest.mark.xfail(reason=case.expected_failure, strict=True)] if case.expected_failure else []
                out.append(pytest.param(case, None, id=f"{kind}-{spec.name}-{case.name}", marks=marks))
    return out


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.filterwarnings("ignore::lfabench.bags.EmptySampleWarning")
@pytest.mark.parametrize("case,skip_reason", _params())
def test_plugin_conformance(case, skip_reason):
    if case is None:
        pytest.skip(skip_reason)
    case()


def test_every_kind_has_a_checked_plugin():
    """The battery reaches every kind: at least one plugin of each kind is built and checked here."""
    for kind in KINDS:
        built = []
        for spec in get_registry().specs(kind):
            try:
                plugin_checks(kind, spec)
            except CheckSkip:
                continue
            built.append(spec.name)
        assert built, f"no {kind} plugin could be built for the conformance battery"
