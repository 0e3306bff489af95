"""check_feasibility: minimising g over the domain, certificates of infeasibility, support functions."""
import math

import numpy as np
import pytest

from fastcon.datasets import make_fair_classification
from fastcon.problems import (
    Ball, Box, ColumnBalls, ConstrainedProblem, Product, ProductOfBalls, Whole, custom_term, erm_optimum, hinge_risk,
    less_equal, sigmoid_risk,
)
from fastcon.problems._transport_domain import TransportPolytope
from fastcon.solvers import check_feasibility
from fastcon.solvers.feasibility import is_known_convex


@pytest.fixture(scope="module")
def data():
    D = make_fair_classification(n_samples=300, n_features=5, seed=0)
    return D, erm_optimum(D)


def hinge_level(data, delta, domain="ball", x0=None):
    """Constraint hinge(D) <= L* + delta; min over the ball (which holds w_ERM) of g is -delta."""
    D, erm = data
    dom = Ball(5.0 * float(np.linalg.norm(erm.w))) if domain == "ball" else domain
    return ConstrainedProblem(hinge_risk(D), [less_equal(hinge_risk(D), erm.value + delta)], dom,
                              x0=np.zeros(D.n_features) if x0 is None else x0)


# ---------------------------------------------------------------------------- the hinge example of the issue
def test_infeasible_hinge_level_is_certified(data):
    problem = hinge_level(data, -0.1)
    res = check_feasibility(problem)
    assert res.status == "certified_infeasible" and res.convex
    # valid: 0 = feasibility_tolerance < lower_bound <= min g = 0.1 <= smallest g found
    assert 0.0 < res.lower_bound <= 0.1 + 1e-12
    assert res.min_violation >= 0.1 - 1e-12 and res.gap >= 0
    assert problem.g(res.x)[0] == pytest.approx(res.min_violation)
    assert "infeasible" in res.message and res.info["bound_source"] in ("iterate", "aggregate")
    h = res.history
    assert h["iteration"][-1] == res.n_iter - 1 and np.all(np.diff(h["lower_bound"]) >= 0)
    assert res.counters["data_passes_g"] == pytest.approx(res.n_iter)  # one fused pass per iteration


def test_feasible_hinge_level_is_not_certified(data):
    problem = hinge_level(data, +0.1)
    res = check_feasibility(problem)
    assert res.status == "feasible" and res.min_violation <= 0.0
    assert problem.g(res.x)[0] <= 0.0 and problem.domain.contains(res.x)
    assert res.lower_bound <= -0.1 + 1e-12  # a valid bound: min g = -0.1 here


@pytest.mark.parametrize("step_size", [None, "polyak", 2.0])
def test_the_bound_never_exceeds_the_true_minimum(data, step_size):
    """Tolerance just below min g = 0.1: neither feasible nor certifiable; the bound stays valid."""
    res = check_feasibility(hinge_level(data, -0.1), feasibility_tolerance=0.1 - 1e-9, max_iter=1500,
                            step_size=step_size, record_every=100)
    assert res.status == "undecided" and res.n_iter == 1500
    assert res.lower_bound <= 0.1 + 1e-12 and np.all(res.history["lower_bound"] <= 0.1 + 1e-12)
    assert res.min_violation >= 0.1 - 1e-12
    assert res.gap < 0.02  # and it is a good bound


def test_feasibility_tolerance_above_the_minimum_is_feasible(data):
    res = check_feasibility(hinge_level(data, -0.1), feasibility_tolerance=0.15)
    assert res.status == "feasible" and res.min_violation <= 0.15


def test_polyak_steps_certify_too(data):
    assert check_feasibility(hinge_level(data, -0.1), step_size="polyak").status == "certified_infeasible"
    assert check_feasibility(hinge_level(data, 0.1), step_size="polyak").status == "feasible"


# ---------------------------------------------------------------------------- no certificate without convexity/bounds
def test_nonconvex_constraint_gets_no_certificate(data):
    D, _ = data
    # the sigmoid risk lies in (0, 1): sigmoid(D) <= -0.5 is infeasible, but the sigmoid is not convex
    problem = ConstrainedProblem(hinge_risk(D), [less_equal(sigmoid_risk(D), -0.5)], Ball(3.0))
    res = check_feasibility(problem, max_iter=300)
    assert not res.convex and res.status == "undecided" and res.lower_bound == -math.inf
    assert "not known to be convex" in res.message
    assert check_feasibility(problem, max_iter=300, convex=False).lower_bound == -math.inf


def test_unbounded_domain_reports_minus_infinity(data):
    res = check_feasibility(hinge_level(data, -0.1, domain=Whole()), max_iter=300)
    assert res.status == "undecided" and res.lower_bound == -math.inf


def test_zero_subgradient_certifies_on_any_domain():
    # g(x) = ||x||^2 + 1 (declared convex): x = 0 minimises it over R^d, so min g = 1 > 0
    def vs(x, out):
        out[:] = 2 * x
        return float(x @ x) + 1.0
    term = custom_term(lambda x: float(x @ x) + 1.0, vs, 3)
    term.convex = True
    res = check_feasibility(ConstrainedProblem(term, [term], Whole()))
    assert res.status == "certified_infeasible" and res.lower_bound == 1.0 and res.n_iter == 1
    assert res.info["bound_source"] == "stationary"
    # the same term without the flag: stopped at a stationary point, nothing claimed
    del term.convex
    res = check_feasibility(ConstrainedProblem(term, [term], Whole()))
    assert res.status == "undecided" and res.lower_bound == -math.inf and "stationary" in res.message


