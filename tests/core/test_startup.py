"""Start-up loads no heavy library: ``import lfabench`` and the plugin registration of every ``lfabench run``.

Each check runs in a fresh interpreter and reads ``sys.modules``: scikit-learn (which loads scipy.stats and
pandas), matplotlib, faiss and OpenCV are imported where they are used, not at start-up."""

from __future__ import annotations

import json
import os
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


def test_import_lfabench_and_the_cli_load_no_numpy_until_a_name_is_used():
    # `lfabench --help` and every command's parser need none of the public names: NumPy loads at first use
    assert loaded_after("import lfabench, lfabench.cli", ("numpy",)) == []
    assert loaded_after("from lfabench import Bags", ("numpy",)) == ["numpy"]


def test_the_public_names_are_their_modules_objects():
    import lfabench
    from lfabench import aggregate, bags, hookspecs, plugin, registry

    homes = {"Aggregator": aggregate, "Bags": bags, "hookimpl": hookspecs, "KINDS": plugin, "PluginSpec": plugin,
             "get_plugin": registry, "get_registry": registry}
    assert sorted(homes) == sorted(n for n in lfabench.__all__ if n != "__version__")
    for name, module in homes.items():
        assert getattr(lfabench, name) is getattr(module, name), name
        assert name in dir(lfabench)
    assert lfabench.registry is registry  # a submodule read as an attribute, as when the package imported it
    unknown = "no_such_name"
    with pytest.raises(AttributeError, match=f"no attribute '{unknown}'"):
        getattr(lfabench, unknown)


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


@pytest.mark.parametrize("run_argv, printing", [
    (["--cfg", "job"], True), (["aggregator=vlad", "--cfg=job", "--resolve"], True), (["-c", "all"], True),
    (["--info", "searchpath"], True), (["--help"], True), (["--hydra-help"], True), (["-m", "--cfg", "job"], True),
    (["aggregator=vlad"], False), (["-m", "seed=0,1"], False), ([], False), (["+experiment=cfg"], False)])
def test_only_a_printing_run_starts_blas_with_one_thread(run_argv, printing):
    from lfabench.cli import one_blas_thread_when_printing

    environ: dict[str, str] = {}
    assert one_blas_thread_when_printing(run_argv, environ, modules={}) is printing
    assert environ == ({"OPENBLAS_NUM_THREADS": "1"} if printing else {})


@pytest.mark.parametrize("variable", ["OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"])
def test_a_printing_run_keeps_the_users_thread_variables(variable):
    from lfabench.cli import one_blas_thread_when_printing

    environ = {variable: "2"}
    assert not one_blas_thread_when_printing(["--cfg", "job"], environ, modules={})
    assert environ == {variable: "2"}
    # once NumPy is loaded its pool is started: setting the variable would be a no-op that misreports
    environ = {}
    assert not one_blas_thread_when_printing(["--cfg", "job"], environ, modules={"numpy": object()})
    assert environ == {}


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="OpenBLAS starts one thread on a one-core machine")
def test_lfabench_run_cfg_job_loads_openblas_with_one_thread():
    # end to end, in a fresh interpreter without thread variables: the config printed, NumPy's pool at one thread
    code = ("import contextlib, io, json\nfrom lfabench.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n    main(['run', '--cfg', 'job'])\n"
            "from threadpoolctl import threadpool_info\n"
            "print(json.dumps(['aggregator:' in out.getvalue() or out.getvalue()[:200],"
            " [p['num_threads'] for p in threadpool_info() if p['internal_api'] == 'openblas']]))")
    from lfabench.cli import BLAS_THREAD_VARIABLES

    env = {k: v for k, v in os.environ.items() if k not in BLAS_THREAD_VARIABLES}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    printed, threads = json.loads(proc.stdout.strip().splitlines()[-1])
    assert printed is True and threads == [1]


def collector_after(code: str) -> dict:
    """``gc.isenabled()``, ``gc.get_freeze_count()`` and the printed config's first line after a fresh interpreter
    ran ``code`` (which runs ``lfabench run --cfg job``, its output captured)."""
    probe = ("import contextlib, gc, io, json, sys\nfrom lfabench.cli import main\n"
             f"with contextlib.redirect_stdout(io.StringIO()) as out:\n    {code}\n"
             "print(json.dumps({'enabled': gc.isenabled(), 'frozen': gc.get_freeze_count(),"
             " 'first': out.getvalue().splitlines()[0]}))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_executable_freezes_what_lfabench_run_loaded_and_collects_again():
    # the console script's call (argv from the command line): start-up collected nothing, its objects frozen, the
    # collector on again for the run
    after = collector_after("sys.argv = ['lfabench', 'run', '--cfg', 'job']; main()")
    assert after["enabled"] and after["frozen"] > 10_000
    assert after["first"] == "descriptor:"


def test_an_in_process_lfabench_run_leaves_the_callers_collector_alone():
    # a caller that passes argv (a test, a notebook) keeps its garbage collected: nothing is frozen
    after = collector_after("main(['run', '--cfg', 'job'])")
    assert after == {"enabled": True, "frozen": 0, "first": "descriptor:"}
