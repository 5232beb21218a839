"""The GPU-only parts of :mod:`.pairwise_fw` (the deprecated ``backend="pairwise_fw_cupy"``), on CuPy arrays.

* :func:`device_top_candidates`: the exact search of :func:`.pairwise_fw.search_gap` without FAISS, a blocked float32
  matrix product and ``m`` arg-max passes per column;
* :func:`fused_pairwise_steps`: the ``n_inner`` pairwise Frank-Wolfe steps of :func:`.pairwise_fw.column_step` as one
  CUDA kernel (``cupy.RawKernel``), a thread per column, instead of ~20 array operations per step from Python.

CuPy is imported inside the functions: this module is imported on every machine, CuPy only where a GPU is used.
"""

from __future__ import annotations

import numpy as np

__all__ = ["SEARCH_BLOCK_BYTES", "device_top_candidates", "fused_pairwise_steps"]

#: Bytes of one block of search scores on the device (``columns x N`` float32).
SEARCH_BLOCK_BYTES = 1 << 30


def device_top_candidates(Xa, Ha, m: int):
    """Per column ``j`` of ``Ha`` (``(d', d̄)``): the ``m`` rows ``i`` of largest ``-Xa_i . Ha_j``, best first, on the
    device of ``Xa`` (``(N, d')`` float32, CuPy): :func:`~.search.top_candidates`'s flat search without FAISS.

    Scores are formed ``SEARCH_BLOCK_BYTES`` at a time (``block x N`` float32, a column's scores contiguous); the
    top ``m`` of each column are ``m`` successive arg-max passes (``m`` is small: 16), each masking the row it took.
    Returns ``(d̄, m)`` int64.
    """
    import cupy as xp

    N, n_cols = Xa.shape[0], Ha.shape[1]
    m = int(min(m, N))
    negHt = xp.asarray(-Ha.T, dtype=xp.float32)                     # (d̄, d')
    out = xp.empty((n_cols, m), dtype=xp.int64)
    width = max(1, min(n_cols, SEARCH_BLOCK_BYTES // (4 * N)))
    for s in range(0, n_cols, width):
        S = negHt[s:s + width] @ Xa.T                               # (block, N)
        cols = xp.arange(S.shape[0])
        for t in range(m):
            best = S.argmax(axis=1)
            out[s:s + width, t] = best
            S[cols, best] = -xp.inf
        del S
    return out


_FUSED_SOURCE = r"""
extern "C" __global__ void pairwise_steps(double* gq, double* v, const REAL* B, const double* e,
                                          const int n_cols, const int K, const int n_inner, const double scale)
{
    const int j = blockDim.x * blockIdx.x + threadIdx.x;
    if (j >= n_cols) return;
    double* g = gq + (long long)j * K;
    double* w = v + (long long)j * K;
    const REAL* Bj = B + (long long)j * K * K;
    const double* ej = e + (long long)j * K;
    const REAL scale_r = (REAL)scale;        // NumPy: a Python float times a REAL array is REAL
    const double neg_inf = __longlong_as_double((long long)0xfff0000000000000ULL);   // NVRTC has no INFINITY
    for (int t = 0; t < n_inner; ++t) {
        int s = 0, a = 0;                    // first arg-min of g, first arg-max of g over w > 0 (NumPy's ties)
        double gmin = g[0], gmax = w[0] > 0 ? g[0] : neg_inf;
        for (int k = 1; k < K; ++k) {
            const double gk = g[k];
            if (gk < gmin) { gmin = gk; s = k; }
            const double ga = w[k] > 0 ? gk : neg_inf;
            if (ga > gmax) { gmax = ga; a = k; }
        }
        const double delta = g[s] - g[a];
        if (!(delta < 0) || s == a) break;   // this column stops moving, and would not move again
        const REAL bb = (Bj[s * K + s] + Bj[a * K + a]) - (REAL)2.0 * Bj[s * K + a];
        const double curv = ((double)(scale_r * bb) + ej[s]) + ej[a];
        const double wa = w[a];
        const double gamma = fmin(wa, -delta / (2.0 * fmax(curv, 1e-300)));
        w[s] += gamma;
        w[a] = gamma >= wa ? 0.0 : wa - gamma;
        const double coef = (2.0 * scale) * gamma;
        const REAL* Bs = Bj + s * K;
        const REAL* Ba = Bj + a * K;
        for (int k = 0; k < K; ++k) g[k] += coef * (double)(Bs[k] - Ba[k]);
        g[s] += (2.0 * gamma) * ej[s];
        g[a] -= (2.0 * gamma) * ej[a];
    }
}
"""

_FUSED_KERNELS: dict = {}


def fused_pairwise_steps(gq, v, B, e, scale: float, n_inner: int) -> None:
    """:func:`.pairwise_fw._pairwise_steps` as one CUDA kernel, a thread per column, in place on ``gq`` and ``v``
    (CuPy arrays, C-contiguous; ``B`` float32 or float64): the same arithmetic in the same order, fused
    multiply-adds off, so the same weights as the array loop (tested on a GPU)."""
    import cupy

    real = "float" if B.dtype == np.float32 else "double"
    if real not in _FUSED_KERNELS:
        _FUSED_KERNELS[real] = cupy.RawKernel(_FUSED_SOURCE.replace("REAL", real), "pairwise_steps",
                                              options=("--fmad=false",))
    n_cols, K = gq.shape
    threads = 128
    _FUSED_KERNELS[real](((n_cols + threads - 1) // threads,), (threads,),
                         (gq, v, cupy.ascontiguousarray(B), cupy.ascontiguousarray(e, dtype=cupy.float64),
                          np.int32(n_cols), np.int32(K), np.int32(n_inner), np.float64(scale)))
