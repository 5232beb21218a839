"""Every module's tests can be found: by the naming rule, or in tests/MAP.toml (which states the rule)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from conftest import REPO

MAP = REPO / "tests" / "MAP.toml"


def modules() -> list[str]:
    """Every module of the core and of the built-in plugins (package ``__init__`` files aside), as paths."""
    return sorted(str(p.relative_to(REPO)) for root in ("lfabench", "plugins") for p in (REPO / root).rglob("*.py")
                  if p.name != "__init__.py")


def by_rule(module: str, repo: Path = REPO) -> list[str]:
    """The test files the rule of tests/MAP.toml gives ``module`` (``lfabench/...`` or ``plugins/...``)."""
    parts = Path(module).parts
    folder = repo / "tests" / ("core" if parts[0] == "lfabench" else "plugins") / Path(*parts[1:-1])
    stem = Path(module).stem
    patterns = [f"test_{stem}*.py"] + ([f"test_{parts[-2]}_{stem}*.py"] if len(parts) > 2 else [])
    return sorted({str(f.relative_to(repo)) for pattern in patterns for f in folder.glob(pattern)})


def mapped() -> dict[str, list[str]]:
    return tomllib.loads(MAP.read_text())["modules"]


def test_the_rule_finds_a_module_test_file_in_its_mirror_folder():
    assert by_rule("lfabench/params.py") == ["tests/core/test_params.py", "tests/core/test_params_ranges.py"]
    assert by_rule("lfabench/cli/run.py") == ["tests/core/cli/test_cli_run.py"]
    assert by_rule("plugins/aggregators/prolfa/plugin.py") == [
        "tests/plugins/aggregators/prolfa/test_prolfa_plugin.py"]
    assert by_rule("plugins/aggregators/vlad.py") == []  # tested in test_unsupervised_aggregators.py: mapped


def test_every_module_has_tests_by_the_rule_or_the_map():
    table = mapped()
    lost = [m for m in modules() if not by_rule(m) and m not in table]
    assert not lost, (f"{len(lost)} module(s) have no test file by the rule of tests/MAP.toml and no line there: "
                      f"{', '.join(lost)}")


def test_the_map_names_existing_modules_and_test_files_only():
    known = set(modules())
    for module, files in mapped().items():
        assert module in known, f"tests/MAP.toml lists {module}, which is not a module of lfabench/ or plugins/"
        assert files, f"tests/MAP.toml lists no test file for {module}"
        missing = [f for f in files if not (REPO / f).is_file()]
        assert not missing, f"tests/MAP.toml: {module}'s test file(s) {', '.join(missing)} do not exist"


def test_the_map_lists_only_modules_the_rule_misses():
    redundant = [m for m in mapped() if by_rule(m)]
    assert not redundant, f"tests/MAP.toml lists modules the rule already finds (drop their lines): {redundant}"
