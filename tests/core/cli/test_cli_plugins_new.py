"""`lfabench plugins new NAME --kind KIND` writes a package that passes its kind's conformance battery as written
(each kind, in-process); installed, each passes `lfabench plugins check` and its own tests (slow tier)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys

import pytest

from lfabench.cli import main
from lfabench.cli.new_plugin import package_files, write_package
from lfabench.registry import get_registry, reset_registry
from lfabench.testing import check_plugin

from conftest import run_cli
from package_helpers import install_into

KINDS = ["aggregator", "descriptor", "dataset", "evaluator"]


@pytest.fixture
def fresh_registry():
    reset_registry()
    yield get_registry()
    reset_registry()


@pytest.mark.parametrize("kind", KINDS)
def test_generated_plugin_passes_its_battery_as_written(kind, tmp_path, monkeypatch, fresh_registry):
    name = f"new_{kind}"
    assert main(["plugins", "new", name, "--kind", kind, "--dir", str(tmp_path / "pkg")]) == 0
    files = sorted(str(p.relative_to(tmp_path / "pkg")) for p in (tmp_path / "pkg").rglob("*") if p.is_file())
    assert files == ["README.md", "pyproject.toml", f"src/lfabench_{name}/__init__.py",
                     f"src/lfabench_{name}/plugin.py", f"tests/test_{name}.py"]
    pyproject = (tmp_path / "pkg" / "pyproject.toml").read_text()
    assert "[project.entry-points.lfabench]" in pyproject and f'{name} = "lfabench_{name}.plugin"' in pyproject
    monkeypatch.syspath_prepend(str(tmp_path / "pkg" / "src"))
    module = importlib.import_module(f"lfabench_{name}.plugin")
    fresh_registry.register(module, name=name, distribution=f"lfabench-{name}")
    results = check_plugin(kind, name)
    assert results and [(r.name, r.message) for r in results if not r.ok] == []
    assert not [r.name for r in results if r.status == "skip"]


def test_new_refuses_a_bad_name_a_taken_name_and_a_folder_in_use(tmp_path, capsys):
    assert main(["plugins", "new", "My-Pool", "--kind", "aggregator", "--dir", str(tmp_path / "a")]) == 2
    assert "lower-case letters" in capsys.readouterr().err and not (tmp_path / "a").exists()
    assert main(["plugins", "new", "bow", "--kind", "aggregator", "--dir", str(tmp_path / "b")]) == 2
    assert "aggregator 'bow' exists already (from lfabench)" in capsys.readouterr().err
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "keep.txt").write_text("mine")
    assert main(["plugins", "new", "pool", "--kind", "aggregator", "--dir", str(tmp_path / "c")]) == 2
    assert "is not an empty folder" in capsys.readouterr().err
    assert (tmp_path / "c" / "keep.txt").read_text() == "mine" and len(list((tmp_path / "c").iterdir())) == 1


def test_every_kind_has_its_own_files():
    plugins = {kind: package_files("thing", kind)["src/lfabench_thing/plugin.py"] for kind in KINDS}
    assert "lfabench_aggregators" in plugins["aggregator"] and "lfabench_descriptors" in plugins["descriptor"]
    assert "lfabench_datasets" in plugins["dataset"] and "lfabench_evaluators" in plugins["evaluator"]
    assert all("__" + "NAME__" not in text for kind in KINDS for text in package_files("thing", kind).values())


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """One package per kind, written by the command and installed (a wheel build) into one PYTHONPATH folder."""
    site, work = tmp_path_factory.mktemp("site"), tmp_path_factory.mktemp("work")
    for kind in KINDS:
        install_into(write_package(f"made_{kind}", kind, work / "src" / f"lfabench-made-{kind}"), site, work)
    return site, work


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_installed_package_passes_plugins_check(kind, installed, tmp_path):
    site, _ = installed
    listed = run_cli(["plugins"], cwd=tmp_path, env={"PYTHONPATH": str(site)}).stdout
    assert f"made_{kind}" in listed and f"lfabench-made-{kind}" in listed
    report = run_cli(["plugins", "check", f"made_{kind}"], cwd=tmp_path, env={"PYTHONPATH": str(site)}).stdout
    assert " 0 failed, 0 skipped" in report, report


@pytest.mark.slow
def test_installed_packages_own_tests_pass(installed, tmp_path):
    site, work = installed
    tests = [str(work / "src" / f"lfabench-made-{kind}" / "tests") for kind in KINDS]
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
                          cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(site)), capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0 and " passed" in proc.stdout, proc.stdout[-3000:] + proc.stderr[-2000:]
