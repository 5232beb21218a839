"""CPU seconds of lfabench's start-up: ``lfabench --help`` and ``lfabench run --cfg job``.

    python benchmarks/startup.py [--repeats 7] [--against OTHER_LFABENCH_EXECUTABLE]

Each command runs in a child process; its CPU time (user + system) is read with
``resource.getrusage(RUSAGE_CHILDREN)``, so other work on a shared machine is left out (not its contention
for caches). Byte-code caching is on (``PYTHONDONTWRITEBYTECODE`` removed; the caches go to a temporary
``PYTHONPYCACHEPREFIX``, so no source tree is written to) and one untimed run of each command fills it, as an
installed lfabench runs. With ``--against`` the other installation's commands run interleaved with this one's, so a
ratio between the two is measured under the same load. Prints the median and the best of the repeats.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import os
import subprocess
import sys
import tempfile
from pathlib import Path

COMMANDS = {"--help": ["--help"], "run --cfg job": ["run", "--cfg", "job"]}


def cpu_seconds(argv: list[str], env: dict[str, str]) -> float:
    """User + system CPU seconds of one child process running ``argv`` (its output discarded)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--against", default=None, help="another lfabench executable (e.g. an older checkout's)")
    args = parser.parse_args(argv)
    here = shutil.which("lfabench", path=str(Path(sys.executable).parent)) or "lfabench"
    programs = {"this": here, **({"other": args.against} if args.against else {})}
    times: dict[tuple[str, str], list[float]] = {(p, c): [] for p in programs for c in COMMANDS}
    with tempfile.TemporaryDirectory() as pycache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = pycache
        for command, extra in COMMANDS.items():  # fill the byte-code cache
            for program in programs.values():
                cpu_seconds([program, *extra], env)
        for _ in range(args.repeats):
            for command, extra in COMMANDS.items():
                for name, program in programs.items():  # interleaved: both sides see the same load
                    times[(name, command)].append(cpu_seconds([program, *extra], env))
    for command in COMMANDS:
        line = [f"{command:>15}:"]
        for name in programs:
            t = times[(name, command)]
            line.append(f"{name} median {statistics.median(t):.2f} s, best {min(t):.2f} s CPU")
        if args.against:
            ratio = statistics.median(times[("other", command)]) / statistics.median(times[("this", command)])
            line.append(f"other / this {ratio:.1f}x")
        print("  ".join(line))
    return 0


if __name__ == "__main__":
    sys.exit(main())
