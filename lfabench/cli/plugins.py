"""``lfabench plugins [list]``: list the plugins; ``plugins check NAME``: run a plugin's conformance battery;
``plugins new NAME --kind KIND``: write a new plugin package (:mod:`lfabench.cli.new_plugin`)."""

from __future__ import annotations

import sys


def add_parser(sub) -> None:
    import argparse

    p = sub.add_parser("plugins", help="list plugins, check one against its conformance battery, or start a new one",
                       description="List every plugin (the default), check one against its kind's conformance "
                                   "battery, or write a new plugin package.",
                       epilog="`lfabench plugins check --help` and `lfabench plugins new --help` describe each.",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = p.add_subparsers(dest="action", metavar="{list,check,new}")
    actions.add_parser("list", help="every plugin: kind, name, version, distribution, description (the default)",
                       description="Every plugin with its kind, name, version, distribution and description; a plugin "
                                   "that shares its name with another package's is listed by its qualified name "
                                   "(<distribution>:<name>).")
    c = actions.add_parser("check", help="run a plugin's conformance battery and print a pass/fail report",
                           description="Run the conformance battery of a registered plugin (lfabench.testing: the "
                                       "checks of its kind, built from its defaults shrunk to tiny data) and print "
                                       "one line per check. Exit status 1 when a check fails or an expected failure "
                                       "passes.")
    c.add_argument("name", help="the plugin: its name or <distribution>:<name>")
    c.add_argument("--kind", choices=KIND_CHOICES,
                   help="the plugin's kind (needed only when several kinds have a plugin of that name)")
    c.add_argument("--check", action="append", dest="checks", metavar="CHECK",
                   help="run only this check (repeatable), e.g. --check check_fit_returns_self")
    n = actions.add_parser("new", help="write a new plugin package that installs and passes its battery",
                           description="Write a plugin package: pyproject.toml with the lfabench entry point, the "
                                       "plugin (the smallest of its kind that passes the conformance battery), its "
                                       "conformance test and a README. Install it with `pip install -e DIR`, then "
                                       "`lfabench plugins check NAME`; replace the plugin's body by your method.")
    n.add_argument("name", help="the plugin's name (lower case, digits, underscores): `KIND=NAME` in `lfabench run`, "
                                "the package lfabench_NAME, the distribution lfabench-NAME")
    n.add_argument("--kind", required=True, choices=KIND_CHOICES, help="what the plugin is")
    n.add_argument("--dir", default=None, help="where to write the package (default: ./lfabench-NAME; must not exist "
                                               "or be empty)")
    n.add_argument("--allow-shadow", action="store_true",
                   help="allow a name that an installed plugin of this kind has (yours then answers to "
                        "<distribution>:NAME only)")
    p.set_defaults(func=run, action=None)


KIND_CHOICES = ["aggregator", "descriptor", "dataset", "evaluator"]


def run(args) -> int:
    if args.action == "check":
        return check(args.name, args.kind, args.checks)
    if args.action == "new":
        from .new_plugin import run as new

        return new(args)
    return list_plugins()


def list_plugins() -> int:
    from ..registry import get_registry

    reg = get_registry()
    rows = [(s.kind, listed, s.version or "-", s.distribution, s.description) for s, listed in listed_names(reg)]
    rows.sort(key=lambda r: (r[0], r[1]))
    header = ("kind", "name", "version", "distribution", "description")
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(4)]
    print("  ".join(h.ljust(w) for h, w in zip(header[:4], widths)) + "  " + header[4])
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r[:4], widths)) + "  " + r[4])
    status = 0
    for failure in reg.failures:
        print(f"warning: {failure}", file=sys.stderr)
    for conflict in reg.conflicts():
        print(f"error: {conflict}", file=sys.stderr)
        status = 1
    return status


def listed_names(reg) -> list[tuple]:
    """``(spec, name)`` of every plugin, also one that shares its name: that one by the qualified name it
    answers to, the others by their plain name."""
    plain = {(s.kind, s.name): s for s in reg.specs() if s.name not in reg.ambiguous_names(s.kind)}
    return [(s, s.name if plain.get((s.kind, s.name)) is s else q) for q, s in reg.qualified_specs()]


def check(name: str, kind: str | None, checks: list[str] | None) -> int:
    """Print one line per check (PASS, FAIL, XFAIL, XPASS, SKIP); exit 1 when any check fails or passes unexpectedly.

    ``name`` is a plain name or a qualified one (``<distribution>:<name>``, what a plugin that shares its plain
    name answers to); the report names each plugin checked by its qualified name."""
    import warnings

    from ..plugin import KINDS
    from ..registry import get_registry, qualified_name
    from ..testing import check_plugin

    reg = get_registry()
    kinds = [kind] if kind else [k for k in KINDS if name in reg.names(k) or name in reg.qualified_names(k)
                                 or name in reg.ambiguous_names(k)]
    if not kinds:
        every = sorted({n for _, n in listed_names(reg)})
        print(f"lfabench plugins check: no plugin is called {name!r}; plugins: {', '.join(every)}", file=sys.stderr)
        return 2
    status = 0
    for k in kinds:
        try:
            spec = reg.get_spec(k, name)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the report is the output; plugins' warnings would drown it
                results = check_plugin(k, name, select=checks)
        except (LookupError, ValueError) as exc:
            print(f"lfabench plugins check: {exc}", file=sys.stderr)
            return 2
        label = qualified_name(spec) if name == spec.name else name
        label = f"{name} ({label})" if label != name else name
        print(f"{k} {label}: {len(results)} check(s)")
        for r in results:
            print(f"  {r.status.upper():5s}  {r.name}" + (f"  ({r.message})" if r.message else ""))
        bad = [r for r in results if not r.ok and r.status != "skip"]
        passed = sum(r.ok for r in results)
        print(f"{k} {label}: {passed} passed/expected, {len(bad)} failed, "
              f"{sum(r.status == 'skip' for r in results)} skipped")
        status = status or (1 if bad else 0)
    return status
