"""lfabench's Hydra configs (installed as the ``lfabench_conf`` package so they ship in the wheel)."""
