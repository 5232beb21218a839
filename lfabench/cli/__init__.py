"""The ``lfabench`` command line: ``run`` (Hydra), ``plugins``, ``leaderboard``, ``compare``, ``explain``, ``data``,
``cache``."""

from __future__ import annotations

import argparse
import gc
import os
import signal
import sys
import warnings
from pathlib import Path

from .run_help import HELP_FLAGS, MODE_FLAGS, PRINTING_MODES

USAGE = """usage: lfabench <command> [...]

commands:
  run [-v] [OVERRIDES...]   run a benchmark (Hydra overrides: aggregator=bow seed=1, -m for sweeps, --cfg job;
                            -v: solver progress on the terminal too; `lfabench run --help`: every override)
  plugins                   list every plugin with kind, version and the distribution it comes from
  plugins check NAME        run NAME's conformance battery (lfabench.testing) and print a pass/fail report
  plugins new NAME --kind K write a plugin package (aggregator, descriptor, dataset, evaluator) that installs
                            and passes its battery as written
  leaderboard [RUN_DIRS...] build Markdown, CSV and HTML leaderboards and plots from run records
  leaderboard --index DIR   the landing page of the boards under DIR (DIR/index.md, DIR/index.html)
  compare [RUN_DIRS...]     mean ± std over seeds and the board's paired tests against the best
  verify BOARD_DIR...       check a board: record digests, metrics from predictions, cells by a rebuild
  reproduce BOARD [--sample N] [--seed S]  rerun records drawn at random; where each first differs
  explain RUN               PNG grid of the image patches behind a ProLFA run's top prototypes
  data fetch|add|verify|list|remove  get, register and check datasets (data root: $LFABENCH_DATA);
                            `data add NAME PATH --as imagefolder`: your own photos as the dataset NAME
  cache list|clear          show or delete cached descriptors and other arrays

`lfabench <command> --help` for details. `lfabench --debug <command> ...` prints the traceback of an error
that is otherwise one message (a run's record keeps it either way).
"""


def _cmd_leaderboard(args) -> int:
    from ..leaderboard import build_leaderboard
    from ..recordset import DEFAULT_RUN_ROOTS

    if args.index is not None:
        from .leaderboard_index import run_index

        if args.run_dirs:
            print("lfabench leaderboard: --index builds the landing page of a folder of boards; it takes no "
                  "RUN_DIRS", file=sys.stderr)
            return 2
        return run_index(args.index)
    paths = args.run_dirs or [p for p in DEFAULT_RUN_ROOTS if Path(p).is_dir()]
    if not paths:
        print(f"lfabench leaderboard: no run directories given and none of {', '.join(DEFAULT_RUN_ROOTS)} "
              f"exists here; run `lfabench run` first or pass RUN_DIRS", file=sys.stderr)
        return 2
    try:
        if args.publish_records:
            from ..recordset.publish import parse_relocations, publish_records

            report = publish_records(paths, args.out, parse_relocations(args.relocate),
                                     allow_unclean=args.allow_unclean_records)
            for path, status in report.not_ok:
                print(f"lfabench leaderboard: not published ({status}): {path}", file=sys.stderr)
            print(f"lfabench leaderboard: published into {Path(args.out) / 'records'}: {report.summary()}")
            paths = [str(Path(args.out) / "records")]
            # the board states the command that rebuilds it from what is published (no sweep path of this machine)
            command = f"lfabench leaderboard {paths[0]} --out {args.out} --name {args.name}"
        elif args.relocate or args.allow_unclean_records:
            raise ValueError("--relocate and --allow-unclean-records apply to --publish-records only")
        else:
            command = " ".join(["lfabench", *args.argv])
        out = build_leaderboard(paths, args.out, args.name, command=command)
    except (FileNotFoundError, ValueError) as exc:
        print(f"lfabench leaderboard: {exc}", file=sys.stderr)
        return 2
    print(out["markdown"].read_text())
    written = [out["markdown"], out["csv"], out["runs_csv"], out["html"], *out["plots"]]
    print("wrote " + ", ".join(map(str, written)))
    if out["removed"]:
        print("removed what the previous build wrote and this one did not: " + ", ".join(map(str, out["removed"])))
    return 0


