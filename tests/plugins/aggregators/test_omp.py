"""Batch-OMP and K-SVD kernels: against scikit-learn, the previous NumPy implementation (kept here as the slow
reference), the stacked signals they stand for, their Python form and thread counts."""

import json
import subprocess
import sys

import numpy as np
import pytest
from sklearn.linear_model import orthogonal_mp_gram

from lfabench_plugins.aggregators import omp_kernels
from lfabench_plugins.aggregators.lcksvd import ridge_transform
from lfabench_plugins.aggregators.omp import batch_omp, dense_codes, ksvd, normalize_atoms, sparse_omp

EPS = float(np.finfo(np.float64).eps)


# --- the slow reference: the NumPy Batch-OMP and K-SVD these kernels replace (dense codes, error matrix R) ---

def reference_batch_omp(Y, D, n_nonzero, chunk=512):
    """Batch-OMP over all signals of a chunk at once, block-inverse updates of ``G[S, S]^-1``."""
    Y = np.asarray(Y, dtype=np.float64)
    D = np.asarray(D, dtype=np.float64)
    n, K = Y.shape[0], D.shape[0]
    T = int(min(n_nonzero, K, D.shape[1]))
    G = D @ D.T
    out = np.zeros((n, K))
    for start in range(0, n, chunk):
        alpha0 = Y[start:start + chunk] @ D.T
        c = alpha0.shape[0]
        rows = np.arange(c)
        alpha = alpha0.copy()
        support = np.empty((c, T), dtype=np.int64)
        active = np.zeros((c, K), dtype=bool)
        kept = np.zeros((c, T), dtype=bool)
        done = np.zeros(c, dtype=bool)
        G_sel = np.empty((c, T, K))
        Ginv = np.empty((c, T, T))
        x = np.zeros((c, 0))
        for t in range(T):
            score = np.abs(alpha)
            score[active] = -1.0
            k = np.argmax(score, axis=1)
            support[:, t] = k
            active[rows, k] = True
            done |= alpha[rows, k] ** 2 < EPS
            g_kk = G[k, k]
            if t == 0:
                schur = g_kk
            else:
                g = np.take_along_axis(G_sel[:, :t], k[:, None, None], axis=2)[..., 0]
                b = np.matmul(Ginv[:, :t, :t], g[..., None])[..., 0]
                schur = g_kk - np.einsum("ci,ci->c", g, b)
            done |= schur <= EPS
            keep = ~done
            kept[:, t] = keep
            G_sel[:, t] = np.where(keep[:, None], G[k], 0.0)
            safe = np.where(keep, schur, 1.0)
            if t:
                coef = np.where(keep[:, None], b / safe[:, None], 0.0)
                Ginv[:, :t, :t] += coef[:, :, None] * b[:, None, :]
                Ginv[:, :t, t] = Ginv[:, t, :t] = -coef
            Ginv[:, t, t] = 1.0 / safe
            S = support[:, :t + 1]
            rhs = np.where(kept[:, :t + 1], alpha0[rows[:, None], S], 0.0)
            x = np.matmul(Ginv[:, :t + 1, :t + 1], rhs[..., None])[..., 0]
            if t + 1 < T:
                alpha = alpha0 - np.matmul(x[:, None, :], G_sel[:, :t + 1])[:, 0]
        if T:
            out[start + rows[:, None], support] = x
    return out


def _reference_replace(D, k, Y, err, free):
    candidates = np.flatnonzero(free)
    if candidates.size == 0:
        return False
    i = int(candidates[np.argmax(err[candidates])])
    D[k] = Y[i] / np.linalg.norm(Y[i])
    free[i] = False
    return True


