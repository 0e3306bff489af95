"""A new domain is one subclass of `fastcon.problems.Domain`, defined here in the test file only.

`LInfinityBall` answers the projection, the support function and the coordinate bounds; the
solvers and certificates then work on it unchanged and agree with the equivalent `Box`.
`ProbabilitySimplex` answers only the projection: the solvers that need another operation refuse it
up front, naming the class and the operation.
"""
import itertools

import numpy as np
import pytest

from fastcon.solvers import near_stationarity
from fastcon.metrics._stationarity import kkt_residual
from fastcon.problems import Box, ConstrainedProblem, Domain
from fastcon.solvers import check_feasibility, exact_penalty_trust_region, switching_subgradient
from fastcon.solvers.augmented_lagrangian import augmented_lagrangian
from reference.terms import linear, squared_distance


class LInfinityBall(Domain):
    r""":math:`\{x \in \mathbb R^d : \|x\|_\infty \le r\}`."""

    def __init__(self, radius, dim):
        self.radius, self.dim = float(radius), int(dim)
        self.diameter = 2.0 * self.radius * np.sqrt(self.dim)

    def project_inplace(self, x):
        np.clip(x, -self.radius, self.radius, out=x)
        return x

    def support(self, y):
        return self.radius * float(np.sum(np.abs(y)))

    def bounds(self, dim):
        return np.full(dim, -self.radius), np.full(dim, self.radius)


class ProbabilitySimplex(Domain):
    r""":math:`\{x \ge 0 : \sum_i x_i = 1\}`, with only its projection (sort and threshold)."""

    diameter = np.sqrt(2.0)

    def project_inplace(self, x):
        u = np.sort(x)[::-1]
        cum = np.cumsum(u) - 1.0
        k = np.nonzero(u - cum / np.arange(1, x.size + 1) > 0)[0][-1]
        np.maximum(x - cum[k] / (k + 1), 0.0, out=x)
        return x


R = 0.5
# min ||x - (2, 1, -3)||^2 s.t. x1 + x2 <= 0.6 on [-1/2, 1/2]^3. By hand: x3 = -1/2 (its bound);
# the projection of (2, 1) onto the half-plane is (0.8, -0.2), outside the box, so x1 = 1/2 and
# x2 = 0.1. Gradient (-3, -1.8): lambda = 1.8 from x2, and x1 keeps -3 + 1.8 < 0 against its upper bound.
X_STAR, LAMBDA_STAR = np.array([0.5, 0.1, -0.5]), 1.8


def kkt_problem(domain):
    return ConstrainedProblem(squared_distance([2.0, 1.0, -3.0]), [linear([1.0, 1.0, 0.0], -0.6)], domain)


def test_support_function_is_the_maximum_over_the_vertices():
    rng = np.random.default_rng(0)
    domain = LInfinityBall(R, 4)
    vertices = np.array(list(itertools.product([-R, R], repeat=4)))
    for _ in range(20):
        y = rng.standard_normal(4)
        assert domain.support(y) == pytest.approx(float(np.max(vertices @ y)), rel=1e-14)


def test_check_feasibility_certifies_through_the_support_function():
    # x1 + x2 + x3 >= 2 is out of reach of [-1/2, 1/2]^3: min of 2 - sum(x) over the box is 1/2
    results = [check_feasibility(ConstrainedProblem(linear(np.zeros(3)), [linear(-np.ones(3), 2.0)], domain),
                                 convex=True)
               for domain in (LInfinityBall(R, 3), Box(-R, R))]
    for res in results:
        assert res.status == "certified_infeasible"
        assert res.lower_bound == pytest.approx(0.5, abs=1e-12)
    assert results[0].lower_bound == results[1].lower_bound


def test_switching_subgradient_stays_inside_and_matches_the_box():
    results = [switching_subgradient(kkt_problem(domain), np.zeros(3), max_iter=5000, step_size=1e-3,
                                     switching_level=1e-3, output="last")
               for domain in (LInfinityBall(R, 3), Box(-R, R))]
    for res in results:
        assert np.max(np.abs(res.x)) <= R
        np.testing.assert_allclose(res.x, X_STAR, atol=2e-2)
    np.testing.assert_array_equal(results[0].x, results[1].x)


