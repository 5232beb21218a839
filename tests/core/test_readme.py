"""The README's front door: two set-up commands first, the second being the test command .ci/run runs."""

from __future__ import annotations

import re

from conftest import REPO

README = (REPO / "README.md").read_text()
CI = (REPO / ".ci" / "run").read_text()


def first_code_block(text: str) -> list[str]:
    match = re.search(r"^```bash\n(.*?)^```", text, re.M | re.S)
    assert match, "README.md has no bash block"
    return match.group(1).strip().splitlines()


def test_the_readme_starts_with_exactly_two_set_up_commands():
    before = README[:README.index("```bash")]
    assert "\n## " not in before, "the set-up commands come before any section"
    install_and_run, install_and_test = first_code_block(README)
    assert install_and_run.endswith("lfabench run") and "pip install ." in install_and_run
    assert 'pip install -e ".[test]"' in install_and_test and "-m pytest" in install_and_test


def test_ci_runs_the_readmes_test_command():
    _, install_and_test = first_code_block(README)
    pytest_args = install_and_test.split("-m pytest", 1)[1].split()
    ci_pytest = next(line for line in CI.splitlines() if "-m pytest" in line and not line.startswith("#"))
    assert pytest_args == ci_pytest.split("-m pytest", 1)[1].split()[:len(pytest_args)]
    assert 'pip install -q -e ".[test]"' in CI


def test_the_readme_stays_short():
    assert len(README.splitlines()) <= 120