def reference_ksvd(Y, D0, n_nonzero, n_iter, muthresh=0.99, use_thresh=4):
    """K-SVD with the dense residual R updated atom by atom."""
    Y = np.asarray(Y, dtype=np.float64)
    D = normalize_atoms(np.asarray(D0, dtype=np.float64).copy())
    K = D.shape[0]
    usable = np.einsum("ij,ij->i", Y, Y) > 1e-12
    curve = []
    for _ in range(int(n_iter)):
        X = reference_batch_omp(Y, D, n_nonzero)
        R = Y - X @ D
        free = usable.copy()
        replaced = np.zeros(K, dtype=bool)
        for k in range(K):
            omega = np.flatnonzero(X[:, k])
            if omega.size == 0:
                replaced[k] = _reference_replace(D, k, Y, np.einsum("ij,ij->i", R, R), free)
                continue
            E = R[omega] + np.outer(X[omega, k], D[k])
            d = E.T @ X[omega, k]
            norm = np.linalg.norm(d)
            if norm == 0:
                continue
            D[k] = d / norm
            X[omega, k] = E @ D[k]
            R[omega] = E - np.outer(X[omega, k], D[k])
        err = np.einsum("ij,ij->i", R, R)
        curve.append(float(err.sum() / Y.shape[0]))
        usecount = np.count_nonzero(np.abs(X) > 1e-7, axis=0)
        for k in range(K):
            if replaced[k]:
                continue
            g = D @ D[k]
            g[k] = 0.0
            if np.max(g * g, initial=0.0) > muthresh ** 2 or usecount[k] < use_thresh:
                _reference_replace(D, k, Y, err, free)
    return D, curve


# --- data ---

