"""SSG steps of paper 002's ROC-fairness problem on a9a: fastcon against the NumPy/SciPy reference.

* objective step: value and subgradient of :math:`R(w)` (eq. 11) — scores of both groups, the
  400-threshold sigmoid sweep, argmax, transposed products. Target >= 20x.
* constraint step: value and subgradient of the hinge risk over the a9a train set. Target >= 2x.

Groups by sex (p = female, 10,771 rows; u = male, 21,790). ``w`` is a seeded random vector scaled so
that the scores spread over [-3, 3]; the grid is the paper's (digest 002 §3.2) with ``w`` as the ERM
proxy. Each group holds one ``fastcon`` and one ``reference`` benchmark (bench/conftest.py); the
load average at the time is stored too, since other jobs may share the 2 cores.
"""
import os

import numpy as np
import pytest

from fastcon.problems import hinge_risk
from fastcon.problems._roc_fairness import roc_fairness_from_dataset


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


def reference_roc_step(A_p, A_u, w, theta):
    """The straightforward vectorised version: a sigmoid matrix per group, mean, argmax, A^T."""
    s_p, s_u = A_p @ w, A_u @ w
    sig_p = 1.0 / (1.0 + np.exp(-(s_p[:, None] - theta[None, :])))
    sig_u = 1.0 / (1.0 + np.exp(-(s_u[:, None] - theta[None, :])))
    gaps = sig_p.mean(axis=0) - sig_u.mean(axis=0)
    j = np.argmax(np.abs(gaps))
    c_p, c_u = sig_p[:, j] * (1.0 - sig_p[:, j]), sig_u[:, j] * (1.0 - sig_u[:, j])
    grad = np.sign(gaps[j]) * (A_p.T @ c_p / s_p.size - A_u.T @ c_u / s_u.size)
    return abs(gaps[j]), grad


def reference_hinge_step(X, y, w):
    z = y * (X @ w)
    return np.maximum(0.0, 1.0 - z).mean(), X.T @ (-y * (z < 1.0)) / z.size


def _record(benchmark, role, target=None):
    import numba

    benchmark.extra_info["role"] = role
    if target is not None:
        benchmark.extra_info["target"] = target
        benchmark.extra_info["numba_threads"] = numba.get_num_threads()
        benchmark.extra_info["threading_layer"] = numba.threading_layer()
    benchmark.extra_info[f"load1_{role}"] = os.getloadavg()[0]


@pytest.mark.parametrize("role", ["fastcon", "reference"])
def test_roc_objective_step(benchmark, a9a, role):
    benchmark.group = "SSG objective step: ROC fairness (eq. 11) value+subgradient, a9a, 400 thresholds"
    w = a9a["w"]
    if role == "fastcon":
        term, out = a9a["term"], np.empty(w.size)
        value = term.value_and_subgradient(w, out)  # compile / load from cache
        ref_value, ref_grad = reference_roc_step(a9a["A_p"], a9a["A_u"], w, a9a["theta"])
        assert value == pytest.approx(ref_value, rel=1e-12)
        np.testing.assert_allclose(out, ref_grad, rtol=1e-9, atol=1e-14)
        benchmark.pedantic(term.value_and_subgradient, args=(w, out), rounds=200, warmup_rounds=5)
        _record(benchmark, role, target=20)
    else:
        benchmark.pedantic(reference_roc_step, args=(a9a["A_p"], a9a["A_u"], w, a9a["theta"]),
                           rounds=10, warmup_rounds=1)
        _record(benchmark, role)


@pytest.mark.parametrize("role", ["fastcon", "reference"])
def test_hinge_constraint_step(benchmark, a9a, role):
    benchmark.group = "SSG constraint step: hinge risk value+subgradient, a9a train (fastcon.problems.hinge_risk)"
    ds, w = a9a["ds"], a9a["w"]
    if role == "fastcon":
        term, out = hinge_risk(ds), np.empty(w.size)
        value = term.value_and_subgradient(w, out)
        ref_value, ref_grad = reference_hinge_step(ds.X, ds.y, w)
        assert value == pytest.approx(ref_value, rel=1e-12)
        np.testing.assert_allclose(out, ref_grad, rtol=1e-9, atol=1e-14)
        benchmark.pedantic(term.value_and_subgradient, args=(w, out), rounds=300, warmup_rounds=5)
        _record(benchmark, role, target=2)
    else:
        benchmark.pedantic(reference_hinge_step, args=(ds.X, ds.y, w), rounds=100, warmup_rounds=3)
        _record(benchmark, role)