def linear_term(a, b):
    """g(x) = <a, x> - b, declared convex."""
    a = np.asarray(a, dtype=float)

    def vs(x, out):
        out[:] = a
        return float(a @ x - b)
    term = custom_term(lambda x: float(a @ x - b), vs, a.size)
    term.convex = True
    return term


@pytest.mark.parametrize("domain, expected_min", [
    (Box(0.0, 1.0), 1.0),                                     # 3 - x1 - x2 >= 1 on the unit square
    (Box(np.zeros(2), np.array([1.0, 2.0])), 0.0),             # the corner (1, 2) just reaches g = 0
    (ProductOfBalls([0, 1, 2], [0.5, 0.5]), 2.0),
    (ColumnBalls([0.5, 0.5]), 2.0),
    (Product([(1, Box(0.0, 1.0)), (1, Ball(0.5))]), 1.5),
])
def test_linear_constraints_on_every_bounded_domain(domain, expected_min):
    # g = 3 - x1 - x2; min over the domain is 3 - sigma(1, 1)
    problem = ConstrainedProblem(linear_term([0.0, 0.0], 0.0), [linear_term([-1.0, -1.0], -3.0)], domain)
    res = check_feasibility(problem, feasibility_tolerance=1e-9, max_iter=3000)
    assert res.lower_bound <= expected_min + 1e-12
    if expected_min > 1e-9:
        assert res.status == "certified_infeasible"
        # for a linear g the single cut is exact: the bound is the minimum itself
        assert res.lower_bound == pytest.approx(expected_min, abs=1e-12)
    else:
        assert res.status == "feasible"


def test_domain_without_support_function_gives_no_bound():
    dom = TransportPolytope(2)
    problem = ConstrainedProblem(linear_term(np.zeros(4), 0.0), [linear_term(-np.ones(4), -5.0)], dom)
    res = check_feasibility(problem, max_iter=50)
    assert res.lower_bound == -math.inf and res.status == "undecided" and "support function" in res.message


def test_no_constraint_is_feasible(data):
    D, _ = data
    res = check_feasibility(ConstrainedProblem(hinge_risk(D), [], Ball(1.0)))
    assert res.status == "feasible" and res.n_iter == 0


def test_known_convex_terms(data):
    D, _ = data
    assert is_known_convex(less_equal(hinge_risk(D), 0.3))
    assert not is_known_convex(less_equal(sigmoid_risk(D), 0.3))
    assert not is_known_convex(custom_term(lambda x: 0.0, lambda x, out: 0.0, 5))


@pytest.mark.parametrize("kwargs, error, argument", [
    (dict(max_iter=2.7), ValueError, "max_iter"), (dict(max_iter=0), ValueError, "max_iter"),
    (dict(feasibility_tolerance=-1.0), ValueError, "feasibility_tolerance"),
    (dict(feasibility_tolerance=math.nan), ValueError, "feasibility_tolerance"),
    (dict(step_size="armijo"), ValueError, "step_size"), (dict(step_size=-1.0), ValueError, "step_size"),
    (dict(step_size=lambda k: -1.0), ValueError, "step_size"), (dict(record_every=0), ValueError, "record_every"),
    (dict(convex="yes"), TypeError, "convex"),
])
def test_bad_arguments(data, kwargs, error, argument):
    with pytest.raises(error, match=f"^{argument}: "):
        check_feasibility(hinge_level(data, 0.1), **kwargs)


# ---------------------------------------------------------------------------- support functions
DOMAINS = [
    Ball(2.0), Ball(1.5, center=np.array([1.0, -2.0, 0.5, 0.0])), ProductOfBalls([0, 1, 4], [0.7, 2.0]),
    ColumnBalls([1.0, 0.3]), Box(-1.0, 2.0), Box(np.array([-1.0, 0.0, 2.0, -3.0]), np.array([1.0, 0.5, 2.0, 0.0])),
    Product([(2, Ball(1.0)), (2, Box(0.0, 1.0))]),
]


@pytest.mark.parametrize("domain", DOMAINS, ids=repr)
def test_support_function_is_the_maximum_of_the_linear_function(domain):
    rng = np.random.default_rng(0)
    for _ in range(20):
        y = rng.standard_normal(4)
        sigma = domain.support(y)
        points = [domain.project(5 * rng.standard_normal(4)) for _ in range(400)]
        assert max(float(y @ z) for z in points) <= sigma + 1e-12
        # attained: the projection of a far point along y is (close to) the maximiser
        far = domain.project(1e6 * y + (0 if not hasattr(domain, "center") or domain.center is None
                                        else domain.center))
        assert float(y @ far) == pytest.approx(sigma, rel=1e-5, abs=1e-5)


def test_support_function_of_unbounded_sets():
    assert Whole().support(np.zeros(3)) == 0.0
    assert Whole().support(np.array([0.0, 1e-300, 0.0])) == math.inf
    assert Box(0.0, np.inf).support(np.array([-1.0, 0.0])) == 0.0
    assert Box(0.0, np.inf).support(np.array([1.0, 0.0])) == math.inf
    assert ColumnBalls([1.0, np.inf]).support(np.array([3.0, 0.0, 4.0, 0.0])) == 5.0
    assert ColumnBalls([1.0, np.inf]).support(np.array([3.0, 1.0, 4.0, 0.0])) == math.inf
    assert Ball(np.inf).support(np.zeros(3)) == 0.0  # not inf * 0 = NaN
    assert Ball(np.inf, center=np.ones(2)).support(np.array([0.0, 1.0])) == math.inf
    with pytest.raises(NotImplementedError, match=r"^TransportPolytope\.support: "):
        TransportPolytope(2).support(np.ones(4))
