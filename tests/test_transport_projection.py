"""Projection onto the transportation polytope: KKT, QP reference, idempotence, VI, warm start."""
import numpy as np
import pytest

from fastcon._kernels._transport import (
    TransportParameters, _line_eval, _pattern, _scratch, marginal_residual, project_transport, transport_workspace,
)
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


@pytest.mark.parametrize("max_newton", [100, 0])  # 0: block-coordinate ascent only
@pytest.mark.parametrize("m,n,scale", [(20, 20, 0.003), (40, 40, 1.0), (30, 45, 0.05)])
def test_kkt_medium(rng, max_newton, m, n, scale):
    C = _random_C(rng, m, n, scale)
    _check_kkt(C, project_transport(C, max_newton=max_newton), 1.0 / m, 1.0 / n)


def test_general_marginals(rng):
    C = rng.normal(size=(4, 6))
    res = project_transport(C, (3.0, 2.0))
    _check_kkt(C, res, 3.0, 2.0)
    np.testing.assert_allclose(res.P, project_transport_qp(C, 3.0, 2.0), atol=1e-6)


def test_methods_agree(rng):
    C = _random_C(rng, 25, 25, 0.02)
    np.testing.assert_allclose(project_transport(C).P, project_transport(C, max_newton=0).P, atol=1e-12)


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
    warm = project_transport(C2, start=(first.u, first.v))
    np.testing.assert_allclose(warm.P, cold.P, atol=1e-13)
    assert warm.n_iter + warm.n_sweeps < cold.n_iter + cold.n_sweeps
    again = project_transport(C, start=(first.u, first.v))
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
    with pytest.raises(ValueError, match="marginals: need positive"):
        project_transport(np.zeros((2, 3)), (1.0, 1.0))
    with pytest.raises(ValueError, match="start: expected shapes"):
        project_transport(np.zeros((2, 2)), start=(np.zeros(3), np.zeros(2)))
    with pytest.raises(ValueError, match="m, n"):
        TransportPolytope(0)
    with pytest.raises(ValueError, match="out"):
        project_transport(np.zeros((2, 2)), out=np.zeros((2, 3)))
    with pytest.raises(ValueError, match="out"):
        project_transport(np.zeros((2, 2)), out=np.zeros((2, 2), dtype=np.float32))
    with pytest.raises(ValueError, match="workspace"):
        project_transport(np.zeros((2, 2)), workspace=transport_workspace(2, 3))
    with pytest.raises(ValueError, match="workspace"):
        work, idx = transport_workspace(2, 2)
        project_transport(np.zeros((2, 2)), workspace=(work, idx[:-1]))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("start", ["cold", "warm", "ray"])
def test_nonfinite_input_is_an_error_on_every_path(rng, bad, start):
    # The check rides on the solver's first pass (warm and ray starts) or precedes the cold
    # start's sweep, which divides by active counts: a clear error, no write to ``out``.
    m = 7
    C = _random_C(rng, m, m, 0.05)
    C[3, 5] = bad
    kw = {} if start == "cold" else dict(start=(np.zeros(m), np.zeros(m)))
    if start == "ray":
        kw["direction"] = (np.ones(m), np.ones(m))
    out = np.full((m, m), 7.0)
    with pytest.raises(ValueError, match="C: contains NaN or inf"):
        project_transport(C, out=out, **kw)
    assert np.all(out == 7.0)
    dom = TransportPolytope(m)
    x = C.ravel().copy()
    with pytest.raises(ValueError, match="x: "):
        dom.project_inplace(x)


@pytest.mark.parametrize("density", [0.03, 0.5, 0.97])
def test_pattern_stores_the_shorter_side(rng, density):
    # Row i stores the columns with C + u_i + v_j > 0 at the left of its slots when they are at
    # most half, else the other columns after position deg_r[i]; degrees count the positives.
    m, n = 9, 13
    C = rng.uniform(size=(m, n)) - (1.0 - density)
    C[2] = 1.0          # a full row
    C[4] = -1.0         # an empty row
    u, v = rng.normal(size=m) * 0.01, rng.normal(size=n) * 0.01
    on = C + u[:, None] + v[None, :] > 0
    ws = transport_workspace(m, n)
    scratch = _scratch(ws, m, n)   # views of ws: the line evaluation writes the degrees there
    idx, deg_r, deg_c = ws.idx, scratch.deg_r, scratch.deg_c
    assert _pattern(C, u, v, idx, deg_r, deg_c, False) == 2        # counts, then stores
    _check_pattern(on, idx, deg_r, deg_c)
    # The degrees from a line-search evaluation at the same point: the pattern only stores.
    idx[:] = 0
    deg_r[:], deg_c[:] = -1.0, -1.0
    _line_eval(C, TransportParameters(1.0 / m, 1.0 / n, 0.0, 0, 0, False, False, False), u, v, np.ones(m), np.ones(n),
               scratch, True)
    assert _pattern(C, u, v, idx, deg_r, deg_c, True) == 1
    _check_pattern(on, idx, deg_r, deg_c)


