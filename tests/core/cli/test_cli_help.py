"""The command line explains itself: `lfabench run --help` is lfabench's page (overrides, -m, --cfg job, presets,
where records go, each plugin once), Hydra's stays at --hydra-help; every command's --help is its own, opening on a
description, with every argument described."""

from __future__ import annotations

import argparse

import pytest

from lfabench.cli import build_parser, main
from lfabench.cli.run_help import help_text
from lfabench.registry import get_registry


def test_run_help_names_overrides_sweeps_cfg_presets_and_where_records_go(capsys):
    from lfabench.cli.run import main as run_main

    run_main(["--help"])
    page = capsys.readouterr().out
    for needle in ("-m, --multirun", "--cfg job", "KIND.params.PARAM=VALUE", "+experiment=PRESET", "seed=N",
                   "lfabench_runs/", "lfabench_multirun/", "hydra.run.dir", "--hydra-help", "classification"):
        assert needle in page, needle
    assert page == help_text()


def test_run_help_lists_every_plugin_once():
    page = help_text()
    plugin_lines = page[page.index("plugins (KIND=NAME"):]
    words = [w.strip(",") for line in plugin_lines.splitlines()[2:] for w in line.split()]
    reg = get_registry()
    for kind in ("aggregator", "descriptor", "dataset", "evaluator"):
        for name in reg.names(kind):
            assert words.count(name) == 1, (kind, name)


def _every_parser(parser, path=("lfabench",)):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _every_parser(sub, path + (name,))


COMMANDS = [path for path, _ in _every_parser(build_parser())][1:]


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_every_command_help_is_its_own_with_a_description_and_described_arguments(path, capsys):
    with pytest.raises(SystemExit) as stop:
        main([*path[1:], "--help"])
    assert stop.value.code == 0
    page = capsys.readouterr().out
    assert page.startswith(f"usage: {' '.join(path)} "), page[:200]
    parser = dict(_every_parser(build_parser()))[path]
    assert parser.description, f"{' '.join(path)} has no description"
    for action in parser._actions:
        if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            assert action.help, f"{' '.join(path)}: argument {action.dest} has no help"


def test_plugins_check_help_is_not_the_plugins_page(capsys):
    with pytest.raises(SystemExit):
        main(["plugins", "check", "--help"])
    page = capsys.readouterr().out
    assert page.startswith("usage: lfabench plugins check") and "conformance battery" in page and "--check" in page
