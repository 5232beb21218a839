"""Start-up loads no heavy library: ``import lfabench`` and the plugin registration of every ``lfabench run``.

Each check runs in a fresh interpreter and reads ``sys.modules``: scikit-learn (which loads scipy.stats and
pandas), matplotlib, faiss and OpenCV are imported where they are used, not at start-up."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

#: Modules that start-up must not load (each costs from a tenth of a second to over a second of CPU).
HEAVY = ("sklearn", "pandas", "scipy.stats", "matplotlib", "faiss", "cv2", "numba", "torch", "skimage")


def loaded_after(code: str, modules: tuple[str, ...] = HEAVY) -> list[str]:
    """The ``modules`` (default :data:`HEAVY`) in ``sys.modules`` after a fresh interpreter ran ``code``."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps([m for m in {modules!r} if m in sys.modules]))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_probe_sees_a_heavy_import():
    # the check itself can fail: importing scikit-learn's base shows up, with scipy.stats and pandas
    assert {"sklearn", "scipy.stats", "pandas"} <= set(loaded_after("import sklearn.base"))


def test_import_lfabench_loads_no_heavy_library():
    assert loaded_after("import lfabench") == []


def test_the_cli_and_the_registered_plugin_configs_load_no_heavy_library():
    # what `lfabench --help` and `lfabench run --cfg job` import, up to Hydra's compose: every plugin module
    code = ("import lfabench.cli, lfabench.cli.run as r\nr.register_plugin_configs()\nr.register_primary_config()")
    assert loaded_after(code) == []
    # tqdm.auto imports asyncio (about 0.04 s): the progress bars import it when they first show
    assert loaded_after(code, ("tqdm.auto", "asyncio")) == []


@pytest.mark.parametrize("name, params, uses", [("sc", "n_atoms=3, dict_iter=2", "sklearn"),
                                                ("vlad", "n_clusters=3", "faiss")])
def test_a_plugin_imports_what_it_uses_when_it_runs(name, params, uses):
    # the imports moved into the code paths that use them: a fit + transform on tiny bags works and loads them
    code = ("import numpy as np\nfrom lfabench import Bags, get_plugin\n"
            "rng = np.random.default_rng(0)\n"
            "bags = Bags.from_list([rng.random((12, 4)) for _ in range(6)])\n"
            f"assert get_plugin('aggregator', {name!r})({params}, random_state=0).fit(bags).transform(bags).shape[0] == 6")
    assert uses in loaded_after(code)


@pytest.mark.parametrize("name, params", [("bow", "n_clusters=3, max_training_descriptors=20"),
                                          ("temb", "n_anchors=3, max_whitening_descriptors=20")])
def test_a_seeded_sample_does_not_load_scikit_learn(name, params):
    # a training sample drawn below its cap is seeded by codebooks.check_random_state (scikit-learn's generators,
    # without importing scikit-learn: about a second of CPU in a run that needs nothing else of it)
    code = ("import numpy as np\nfrom lfabench import Bags, get_plugin\n"
            "rng = np.random.default_rng(0)\n"
            "bags = Bags.from_list([rng.random((12, 4)) for _ in range(6)])\n"
            f"assert get_plugin('aggregator', {name!r})({params}, random_state=0).fit(bags).transform(bags).shape[0] == 6")
    assert "sklearn" not in loaded_after(code)