def test_pattern_store_stays_in_its_buffer_with_wrong_degrees(rng):
    # Degrees counted elsewhere may disagree with the storing pass's rounding; the worst case (every
    # row counted full, every entry actually off) writes n indices past the counted side of the last
    # row, into the n spare slots and not beyond them (a canary after the buffer).
    m, n = 6, 5
    C = -np.ones((m, n))
    big = np.full(m * n + n + 7, 777, dtype=np.uint32)
    idx = big[:m * n + n]
    deg_r, deg_c = np.full(m, float(n)), np.full(n, float(m))
    _pattern(C, np.zeros(m), np.zeros(n), idx, deg_r, deg_c, True)
    assert np.all(big[m * n + n:] == 777)


def _check_pattern(on, idx, deg_r, deg_c):
    m, n = on.shape
    np.testing.assert_array_equal(deg_r, on.sum(1))
    np.testing.assert_array_equal(deg_c, on.sum(0))
    for i in range(m):
        d = int(deg_r[i])
        row = idx[i * n:(i + 1) * n]
        if d <= n - d:
            assert sorted(row[:d]) == list(np.flatnonzero(on[i]))
        else:
            assert sorted(row[d:]) == list(np.flatnonzero(~on[i]))


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
    for start in ("ray", "zero", "previous", "cold"):
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


# --------------------------------------------------------------------------- hard cases, ray start, retry
def _dense_step(rng, m, eta, ties=False):
    """``P0 - eta |s_p - s_u^T|`` from the uniform plan: the experiment's dense objective step.

    With ``eta`` far above the entries :math:`1/m^2` most of C is clipped and the projection is far
    from C (the 250-Newton-step case of the old LM-regularized method at m = 1300)."""
    sp, su = rng.standard_normal(m), rng.standard_normal(m)
    if ties:  # COMPAS-like scores: few distinct values, so whole blocks of C tie
        sp, su = np.round(2 * sp) / 2, np.round(2 * su) / 2
    return np.full((m, m), 1.0 / m ** 2) - eta * np.abs(sp[:, None] - su[None, :])


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("m,eta", [(6, 2.0), (80, 0.02), (80, 0.005)])
def test_far_point(rng, m, eta, ties):
    C = _dense_step(rng, m, eta, ties)
    res = project_transport(C)
    _check_kkt(C, res, 1.0 / m, 1.0 / m)
    assert 0.0 < np.mean(res.P > 0) < 0.9          # genuinely far: most entries clipped
    ref = project_transport(C, max_newton=0)
    np.testing.assert_allclose(res.P, ref.P, rtol=0, atol=1e-9 / m)
    if m <= 6:
        np.testing.assert_allclose(res.P, project_transport_qp(C, 1.0 / m, 1.0 / m), atol=1e-6)


def test_degenerate_ties_and_empty_rows(rng):
    # Integer-valued C (massive ties) whose first rows and columns are so negative that P(0, 0) has
    # empty rows and columns: the Newton system is singular there without its shift.
    m, n = 40, 30
    C = rng.integers(-2, 3, size=(m, n)).astype(float) * 1e-3
    C[:5] -= 1.0
    C[:, :4] -= 1.0
    alpha, beta = 1.0 / m, 1.0 / n * 1.0
    beta = alpha * m / n
    res = project_transport(C, (alpha, beta))
    _check_kkt(C, res, alpha, beta)
    np.testing.assert_allclose(res.P, project_transport(C, (alpha, beta), max_newton=0).P, rtol=0, atol=1e-13)
    zero = project_transport(C, (alpha, beta), (np.zeros(m), np.zeros(n)))
    np.testing.assert_allclose(zero.P, res.P, rtol=0, atol=1e-13)