def test_near_stationarity_and_kkt_residual_use_the_default_normal_cone():
    ours, box = kkt_problem(LInfinityBall(R, 3)), kkt_problem(Box(-R, R))
    x = np.array([0.3, -0.2, 0.1])
    a = near_stationarity(ours, x, 4.0, return_details=True)
    b = near_stationarity(box, x, 4.0, return_details=True)
    assert np.max(np.abs(a["x_hat"])) <= R + 1e-15
    np.testing.assert_array_equal(a["x_hat"], b["x_hat"])
    assert a["distance"] == b["distance"] > 0.0
    # at the KKT point the residual ||x - P(x - v)|| of the base class is 0, as the Box's exact distance
    assert kkt_residual(ours, X_STAR, [LAMBDA_STAR])["stationarity"] <= 1e-12
    assert kkt_residual(box, X_STAR, [LAMBDA_STAR])["stationarity"] <= 1e-12
    # elsewhere both are positive, and the projected-gradient residual never exceeds the distance
    r_ours = kkt_residual(ours, x, [1.0])["stationarity"]
    assert 0.0 < r_ours <= kkt_residual(box, x, [1.0])["stationarity"] + 1e-15


def test_augmented_lagrangian_reads_the_bounds():
    results = [augmented_lagrangian(kkt_problem(domain), tol=1e-9, stationarity_tolerance=1e-9)
               for domain in (LInfinityBall(R, 3), Box(-R, R))]
    for res in results:
        assert res.status == "converged" and np.max(np.abs(res.x)) <= R
        np.testing.assert_allclose(res.x, X_STAR, atol=1e-6)
        np.testing.assert_allclose(res.multipliers, [LAMBDA_STAR], atol=1e-5)
    np.testing.assert_array_equal(results[0].x, results[1].x)


def test_exact_penalty_keeps_the_bounds_in_its_lps():
    results = [exact_penalty_trust_region(kkt_problem(domain), np.zeros(3), max_iter=200)
               for domain in (LInfinityBall(R, 3), Box(-R, R))]
    for res in results:
        assert np.max(np.abs(res.x)) <= R
        np.testing.assert_allclose(res.x, X_STAR, atol=1e-5)
    np.testing.assert_array_equal(results[0].x, results[1].x)


def test_a_domain_with_only_a_projection():
    domain = ProbabilitySimplex()
    problem = ConstrainedProblem(squared_distance([1.0, 0.2, -1.0]), [linear([1.0, 0.0, 0.0], -0.5)], domain)
    res = switching_subgradient(problem, np.zeros(3), max_iter=2000, step_size=1e-2, output="last")
    assert np.all(res.x >= 0.0) and abs(res.x.sum() - 1.0) <= 1e-12
    # min ||x - (1, 0.2, -1)||^2 over the simplex with x1 <= 1/2: (0.5, 0.5, 0) (by hand: x3 = 0, x2 = 1 - x1)
    np.testing.assert_allclose(res.x, [0.5, 0.5, 0.0], atol=2e-2)
    # gradient (-1, 0.6, 2) + lambda e1 must be -t 1 + s e3 (s >= 0): lambda = 1.6, t = -0.6, s = 1.4
    assert kkt_residual(problem, np.array([0.5, 0.5, 0.0]), [1.6])["stationarity"] <= 1e-12
    with pytest.raises(NotImplementedError, match=r"^ProbabilitySimplex\.support: "):
        domain.support(np.ones(3))
    unreachable = ConstrainedProblem(linear(np.zeros(3)), [linear([-1.0, 0.0, 0.0], 2.0)], domain)
    res = check_feasibility(unreachable, max_iter=20, convex=True)
    assert res.status == "undecided" and "no support function" in res.message
    with pytest.raises(TypeError, match=r"^problem: augmented_lagrangian .*ProbabilitySimplex\.bounds: "):
        augmented_lagrangian(problem)
    with pytest.raises(ValueError, match=r"^problem: exact_penalty_trust_region .*ProbabilitySimplex\.box_and_balls: "):
        exact_penalty_trust_region(problem)
