r"""One evaluation of the estimators' Lagrangian on a9a: fastcon's fused score-space pass against NumPy/SciPy.

`fastcon.FairClassifier` spends its fit in ``LinearModelProblem.lagrangian`` (one call per L-BFGS
evaluation): the logistic loss, every constraint of the block, and the gradient of
:math:`f + \sum_k \lambda_k g_k` in :math:`(w, b)`. Three blocks, group = sex:

* demographic parity: two ordered pairs of smoothed selection rates at threshold 0;
* ROC fairness: the same pairs at each of 50 thresholds (the estimator's default grid size);
* Wasserstein: the exact 1-D :math:`W_1` between the two groups' scores (Huber width 0 here, so
  the reference can use ``np.abs``). Each timed call starts from shuffled rows, so fastcon's sort
  is as cold as the reference's (in a fit it starts from the previous iterate's order).

References (``bench/_references.py``): ``rate_gap_lagrangian`` (sparse products, ``log_expit`` /
``expit``, rates on 128-row blocks with one ``exp`` per row and a one-hot product per block) and
``transport_lagrangian`` (two ``argsort``, ``np.union1d`` of the quantile breakpoints,
``np.add.at``). Roofline: two passes over the CSR arrays (``X w`` and ``X^T v``) plus the
vectors; compute: one ``exp`` and one ``log1p`` per row for the loss (vectorised polynomials),
one ``exp`` per row per rate pass, and one division per (row, threshold) in each rate pass (the
sums, then their gradient).
"""
import numba
import numpy as np
import pytest

from _references import rate_gap_lagrangian, transport_lagrangian
from _roofline import csr_pass_bytes, record_roofline
from bench_roc import _record
from fastcon.estimators._input import fit_dataset
from fastcon.problems._linear_model import LinearLoss, LinearModelProblem, LinearScores
from fastcon.problems._score_constraints import group_fairness_constraints


@pytest.fixture(scope="module")
def a9a(data_home):
    from fastcon.datasets import load

    ds = load("a9a", data_home=data_home, subset="train")
    rng = np.random.default_rng(7)
    w = rng.standard_normal(ds.n_features)
    w *= 3.0 / np.abs(ds.X @ w).max()
    return dict(ds=ds, x=np.append(w, 0.1), y01=(ds.y > 0).astype(np.int64))


def _problem(a9a, constraint, thresholds=None):
    ds = a9a["ds"]
    scores = LinearScores(fit_dataset(ds.X, a9a["y01"]), True)
    objective = LinearLoss(scores, ds.y, np.ones(ds.n_samples), "logistic", 1.0 / ds.n_samples)
    block = group_fairness_constraints(scores, a9a["y01"], ds.groups, constraint, 0.02, smoothing=0.5,
                                       thresholds=thresholds)
    if constraint == "wasserstein":
        block.huber = 0.0
    return LinearModelProblem(objective, [block])


def _run(benchmark, a9a, role, constraint, thresholds=None):
    ds, x = a9a["ds"], a9a["x"]
    problem = _problem(a9a, constraint, thresholds)
    lam = np.linspace(0.5, 1.5, problem.n_constraints)
    out = np.empty(x.size)

    block = problem.blocks[0]
    cold = [np.random.default_rng(k).permutation(r) for k, r in enumerate(getattr(block, "group_rows", []))]

    def fused():
        problem.linear_scores._x[:] = np.nan      # a new point each call: the score cache must not hit
        if cold:    # W1: shuffled rows, so the sort starts cold (in a fit it starts from the last order)
            block.group_rows = [r.copy() for r in cold]
        return problem.lagrangian(x, lambda g: lam, out)

    w, b, ridge = x[:-1], x[-1], 1.0 / ds.n_samples
    if constraint == "wasserstein":
        reference = lambda: transport_lagrangian(ds.X, ds.y, w, b, ds.groups, lam[0], ridge)  # noqa: E731
    else:
        grid = np.zeros(1) if thresholds is None else thresholds
        reference = lambda: rate_gap_lagrangian(ds.X, ds.y, w, b, ds.groups, grid, 0.5, lam, ridge)  # noqa: E731
    f, g = fused()
    f_ref, g_ref, grad_ref = reference()
    assert f == pytest.approx(f_ref, rel=1e-12)
    np.testing.assert_allclose(g + 0.02, g_ref, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(out, grad_ref, rtol=1e-8, atol=1e-12)
    if role == "fastcon":
        benchmark.pedantic(fused, rounds=200, warmup_rounds=5)
        _record(benchmark, role, target=2)
        n, m = ds.n_samples, 1 if thresholds is None else thresholds.size
        passes = 0 if constraint == "wasserstein" else 2
        record_roofline(benchmark, 2 * csr_pass_bytes(ds.X, ds.is_binary_features) + 6 * 8 * n,
                        n_exp=n * (1 + passes), n_log=n, n_div=2 * n * m if passes else 0,
                        threads=numba.get_num_threads(), exp_kind="vector")
    else:
        benchmark.pedantic(reference, rounds=50, warmup_rounds=2)
        _record(benchmark, role)


@pytest.mark.parametrize("role", ["fastcon", "reference"])
def test_lagrangian_demographic_parity(benchmark, a9a, role):
    benchmark.group = "FairClassifier Lagrangian: logistic + demographic parity (2 pairs), a9a"
    _run(benchmark, a9a, role, "demographic_parity")


@pytest.mark.parametrize("role", ["fastcon", "reference"])
def test_lagrangian_roc(benchmark, a9a, role):
    benchmark.group = "FairClassifier Lagrangian: logistic + ROC fairness (2 pairs x 50 thresholds), a9a"
    _run(benchmark, a9a, role, "roc", thresholds=np.linspace(-2.0, 2.0, 50))


@pytest.mark.parametrize("role", ["fastcon", "reference"])
def test_lagrangian_wasserstein(benchmark, a9a, role):
    benchmark.group = "FairClassifier Lagrangian: logistic + exact W1 between the groups' scores, a9a"
    _run(benchmark, a9a, role, "wasserstein")
