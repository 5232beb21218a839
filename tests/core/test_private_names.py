"""No module uses another module's private names: a leading underscore means "this module only".

Checked over ``lfabench/`` and ``plugins/`` (installed as ``lfabench_plugins``), from their source: an import
``from X import _name`` of one of our modules, and an attribute ``module._name`` read through one of our modules
imported by name. Dunder names (``__version__``) are public by convention and allowed.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

#: Our packages and where their sources lie.
PACKAGES = {"lfabench": REPO / "lfabench", "lfabench_plugins": REPO / "plugins"}


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


class Scan:
    """The private names of other modules that a source file of ``packages`` imports or reads."""

    def __init__(self, packages: dict[str, Path]):
        self.packages = packages

    def ours(self, module: str) -> bool:
        return module.split(".")[0] in self.packages

    def module_name(self, path: Path) -> tuple[str, str]:
        """``(module, package)`` of a source file: ``lfabench.leaderboard.build``, ``lfabench.leaderboard``."""
        for package, root in self.packages.items():
            if path.is_relative_to(root):
                parts = [package, *path.relative_to(root).with_suffix("").parts]
                if parts[-1] == "__init__":
                    return ".".join(parts[:-1]), ".".join(parts[:-1])
                return ".".join(parts), ".".join(parts[:-1])
        raise ValueError(f"{path} is in none of {sorted(self.packages)}")

    def is_module(self, dotted: str) -> bool:
        package, _, rest = dotted.partition(".")
        path = self.packages[package].joinpath(*rest.split(".")) if rest else self.packages[package]
        return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()

    def uses(self, path: Path) -> list[str]:
        """Each private name of another of our modules that ``path`` imports or reads, as ``line: what``."""
        module, package = self.module_name(path)
        tree = ast.parse(path.read_text(), str(path))
        found, modules = [], {}  # modules: local name -> the module of ours it stands for
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = package.split(".")
                    source = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                if not self.ours(source):
                    continue
                for alias in node.names:
                    if private(alias.name) and source != module:
                        found.append(f"{node.lineno}: from {source} import {alias.name}")
                    if self.is_module(f"{source}.{alias.name}"):
                        modules[alias.asname or alias.name] = f"{source}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if self.ours(alias.name):
                        local = alias.asname or alias.name.split(".")[0]
                        modules[local] = alias.name if alias.asname else local
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and private(node.attr):
                head = dotted(node.value)
                first = (head or "").split(".")[0]
                if first in modules:
                    target = modules[first] + head[len(first):]
                    if self.is_module(target) and target != module:
                        found.append(f"{node.lineno}: {head}.{node.attr}")
        return found


def dotted(node: ast.expr) -> str | None:
    """``a.b.c`` of a chain of names and attributes, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = dotted(node.value)
        return f"{head}.{node.attr}" if head else None
    return None


def test_no_private_name_crosses_a_module():
    scan = Scan(PACKAGES)
    found = [f"{path.relative_to(REPO)}:{use}" for root in PACKAGES.values() for path in sorted(root.rglob("*.py"))
             for use in scan.uses(path)]
    assert found == [], ("private names used outside their module (make them public, or keep them home):\n"
                         + "\n".join(found))


def test_the_check_sees_both_forms_and_allows_a_module_its_own(tmp_path):
    # the scan itself can fail: an import of a private name, and attribute reads through a module alias
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    for init in (root / "__init__.py", root / "sub" / "__init__.py"):
        init.write_text("")
    (root / "a.py").write_text("def _helper():\n    pass\n\n\nclass A:\n    _x = 1\n\n\n_helper()\nA._x\n")
    (root / "sub" / "b.py").write_text("from ..a import _helper\nfrom .. import a as mod\nmod._helper()\n"
                                       "import pkg.a\npkg.a._helper()\nfrom ..a import __doc__\nfrom ..a import A\n"
                                       "A._x\n")
    scan = Scan({"pkg": root})
    assert scan.uses(root / "sub" / "b.py") == ["1: from pkg.a import _helper", "3: mod._helper",
                                                 "5: pkg.a._helper"]
    assert scan.uses(root / "a.py") == []
