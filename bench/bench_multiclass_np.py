r"""Multi-class Neyman-Pearson (Ma, Lin & Yang [MLY20] eq. (11)): the fused value+gradient pass, IQRC vs baseline.

**Groups 1-3, one full oracle pass.** At one :math:`W` (rows of norm 0.05, inside the paper's
balls of radius 0.1, seeded), the value and gradient of **all C class terms** :math:`L_k`, i.e. the
objective and every constraint of `fastcon.problems.multiclass_neyman_pearson`:

* ``fastcon``: ``value_and_subgradient`` of the objective and of each constraint, the kernels of
  `fastcon._kernels._multiclass_np`: on dense data two BLAS products per block of rows around a
  vectorised loss loop (serial); on CSR the scores row by row and the gradient column by column
  from a CSC copy, in parallel chunks of rows/columns when a class block is large (the full-size
  synthetic group: 8 chunks per class, on numba's threads; ``extra_info["serial_ms"]`` is the same
  pass with one numba thread);
* ``reference``: ``bench/_references.class_loss_value_grad`` on each class block, the honest
  NumPy/SciPy code: :math:`S = A_k W^\top` (BLAS, or ``scipy.sparse`` on CSR blocks, which stay
  sparse), one ``expit`` per margin, :math:`\nabla = B^\top A_k / n` (``(A_k^\top B)^\top`` on CSR),
  no copy of the block. The class blocks are cut once outside the timing on both sides. On dense
  data the ``tests/reference`` oracle (two ``logaddexp`` and two ``exp`` per margin, a copy
  ``A[idx]`` of the block) is timed as well, for the old ratio; on the sparse set it would
  densify 5,000 x 10,000 blocks and is not timed.

BLAS runs on one thread on both sides: it is limited with ``threadpoolctl`` (on this busy 2-core
machine a 2-thread OpenBLAS made the usps reference 25x *slower*, which would fake a speed-up;
fastcon's dense kernels keep every product below OpenBLAS's threading threshold anyway).
Results are compared before timing (values and gradients within 1e-10 relative, 1e-12 absolute).

Roofline: dense, the block read once, :math:`n(C-1)` exps at NumPy's vectorised ``exp`` rate (the
kernel's exp is a vectorised polynomial) and the two products' :math:`4ndC` flops at the
one-thread GEMM rate; CSR, the CSR bytes read once plus, per stored entry, a row of
:math:`W^\top` read for the scores and written for the gradient (:math:`2\cdot 8C` bytes from a
:math:`8dC`-byte table that stays in cache), and the exps.

1. pendigits, 7,494 x 16 dense (the experiment's raw integer coordinates), C = 10; target 5x.
2. synthetic CSR, 100,000 x 10,000, 20 classes, ~50 stored entries per row (``scipy.sparse.random``,
   seed 2024, values U[0, 1), uniform labels); target 5x. ``FASTCON_BENCH_SMALL=1``: 5,000 rows.
   fastcon's problem stores the point as :math:`\operatorname{vec}(W^\top)` (``layout="features"``,
   the CSR kernels' native layout, which a user of sparse data should pick); ``extra_info`` has
   the same pass in the default ``layout="classes"`` (``classes_layout_ms``, same values and the
   same gradients transposed, checked) so that both figures are on record.
3. usps, 7,291 x 256 dense, C = 10; target: no slower than BLAS (ratio >= 1).

**Group 4, to an objective level** on pendigits (raw coordinates, :math:`\lambda = 0.1`,
:math:`r_k = 4.5`, :math:`x_0 = 0`): time until the first iterate with objective
:math:`\le` ``LEVEL`` = 1e-2 (start 4.5) and infeasibility :math:`\le 10^{-3}`. ``fastcon``: IQRC
(:math:`\hat\rho = 1`, switching level 1e-3 read as :math:`\hat\epsilon`, :math:`K` = 20000, at most 5
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

from _references import class_loss_value_grad
from _roofline import record_roofline
from _timing import best_time
from fastcon.datasets import Dataset
from fastcon.problems import multiclass_neyman_pearson
from reference.multiclass_np import class_loss_value_grad as oracle_class_loss_value_grad

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


def reference_pass(case):
    out = [class_loss_value_grad(block, case["W"], k) for block, k in zip(case["blocks"], case["order"])]
    return np.array([v for v, _ in out]), [g for _, g in out]


def oracle_pass(case):
    """The ``tests/reference`` oracle (the old benchmark reference), dense blocks only."""
    return [oracle_class_loss_value_grad(block, case["W"], k) for block, k in zip(case["blocks"], case["order"])]


def _check(case):
    values, grads = reference_pass(case)
    fast = fused_pass(case)
    np.testing.assert_allclose(fast, values, rtol=1e-10, atol=1e-12)
    for i, g in enumerate(grads):
        expected = g if case["layout"] == "classes" else g.T  # gradients are laid out like x
        np.testing.assert_allclose(case["grads"][i], expected.ravel(), rtol=1e-10, atol=1e-12)


def _roofline(benchmark, case):
    C, d = case["W"].shape
    n = sum(b.shape[0] for b in case["blocks"])
    if sp.issparse(case["blocks"][0]):
        nnz = sum(b.nnz for b in case["blocks"])
        csr = sum(8 * (b.shape[0] + 1) + 12 * b.nnz for b in case["blocks"])  # uint64 indptr, uint32 + float64
        import numba

        # full size: 8 parallel chunks per class (numba's threads); the small CI size is serial
        record_roofline(benchmark, csr + 8 * C * d, n_exp=n * (C - 1), gathered=[(2 * 8 * C * nnz, 8 * C * d)],
                        threads=1 if SMALL else numba.get_num_threads(), exp_kind="vector")
    else:
        # the dense kernels evaluate exp by a vectorised polynomial: bound at NumPy's vectorised exp rate
        record_roofline(benchmark, 8 * n * d + 8 * C * d, n_exp=n * (C - 1), n_flop=4 * n * d * C,
                        exp_kind="vector")


def _run_pair(benchmark, case, role, target, rounds, oracle=True):
    with one_blas_thread() as threads:
        _check(case)  # also compiles / loads the kernels
        if role == "fastcon":
            benchmark.pedantic(fused_pass, args=(case,), rounds=rounds, warmup_rounds=1, iterations=1)
        else:
            benchmark.pedantic(reference_pass, args=(case,), rounds=rounds, warmup_rounds=1, iterations=1)
            if oracle and benchmark.stats is not None:
                benchmark.extra_info.update(superseded_ms=best_time(lambda: oracle_pass(case), rounds) * 1e3,
                                            superseded_label="tests/reference oracle")
    info = {"role": role, "blas_threads": threads}
    if role == "fastcon":
        info["target"] = target
        _roofline(benchmark, case)
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

    _run_pair(benchmark, synthetic_csr, "fastcon", 5, rounds=3 if SMALL else 5)
    nnz = sum(b.nnz for b in synthetic_csr["blocks"])
    rounds = 3 if SMALL else 5
    threads = numba.get_num_threads()
    with one_blas_thread():
        _check(synthetic_csr_classes)
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
    # the sparse honest reference equals the tests/reference oracle (which densifies the block) on a slice
    case = synthetic_csr
    block, k = case["blocks"][1][:300], case["order"][1]
    v_dense, g_dense = oracle_class_loss_value_grad(block, case["W"], k)
    v_sparse, g_sparse = class_loss_value_grad(block, case["W"], k)
    assert v_sparse == pytest.approx(v_dense, rel=1e-12)
    np.testing.assert_allclose(g_sparse, g_dense, rtol=1e-10, atol=1e-14)
    _run_pair(benchmark, case, "reference", 5, rounds=3 if SMALL else 5, oracle=False)


@pytest.mark.benchmark(group=GROUP_USPS)
def test_usps_pass_fastcon(benchmark, usps):
    _run_pair(benchmark, usps, "fastcon", 1, rounds=30)


@pytest.mark.benchmark(group=GROUP_USPS)
def test_usps_pass_reference(benchmark, usps):
    _run_pair(benchmark, usps, "reference", 1, rounds=30)


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

    return iqrc(problem, problem.x0, rho_hat=1.0, switching_level=1e-3, level_reading="eps_hat", outer_iter=IQRC_T,
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
