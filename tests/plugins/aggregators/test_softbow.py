"""The blocked soft-BoW path (SoftHistograms) against the whole-array float64 reference it replaced
(kept below), its float32 work against its float64 work, and 1 vs 2 threads."""

import os
import subprocess
import sys

import numpy as np
import pytest

from lfabench.bags import Bags
from lfabench.testing.determinism import thread_env
from lfabench_plugins.aggregators.dbows import dbows_objective, lda_trace_ratio
from lfabench_plugins.aggregators.eobow import entropy_and_grad, eobow_objective
from lfabench_plugins.aggregators.softbow import SoftHistograms, codebook_gradient, encode_histograms, image_blocks
from lfabench_plugins.aggregators.t1 import t1_loss_and_grad, unpack

KINDS = ["linear", "sqeuclidean", "euclidean"]


# The whole-array float64 objectives that SoftHistograms replaced, kept as the reference (every [N, K]
# array built in full).

def ref_softmax_rows(Z):
    E = np.exp(Z - Z.max(axis=1, keepdims=True))
    return E / E.sum(axis=1, keepdims=True)


def ref_softmax_backward(U, dU):
    return U * (dU - np.sum(U * dU, axis=1, keepdims=True))


def ref_distances(X, V, distance):
    D2 = np.maximum((X * X).sum(1)[:, None] - 2.0 * X @ V.T + (V * V).sum(1)[None, :], 0.0)
    return D2 if distance == "sqeuclidean" else np.sqrt(D2 + 1e-12)


def ref_distance_backward(X, V, D, dD, distance):
    A, c = (dD, 2.0) if distance == "sqeuclidean" else (dD / D, 1.0)
    return c * (A.sum(axis=0)[:, None] * V - A.T @ X)


def ref_distance_memberships(X, V, sigma, distance):
    D = ref_distances(X, V, distance)
    return ref_softmax_rows(-D / sigma), D


def ref_distance_histograms_grad(X, V, P, U, D, sigma, distance, dS):
    dZ = ref_softmax_backward(U, np.asarray(P.T @ dS))
    return ref_distance_backward(X, V, D, -dZ / sigma, distance)


def ref_dbows_objective(v, X, P, Y, sigma):
    V = v.reshape(-1, X.shape[1])
    U, D = ref_distance_memberships(X, V, sigma, "sqeuclidean")
    J, dS, _, _ = lda_trace_ratio(np.asarray(P @ U), Y)
    return J, ref_distance_histograms_grad(X, V, P, U, D, sigma, "sqeuclidean", dS).ravel()


def ref_eobow_objective(v, X, P, Y, centres, m_soft, g):
    V = v.reshape(-1, X.shape[1])
    U, D = ref_distance_memberships(X, V, m_soft, "euclidean")
    E, dS = entropy_and_grad(np.asarray(P @ U), Y, centres, g)
    return E, ref_distance_histograms_grad(X, V, P, U, D, m_soft, "euclidean", dS).ravel()


def ref_t1_loss_and_grad(theta, X, P, Y, K, reg):
    d = X.shape[1]
    m, C = Y.shape
    W, b, A, a = unpack(theta, K, d, C)
    U = ref_softmax_rows(X @ W.T + b)
    S = K * np.asarray(P @ U)
    Pr = ref_softmax_rows(S @ A + a)
    loss = -np.sum(Y * np.log(np.maximum(Pr, 1e-300))) / m + 0.5 * reg * np.sum(A * A)
    dL = (Pr - Y) / m
    dA = S.T @ dL + reg * A
    da = dL.sum(axis=0)
    dZ = ref_softmax_backward(U, K * np.asarray(P.T @ (dL @ A.T)))
    return loss, np.concatenate([(dZ.T @ X).ravel(), dZ.sum(axis=0), dA.ravel(), da])



