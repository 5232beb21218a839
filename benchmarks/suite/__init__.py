"""lfabench's benchmark suite, run by asv (airspeed velocity): named cases, results kept per machine.

Run from the repository root, in the environment lfabench is installed in::

    asv machine --yes                                   # once per machine: records what it is
    asv run --python=same --set-commit-hash $(git rev-parse HEAD) --bench Smoke   # seconds
    asv run --python=same --set-commit-hash $(git rev-parse HEAD) --bench Paper   # paper scale, hours
    asv compare BASE_COMMIT HEAD_COMMIT                 # regressions against a stored baseline

Results go to ``benchmarks/asv/results/<machine>/``. ``Paper*`` cases need ``../shared/data`` (or
``$LFABENCH_SHARED_DATA``) and are skipped without it.
"""
