"""Projection onto the transportation polytope: KKT, QP reference, idempotence, VI, warm start."""
import numpy as np
import pytest

from fastcon._kernels._transport import marginal_residual, project_transport
from fastcon.problems._transport_domain import TransportPolytope, transport_domain
from reference.wasserstein import project_transport_qp


def _random_C(rng, m, n, scale):
    return 1.0 / (m * n) + scale * rng.normal(size=(m, n))


def _check_kkt(C, res, alpha, beta, tol=1e-9):
    P, u, v = res.P, res.u, res.v
    scale = max(alpha, beta)
    assert res.converged
    assert P.min() >= 0.0
    assert marginal_residual(P, alpha, beta) <= tol * scale
    Z = C + u[:, None] + v[None, :]
    pos = P > 0
    np.testing.assert_allclose(P[pos], Z[pos], rtol=0, atol=1e-14 * max(1.0, np.abs(C).max()))
    assert np.all(Z[~pos] <= 1e-14 * max(1.0, np.abs(C).max()))


@pytest.mark.parametrize("m,n", [(1, 1), (1, 4), (4, 1), (2, 2), (3, 3), (5, 5), (6, 6), (3, 5), (6, 4)])
@pytest.mark.parametrize("scale", [0.01, 1.0])
def test_kkt_and_qp_reference(rng, m, n, scale):
    C = _random_C(rng, m, n, scale)
    alpha, beta = 1.0 / m, 1.0 / n
    res = project_transport(C)
    _check_kkt(C, res, alpha, beta)
    np.testing.assert_allclose(res.P, project_transport_qp(C, alpha, beta), atol=1e-6)


@pytest.mark.parametrize("method", ["newton", "block"])
@pytest.mark.parametrize("m,n,scale", [(20, 20, 0.003), (40, 40, 1.0), (30, 45, 0.05)])
def test_kkt_medium(rng, method, m, n, scale):
    C = _random_C(rng, m, n, scale)
    _check_kkt(C, project_transport(C, method=method), 1.0 / m, 1.0 / n)


def test_general_marginals(rng):
    C = rng.normal(size=(4, 6))
    res = project_transport(C, alpha=3.0, beta=2.0)
    _check_kkt(C, res, 3.0, 2.0)
    np.testing.assert_allclose(res.P, project_transport_qp(C, 3.0, 2.0), atol=1e-6)


def test_methods_agree(rng):
    C = _random_C(rng, 25, 25, 0.02)
    np.testing.assert_allclose(project_transport(C).P, project_transport(C, method="block").P, atol=1e-12)


def test_idempotent_and_feasible_fixed_point(rng):
    C = _random_C(rng, 30, 30, 0.05)
    P = project_transport(C).P
    np.testing.assert_allclose(project_transport(P).P, P, atol=1e-13)
    perm = np.eye(7)[rng.permutation(7)] / 7          # a vertex of the polytope projects to itself
    np.testing.assert_allclose(project_transport(perm).P, perm, atol=1e-14)


@pytest.mark.parametrize("m,scale", [(8, 0.1), (50, 0.01), (50, 1.0)])
def test_variational_inequality(rng, m, scale):
    # <C - P, Q - P> <= 0 for every Q in the polytope; vertices (permutations / m) suffice.
    C = _random_C(rng, m, m, scale)
    P = project_transport(C).P
    for _ in range(200):
        Q = np.eye(m)[rng.permutation(m)] / m
        assert np.sum((C - P) * (Q - P)) <= 1e-12 * max(1.0, np.abs(C).max())


def test_warm_start_same_answer_fewer_iterations(rng):
    m = 60
    C = _random_C(rng, m, m, 0.02)
    first = project_transport(C)
    C2 = C + 1e-4 * rng.normal(size=C.shape)
    cold = project_transport(C2)
    warm = project_transport(C2, u=first.u, v=first.v)
    np.testing.assert_allclose(warm.P, cold.P, atol=1e-13)
    assert warm.n_iter + warm.n_sweeps < cold.n_iter + cold.n_sweeps
    again = project_transport(C, u=first.u, v=first.v)
    assert again.n_iter == 0 and again.n_sweeps == 0
    np.testing.assert_allclose(again.P, first.P, atol=1e-15)


def test_in_place_output(rng):
    C = _random_C(rng, 10, 12, 0.1)
    expected = project_transport(C).P
    buf = C.copy()
    project_transport(buf, out=buf)
    np.testing.assert_allclose(buf, expected, atol=1e-15)


def test_validation():
    with pytest.raises(ValueError, match="C:"):
        project_transport(np.zeros(3))
    with pytest.raises(ValueError, match="C:"):
        project_transport(np.array([[np.nan, 0.0], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="alpha, beta"):
        project_transport(np.zeros((2, 3)), alpha=1.0, beta=1.0)
    with pytest.raises(ValueError, match="u, v"):
        project_transport(np.zeros((2, 2)), u=np.zeros(3), v=np.zeros(2))
    with pytest.raises(ValueError, match="method"):
        project_transport(np.zeros((2, 2)), method="sinkhorn")
    with pytest.raises(ValueError, match="m, n"):
        TransportPolytope(0)


def test_domain(rng):
    m = 12
    dom = TransportPolytope(m)
    x = _random_C(rng, m, m, 0.05).ravel()
    y = dom.project(x)
    assert dom.contains(y) and not dom.contains(x)
    np.testing.assert_allclose(y, project_transport(x.reshape(m, m)).P.ravel(), atol=1e-14)
    assert dom.last.converged and dom._u is not None
    y2 = dom.project(y)                   # a point already in the polytope: zero duals are exact
    assert dom.last.n_iter == 0 and dom.last.n_sweeps == 0
    np.testing.assert_allclose(y2, y, atol=1e-15)
    # A block step from a feasible point (what a minibatch objective step does): every start rule
    # gives the same projection; the zero start needs no more Newton steps than the previous duals.
    step = np.zeros((m, m))
    step[:4, :4] = rng.standard_normal((4, 4)) * 0.05
    z = (y.reshape(m, m) + step).ravel()
    iters = {}
    for start in ("zero", "previous", "cold"):
        d = TransportPolytope(m, start=start)
        d.project(x)
        out = d.project(z)
        iters[start] = d.last.n_iter
        np.testing.assert_allclose(out, project_transport(z.reshape(m, m)).P.ravel(), atol=1e-13)
    assert iters["zero"] <= iters["previous"]
    with pytest.raises(ValueError, match="start"):
        TransportPolytope(3, start="warm")
    assert dom.contains(dom.uniform())
    # Diameter: two disjoint permutations attain sqrt(2/m); no pair of projections exceeds it.
    P1, P2 = np.eye(m) / m, np.roll(np.eye(m), 1, axis=1) / m
    assert np.isclose(np.linalg.norm(P1 - P2), dom.diameter)
    for _ in range(20):
        a = dom.project(_random_C(rng, m, m, 1.0).ravel())
        b = dom.project(_random_C(rng, m, m, 1.0).ravel())
        assert np.linalg.norm(a - b) <= dom.diameter + 1e-12
    prod = transport_domain(m, 2.0, 3)
    z = np.concatenate([x, [3.0, 4.0, 0.0]])
    prod.project_inplace(z)
    np.testing.assert_allclose(z[:m * m], y, atol=1e-14)
    np.testing.assert_allclose(np.linalg.norm(z[m * m:]), 2.0)
