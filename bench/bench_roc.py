r"""SSG steps of Huang & Lin [HL23]'s ROC-fairness problem on a9a: fastcon against the honest NumPy/SciPy reference.

* objective step: value and subgradient of :math:`R(w)` (eq. 11) — scores of both groups, the
  400-threshold sigmoid sweep, argmax, transposed products. Target >= 20x. Reference
  (``bench/_references.roc_value_grad``): the one-exponential-per-sample form
  :math:`\sigma(s-\theta_j) = 1/(1 + a f_j)`, :math:`a = e^{\theta_0 - s}`, :math:`f_j = e^{\theta_j-\theta_0}`,
  in NumPy on 128-row blocks (multiply, add, reciprocal in place, column sums), the gradient from
  the maximising column only. The exp-per-pair ``expit`` matrix of ``tests/reference/roc.py`` is
  timed too, as the old ratio. Roofline: the group rows are read twice (scores, then the gradient
  of the maximising threshold, known only after the sweep); compute: one ``exp`` per sample and
  a quarter of a vectorised ``1/(1 + a f)`` per (sample, threshold) pair (fastcon's sweep shares
  one division among four samples), divided by numba's thread count.
* constraint step: value and subgradient of the hinge risk over the a9a train set. Target >= 2x.

Groups by sex (p = female, 10,771 rows; u = male, 21,790). ``w`` is a seeded random vector scaled so
that the scores spread over [-3, 3]; the grid is the paper's ([HL23] §6.1) with ``w`` as the ERM
proxy. Each group holds one ``fastcon`` and one ``reference`` benchmark (bench/conftest.py); the
load average at the time is stored too, since other jobs may share the 2 cores.
"""
import os

import numba
import numpy as np
import pytest

from _references import hinge_value_grad, roc_value_grad
from _roofline import csr_pass_bytes, record_roofline
from _timing import best_time
from fastcon.problems import hinge_risk
from fastcon.problems._roc_fairness import roc_fairness_from_dataset
from reference.roc import roc_value_grad as oracle_roc_value_grad


@pytest.fixture(scope="module")
def a9a(data_home):
    from fastcon.datasets import load

    ds = load("a9a", data_home=data_home, subset="train")
    rng = np.random.default_rng(2024)
    w = rng.standard_normal(ds.n_features)
    w *= 3.0 / np.abs(ds.X @ w).max()
    term = roc_fairness_from_dataset(ds, w, thresholds=400, protected="female")
    female = ds.groups == 1
    return dict(ds=ds, w=w, term=term, A_p=ds.X[female], A_u=ds.X[~female], theta=term.thresholds)


def _record(benchmark, role, target=None):
    benchmark.extra_info["role"] = role
    if target is not None:
        benchmark.extra_info["target"] = target
        benchmark.extra_info["numba_threads"] = numba.get_num_threads()
        benchmark.extra_info["threading_layer"] = numba.threading_layer()
    benchmark.extra_info[f"load1_{role}"] = os.getloadavg()[0]


@pytest.mark.parametrize("role", ["fastcon", "reference"])
def test_roc_objective_step(benchmark, a9a, role):
    benchmark.group = "SSG objective step: ROC fairness (eq. 11) value+subgradient, a9a, 400 thresholds"
    w, A_p, A_u, theta = a9a["w"], a9a["A_p"], a9a["A_u"], a9a["theta"]
    term, out = a9a["term"], np.empty(w.size)
    value = term.value_and_subgradient(w, out)  # compile / load from cache
    ref_value, ref_grad = roc_value_grad(A_p, A_u, w, theta)
    assert value == pytest.approx(ref_value, rel=1e-12)
    np.testing.assert_allclose(out, ref_grad, rtol=1e-9, atol=1e-14)
    if role == "fastcon":
        benchmark.pedantic(term.value_and_subgradient, args=(w, out), rounds=200, warmup_rounds=5)
        _record(benchmark, role, target=20)
        n, binary = A_p.shape[0] + A_u.shape[0], a9a["ds"].is_binary_features
        # compute: fastcon shares one division among four samples (docs/design.md), so a quarter
        # division per pair, plus one exp per sample; the sweep runs in parallel chunks
        record_roofline(benchmark, 2 * (csr_pass_bytes(A_p, binary) + csr_pass_bytes(A_u, binary)) + 16 * n,
                        n_exp=n + theta.size, n_div=n * theta.size // 4, threads=numba.get_num_threads())
    else:
        benchmark.pedantic(roc_value_grad, args=(A_p, A_u, w, theta), rounds=20, warmup_rounds=1)
        _record(benchmark, role)
        if benchmark.stats is not None:
            benchmark.extra_info.update(superseded_ms=best_time(lambda: oracle_roc_value_grad(A_p, A_u, w, theta), 3)
                                        * 1e3, superseded_label="tests/reference oracle, expit per pair")


@pytest.mark.parametrize("role", ["fastcon", "reference"])
def test_hinge_constraint_step(benchmark, a9a, role):
    benchmark.group = "SSG constraint step: hinge risk value+subgradient, a9a train (fastcon.problems.hinge_risk)"
    ds, w = a9a["ds"], a9a["w"]
    if role == "fastcon":
        term, out = hinge_risk(ds), np.empty(w.size)
        value = term.value_and_subgradient(w, out)
        ref_value, ref_grad = hinge_value_grad(ds.X, ds.y, w)
        assert value == pytest.approx(ref_value, rel=1e-12)
        np.testing.assert_allclose(out, ref_grad, rtol=1e-9, atol=1e-14)
        benchmark.pedantic(term.value_and_subgradient, args=(w, out), rounds=300, warmup_rounds=5)
        _record(benchmark, role, target=2)
        record_roofline(benchmark, csr_pass_bytes(ds.X, ds.is_binary_features) + 8 * ds.X.shape[0])
    else:
        benchmark.pedantic(hinge_value_grad, args=(ds.X, ds.y, w), rounds=100, warmup_rounds=3)
        _record(benchmark, role)
