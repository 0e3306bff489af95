r"""Gradient and Hessian of the boosting custom objective of Lin & Deng [LD23] (§3): fastcon vs NumPy/SciPy.

The per-round work of a Bregman-prox boosting step: :math:`g` and the Hessian diagonal :math:`h`
of :math:`\psi(F) = \sum_i W_i\ell_i + \frac c2\lVert F - F^t\rVert^2 + \frac{1}{2\tau}\lVert F -
F^k\rVert^2` at the current scores, with both anchors (the CBPR inner step, the most general case;
ABPP drops :math:`F^t`) and Lagrangian weights of both signs. Synthetic scores N(0, 3²), seed
2024, 1M samples (``FASTCON_BENCH_SMALL=1``: 20,000).

* ``fastcon``: `fastcon._kernels._boosting.softmax_grad_hess` (7 classes) and
  `logistic_grad_hess` (binary), one pass, one vectorised ``exp`` per entry;
* ``reference``: ``bench/_references.boosting_grad_hess``, what a user writes for a GBM custom
  objective (``scipy.special.softmax`` / ``expit``, in-place updates, a fancy-indexed one-hot
  subtraction), checked against fastcon before timing.

Roofline (bench/_roofline.py): the bytes one pass must move, *read and written* (F, both anchors,
W, the int64 labels read; g and h written — written bytes are counted at the read rate, which is
optimistic: a store also reads its cache line first), and one vectorised ``exp`` per entry plus one
division per row. numba runs on its default thread count, recorded; the kernels are row-chunked, so
the bits do not depend on it.
"""
import os

import numba
import numpy as np
import pytest
from _references import boosting_grad_hess
from _roofline import record_roofline

from fastcon._kernels._boosting import logistic_grad_hess, softmax_grad_hess

SMALL = bool(os.environ.get("FASTCON_BENCH_SMALL"))
N = 20_000 if SMALL else 1_000_000
J = 7
INV_TAU, C = 0.5, 0.25
ROUNDS = {"rounds": 3 if SMALL else 15, "warmup_rounds": 1 if SMALL else 2, "iterations": 1}


@pytest.fixture(scope="module")
def scores():
    rng = np.random.default_rng(2024)
    F = rng.normal(0.0, 3.0, (N, J))
    return {"F": F, "Fk": F + rng.normal(0.0, 0.3, (N, J)), "Ft": F + rng.normal(0.0, 0.3, (N, J)),
            "b": rng.integers(0, J, N), "W": rng.normal(1.0, 2.0, N),   # about 30% negative weights
            "f": np.ascontiguousarray(F[:, 0]), "fk": np.ascontiguousarray(F[:, 1]),
            "ft": np.ascontiguousarray(F[:, 2]), "y": rng.integers(0, 2, N)}


def _run_pair(benchmark, role, kernel, F, labels, W, Fk, Ft, n_exp):
    benchmark.extra_info["role"] = role
    grad, hess = np.empty_like(F), np.empty_like(F)
    kernel(F, labels, W, Fk, INV_TAU, Ft, C, grad, hess)
    want_g, want_h = boosting_grad_hess(F, labels, W, Fk, INV_TAU, Ft, C)
    # the reference's p - 1 cancels (fastcon's does not): compare at the scale of the summed terms
    size = np.abs(W if F.ndim == 1 else W[:, None]) + INV_TAU * np.abs(F - Fk) + C * np.abs(F - Ft) + INV_TAU + C
    assert (np.abs(grad - want_g) <= 1e-12 * np.abs(want_g) + 1e-14 * size).all()
    assert (np.abs(hess - want_h) <= 1e-12 * np.abs(want_h) + 1e-14 * size).all()
    if role == "fastcon":
        benchmark.extra_info["target"] = 5
        benchmark.pedantic(kernel, args=(F, labels, W, Fk, INV_TAU, Ft, C, grad, hess), **ROUNDS)
        benchmark.extra_info["numba_threads"] = numba.get_num_threads()
        moved = 3 * F.nbytes + W.nbytes + labels.nbytes + grad.nbytes + hess.nbytes
        record_roofline(benchmark, moved, n_exp=n_exp, n_div=F.shape[0], exp_kind="vector",
                        threads=numba.get_num_threads())
    else:
        benchmark.pedantic(boosting_grad_hess, args=(F, labels, W, Fk, INV_TAU, Ft, C), **ROUNDS)


@pytest.mark.parametrize("role", ["fastcon", "reference"])
def test_softmax_grad_hess(benchmark, scores, role):
    benchmark.group = f"boosting softmax grad/hess, {N:,} x {J} with both anchors: fastcon vs SciPy softmax"
    s = scores
    _run_pair(benchmark, role, softmax_grad_hess, s["F"], s["b"], s["W"], s["Fk"], s["Ft"], N * J)


@pytest.mark.parametrize("role", ["fastcon", "reference"])
def test_logistic_grad_hess(benchmark, scores, role):
    benchmark.group = f"boosting logistic grad/hess, {N:,} samples with both anchors: fastcon vs SciPy expit"
    s = scores
    _run_pair(benchmark, role, logistic_grad_hess, s["f"], s["y"], s["W"], s["fk"], s["ft"], N)
