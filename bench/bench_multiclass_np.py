r"""Multi-class Neyman-Pearson (paper 001, eq. 11): the fused value+gradient pass and IQRC vs the baseline.

**Groups 1-3, one full oracle pass.** At one :math:`W` (rows of norm 0.05, inside the paper's
balls of radius 0.1, seeded), the value and gradient of **all C class terms** :math:`L_k`, i.e. the
objective and every constraint of `fastcon.problems.multiclass_neyman_pearson`:

* ``fastcon``: ``value_and_subgradient`` of the objective and of each constraint, the kernels of
  `fastcon._kernels._multiclass_np`: on dense data two BLAS products per block of rows around a
  vectorised loss loop (serial); on CSR the scores row by row and the gradient column by column
  from a CSC copy, in parallel chunks of rows/columns when a class block is large (the full-size
  synthetic group: 8 chunks per class, on numba's threads; ``extra_info["serial_ms"]`` is the same
  pass with one numba thread);
* ``reference``: ``tests/reference/multiclass_np.class_loss_value_grad`` on each class block
  (NumPy dense algebra, BLAS products). On the synthetic CSR group the reference densifies a
  class block (5,000 x 10,000 floats per class at full size), so the sparse group uses
  :func:`sparse_class_loss_value_grad`, the same formulas with the block kept sparse
  (:math:`S = A_k W^\top`, :math:`\nabla = (A_k^\top B)^\top` with SciPy's CSR products); it is
  checked against the dense reference on a slice before timing.

BLAS runs on one thread on both sides: it is limited with ``threadpoolctl`` (on this busy 2-core
machine a 2-thread OpenBLAS made the usps reference 25x *slower*, which would fake a speed-up;
fastcon's dense kernels keep every product below OpenBLAS's threading threshold anyway).
Results are compared before timing (values and gradients within 1e-10 relative, 1e-12 absolute).

1. pendigits, 7,494 x 16 dense (the experiment's raw integer coordinates), C = 10; target 5x.
2. synthetic CSR, 100,000 x 10,000, 20 classes, ~50 stored entries per row (``scipy.sparse.random``,
   seed 2024, values U[0, 1), uniform labels); target 5x. ``FASTCON_BENCH_SMALL=1``: 5,000 rows.
   fastcon's problem stores the point as :math:`\operatorname{vec}(W^\top)` (``layout="features"``,
   the CSR kernels' native layout, which a user of sparse data should pick); ``extra_info`` has
   the same pass in the default ``layout="classes"`` (``classes_layout_ms``, same values and the
   same gradients transposed, checked) so that both figures are on record.
3. usps, 7,291 x 256 dense, C = 10; target: no slower than BLAS (ratio >= 1). ``extra_info`` also
   holds the time of :func:`blas_class_loss_value_grad`, a NumPy prototype of a BLAS path for the
   dense term (not part of the package; checked against the reference), for comparison with the
   package's blocked BLAS kernel.

**Group 4, to an objective level** on pendigits (raw coordinates, :math:`\lambda = 0.1`,
:math:`r_k = 4.5`, :math:`x_0 = 0`): time until the first iterate with objective
:math:`\le` ``LEVEL`` = 1e-2 (start 4.5) and infeasibility :math:`\le 10^{-3}`. ``fastcon``: IQRC
(:math:`\hat\rho = 1`, tolerance 1e-3 read as :math:`\hat\epsilon`, :math:`K` = 20000, at most 5
outer iterations), stopped by its callback at the first outer iterate at the level.
``reference``: the exact-penalty baseline with the paper's pendigits settings (as in
``fastcon reproduce iqrc-mnpc``); it is deterministic, so an untimed run first finds the
iteration :math:`k` at which it reaches the level and the timed run stops there. ``extra_info``
has both times on the solvers' algorithm clocks. ``FASTCON_BENCH_SMALL=1``: :math:`K` = 2000,
at most 2 outer iterations, baseline budget 10 s (60 s otherwise). (:math:`K \le 1000` makes IQRC
saturate the prioritised class on raw pendigits; see `fastcon.experiments.iqrc_mnpc`.)
"""
import contextlib
import os

import numpy as np
import pytest
import scipy.sparse as sp

from _timing import best_time
from fastcon.datasets import Dataset
from fastcon.problems import multiclass_neyman_pearson
from reference.kernels import LOSSES
from reference.multiclass_np import class_loss_value_grad

SMALL = bool(os.environ.get("FASTCON_BENCH_SMALL"))
N_SPARSE = 5_000 if SMALL else 100_000
D_SPARSE, C_SPARSE, NNZ_PER_ROW = 10_000, 20, 50
ROW_NORM = 0.05
LEVEL, INFEASIBILITY = 1e-2, 1e-3
IQRC_K, IQRC_T = (2000, 2) if SMALL else (20000, 5)
BASELINE_BUDGET = 10.0 if SMALL else 60.0

