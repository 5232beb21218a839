"""docs/plugins.md, followed literally, is the example package: every file block of the guide (a fenced block
whose first line is ``# <path>``) equals that file of examples/lfabench-gempool, and every file of the package
is in the guide. tests/core/test_example_package.py installs that package in a clean folder and runs its
tests and lfabench's conformance battery, so the guide's files build an installable plugin that passes."""

from __future__ import annotations

import re

from conftest import REPO

GUIDE = REPO / "docs" / "plugins.md"
EXAMPLE = REPO / "examples" / "lfabench-gempool"
FILE_BLOCK = re.compile(r"^```[a-z]*\n# (?P<path>[\w./-]+\.(?:py|toml|yaml))\n(?P<body>.*?)^```", re.M | re.S)


def guide_files() -> dict[str, str]:
    return {m["path"]: m["body"] for m in FILE_BLOCK.finditer(GUIDE.read_text())}


def package_files() -> set[str]:
    skip = {"README.md"}
    return {str(p.relative_to(EXAMPLE)) for p in EXAMPLE.rglob("*")
            if p.is_file() and p.name not in skip and "__pycache__" not in p.parts and ".egg-info" not in str(p)}


def test_every_file_of_the_example_package_is_in_the_guide():
    assert package_files() == set(guide_files())


def test_each_file_block_of_the_guide_is_the_packages_file_byte_for_byte():
    for path, body in guide_files().items():
        assert body.strip() == (EXAMPLE / path).read_text().strip(), f"docs/plugins.md's block for {path} differs"


def test_the_file_block_pattern_reads_the_guide():
    # the pattern must see the blocks it checks: a guide without them would pass the tests above vacuously
    assert {"pyproject.toml", "src/lfabench_gempool/plugin.py", "tests/test_gempool.py"} <= set(guide_files())
