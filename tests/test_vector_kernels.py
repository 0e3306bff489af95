"""Fused vector updates (`fastcon._kernels._vector`) against their NumPy references."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fastcon._kernels import _vector as K
from reference import kernels as ref

SIZES = [0, 1, 7, 64, 1001]


def _vecs(n, k, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(n) for _ in range(k)]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("rho", [0.0, 1e-3, 2.5])
def test_proximal_value_and_add_match_reference(n, rho):
    x, c, out = _vecs(n, 3, n)
    want_v, want_out = ref.proximal_add(x, c, rho, out)
    got = out.copy()
    v = K.proximal_add(x, c, rho, got)
    assert v == pytest.approx(want_v, rel=1e-13, abs=1e-300)
    assert K.proximal_value(x, c, rho) == pytest.approx(want_v, rel=1e-13, abs=1e-300)
    # The update is elementwise with NumPy's rounding (no FMA): bit-identical.
    np.testing.assert_array_equal(got, want_out)


@pytest.mark.parametrize("n", SIZES)
def test_axpy_and_the_in_place_proximal_gradient_are_bitwise_numpy(n):
    x, y, c = _vecs(n, 3, 10 + n)
    a = -0.37
    got = y.copy()
    K.axpy(a, x, got)
    np.testing.assert_array_equal(got, y + a * x)
    got = y.copy()
    K.proximal_add(x, c, 1.7, got)  # as near_stationarity uses it: grad += rho (z - x)
    np.testing.assert_array_equal(got, y + 1.7 * (x - c))


@pytest.mark.parametrize("m", [0, 1, 3])
@pytest.mark.parametrize("n", [1, 50, 1001])
def test_conex_step_and_linearization_match_reference(m, n):
    rng = np.random.default_rng(100 * m + n)
    x, f_grad = rng.standard_normal(n), rng.standard_normal(n)
    G, y, g = rng.standard_normal((m, n)), rng.random(m), rng.standard_normal(m)
    eta = 0.05
    got, x_prev = x.copy(), np.full(n, np.nan)
    K.conex_primal_step(got, x_prev, f_grad, G, y, eta)
    np.testing.assert_array_equal(x_prev, x)
    want = ref.conex_primal_step(x, f_grad, G, y, eta)
    if m <= 1:  # one constraint: the same operations in the same order as NumPy's
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-15)
    ell = np.empty(m)
    K.linearized_values(G, got, x, g, ell)
    np.testing.assert_allclose(ell, ref.linearized_values(G, got, x, g), rtol=1e-12, atol=1e-13)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 300), seed=st.integers(0, 2**31 - 1), rho=st.floats(0.0, 10.0))
def test_proximal_add_property(n, seed, rho):
    x, c, out = _vecs(n, 3, seed)
    got = out.copy()
    v = K.proximal_add(x, c, rho, got)
    want_v, want_out = ref.proximal_add(x, c, rho, out)
    assert v == pytest.approx(want_v, rel=1e-12, abs=1e-300)
    np.testing.assert_array_equal(got, want_out)


def test_proximal_term_gradient_matches_finite_differences():
    from fastcon.problems import ProximalTerm, custom_term

    rng = np.random.default_rng(3)
    A = rng.standard_normal((5, 4))
    def value_and_grad(w, out):
        out[:] = 2.0 * A.T @ (A @ w)
        return float(np.sum((A @ w) ** 2))

    term = custom_term(lambda w: float(np.sum((A @ w) ** 2)), value_and_grad, n_features=4)
    prox = ProximalTerm(term, 0.7, rng.standard_normal(4))
    x = rng.standard_normal(4)
    g = np.empty(4)
    v = prox.value_and_subgradient(x, g)
    assert v == pytest.approx(prox.value(x), rel=1e-14)
    h = 1e-6
    fd = np.array([(prox.value(x + h * e) - prox.value(x - h * e)) / (2 * h) for e in np.eye(4)])
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)