GROUP_PEN = "mNPC value+gradient of all C terms, pendigits 7,494 x 16 dense, C = 10: fastcon vs NumPy"
GROUP_SPARSE = (f"mNPC value+gradient of all C terms, synthetic CSR {N_SPARSE:,} x {D_SPARSE:,}, C = {C_SPARSE}, "
                f"~{NNZ_PER_ROW} nnz/row: fastcon vs NumPy/SciPy")
GROUP_USPS = "mNPC value+gradient of all C terms, usps 7,291 x 256 dense, C = 10: fastcon vs NumPy (BLAS)"
GROUP_IQRC = (f"pendigits mNPC to objective <= {LEVEL:g} with infeasibility <= {INFEASIBILITY:g}: "
              "IQRC (fastcon) vs exact penalty (reference = baseline method)")


@contextlib.contextmanager
def one_blas_thread():
    """Limit BLAS to one thread (no-op without threadpoolctl); yields the thread count used."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
        yield "default"
        return
    with threadpool_limits(limits=1):
        yield 1


# ------------------------------------------------------------------------------ references
def sparse_class_loss_value_grad(A, W, k, loss="sigmoid"):
    r""":func:`class_loss_value_grad` (unweighted, all rows) with the class block ``A`` kept in CSR.

    :math:`S = A W^\top`, :math:`M = S_{:k} - S`, :math:`L_k = \frac1n\sum_i\sum_{l\ne k}\phi(M_{il})`,
    :math:`\nabla_W L_k = \frac1n (A^\top B)^\top` with :math:`B` as in the reference.
    """
    n = A.shape[0]
    S = np.asarray(A @ W.T)
    M = S[:, [k]] - S
    phi, dphi = LOSSES[loss](M)
    others = np.arange(W.shape[0]) != k
    value = np.sum(phi[:, others]) / n
    B = np.zeros_like(S)
    B[:, others] = -dphi[:, others]
    B[:, k] = dphi[:, others].sum(axis=1)
    grad = np.asarray(A.T @ B).T / n
    return value, grad


def blas_class_loss_value_grad(A, W, k, G):
    r"""BLAS prototype of the dense sigmoid term: :math:`S = A W^\top` (GEMM), a stable sigmoid on
    the :math:`n \times C` margins, :math:`\nabla = B^\top A / n` (GEMM) written into ``G``."""
    n = A.shape[0]
    S = A @ W.T
    M = S[:, k:k + 1] - S
    phi = np.empty_like(M)
    pos = M > 0
    e = np.exp(-np.abs(M))
    phi[pos] = e[pos] / (1.0 + e[pos])        # 1/(1+e^z) for z > 0, without overflow
    phi[~pos] = 1.0 / (1.0 + e[~pos])
    dphi = phi * (phi - 1.0)                   # phi' = -phi (1 - phi)
    phi[:, k] = 0.0
    dphi[:, k] = 0.0
    B = -dphi
    B[:, k] = dphi.sum(axis=1)
    np.dot(B.T, A, out=G)
    G /= n
    return phi.sum() / n


# ------------------------------------------------------------------------------ fixtures
def _point(C, d, seed):
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((C, d))
    W *= ROW_NORM / np.linalg.norm(W, axis=1, keepdims=True)
    return W


def _case(dataset, seed, sparse=False, layout="classes"):
    problem = multiclass_neyman_pearson(dataset, priority_class=0, radius=0.1, layout=layout)
    C, d = int(dataset.y.max()) + 1, dataset.n_features
    W = _point(C, d, seed)
    order = [problem.objective.class_id] + [c.term.class_id for c in problem.constraints]
    blocks = [dataset.X[dataset.y == k] for k in order]
    if not sparse:
        blocks = [np.ascontiguousarray(b) for b in blocks]
    x = (W if layout == "classes" else W.T).ravel().copy()
    return {"problem": problem, "W": W, "x": x, "order": order, "blocks": blocks, "layout": layout,
            "grads": np.empty((C, C * d)), "levels": np.array([0.0] + [c.bound for c in problem.constraints])}


@pytest.fixture(scope="module")
def pendigits(data_home):
    from fastcon.experiments import iqrc_mnpc as E

    return _case(E.load_data("pendigits", E.config(False), data_home), seed=1)


@pytest.fixture(scope="module")
def usps(data_home):
    from fastcon.experiments import iqrc_mnpc as E

    return _case(E.load_data("usps", E.config(False), data_home), seed=2)


@pytest.fixture(scope="module")
def synthetic_dataset():
    rng = np.random.default_rng(2024)
    X = sp.random(N_SPARSE, D_SPARSE, density=NNZ_PER_ROW / D_SPARSE, format="csr", random_state=rng)
    y = rng.integers(0, C_SPARSE, size=N_SPARSE)
    return Dataset(X, y, name=f"synthetic_csr_{N_SPARSE}", task="multiclass")


@pytest.fixture(scope="module")
def synthetic_csr(synthetic_dataset):
    """The sparse group's case in the CSR kernels' native layout, x = vec(W^T) (``layout="features"``)."""
    return _case(synthetic_dataset, seed=3, sparse=True, layout="features")


@pytest.fixture(scope="module")
def synthetic_csr_classes(synthetic_dataset):
    """The same problem and point in the default layout, x = vec(W) (the kernels transpose W on every call)."""
    return _case(synthetic_dataset, seed=3, sparse=True, layout="classes")


# ------------------------------------------------------------------------------ passes
def fused_pass(case):
    """Value and gradient of every term (objective first), the way a solver calls them."""
    problem, x, grads = case["problem"], case["x"], case["grads"]
    values = np.empty(len(grads))
    values[0] = problem.objective.value_and_subgradient(x, grads[0])
    for i, c in enumerate(problem.constraints, start=1):
        values[i] = c.value_and_subgradient(x, grads[i])
    return values + case["levels"]  # the raw class losses L_k (constraints report L_k - r_k)


def reference_pass(case, sparse=False):
    fn = sparse_class_loss_value_grad if sparse else class_loss_value_grad
    out = [fn(block, case["W"], k) for block, k in zip(case["blocks"], case["order"])]
    return np.array([v for v, _ in out]), [g for _, g in out]


def _check(case, sparse=False):
    values, grads = reference_pass(case, sparse)
    fast = fused_pass(case)
    np.testing.assert_allclose(fast, values, rtol=1e-10, atol=1e-12)
    for i, g in enumerate(grads):
        expected = g if case["layout"] == "classes" else g.T  # gradients are laid out like x
        np.testing.assert_allclose(case["grads"][i], expected.ravel(), rtol=1e-10, atol=1e-12)


def _run_pair(benchmark, case, role, target, rounds, sparse=False):
    with one_blas_thread() as threads:
        _check(case, sparse)  # also compiles / loads the kernels
        if role == "fastcon":
            benchmark.pedantic(fused_pass, args=(case,), rounds=rounds, warmup_rounds=1, iterations=1)
        else:
            benchmark.pedantic(reference_pass, args=(case, sparse), rounds=rounds, warmup_rounds=1, iterations=1)
    info = {"role": role, "blas_threads": threads}
    if role == "fastcon":
        info["target"] = target
    benchmark.extra_info.update(info)


@pytest.mark.benchmark(group=GROUP_PEN)
def test_pendigits_pass_fastcon(benchmark, pendigits):
    _run_pair(benchmark, pendigits, "fastcon", 5, rounds=50)


@pytest.mark.benchmark(group=GROUP_PEN)
def test_pendigits_pass_reference(benchmark, pendigits):
    _run_pair(benchmark, pendigits, "reference", 5, rounds=50)


@pytest.mark.benchmark(group=GROUP_SPARSE)
def test_sparse_pass_fastcon(benchmark, synthetic_csr, synthetic_csr_classes):
    import numba

    _run_pair(benchmark, synthetic_csr, "fastcon", 5, rounds=3 if SMALL else 5, sparse=True)
    nnz = sum(b.nnz for b in synthetic_csr["blocks"])
    rounds = 3 if SMALL else 5
    threads = numba.get_num_threads()
    with one_blas_thread():
        _check(synthetic_csr_classes, sparse=True)
        classes = best_time(lambda: fused_pass(synthetic_csr_classes), rounds)
        # the two layouts give the same values and the same gradients, transposed
        values = fused_pass(synthetic_csr)
        assert np.array_equal(values, fused_pass(synthetic_csr_classes))
        C, d = synthetic_csr["W"].shape
        assert np.array_equal(synthetic_csr["grads"].reshape(C, d, C),
                              synthetic_csr_classes["grads"].reshape(C, C, d).transpose(0, 2, 1))
        try:
            numba.set_num_threads(1)
            serial = best_time(lambda: fused_pass(synthetic_csr), rounds)
        finally:
            numba.set_num_threads(threads)
    benchmark.extra_info.update(layout="features", nnz_per_row=nnz / N_SPARSE, numba_threads=threads,
                                serial_ms=serial * 1e3, classes_layout_ms=classes * 1e3)


@pytest.mark.benchmark(group=GROUP_SPARSE)
def test_sparse_pass_reference(benchmark, synthetic_csr):
    # the sparse formula equals the dense reference (which densifies the block) on a slice
    case = synthetic_csr
    block, k = case["blocks"][1][:300], case["order"][1]
    v_dense, g_dense = class_loss_value_grad(block, case["W"], k)
    v_sparse, g_sparse = sparse_class_loss_value_grad(block, case["W"], k)
    assert v_sparse == pytest.approx(v_dense, rel=1e-12)
    np.testing.assert_allclose(g_sparse, g_dense, rtol=1e-10, atol=1e-14)
    _run_pair(benchmark, case, "reference", 5, rounds=3 if SMALL else 5, sparse=True)


@pytest.mark.benchmark(group=GROUP_USPS)
def test_usps_pass_fastcon(benchmark, usps):
    _run_pair(benchmark, usps, "fastcon", 1, rounds=30)


@pytest.mark.benchmark(group=GROUP_USPS)
def test_usps_pass_reference(benchmark, usps):
    _run_pair(benchmark, usps, "reference", 1, rounds=30)
    case = usps
    C, d = case["W"].shape
    G = np.empty((C, d))

    def blas_pass():
        return [blas_class_loss_value_grad(b, case["W"], k, G) for b, k in zip(case["blocks"], case["order"])]

    values, grads = reference_pass(case)
    for block, k, v_ref, g_ref in zip(case["blocks"], case["order"], values, grads):
        v = blas_class_loss_value_grad(block, case["W"], k, G)
        assert abs(v - v_ref) <= 1e-12 and np.max(np.abs(G - g_ref)) <= 1e-12
    with one_blas_thread():
        seconds = best_time(blas_pass, 3 if SMALL else 15)
    benchmark.extra_info.update(blas_prototype_ms=seconds * 1e3)


# ------------------------------------------------------------------------------ group 4
@pytest.fixture(scope="module")
def pendigits_problem(data_home):
    from fastcon.experiments import iqrc_mnpc as E

    cfg = E.config(False)
    return E.build("pendigits", cfg, data_home), cfg


def _iqrc_to_level(problem):
    from fastcon.solvers import iqrc

    def stop(t, x, info):
        return info["objective"] <= LEVEL and info["max_violation"] <= INFEASIBILITY

    return iqrc(problem, problem.x0, rho_hat=1.0, tolerance=1e-3, tolerance_reading="eps_hat", outer_iter=IQRC_T,
                inner_iter=IQRC_K, record_every=IQRC_K, callback=stop)


@pytest.mark.benchmark(group=GROUP_IQRC)
def test_to_level_iqrc(benchmark, pendigits_problem):
    bundle, _ = pendigits_problem
    problem = bundle["problem"]
    with one_blas_thread():
        res = benchmark.pedantic(_iqrc_to_level, args=(problem,), rounds=1, iterations=1)
    outer = res.info["outer_history"]
    reached = (outer["objective"] <= LEVEL) & (outer["max_violation"] <= INFEASIBILITY)
    assert reached.any(), f"IQRC did not reach {LEVEL:g} in {IQRC_T} outer iterations: {outer['objective']}"
    t = int(np.flatnonzero(reached)[0])
    assert np.all(outer["constraint"][: t + 1] <= res.info["switching_threshold"])  # every outer iterate feasible
    benchmark.extra_info.update(role="fastcon", level=LEVEL, iqrc_inner_iter=IQRC_K, iqrc_outer_to_level=t,
                                iqrc_time_to_level_s=float(outer["time"][t]), iqrc_objective=float(outer["objective"][t]))


@pytest.mark.benchmark(group=GROUP_IQRC)
def test_to_level_exact_penalty(benchmark, pendigits_problem):
    from fastcon.experiments import iqrc_mnpc as E

    bundle, cfg = pendigits_problem
    with one_blas_thread():
        probe = E.run_exact_penalty(bundle, cfg, "pendigits", BASELINE_BUDGET)  # untimed: where is the level?
        h = probe["history"]
        reached = np.flatnonzero((h["objective"] <= LEVEL) & (h["max_violation"] <= INFEASIBILITY))
        assert reached.size, f"the baseline did not reach {LEVEL:g} within {BASELINE_BUDGET:g} s"
        k = max(1, int(h["iteration"][reached[0]]))  # row k is x_k: k iterations produce it
        timed_cfg = dict(cfg, baseline_max_iter=k)
        rec = benchmark.pedantic(E.run_exact_penalty, args=(bundle, timed_cfg, "pendigits", BASELINE_BUDGET),
                                 rounds=1, iterations=1)
    assert rec["result"].objective <= LEVEL and rec["result"].max_violation <= INFEASIBILITY
    t_ep = float(rec["history"]["time"][-1])
    benchmark.extra_info.update(role="reference", ep_iterations_to_level=k, ep_time_to_level_s=t_ep,
                                ep_objective=float(rec["result"].objective),
                                ep_final_objective_probe=float(probe["result"].objective))