def problem(seed=0, counts=(7, 0, 12, 3, 30, 1, 9, 0, 15, 6), d=6, K=5, C=3):
    """Descriptors of images of uneven sizes (two empty), a codebook near them, labels of every class."""
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    X = rng.normal(size=(offsets[-1], d))
    V = X[rng.choice(len(X), K, replace=False)] + 0.3 * rng.normal(size=(K, d))
    y = np.arange(len(counts)) % C
    Y = np.eye(C)[y]
    P = Bags(X, offsets).pooling_matrix(mean=True, dtype=np.float64)
    return X, offsets, V, Y, P, rng


def reference_forward(X, P, kind, params):
    if kind == "linear":
        W, b = params
        U = ref_softmax_rows(X @ W.T + b)
    else:
        V, sigma = params
        U = ref_distance_memberships(X, V, sigma, kind)[0]
    return np.asarray(P @ U), U


def test_image_blocks_cover_whole_images_in_order():
    offsets = np.concatenate([[0], np.cumsum([3, 0, 4, 9, 2, 2, 0, 1])])
    blocks = image_blocks(offsets, block_rows=5)
    assert blocks == [(0, 2), (2, 3), (3, 4), (4, 8)]      # [3, 0] | [4] | [9] alone, over the cap | [2, 2, 0, 1]
    assert image_blocks(np.array([0]), 5) == []


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("block_rows", [1, 10, 10_000])
def test_float64_forward_and_backward_match_the_reference(kind, block_rows):
    X, offsets, V, _, P, rng = problem()
    params = (rng.normal(size=V.shape), rng.normal(size=5)) if kind == "linear" else (V, 2.0)
    hist = SoftHistograms(X, offsets, dtype=np.float64, block_rows=block_rows)
    S = hist.forward(kind, params)
    S_ref, U = reference_forward(X, P, kind, params)
    np.testing.assert_allclose(S, S_ref, rtol=1e-12, atol=1e-15)
    dS = rng.normal(size=S.shape)
    colsum, MtX = hist.backward(dS)
    dZ = ref_softmax_backward(U, np.asarray(P.T @ dS))
    if kind == "linear":
        np.testing.assert_allclose(MtX, dZ.T @ X, rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(colsum, dZ.sum(0), rtol=1e-10, atol=1e-13)
    else:
        want = ref_distance_histograms_grad(X, V, P, U, ref_distances(X, V, kind), 2.0, kind, dS)
        got = codebook_gradient(V, colsum, MtX, 2.0, kind)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", ["linear", "sqeuclidean"])
@pytest.mark.parametrize("chunk_rows", [1, 3_000, 5_000, 10 ** 6])
def test_encode_histograms_in_chunks_equals_the_whole_set_bit_for_bit(kind, chunk_rows):
    rng = np.random.default_rng(7)
    # several BLOCK_ROWS blocks, empty images at both ends and inside, one image bigger than a block
    counts = np.concatenate([[0], rng.integers(0, 300, size=40), [2_500, 0], rng.integers(0, 300, size=20), [0]])
    offsets = np.concatenate([[0], np.cumsum(counts)])
    X = (50.0 * rng.random((offsets[-1], 8))).astype(np.float32)
    mean, scale = X.mean(0, dtype=np.float64), 37.0
    prepare = lambda block: (np.asarray(block, dtype=np.float64) - mean) / scale  # noqa: E731
    params = (rng.normal(size=(6, 8)), rng.normal(size=6)) if kind == "linear" else (rng.normal(size=(6, 8)), 2.0)
    whole = SoftHistograms(prepare(X), offsets).forward(kind, params, keep=False).astype(np.float32)
    got = encode_histograms(X, offsets, prepare, kind, params, chunk_rows=chunk_rows)
    assert got.dtype == np.float32 and got.shape == (len(counts), 6)
    assert np.array_equal(got, whole)
    assert not got[counts == 0].any() and np.allclose(got[counts > 0].sum(1), 1.0, rtol=1e-5)


def test_encode_histograms_of_no_images_has_the_parameters_width():
    got = encode_histograms(np.zeros((0, 3), np.float32), np.array([0]), lambda b: b, "linear",
                            (np.ones((4, 3)), np.zeros(4)))
    assert got.shape == (0, 4)


def objectives(X, offsets, V, Y, P, rng, dtype):
    """``{name: ((loss, grad) of the new path, (loss, grad) of the reference)}`` at one random point."""
    hist = SoftHistograms(X, offsets, dtype=dtype, block_rows=16)
    K, C = V.shape[0], Y.shape[1]
    S0 = np.asarray(P @ ref_distance_memberships(X, V, 1.5, "euclidean")[0])
    centres = S0[:C] + 0.01
    theta = np.concatenate([rng.normal(size=V.size + K), 0.3 * rng.normal(size=K * C + C)])
    v = V.ravel()
    return {
        "dbows": (dbows_objective(v, hist, Y, 2.0), ref_dbows_objective(v, X, P, Y, 2.0)),
        "eobow": (eobow_objective(v, hist, Y, centres, 1.5, 0.05), ref_eobow_objective(v, X, P, Y, centres, 1.5, 0.05)),
        "t1": (t1_loss_and_grad(theta, hist, Y, K, 0.1), ref_t1_loss_and_grad(theta, X, P, Y, K, 0.1)),
    }


def test_objectives_float64_equal_the_reference():
    for name, ((L, g), (L_ref, g_ref)) in objectives(*problem(1), np.float64).items():
        assert L == pytest.approx(L_ref, rel=1e-12), name
        np.testing.assert_allclose(g, g_ref, rtol=1e-9, atol=1e-12 * np.abs(g_ref).max(), err_msg=name)


def test_objectives_float32_agree_with_the_float64_reference():
    """The stated tolerance of the float32 work: loss to 1e-5 relative, gradient to 1e-4 of its norm."""
    X, offsets, V, Y, P, rng = problem(2, counts=tuple(range(20, 80)), d=32, K=24, C=4)
    for name, ((L, g), (L_ref, g_ref)) in objectives(X, offsets, V, Y, P, rng, np.float32).items():
        assert L == pytest.approx(L_ref, rel=1e-5), name
        assert np.linalg.norm(g - g_ref) <= 1e-4 * np.linalg.norm(g_ref), name


@pytest.mark.parametrize("kind", KINDS)
def test_flushed_subnormal_memberships_are_zero_and_change_the_histograms_and_gradients_below_rounding(kind):
    """With ``flush_subnormals`` no membership is subnormal: those whose exponential is below K x the smallest
    normal are 0 (every subnormal one among them), every other is the kept path's; the histograms and gradients are
    the kept path's to float32 rounding (such a membership is below the rounding of its row's sum, which holds 1)."""
    X, offsets, V, _, P, rng = problem(3, counts=tuple(range(20, 60)), d=8, K=12)
    # sharp memberships: most of a row's shifted logits far below log(1.2e-38) = -87.3, some between -87 and -20
    params = (8.0 * rng.normal(size=V.shape), rng.normal(size=12)) if kind == "linear" else (V, 0.02)
    tiny = np.finfo(np.float32).tiny
    kept, flushed = (SoftHistograms(X, offsets, block_rows=64, flush_subnormals=f) for f in (False, True))
    S_kept, S_flushed = kept.forward(kind, params), flushed.forward(kind, params)
    U_kept = np.vstack([U for U, _ in kept._saved[1]])
    U_flushed = np.vstack([U for U, _ in flushed._saved[1]])
    subnormal = (U_kept > 0) & (U_kept < tiny)
    assert subnormal.mean() > 0.01 and np.mean((U_kept >= tiny) & (U_kept < 1e-8)) > 0.01   # the case is exercised
    assert np.all(U_flushed[subnormal] == 0) and not np.any((U_flushed > 0) & (U_flushed < tiny))
    above = U_kept >= 12 * tiny
    np.testing.assert_array_equal(U_flushed[above], U_kept[above])
    np.testing.assert_allclose(S_flushed, S_kept, rtol=1e-6, atol=1e-30)
    dS = rng.normal(size=S_kept.shape)
    for a, b in zip(flushed.backward(dS), kept.backward(dS)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6 * np.abs(b).max())


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("gradient_scale", [1e-10, 1.0, 1e20])
def test_flush_changes_no_bit_where_nothing_is_subnormal(kind, gradient_scale):
    """Without a membership or a product near the smallest normal, the flushed path (its backward on dL/dS scaled
    by a power of two, its results scaled back) gives the kept path's histograms and gradients bit for bit."""
    X, offsets, V, _, _, rng = problem(4, counts=tuple(range(20, 60)), d=8, K=12)
    params = (0.3 * rng.normal(size=V.shape), rng.normal(size=12)) if kind == "linear" else (V, 2.0)
    kept, flushed = (SoftHistograms(X, offsets, block_rows=64, flush_subnormals=f) for f in (False, True))
    np.testing.assert_array_equal(flushed.forward(kind, params), kept.forward(kind, params))
    assert min(U.min() for U, _ in kept._saved[1]) > 1e-15
    dS = gradient_scale * rng.normal(size=(len(offsets) - 1, 12))
    for a, b in zip(flushed.backward(dS), kept.backward(dS)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kind", KINDS)
def test_logit_spreads_bound_each_blocks_logit_range(kind):
    """The per-block bound that lets the flush skip blocks holds for every row (and is not vacuous)."""
    X, offsets, V, _, _, rng = problem(5, counts=tuple(range(20, 60)), d=8, K=12)
    params = (3.0 * rng.normal(size=V.shape), rng.normal(size=12)) if kind == "linear" else (V, 0.5)
    hist = SoftHistograms(X, offsets, dtype=np.float64, block_rows=64)
    p = hist._params(kind, params)
    logits = "linear" if kind == "sqeuclidean" else kind
    bounds = hist.logit_spreads(logits, p)
    spreads = []
    for lo, hi, r0, r1, _, _ in hist.blocks:
        Z, _ = hist._logits(hist.X[r0:r1], slice(r0, r1), logits, p)
        spreads.append(float(np.max(Z.max(axis=1) - Z.min(axis=1))))
    assert np.all(np.array(spreads) <= bounds) and np.all(bounds < 4 * np.array(spreads))


@pytest.mark.parametrize("name", ["t1", "dbows", "eobow"])
def test_soft_bow_plugins_flush_subnormals_by_default_and_old_records_keep_them(name):
    from lfabench.registry import get_plugin
    from lfabench.reproduce import with_introduced_params

    assert get_plugin("aggregator", name)().flush_subnormals is True
    old = {"aggregator": {"name": name, "params": {"n_clusters": 8}}}
    assert with_introduced_params(old)["aggregator"]["params"] == {"n_clusters": 8, "flush_subnormals": False}


SCRIPT = """
import hashlib, numpy as np
from lfabench.threads import fixed_threads
from lfabench_plugins.aggregators.softbow import SoftHistograms, codebook_gradient
rng = np.random.default_rng(0)
counts = rng.integers(0, 60, size=400)
X = rng.normal(size=(counts.sum(), 64)); V = rng.normal(size=(96, 64)); W = rng.normal(size=(96, 64)) / 8
h = hashlib.sha256()
with fixed_threads(1):                   # a run's default pin (docs/reproducibility.md)
    hist = SoftHistograms(X, np.concatenate([[0], np.cumsum(counts)]))
    for kind, params in [("linear", (W, rng.normal(size=96))), ("sqeuclidean", (V, 50.0)), ("euclidean", (V, 3.0))]:
        S = hist.forward(kind, params)
        colsum, MtX = hist.backward(np.sin(S * 1000))
        for a in (S, colsum, MtX):
            h.update(np.ascontiguousarray(a).tobytes())
print(h.hexdigest())
"""


@pytest.mark.slow
def test_bit_identical_in_processes_started_with_1_and_2_threads():
    """Forward and backward of every kind, float32 work, blocks of whole images of uneven sizes."""
    digests = [subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True,
                              env=dict(os.environ, **thread_env(t))).stdout.strip() for t in (1, 2)]
    assert len(digests[0]) == 64 and digests[0] == digests[1]
