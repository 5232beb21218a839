"""The floor of each method's fit and transform: its dominant operations over this machine's rates.

A method's stage is a list of :class:`Op`: what it computes, its arithmetic (``flops``, in the BLAS dtype it
runs in) and the bytes it must stream from memory (``bytes``). An op's floor is the larger of
``flops / gemm_rate(dtype)`` and ``bytes / copy_bandwidth``; a stage's floor is the sum over its ops. Only
the dominant operations are counted (a floor is a lower bound): the ones that grow with the number of
descriptors, the codebook or the output dimension, at the parameters the stage actually runs with (read from
the fitted estimator's ``get_params()``). The counts are those of the algorithm as implemented, so a ratio
measured / floor says how far the implementation is from the speed of its own arithmetic, not whether a
cheaper algorithm exists (``docs/performance.md`` says where one does).

``Scale`` holds what the counts depend on: training and test descriptors (``n_fit``, ``n_test``), images
(``m_fit``, ``m_test``), the largest bag (``n_max``), the descriptor dimension ``d`` and the classes ``c``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scale:
    """The sizes every count depends on (one split of one dataset and descriptor)."""

    n_fit: int
    n_test: int
    m_fit: int
    m_test: int
    n_max: int
    d: int
    c: int

    @classmethod
    def of(cls, train, test, classes: int) -> Scale:
        """The scale of a split: ``train``/``test`` are :class:`lfabench.Bags`."""
        return cls(n_fit=train.n_descriptors, n_test=test.n_descriptors, m_fit=train.n_samples,
                   m_test=test.n_samples, n_max=int(max(train.counts.max(), test.counts.max())), d=train.dim,
                   c=int(classes))


@dataclass(frozen=True)
class Op:
    """One dominant operation: ``flops`` in ``dtype`` and ``bytes`` read or written from memory."""

    what: str
    flops: float = 0.0
    bytes: float = 0.0
    dtype: str = "float64"

    def seconds(self, rates: dict) -> float:
        """Its floor: the larger of its arithmetic time and its memory time at ``rates``."""
        arithmetic = self.flops / (rates[f"gemm_{self.dtype}"] * 1e9) if self.flops else 0.0
        memory = self.bytes / (rates["copy"] * 1e9) if self.bytes else 0.0
        return max(arithmetic, memory)


def floor_seconds(ops: list[Op], rates: dict) -> float:
    """A stage's floor: the sum of its ops' floors."""
    return sum(op.seconds(rates) for op in ops)


def kmeans(n: int, K: int, d: int, iters: int) -> Op:
    """faiss k-means: every iteration one ``(n, d) x (d, K)`` float32 distance GEMM."""
    return Op(f"k-means {iters} x 2nKd (K={K})", flops=iters * 2.0 * n * K * d, dtype="float32")


def assign(n: int, K: int, d: int) -> Op:
    """Nearest of ``K`` centres for ``n`` descriptors: one float32 distance GEMM."""
    return Op(f"assignment 2nKd (K={K})", flops=2.0 * n * K * d, dtype="float32")


def _sample(n: int, cap) -> int:
    return n if cap is None else min(n, int(cap))


def bow(p, s: Scale, stage: str) -> list[Op]:
    K = p["n_clusters"]
    if stage == "fit":
        return [kmeans(_sample(s.n_fit, p["max_training_descriptors"]), K, s.d, p["kmeans_iter"])]
    return [assign(s.n_test, K, s.d)]


vlad = bow            # same codebook and assignment; the residual sums are O(nd), below the assignment's O(nKd)


def dm(p, s: Scale, stage: str) -> list[Op]:
    K = p["n_clusters"]
    if stage == "fit":
        return bow(p, s, stage) + [Op("(I - aS)^-1: 2K^3", flops=2.0 * K**3)]
    return [assign(s.n_test, K, s.d), Op("histograms x diffusion: 2mK^2", flops=2.0 * s.m_test * K * K)]


def fv(p, s: Scale, stage: str, gmm_n_iter: int | None = None) -> list[Op]:
    """FV's operations; ``gmm_n_iter``: the EM iterations the fit ran (its ``fit_info``), else the cap
    ``gmm_iter`` (an upper bound on the floor). The EM runs in float32 (``em="float32"``, the default) or
    float64 (scikit-learn's, ``em="sklearn"``)."""
    K, q = p["n_components"], (p["pca_components"] or s.d)
    if stage == "fit":
        n = _sample(s.n_fit, p["max_training_descriptors"])
        iters = p["gmm_iter"] if gmm_n_iter is None else int(gmm_n_iter)
        ran = f"at most {iters}" if gmm_n_iter is None else f"{iters} (run)"
        return [Op("PCA (full SVD): 4nd^2", flops=4.0 * n * s.d**2),
                kmeans(n, K, q, p["kmeans_iter"]),
                Op(f"EM, {ran} x (E: 4nKq, M: 4nKq)", flops=iters * 8.0 * n * K * q,
                   dtype="float64" if p.get("em") == "sklearn" else "float32")]
    return [Op("projection 2ndq", flops=2.0 * s.n_test * s.d * q),
            Op("posteriors 4nKq + statistics 4nKq", flops=8.0 * s.n_test * K * q)]


def sc(p, s: Scale, stage: str) -> list[Op]:
    K = p["n_atoms"]
    if stage == "fit":
        n = _sample(s.n_fit, p["max_training_descriptors"])
        return [Op(f"{p['dict_iter']} passes x (correlations 2ndK + statistics 2nK(d+K))",
                   flops=p["dict_iter"] * (2.0 * n * s.d * K + 2.0 * n * K * (s.d + K)))]
    return [Op("correlations 2ndK", flops=2.0 * s.n_test * s.d * K)]


def temb(p, s: Scale, stage: str) -> list[Op]:
    A, d = p["n_anchors"], s.d
    D = (A - 1) * d if p["n_components"] is None else min(p["n_components"], (A - 1) * d)
    def aggregate(n):
        return [Op("embedding 2n(Ad)D", flops=2.0 * n * A * d * D, dtype="float32"),
                Op("democratic kernel 2n n_max D", flops=2.0 * n * s.n_max * D, dtype="float32")]
    if stage == "fit":
        w = _sample(s.n_fit, p["max_whitening_descriptors"])
        ops = [kmeans(_sample(s.n_fit, p["max_training_descriptors"]), A, d, p["kmeans_iter"]),
               Op("whitening covariance 2w(Ad)^2", flops=2.0 * w * (A * d) ** 2),
               Op("eigh (4/3 + 2)(Ad)^3", flops=(10.0 / 3.0) * (A * d) ** 3)]
        if p["rotate"]:
            ops += aggregate(s.n_fit) + [Op("rotation SVD 4mD^2 + 8D^3", flops=4.0 * s.m_fit * D**2 + 8.0 * D**3)]
        return ops
    return aggregate(s.n_test) + [Op("rotation 2mD^2", flops=2.0 * s.m_test * D**2, dtype="float32")]


def gamma_democratic(p, s: Scale, stage: str) -> list[Op]:
    if stage == "fit":
        return []
    return [Op("second-order pooling 2nd^2", flops=2.0 * s.n_test * s.d**2),
            Op("kernel 2n n_max d", flops=2.0 * s.n_test * s.n_max * s.d)]


def univcg(p, s: Scale, stage: str) -> list[Op]:
    """UniVCG's operations. The fit's weighted normal equations cost ``2 m q^2`` float64 FLOP per bit either way;
    batched (the default), a round reads the ``(m, q, q)`` moments once per block of ``C_BLOCK`` classes (one
    GEMM ``W^T M``), unbatched once per bit (one ``einsum`` each)."""
    q, bits = s.d + 1, p["n_rounds"] * s.c
    if stage == "fit":
        from lfabench.registry import get_plugin

        n = min(s.n_fit, p["descriptors_per_image"] * s.m_fit)
        class_block = get_plugin("aggregator", "univcg").C_BLOCK
        reads = p["n_rounds"] * -(-s.c // class_block) if p.get("batched", True) else bits
        return [Op("per-image moments 2nq^2", flops=2.0 * n * q * q),
                Op(f"weighted moments: {bits} x 2mq^2, {reads} reads of the (m, q, q) float64 moments",
                   flops=bits * 2.0 * s.m_fit * q * q, bytes=reads * 8.0 * s.m_fit * q * q),
                Op(f"{bits} projections 2nq", flops=bits * 2.0 * n * q)]
    return [Op(f"bits 2nq x {bits}", flops=2.0 * s.n_test * q * bits)]


def prolfa(p, s: Scale, stage: str, searches: int = 1, c_trials: int = 0, working_set_entries: int = 0,
           n_iter: int = 1) -> list[Op]:
    """ProLFA's operations, counted at what the fit ran (its ``fit_info``): ``searches`` exact candidate searches;
    between them, ``c_trials`` C-step trials, each reading the working set's gathered float64 rows twice (its
    product ``X_w^T D`` and its gradient entries), and one gather of those rows per outer iteration
    (``working_set_entries``: their number summed over the ``n_iter`` iterations)."""
    dbar = p["n_prototypes"]
    if stage == "fit":
        ops = [Op(f"{searches} exact candidate searches 2n d dbar", flops=searches * 2.0 * s.n_fit * s.d * dbar,
                  dtype="float32")]
        if working_set_entries:
            row_bytes = 8.0 * s.d * working_set_entries / max(n_iter, 1)     # one pass, an average iteration
            ops.append(Op(f"{n_iter} iterations between searches: (2 x {c_trials} C-step trials + {n_iter} "
                          "gathers) passes over the working set's float64 rows",
                          bytes=(2.0 * c_trials + n_iter) * row_bytes))
        return ops
    return [Op("pooling 2nd + prototypes 2m d dbar", flops=2.0 * s.n_test * s.d + 2.0 * s.m_test * s.d * dbar)]


semi_prolfa = prolfa

METHODS = {"bow": bow, "vlad": vlad, "fv": fv, "sc": sc, "temb": temb, "dm": dm,
           "gamma_democratic": gamma_democratic, "univcg": univcg, "prolfa": prolfa, "semi_prolfa": semi_prolfa}


def ops(method: str, params: dict, scale: Scale, stage: str, **extra) -> list[Op]:
    """The dominant operations of ``method``'s ``stage`` (``"fit"`` or ``"transform"``) at ``params``."""
    return METHODS[method](params, scale, stage, **extra)
