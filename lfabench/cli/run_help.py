"""``lfabench run --help``: lfabench's usage of a run (overrides, sweeps, ``--cfg``, presets, where records go),
then every option of each config group once: plugins by their plain names, named variants and presets.

Hydra's own page (its flags, every config option, third-party plugins listed twice: by plain and by qualified
name) stays one flag away, ``--hydra-help``.
"""

from __future__ import annotations

import textwrap

#: The flags that show this page instead of running (Hydra's own help page: ``--hydra-help``).
HELP_FLAGS = ("-h", "--help")

#: Hydra's modes, each under its spellings (flag -> mode): a command line selects at most one (Hydra's own check
#: raises a bare ``ValueError``, shown as a traceback).
MODE_FLAGS = {"-r": "--run", "--run": "--run", "-m": "--multirun", "--multirun": "--multirun", "-c": "--cfg",
              "--cfg": "--cfg", "-i": "--info", "--info": "--info", "-sc": "--shell-completion",
              "--shell-completion": "--shell-completion"}

#: The modes that print and run no job.
PRINTING_MODES = ("--cfg", "--info", "--shell-completion")

USAGE = """\
usage: lfabench run [-v] [-m] [--cfg job] [OVERRIDE ...]

Run one benchmark: a dataset's images are described (descriptor), each image's descriptors aggregated into one
vector (aggregator), and the vectors scored by a protocol (evaluator). The run is composed with Hydra from the
plugins' own defaults; overrides change any part of it. It prints the protocol, the score, the time of each stage
and where its record is.

overrides (Hydra's syntax, any number):
  KIND=NAME                       choose a plugin; KIND is aggregator, descriptor, dataset or evaluator
                                  (aggregator=vlad; a dataset brings its protocol: descriptor, evaluator, caps)
  KIND.params.PARAM=VALUE         one of its parameters (aggregator.params.n_clusters=128), checked before any work
  seed=N                          the run's seed: split, sampling, initialisation (default 0)
  +experiment=PRESET              one of the paper's experiments as a preset (below; run it with -m)
  time_limit=SECONDS              stop a run past this time, recorded as failed (isolate=process: even in C code)
  continue_on_error=true          a failing run of a sweep is recorded and the sweep goes on
  force=true                      rerun a configuration and seed that has a complete record
  cache=false                     compute descriptors and codebooks again instead of reading the cache
  threads=N                       BLAS/OpenMP threads of the computation (default 1; results do not depend on it)

flags:
  -m, --multirun                  a sweep: every combination of comma-separated values
                                  (lfabench run -m aggregator=bow,vlad seed=0,1,2); rerunning it after a crash
                                  skips the complete records
  --cfg job                       print the composed configuration, every parameter the run would use, and exit
  -v, --verbose                   solver progress on the terminal too, not only in the run's log file
  --hydra-help                    Hydra's own help (its flags and config groups)

where records go:
  one run   lfabench_runs/<dataset>_<descriptor>_<aggregator>_<evaluator>/<key>_s<seed>/result.json
            (hydra.run.dir=DIR to choose); <key> hashes the resolved settings, never the clock
  a sweep   lfabench_multirun/<same>/... (hydra.sweep.dir=DIR)
  each holds result.json (the record: configuration, versions, metrics, timings, provenance), predictions.npz
  (from which `lfabench verify` recomputes the metrics) and the run's log; `lfabench leaderboard` and
  `lfabench compare` read them.
"""


def _wrapped(label: str, names: list[str], width: int = 112) -> list[str]:
    text = ", ".join(names) if names else "(none)"
    return textwrap.wrap(text, width=width, initial_indent=f"  {label:<12}", subsequent_indent=" " * 14,
                         break_on_hyphens=False)


def help_text() -> str:
    """The page: :data:`USAGE`, the presets, then each kind's plugins, each once (by the name it answers to: its
    plain name, or ``<distribution>:<name>`` where another package has the plain name) and named variants."""
    from ..plugin import KINDS
    from ..registry import get_registry
    from .plugins import listed_names
    from .run import yaml_options

    reg = get_registry()
    lines = [USAGE.rstrip(), "", "presets (+experiment=NAME; NAME_smoke: the same shape on embedded data, in seconds):"]
    presets = sorted(n for n in yaml_options("experiment") if not n.endswith("_smoke"))
    lines += _wrapped("", presets)
    lines += ["", "plugins (KIND=NAME; `lfabench plugins` describes each, `lfabench run --cfg job KIND=NAME` shows its",
              "parameters; a plugin whose name another package also has answers to <distribution>:<name>):"]
    listed = listed_names(reg)
    for kind in KINDS:
        plugins = sorted(name for spec, name in listed if spec.kind == kind)
        lines += _wrapped(kind, plugins)
        variants = sorted(yaml_options(kind) - {spec.name for spec, _ in listed if spec.kind == kind})
        if variants:
            lines += _wrapped("  variants", variants)
    return "\n".join(lines) + "\n"

