"""``lfabench plugins new NAME --kind KIND``: write a plugin package that installs and passes its battery as written.

The package (``lfabench-<name>/`` by default) holds ``pyproject.toml`` with the ``lfabench`` entry point,
``src/lfabench_<name>/plugin.py`` (the smallest plugin of its kind that passes :mod:`lfabench.testing`),
``src/lfabench_<name>/__init__.py``, ``tests/test_<name>.py`` (the conformance battery and a first test) and a
README. Its files come from :mod:`lfabench.cli.templates`.
"""

from __future__ import annotations

import keyword
import re
import sys
from pathlib import Path

from . import templates

#: A plugin's name: what `kind=NAME` selects and the Python package's suffix, so an identifier in lower case.
NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]*")


def check_name(name: str) -> None:
    """A ValueError unless ``name`` can be a plugin name and a Python package suffix."""
    if not NAME_PATTERN.fullmatch(name) or keyword.iskeyword(name):
        raise ValueError(f"plugin name {name!r}: use lower-case letters, digits and underscores, starting with a "
                         f"letter (it is the `kind=NAME` of `lfabench run` and the package lfabench_NAME)")


def package_files(name: str, kind: str) -> dict[str, str]:
    """``{relative path: text}`` of the package for plugin ``name`` of ``kind``."""
    check_name(name)
    if kind not in templates.KINDS:
        raise ValueError(f"kind {kind!r}: one of {', '.join(templates.KINDS)}")
    plugin, test, hook, suffix, description, run_line = templates.KINDS[kind]
    module = f"lfabench_{name}"
    cls = f"load_{name}" if kind == "dataset" else "".join(p.capitalize() for p in name.split("_")) + suffix
    tokens = {"__DESCRIPTION__": description, "__RUN__": run_line, "__HOOK__": hook, "__KIND__": kind,
              "__DIST__": f"lfabench-{name.replace('_', '-')}", "__MODULE__": module, "__CLASS__": cls,
              "__NAME__": name}

    def fill(text: str) -> str:
        for token, value in tokens.items():  # __NAME__ last: the values above may hold it
            text = text.replace(token, value)
        return text

    return {"pyproject.toml": fill(templates.PYPROJECT), "README.md": fill(templates.README),
            f"src/{module}/__init__.py": fill(templates.INIT), f"src/{module}/plugin.py": fill(plugin),
            f"tests/test_{name}.py": fill(test)}


def write_package(name: str, kind: str, dest: Path | str | None = None) -> Path:
    """Write the package into ``dest`` (default ``./lfabench-<name>``), which must not exist or be empty."""
    from ..storage import write_text_atomic

    files = package_files(name, kind)
    dest = Path(dest) if dest is not None else Path(f"lfabench-{name.replace('_', '-')}")
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise FileExistsError(f"{dest} exists and is not an empty folder: choose another with --dir")
    for rel, text in files.items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, text)
    return dest


def run(args) -> int:
    from ..registry import get_registry

    try:
        check_name(args.name)
        taken = args.name in get_registry().names(args.kind)
        if taken and not args.allow_shadow:
            spec = get_registry().get_spec(args.kind, args.name)
            raise ValueError(f"{args.kind} {args.name!r} exists already (from {spec.distribution}); choose another "
                             f"name, or --allow-shadow to share it (yours then answers to its qualified name only)")
        dest = write_package(args.name, args.kind, args.dir)
    except (ValueError, FileExistsError) as exc:
        print(f"lfabench plugins new: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {dest}/: a {args.kind} plugin {args.name!r} with its conformance test. Next:\n"
          f"  pip install -e '{dest}[test]'\n"
          f"  lfabench plugins check {args.name}\n"
          f"  pytest {dest / 'tests'}")
    return 0