def build_parser() -> argparse.ArgumentParser:
    from . import cache as cli_cache
    from . import compare as cli_compare
    from . import data as cli_data
    from . import explain as cli_explain
    from . import plugins as cli_plugins
    from . import reproduce as cli_reproduce
    from . import verify as cli_verify

    # subcommands that live in their own module
    command_modules = (cli_plugins, cli_compare, cli_data, cli_cache, cli_explain, cli_verify, cli_reproduce)
    parser = argparse.ArgumentParser(prog="lfabench", description=USAGE,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command")
    p = sub.add_parser("leaderboard", help="build leaderboards from run records",
                       description="Build a leaderboard from run records (result.json) only: Markdown, CSV and a "
                                   "self-contained HTML page with plots, one table per task (dataset, descriptor, "
                                   "evaluator) and metric, ranked, with paired tests against the best; or, with "
                                   "--index, the landing page of a folder of boards.")
    p.add_argument("run_dirs", nargs="*", help="run directories or result.json files (default: "
                                               "./lfabench_runs and ./lfabench_multirun)")
    p.add_argument("--out", default="leaderboards", help="output folder (default: ./leaderboards)")
    p.add_argument("--name", default="leaderboard", help="file stem of the outputs (default: leaderboard)")
    p.add_argument("--publish-records", action="store_true",
                   help="copy the complete records into OUT/records (no machine paths, resumable folder names) "
                        "and build the board from there")
    p.add_argument("--relocate", action="append", default=[], metavar="OLD=NEW",
                   help="with --publish-records: replace the path prefix OLD by NEW in the copies "
                        "(e.g. a dataset root); repeatable")
    p.add_argument("--allow-unclean-records", action="store_true",
                   help="with --publish-records: also publish records of a dirty tree or with provenance missing "
                        "(refused otherwise); the board marks their rows")
    p.add_argument("--index", metavar="BOARDS_DIR", default=None,
                   help="instead of a board: write BOARDS_DIR/index.md and index.html, the landing page listing "
                        "every board under BOARDS_DIR (e.g. --index leaderboards)")
    p.set_defaults(func=_cmd_leaderboard)
    for command in command_modules:
        command.add_parser(sub)
    _describe_every_command(sub)
    return parser


def _describe_every_command(subparsers) -> None:
    """A command without a description of its own gets its one-line help as its ``--help`` description, so that
    every ``lfabench <command> [<subcommand>] --help`` opens on what the command does."""
    helps = {action.dest: action.help for action in subparsers._choices_actions}
    for name, parser in subparsers.choices.items():
        if not parser.description and helps.get(name):
            parser.description = helps[name][0].upper() + helps[name][1:] + "."
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                _describe_every_command(action)


#: Exit status of a command whose reader went away (``lfabench cache list | head``): 128 + SIGPIPE, what
#: a shell reports for any program ended by a closed pipe.
EXIT_BROKEN_PIPE = 141


def main(argv: list[str] | None = None) -> int:
    """Every command; output into a pipe that its reader closed (``| head``) ends it quietly, whatever the command.

    ``argv`` None: the process's own command line (the ``lfabench`` executable), so the process ends with the
    command, and ``lfabench run`` starts up without the cyclic garbage collector (:func:`lfabench.cli.run.main`,
    ``own_process``). A caller that passes ``argv`` runs the command in its own process as it is.
    """
    try:
        status = _main(argv)
        sys.stdout.flush()  # here, not at interpreter exit where a closed pipe gives a traceback
        return status
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE


def _silence_stdout() -> None:
    """Point stdout at /dev/null: the interpreter flushes it at exit, which would raise a second BrokenPipeError
    (the recipe of Python's ``signal`` documentation, "Note on SIGPIPE")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout already closed or not a real file
        pass


#: The flags with which ``lfabench run`` prints (a config, the search path, a help page) and exits before its job
#: starts: lfabench's help page (:data:`.run_help.HELP_FLAGS`) and Hydra's printing flags.
PRINT_ONLY_FLAGS = (*HELP_FLAGS, "--hydra-help", *(flag for flag, mode in MODE_FLAGS.items() if mode in PRINTING_MODES))

#: The BLAS thread variables a user may set; when one is, a printing command keeps it.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "GOTO_NUM_THREADS")


def printing_only(run_argv: list[str]) -> bool:
    """Whether ``lfabench run RUN_ARGV`` only prints (a config, the search path, a help page) and runs no job."""
    return any(a in PRINT_ONLY_FLAGS or a.split("=", 1)[0] in ("--cfg", "--info") for a in run_argv)


def one_blas_thread_when_printing(run_argv: list[str], environ=os.environ, modules=sys.modules) -> bool:
    """Start NumPy's OpenBLAS with one thread when ``lfabench run RUN_ARGV`` only prints; True if it did so.

    Such a command (``--cfg job``, ``--info``, ``--help``) computes nothing, yet the plugin modules it registers
    import NumPy, whose OpenBLAS starts a worker thread per further core, busy while NumPy loads: a tenth of a
    second of CPU on two cores (``docs/performance.md``, "Start-up"). Only before NumPy's first import
    (``modules``: the loaded ones); thread variables the user set are left as they are, and a command that runs
    a job is never changed (its pools are the run's, :mod:`lfabench.threads`).
    """
    if not printing_only(run_argv) or any(v in environ for v in BLAS_THREAD_VARIABLES) or "numpy" in modules:
        return False
    environ["OPENBLAS_NUM_THREADS"] = "1"
    return True


def _main(argv: list[str] | None = None) -> int:
    own_process = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--debug"]:
        argv = argv[1:]
        os.environ["LFABENCH_DEBUG"] = "1"  # read where a user error is reported (lfabench.cli.run.DEBUG_ENV)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    if argv[0] == "--version":  # the code's version (setuptools-scm: changes with every commit and a dirty tree)
        from ..provenance import source_version

        print(f"lfabench {source_version()}")
        return 0
    if argv[0] == "run":
        one_blas_thread_when_printing(argv[1:])
        if own_process and printing_only(argv[1:]) and hasattr(signal, "SIGPIPE"):
            # Hydra prints through its own handlers (--cfg's traceback and exit 1, --info's logging errors line by
            # line) when the reader goes away (| head); a command that only prints ends then, as Unix filters do
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        if own_process:
            # importing Hydra, NumPy and the plugins builds long-lived objects and next to no garbage (876 unreachable
            # of 81,000 tracked): a collection then is wasted (lfabench.cli.run.main freezes them, turns it back on)
            gc.disable()
        from .run import main as run_main

        run_main(argv[1:], own_process=own_process)
        return 0
    warnings.simplefilter("default")
    args = build_parser().parse_args(argv)
    args.argv = argv  # the command line as typed: the leaderboard states it under every table
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