def stacked_problem(n=600, d=16, n_classes=4, per_class=5, seed=0, a=4.0, b=2.0):
    """LC-KSVD2's stacked start on Gaussian descriptors: ``(Y, class_rows, labels, D_new0)``."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, n_classes, size=n)
    Y = rng.normal(size=(n, d)) + 0.8 * rng.normal(size=(n_classes, d))[labels]
    Y /= np.linalg.norm(Y, axis=1, keepdims=True)
    K = n_classes * per_class
    atom_class = np.repeat(np.arange(n_classes), per_class)
    D0 = normalize_atoms(Y[rng.choice(n, K, replace=False)])
    Q = (labels[:, None] == atom_class[None, :]).astype(float)
    H = np.eye(n_classes)[labels]
    X0 = batch_omp(Y, D0, 3)
    class_rows = np.hstack([a * (atom_class[None, :] == np.arange(n_classes)[:, None]), b * np.eye(n_classes)])
    D_new0 = np.hstack([D0, a * ridge_transform(X0, Q), b * ridge_transform(X0, H)])
    return Y, class_rows, labels, D_new0


# --- Batch-OMP ---

def test_the_block_size_changes_only_the_last_bits_of_the_gemm():
    """Blocks are a memory bound: the same supports, codes equal to rounding (BLAS may sum a block of 7 rows
    in another order than one of 600)."""
    Y, P, lab, D = stacked_problem()
    D = normalize_atoms(D)
    small = sparse_omp(Y, D, 5, P, lab, chunk=7)
    whole = sparse_omp(Y, D, 5, P, lab)
    np.testing.assert_array_equal(small[0], whole[0])
    np.testing.assert_array_equal(small[2], whole[2])
    np.testing.assert_allclose(small[1], whole[1], rtol=1e-12, atol=1e-13)


def test_class_rows_give_the_codes_of_the_stacked_signals():
    Y, P, lab, D = stacked_problem()
    D = normalize_atoms(D)
    stacked = np.hstack([Y, P[lab]])
    got = dense_codes(*sparse_omp(Y, D, 6, P, lab), D.shape[0])
    want = orthogonal_mp_gram(D @ D.T, D @ stacked.T, n_nonzero_coefs=6).T
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(batch_omp(stacked, D, 6), want, rtol=1e-9, atol=1e-11)


def running_first_max(scores):
    """The first index of the largest score by a running ``score > best`` scan from -1 (-1 if none is taken)."""
    best, k = -1.0, -1
    for m, score in enumerate(scores):
        if score > best:
            best, k = score, m
    return k


@pytest.mark.parametrize("seed", range(6))
def test_selection_takes_the_first_largest_score_as_a_running_scan(seed):
    """Batch-OMP's atom choice by integer keys equals a running search: ties go to the first, an atom in the
    support (excluded: inf) or a NaN correlation is never chosen, and nothing selectable gives -1."""
    rng = np.random.default_rng(seed)
    K = int(rng.integers(1, 40))
    alpha = rng.choice([0.0, -0.0, 0.25, -0.25, 0.5, -0.5, 1.0, np.inf, -np.inf, np.nan], size=K)
    excluded = np.where(rng.random(K) < 0.3, np.inf, 0.0)
    if seed == 0:
        excluded[:] = np.inf                                   # every atom in the support
    score = np.array([omp_kernels._score(a, e) for a, e in zip(alpha, excluded)])
    with np.errstate(invalid="ignore"):
        want = running_first_max(np.abs(alpha) - excluded)
    assert omp_kernels._first_max(score.view(np.int64), K) == want
    if seed == 0:
        assert want == -1


def test_the_first_atom_is_the_first_of_equal_largest_correlations():
    rng = np.random.default_rng(0)
    D = normalize_atoms(rng.normal(size=(12, 6)))
    alpha0 = np.round(rng.normal(size=(300, 12)) * 2) / 2    # many ties in |alpha0|
    support, _, count = omp_kernels.gram_omp(alpha0, D @ D.T, 1, EPS)
    nonzero = np.abs(alpha0).max(axis=1) ** 2 >= EPS
    np.testing.assert_array_equal(count, nonzero.astype(np.int64))
    np.testing.assert_array_equal(support[nonzero, 0], np.argmax(np.abs(alpha0), axis=1)[nonzero])
    assert np.mean(np.sum(np.abs(alpha0) == np.abs(alpha0).max(axis=1, keepdims=True), axis=1) > 1) > 0.1


def test_compiled_kernels_equal_their_python_form():
    """The fallback without numba runs the same functions as Python: the same bits (no reassociation)."""
    Y, P, lab, D = stacked_problem(n=80)
    D = np.ascontiguousarray(normalize_atoms(D))
    alpha0 = Y @ D[:, :Y.shape[1]].T + (P @ D[:, Y.shape[1]:].T)[lab]
    fast = omp_kernels.gram_omp(alpha0, D @ D.T, 5, EPS)
    slow = omp_kernels.gram_omp.py_func(alpha0, D @ D.T, 5, EPS)
    for x, y in zip(fast, slow):
        np.testing.assert_array_equal(x, y)
    support, coef, count = fast
    args = [(Y, P, lab, D.copy(), support, coef.copy(), count, np.ones(len(Y), bool)) for _ in range(2)]
    r_fast = omp_kernels.update_atoms(*args[0])
    r_slow = omp_kernels.update_atoms.py_func(*args[1])
    np.testing.assert_array_equal(r_fast, r_slow)
    np.testing.assert_array_equal(args[0][3], args[1][3])
    np.testing.assert_array_equal(args[0][5], args[1][5])


def scene15_sift(root, per_class, offset=0):
    """SIFT-90 descriptors (L2-normalised, float64) and class labels of a few images of every Fifteen Scene class."""
    from lfabench.images import read_image_file
    from lfabench.registry import get_plugin

    sift = get_plugin("descriptor", "sift")(max_keypoints=90)
    classes = sorted(p for p in root.iterdir() if p.is_dir())
    Y, labels = [], []
    for c, folder in enumerate(classes):
        for path in sorted(folder.glob("*.jpg"))[offset:offset + per_class]:
            desc, _ = sift.extract(read_image_file(path))
            Y.append(desc)
            labels += [c] * len(desc)
    Y = np.vstack(Y).astype(np.float64)
    return Y / np.linalg.norm(Y, axis=1, keepdims=True), np.array(labels)


@pytest.mark.slow
def test_batch_omp_matches_sklearn_on_real_sift_at_lcksvd2_scale(shared_data):
    """K = 450 atoms, p = 128 + 450 + 15 = 593 stacked dimensions, T = 30: the paper's setting on real SIFT."""
    root = shared_data / "scene15"
    if not root.is_dir():
        pytest.skip("no Fifteen Scene images in the shared data")
    atoms, atom_labels = scene15_sift(root, per_class=2)
    Y, labels = scene15_sift(root, per_class=1, offset=5)
    rng = np.random.default_rng(0)
    C, K, T = 15, 450, 30
    atom_class = np.repeat(np.arange(C), K // C)
    D0 = np.vstack([atoms[rng.choice(np.flatnonzero(atom_labels == c), K // C, replace=False)] for c in range(C)])
    X0 = batch_omp(atoms, D0, T)
    Q = (atom_labels[:, None] == atom_class[None, :]).astype(float)
    D = normalize_atoms(np.hstack([D0, 4.0 * ridge_transform(X0, Q), 2.0 * ridge_transform(X0, np.eye(C)[atom_labels])]))
    P = np.hstack([4.0 * (atom_class[None, :] == np.arange(C)[:, None]), 2.0 * np.eye(C)])
    assert D.shape == (K, 593)
    stacked = np.hstack([Y, P[labels]])
    want = orthogonal_mp_gram(D @ D.T, D @ stacked.T, n_nonzero_coefs=T).T
    got = dense_codes(*sparse_omp(Y, D, T, P, labels), K)
    np.testing.assert_array_equal(got != 0, want != 0)
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)
    # the descriptor-only codes of the transform, at T = 30 over the 450 atoms
    Dy = normalize_atoms(D[:, :128])
    want = orthogonal_mp_gram(Dy @ Dy.T, Dy @ Y.T, n_nonzero_coefs=T).T
    np.testing.assert_allclose(batch_omp(Y, Dy, T), want, rtol=1e-7, atol=1e-9)


# --- K-SVD ---

@pytest.mark.parametrize("case", ["plain", "dead atoms", "no clean-up"])
def test_ksvd_equals_the_slow_reference(case):
    rng = np.random.default_rng(3)
    Y = rng.normal(size=(400, 12))
    D0, kw = Y[:20], {}
    if case == "dead atoms":     # signals in the first 6 dimensions, 4 atoms outside them: dead in iteration 1
        Y[:, 6:] = 0.0
        D0 = np.vstack([Y[:16], np.eye(12)[8:]])
    if case == "no clean-up":
        kw = {"muthresh": 1.0, "use_thresh": 0}
    D, curve = ksvd(Y, D0, 3, 4, progress=False, **kw)
    D_ref, curve_ref = reference_ksvd(Y, D0, 3, 4, **kw)
    np.testing.assert_allclose(D, D_ref, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(curve, curve_ref, rtol=1e-10)


def test_ksvd_with_class_rows_equals_the_slow_reference_on_stacked_signals():
    Y, P, lab, D0 = stacked_problem()
    D, curve = ksvd(Y, D0, 4, 4, progress=False, class_rows=P, labels=lab)
    D_ref, curve_ref = reference_ksvd(np.hstack([Y, P[lab]]), D0, 4, 4)
    np.testing.assert_allclose(D, D_ref, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(curve, curve_ref, rtol=1e-10)


DIGEST = """
import hashlib, json, sys
import numpy as np
from lfabench.threads import fixed_threads
from lfabench_plugins.aggregators.omp import ksvd, sparse_omp
rng = np.random.default_rng(0)
n, d, C, K = 6000, 64, 5, 100
labels = rng.integers(0, C, size=n)
Y = rng.normal(size=(n, d)) + rng.normal(size=(C, d))[labels]
P = np.hstack([4.0 * (np.repeat(np.arange(C), K // C)[None, :] == np.arange(C)[:, None]), 2.0 * np.eye(C)])
D0 = np.hstack([Y[:K], rng.normal(size=(K, K + C))])
with fixed_threads(int(sys.argv[1])):
    D, curve = ksvd(Y, D0, 10, 2, progress=False, class_rows=P, labels=labels)
    codes = sparse_omp(Y, D, 10, P, labels)
h = hashlib.sha256(D.tobytes())
for a in codes:
    h.update(a.tobytes())
print(json.dumps([h.hexdigest(), curve]))
"""


@pytest.mark.slow
def test_ksvd_and_codes_are_bit_identical_under_1_and_2_threads():
    out = [json.loads(subprocess.run([sys.executable, "-c", DIGEST, str(t)], capture_output=True, text=True,
                                     check=True, timeout=600).stdout) for t in (1, 2)]
    assert out[0] == out[1]
