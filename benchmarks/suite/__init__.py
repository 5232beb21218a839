"""lfabench's benchmark suite, run by asv (airspeed velocity): named cases, results kept per machine.

Run from the repository root, in the environment lfabench is installed in (``benchmarks/README.md``)::

    asv machine --yes --machine NAME                    # once per machine: records what it is
    asv run --python=same --machine NAME --set-commit-hash $(git rev-parse HEAD) --bench Smoke   # seconds
    asv run --python=same --machine NAME --set-commit-hash $(git rev-parse HEAD) --bench Paper   # paper scale, hours
    asv compare BASE_COMMIT HEAD_COMMIT --machine NAME  # regressions against the stored baseline

Results go to ``benchmarks/results/<machine>/`` (the committed baseline of a machine). Cases on Fifteen Scene
need ``../shared/data`` (or ``$LFABENCH_SHARED_DATA``) and are skipped without it.
"""
