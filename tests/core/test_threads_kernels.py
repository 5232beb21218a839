"""Generic OpenBLAS kernels on a CPU they predate: the pinned pools name each library's kernel, and a run warns
when an OpenBLAS falls back to kernels without AVX on a CPU with AVX2."""

from __future__ import annotations

import warnings

import pytest

from lfabench.threads import BlasKernelWarning, generic_kernel_problems, pinned_pools

SPR = ["sse2", "avx", "avx2", "fma", "avx512f", "avx512bw"]          # a Sapphire Rapids Xeon's flags (a few)
ZEN2 = ["sse2", "avx", "avx2", "fma"]


def _pool(library: str, arch: str | None, api: str = "openblas", version: str = "0.3.15") -> dict:
    return {"user_api": "blas" if api == "openblas" else "openmp", "internal_api": api, "library": library,
            "version": version if api == "openblas" else None, "architecture": arch}


def test_a_generic_kernel_on_an_avx512_cpu_names_the_library_and_the_kernel_numpy_chose():
    pools = [_pool("libscipy_openblas64_.so", "SkylakeX", version="0.3.31"),
             _pool("libopenblaso-faiss.so", "Prescott"), _pool("libgomp.so", None, api="openmp")]
    (message,) = generic_kernel_problems(pools, SPR)
    assert "libopenblaso-faiss.so (OpenBLAS 0.3.15: 'Prescott')" in message
    assert "OPENBLAS_CORETYPE=SkylakeX" in message and "AVX-512" in message
    assert "libscipy_openblas64_" not in message


def test_without_another_known_kernel_the_suggestion_follows_the_cpu_flags():
    pools = [_pool("libopenblas-a.so", "Prescott"), _pool("libopenblas-b.so", "Core2")]
    (message,) = generic_kernel_problems(pools, ZEN2)
    assert "OPENBLAS_CORETYPE=Haswell" in message and "AVX-512" not in message
    assert "libopenblas-a.so" in message and "libopenblas-b.so" in message
    (message,) = generic_kernel_problems(pools, SPR)
    assert "OPENBLAS_CORETYPE=SkylakeX" in message


@pytest.mark.parametrize("flags", [["sse2", "sse3"], ["sse2", "avx", "avx2"], [], None])
def test_a_generic_kernel_is_right_for_a_cpu_without_avx2_and_fma(flags):
    # Prescott is what an old CPU (or unknown flags) should run: no message
    assert generic_kernel_problems([_pool("libopenblas.so", "Prescott")], flags) == []


def test_known_kernels_give_no_message():
    pools = [_pool("a.so", "Haswell"), _pool("b.so", "SkylakeX"), _pool("c.so", "Zen"), _pool("g.so", None, "openmp")]
    assert generic_kernel_problems(pools, SPR) == []


def test_the_pinned_pools_name_each_librarys_version_and_kernel():
    pools = pinned_pools()
    blas = [p for p in pools if p["internal_api"] == "openblas"]
    assert blas and all(p["version"] and p["architecture"] for p in blas)
    assert {"user_api", "internal_api", "library", "version", "architecture"} == set(pools[0])


def test_a_run_warns_about_a_generic_kernel(monkeypatch, tmp_path):
    import lfabench.run as run_module
    from lfabench.run import run_benchmark

    fake = [_pool("libopenblaso-faiss.so", "Prescott"), _pool("libscipy_openblas.so", "SkylakeX", version="0.3.30")]
    monkeypatch.setattr(run_module, "pinned_pools", lambda: fake)
    monkeypatch.setattr("lfabench.provenance.cpu_features",
                        lambda: {"cpu_model": "test", "cpu_simd": [], "cpu_flags": SPR, "machine": "x86_64"})
    cfg = {"dataset": {"name": "digits", "params": {"n_samples": 120}}, "descriptor": {"name": "patches", "params": {}},
           "aggregator": {"name": "bow", "params": {"n_clusters": 8, "random_state": 0}},
           "evaluator": {"name": "knn", "params": {}}, "seed": 0, "threads": 1, "cache": False}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rec = run_benchmark(cfg, tmp_path / "run")
    (warned,) = [w for w in caught if issubclass(w.category, BlasKernelWarning)]
    assert "libopenblaso-faiss.so" in str(warned.message) and "OPENBLAS_CORETYPE=SkylakeX" in str(warned.message)
    assert rec["determinism"]["pinned"] == fake
