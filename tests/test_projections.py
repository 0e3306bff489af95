"""Projections onto a ball, a product of balls (contiguous or interleaved blocks) and a box: membership,
idempotence, optimality."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fastcon._kernels import project_ball, project_balls, project_box, project_column_balls
from fastcon.problems import Ball, ColumnBalls, ProductOfBalls
from reference import kernels as ref

TOL = 1e-12


def projected(fn, x, *args):
    out = x.copy()
    fn(out, *args)
    return out


def sample_ball(rng, d, radius, center):
    u = rng.standard_normal(d)
    return center + u / max(np.linalg.norm(u), 1e-300) * radius * rng.random() ** (1 / d)


vectors = st.integers(1, 20).flatmap(lambda d: st.tuples(st.just(d), st.integers(0, 2**32 - 1)))


@settings(max_examples=80, deadline=None)
@given(vectors, st.floats(0.0, 5.0), st.booleans(), st.floats(0.01, 10.0))
def test_ball(dim_seed, radius, centered, spread):
    d, seed = dim_seed
    rng = np.random.default_rng(seed)
    center = rng.standard_normal(d) if centered else None
    c = np.zeros(d) if center is None else center
    x = c + rng.standard_normal(d) * spread
    p = projected(project_ball, x, radius, center)
    np.testing.assert_allclose(p, ref.project_ball(x, radius, center), rtol=1e-13, atol=1e-13)
    assert np.linalg.norm(p - c) <= radius * (1 + TOL) + TOL
    np.testing.assert_allclose(projected(project_ball, p, radius, center), p, rtol=1e-14, atol=1e-14)
    for _ in range(5):
        v = sample_ball(rng, d, radius, c)
        assert np.dot(x - p, v - p) <= TOL * (1 + np.linalg.norm(x - p) * np.linalg.norm(v - p))
    inside = sample_ball(rng, d, radius, c)
    assert np.array_equal(projected(project_ball, inside, radius, center), inside)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=5), st.integers(0, 2**32 - 1), st.booleans())
def test_product_of_balls(sizes, seed, centered):
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    d = int(offsets[-1])
    radii = rng.random(len(sizes)) * 2
    radii[rng.random(len(sizes)) < 0.2] = np.inf
    center = rng.standard_normal(d) if centered else None
    c = np.zeros(d) if center is None else center
    x = c + rng.standard_normal(d) * 3
    p = projected(project_balls, x, offsets, radii, center)
    np.testing.assert_allclose(p, ref.project_balls(x, offsets, radii, center), rtol=1e-13, atol=1e-13)
    for k, r in enumerate(radii):
        sl = slice(offsets[k], offsets[k + 1])
        assert np.linalg.norm(p[sl] - c[sl]) <= r * (1 + TOL) + TOL
        if not np.isfinite(r):
            assert np.array_equal(p[sl], x[sl])
    np.testing.assert_allclose(projected(project_balls, p, offsets, radii, center), p, rtol=1e-14, atol=1e-14)
    for _ in range(5):
        v = c.copy()
        for k, r in enumerate(radii):
            sl = slice(offsets[k], offsets[k + 1])
            size = offsets[k + 1] - offsets[k]
            if size:
                v[sl] = sample_ball(rng, size, r if np.isfinite(r) else 10.0, c[sl])
        assert np.dot(x - p, v - p) <= TOL * (1 + np.linalg.norm(x - p) * np.linalg.norm(v - p))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 7), st.integers(1, 6), st.integers(0, 2**32 - 1), st.sampled_from([0.01, 1.0, 100.0]))
def test_column_balls_equal_product_of_balls_on_the_transpose(n_rows, m, seed, spread):
    """Column k of the row-major (n, m) matrix, x[k::m], onto its ball: the reference, and the same bits as
    project_balls on the transpose (the "features" layout of multi-class NP against "classes")."""
    rng = np.random.default_rng(seed)
    radii = rng.random(m) * 2
    radii[rng.random(m) < 0.2] = np.inf
    radii[rng.random(m) < 0.1] = 0.0
    M = rng.standard_normal((n_rows, m)) * spread
    M[rng.random((n_rows, m)) < 0.1] = -0.0
    x = M.ravel()
    p = projected(project_column_balls, x, radii, np.empty(m))
    np.testing.assert_allclose(p, ref.project_column_balls(x, radii), rtol=1e-13, atol=1e-13)
    transposed = projected(project_balls, np.ascontiguousarray(M.T).ravel(), np.arange(m + 1) * n_rows, radii)
    assert np.array_equal(p.reshape(n_rows, m).T.ravel(), transposed)
    assert np.array_equal(np.signbit(p.reshape(n_rows, m).T.ravel()), np.signbit(transposed))  # -0.0 as well
    for k, r in enumerate(radii):
        assert np.linalg.norm(p[k::m]) <= r * (1 + TOL) + TOL
        if not np.isfinite(r):
            assert np.array_equal(p[k::m], x[k::m])
    np.testing.assert_allclose(projected(project_column_balls, p, radii, np.empty(m)), p, rtol=1e-14, atol=1e-14)
    domain = ColumnBalls(radii)
    assert np.array_equal(domain.project(x), p) and domain.n_columns == m
    assert domain.diameter == ProductOfBalls(np.arange(m + 1) * n_rows, radii).diameter
    assert [x[s].size for s in domain.columns(x.size)] == [n_rows] * m


def test_column_balls_bad_arguments_raise():
    with pytest.raises(ValueError, match="radii"):
        project_column_balls(np.ones(6), np.array([1.0, 1.0, 1.0, 1.0]), np.empty(4))  # 4 does not divide 6
    with pytest.raises(ValueError, match="radii"):
        project_column_balls(np.ones(6), np.array([1.0, -1.0]), np.empty(2))
    with pytest.raises(ValueError, match="radii"):
        project_column_balls(np.ones(6), np.array([1.0, 1.0]), np.empty(3))
    for radii in ([], [1.0, -0.5], [[1.0]]):
        with pytest.raises(ValueError, match="radii"):
            ColumnBalls(radii)
    with pytest.raises(ValueError, match="multiple"):
        ColumnBalls([1.0, 1.0]).columns(5)


@settings(max_examples=80, deadline=None)
@given(vectors, st.booleans())
def test_box(dim_seed, scalar_bounds):
    d, seed = dim_seed
    rng = np.random.default_rng(seed)
    if scalar_bounds:
        lo, hi = sorted(rng.standard_normal(2))
        lo_a, hi_a = np.full(d, lo), np.full(d, hi)
    else:
        a, b = rng.standard_normal((2, d))
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        lo[rng.random(d) < 0.2] = -np.inf
        hi[rng.random(d) < 0.2] = np.inf
        lo_a, hi_a = lo, hi
    x = rng.standard_normal(d) * 3
    p = projected(project_box, x, lo, hi)
    assert np.array_equal(p, ref.project_box(x, lo_a, hi_a))
    assert np.all(p >= lo_a) and np.all(p <= hi_a)
    assert np.array_equal(projected(project_box, p, lo, hi), p)
    for _ in range(5):
        v = np.clip(rng.standard_normal(d) * 3, lo_a, hi_a)
        assert np.dot(x - p, v - p) <= TOL


def test_points_inside_are_unchanged_and_infinite_radius_is_free():
    x = np.array([0.3, -0.4])
    assert np.array_equal(projected(project_ball, x, 0.5), x)
    big = np.array([1e6, -1e6])
    assert np.array_equal(projected(project_ball, big, np.inf), big)
    np.testing.assert_allclose(projected(project_ball, np.array([3.0, 4.0]), 0.0), [0.0, 0.0])


def test_bad_arguments_raise():
    x = np.ones(3)
    with pytest.raises(ValueError, match="radius"):
        project_ball(x, -1.0)
    with pytest.raises(ValueError, match="offsets"):
        project_balls(x, np.array([0, 2], dtype=np.int64), np.array([1.0]))
    with pytest.raises(ValueError, match="radii"):
        project_balls(x, np.array([0, 3], dtype=np.int64), np.array([-1.0]))
    with pytest.raises(ValueError, match="lo, hi"):
        project_box(x, 1.0, 0.0)


# --------------------------------------------------------------------------- overflow and underflow (issue 14)
def _exact_projection(x, radius, center=None):
    """c + (x - c) r / ||x - c|| with math.hypot (no overflow) on a finite x - c."""
    c = np.zeros_like(x) if center is None else center
    t = x - c
    norm = math.hypot(*t)
    return x.copy() if norm <= radius else c + t * (radius / norm)


@pytest.mark.parametrize("scale", [1e150, 1e200, 1e300])
@pytest.mark.parametrize("centered", [False, True])
def test_ball_projection_of_huge_points(scale, centered):
    rng = np.random.default_rng(int(np.log10(scale)))
    d = 7
    center = rng.standard_normal(d) * scale / 4 if centered else None
    c = np.zeros(d) if center is None else center
    x = c + rng.standard_normal(d) * scale / 4  # ||x - c||^2 overflows from 1e155 on
    for radius in (1.0, scale, np.linalg.norm((x - c) / scale) * scale * 0.5):
        p = projected(project_ball, x, radius, center)
        expected = _exact_projection(x, radius, center)
        np.testing.assert_allclose(p, expected, rtol=1e-14, atol=1e-14 * max(radius, np.abs(c).max()))
        assert math.hypot(*(p - c)) <= radius * (1 + 1e-14) + 1e-14 * np.abs(c).max()
        np.testing.assert_allclose(projected(project_ball, p, radius, center), p, rtol=1e-15)
    # ||x|| itself beyond the float range (about 2.4e308) and x - c overflowing
    big = np.full(6, 1e308)
    np.testing.assert_allclose(projected(project_ball, big, 2.0), np.full(6, 2.0 / np.sqrt(6)), rtol=1e-15)
    p = projected(project_ball, np.array([1e308, 0.0]), 1e308, np.array([-1e308, 0.0]))
    np.testing.assert_allclose(p, [0.0, 0.0], atol=1e293)


def test_ball_projection_of_tiny_points_and_non_finite_input():
    # the squares underflow: 3e-170^2 is below the smallest double
    np.testing.assert_allclose(projected(project_ball, np.array([3e-170, 4e-170]), 1e-170), [6e-171, 8e-171],
                               rtol=1e-15)
    assert np.array_equal(projected(project_ball, np.array([1e-200, -1e-200]), 0.0), [0.0, 0.0])
    np.testing.assert_allclose(projected(project_ball, np.array([1e-200, -1e-200]), 1e-300),
                               np.array([1, -1]) * 1e-300 / np.sqrt(2), rtol=1e-15, atol=0)
    tiny_inside = np.array([1e-200, 0.0])
    assert np.array_equal(projected(project_ball, tiny_inside, 1.0), tiny_inside)
    # NaN and inf still poison the result (the solvers' finiteness checks then stop the run)
    assert np.all(np.isnan(projected(project_ball, np.array([1e300, np.nan]), 1.0)))
    assert np.isnan(projected(project_ball, np.array([1e300, np.inf]), 1.0)[1])


@pytest.mark.parametrize("scale", [1e150, 1e200, 1e300])
def test_product_and_column_balls_of_huge_points(scale):
    rng = np.random.default_rng(3)
    n, m = 5, 3
    M = rng.standard_normal((n, m)) * scale
    M[:, 1] *= 1e-300 / scale  # one column of normal size next to huge ones
    radii = np.array([1.0, 0.5, np.inf])
    x = M.ravel()
    p = projected(project_column_balls, x, radii, np.empty(m))
    transposed = projected(project_balls, np.ascontiguousarray(M.T).ravel(), np.arange(m + 1) * n, radii)
    assert np.array_equal(p.reshape(n, m).T.ravel(), transposed)  # still the same bits
    for k, r in enumerate(radii):
        col = M[:, k]
        np.testing.assert_allclose(p[k::m], _exact_projection(col, r) if np.isfinite(r) else col, rtol=1e-14)
    domain = ProductOfBalls(np.array([0, 2, 5]), np.array([scale, scale]))
    assert domain.diameter == pytest.approx(2 * np.sqrt(2) * scale, rel=1e-15)
    assert ColumnBalls(np.array([scale, scale])).diameter == pytest.approx(2 * np.sqrt(2) * scale, rel=1e-15)


def test_ball_domain_contains_and_projects_huge_points():
    ball = Ball(1.0)
    x = np.array([1e200, 1e200])
    np.testing.assert_allclose(ball.project(x), [np.sqrt(0.5)] * 2, rtol=1e-15)  # was [0, 0]
    assert not ball.contains(x)  # ||P(x) - x|| and ||x|| were both inf, so inf <= inf said "inside"
    assert ball.contains(ball.project(x))
    assert Ball(1e300, center=np.full(2, 1e300)).contains(np.full(2, 1e300) + 5e299)


@pytest.mark.parametrize("solver", ["conex", "spider"])
def test_huge_step_ends_on_the_sphere_not_at_the_centre(solver):
    """A 1e200 step overflowed ||x||^2: the projection returned 0, and the run ended at x = 0."""
    from fastcon.datasets import make_fair_classification
    from fastcon.problems import ConstrainedProblem, smoothed_demographic_parity, hinge_risk, less_equal
    from fastcon.solvers import conex, spider

    D = make_fair_classification(200, 5, seed=0)
    p, u = D.subset(D.groups == 1), D.subset(D.groups == 0)
    prob = ConstrainedProblem(hinge_risk(D), [less_equal(smoothed_demographic_parity(p, u), 0.05)], Ball(1.0),
                              x0=np.zeros(5))
    res = conex(prob, max_iter=20, primal_step=1e200, dual_step=1.0) if solver == "conex" else \
        spider(prob, max_iter=20, step_size=1e200, seed=0)
    assert np.linalg.norm(res.x) == pytest.approx(1.0, rel=1e-12)
