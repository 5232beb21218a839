"""The plugin SDK: what plugins may import from the core, and the built-in plugins held to it."""

from __future__ import annotations

import ast
import importlib
import tomllib

import lfabench.sdk as sdk

from conftest import REPO

#: What a plugin may import from the core: the SDK module and the metric functions (package and submodules).
ALLOWED = ("lfabench.sdk", "lfabench.evaluation")


def _allowed(module: str) -> bool:
    return any(module == a or module.startswith(a + ".") for a in ALLOWED)


def core_imports(source: str) -> list[tuple[int, str]]:
    """``(line, module)`` of every import of the core (``lfabench`` or below) in ``source``, nested ones too."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found += [(node.lineno, n) for n in names if n == "lfabench" or n.startswith("lfabench.")]
    return found


def test_the_scan_sees_root_nested_and_submodule_imports():
    source = "from lfabench import Bags\nimport lfabench.storage\ndef f():\n    from lfabench.sdk import Bags\n"
    assert core_imports(source) == [(1, "lfabench"), (2, "lfabench.storage"), (4, "lfabench.sdk")]


def test_built_in_plugins_import_the_core_only_through_the_sdk():
    outside = [f"{path.relative_to(REPO)}:{line}: {module}"
               for path in sorted((REPO / "plugins").rglob("*.py"))
               for line, module in core_imports(path.read_text()) if not _allowed(module)]
    assert not outside, "plugins import the core outside lfabench.sdk / lfabench.evaluation:\n" + "\n".join(outside)


def test_every_sdk_name_is_the_cores_own_object():
    """The SDK re-exports (never copies or wraps): ``sdk.Aggregator is lfabench.aggregate.Aggregator``."""
    assert len(sdk.__all__) == len(set(sdk.__all__))
    for name in sdk.__all__:
        obj = getattr(sdk, name)
        home = getattr(obj, "__module__", None)
        if home and home.startswith("lfabench.") and home != "lfabench.sdk":
            assert getattr(importlib.import_module(home), name, obj) is obj, name


def test_the_sdk_contract_forbids_every_other_core_module():
    """A new core module is outside the SDK until it is re-exported: the import-linter contract lists them all."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in config if c.get("source_modules") == ["lfabench_plugins"]]
    children = {p.stem if p.is_file() else p.name for p in (REPO / "lfabench").iterdir()
                if (p.suffix == ".py" and p.name != "__init__.py") or (p / "__init__.py").is_file()}
    assert set(contract["forbidden_modules"]) == {f"lfabench.{c}" for c in children} - set(ALLOWED)
    assert contract.get("allow_indirect_imports") is True  # the SDK itself imports the modules it re-exports