def test_ray_start_equals_cold_start_and_saves_newton_steps(rng):
    # A chain of shrinking dense steps from feasible points, as near_stationarity makes them:
    # each C_k = P_{k-1} - gamma_k G. Ray start (zero duals + line search along the previous
    # duals) == cold start to tolerance, in fewer Newton steps than zero duals over the chain.
    m = 60
    sp, su = rng.standard_normal(m), rng.standard_normal(m)
    G = np.abs(sp[:, None] - su[None, :])
    P = project_transport(np.full((m, m), 1.0 / m ** 2) - 0.005 * G).P
    prev, n_ray, n_zero = None, 0, 0
    for k in range(8):
        C = P - 0.005 / (k + 2) * (G + 0.1 * rng.standard_normal((m, m)) ** 2)
        cold = project_transport(C)
        zero = project_transport(C, start=(np.zeros(m), np.zeros(m)))
        ray = project_transport(C, start=(np.zeros(m), np.zeros(m)), direction=prev)
        _check_kkt(C, ray, 1.0 / m, 1.0 / m)
        np.testing.assert_allclose(ray.P, cold.P, rtol=0, atol=1e-9 / m)
        np.testing.assert_allclose(zero.P, cold.P, rtol=0, atol=1e-9 / m)
        if prev is not None:
            n_ray += ray.n_iter
            n_zero += zero.n_iter
        prev, P = (ray.u, ray.v), ray.P
    assert n_ray < n_zero


def test_useless_ray_direction_is_harmless(rng):
    m = 30
    C = _dense_step(rng, m, 0.01)
    base = project_transport(C, start=(np.zeros(m), np.zeros(m)))
    for direction in ((rng.standard_normal(m), rng.standard_normal(m)), (-base.u, -base.v),
                      (np.zeros(m), np.zeros(m))):
        res = project_transport(C, start=(np.zeros(m), np.zeros(m)), direction=direction)
        _check_kkt(C, res, 1.0 / m, 1.0 / m)
        np.testing.assert_allclose(res.P, base.P, rtol=0, atol=1e-9 / m)
    exact = project_transport(C, start=(np.zeros(m), np.zeros(m)), direction=(base.u, base.v))
    assert exact.n_iter == 0          # the exact duals as the ray: the search lands on them
    with pytest.raises(ValueError, match="direction"):
        project_transport(C, direction=(np.zeros(m), np.zeros(m + 1)))
    with pytest.raises(ValueError, match="direction"):
        project_transport(C, direction=(np.full(m, np.nan), np.zeros(m)))


def test_retry_from_cold_start(rng):
    # A feasible C with a wrong warm start and no iterations allowed: the warm attempt cannot
    # converge; the retry's cold block-ascent sweep solves it (C is its own projection).
    m = 12
    P = project_transport(_random_C(rng, m, m, 0.05)).P
    u0, v0 = np.full(m, 0.1), np.full(m, -0.3)
    failed = project_transport(P, start=(u0, v0), max_newton=0, max_sweeps=0, retry=False)
    assert not failed.converged
    res = project_transport(P, start=(u0, v0), max_newton=0, max_sweeps=0)
    assert res.converged and res.n_sweeps == 1
    np.testing.assert_allclose(res.P, P, rtol=0, atol=1e-14)


def test_domain_ray_rule_on_dense_steps(rng):
    # The domain's default rule ("ray") on a chain of dense steps: same points as "cold", fewer
    # Newton steps than "zero"; projections that leave P alone (zero duals) keep the ray.
    m = 40
    G = np.abs(rng.standard_normal(m)[:, None] - rng.standard_normal(m)[None, :])
    doms = {s: TransportPolytope(m, start=s) for s in ("ray", "zero", "cold")}
    assert TransportPolytope(m).start == "ray"
    xs = {s: np.full(m * m, 1.0 / m ** 2) for s in doms}
    newton = {s: 0 for s in doms}
    for k in range(6):
        for s, d in doms.items():
            xs[s] -= 0.004 / (k + 2) * G.ravel()
            d.project_inplace(xs[s])
            newton[s] += d.last.n_iter if k else 0
            ray_before = d._ray
            d.project_inplace(xs[s])          # already feasible: zero duals, nothing moves
            if s != "cold":                   # (a cold start's sweep leaves round-off duals)
                assert d.last.n_iter == 0 and d._ray is ray_before
        np.testing.assert_allclose(xs["ray"], xs["cold"], rtol=0, atol=1e-9 / m)
        np.testing.assert_allclose(xs["zero"], xs["cold"], rtol=0, atol=1e-9 / m)
    assert newton["ray"] < newton["zero"]
