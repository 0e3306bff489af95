"""Pairwise quadratic fairness constraints ([HHYL25] eqs. 66, 69, 71) and the exact QCQP projection."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize

from fastcon.problems import QuadraticConstraints, pairwise_fairness_constraints, qcqp_projection
from fastcon.problems._pairwise_fairness import PAIRWISE_KINDS

KINDS = sorted(PAIRWISE_KINDS)


def sample(rng, n=40, p=3, G=2):
    xi = rng.normal(size=(n, p))
    xi[xi < -0.5] = 0.0                              # some zeros, so that the CSR copy is really sparse
    groups = np.arange(n) % G                         # every group present
    y = np.where((np.arange(n) // G) % 2 == 0, 1.0, -1.0)   # both labels in every group
    rng.shuffle(y[G * 4:])
    X = np.hstack([np.ones((n, 1)), xi, groups[:, None] == 1, (groups[:, None] == 1) * xi]).astype(float)
    return X, y, groups


def pair_mean(P, Q, w):
    """O(|P||Q|) double sum of sigma(h(p) - h(q)) with sigma(x) = (1 + x)^2 / 2, and its gradient."""
    diff = (P @ w)[:, None] - (Q @ w)[None, :]
    value = np.mean(0.5 * (1.0 + diff) ** 2)
    coef = 1.0 + diff                                  # d sigma / d diff
    grad = (coef.sum(axis=1) @ P - coef.sum(axis=0) @ Q) / coef.size
    return value, grad


def naive(kind, X, y, groups, w, k, k2):
    pos, neg = y > 0, y < 0
    gk, gk2 = groups == k, groups == k2
    if kind == "group_auc":
        terms, const = [(X[gk], X[gk2])], 0.5
    elif kind == "inter_group":
        terms, const = [(X[gk & pos], X[gk2 & neg]), (X[gk & neg], X[gk2 & pos])], 1.0
    else:
        terms, const = [(X[gk & pos], X[gk & neg]), (X[gk2 & neg], X[gk2 & pos])], 1.0
    parts = [pair_mean(P, Q, w) for P, Q in terms]
    return sum(v for v, _ in parts) - const, sum(g for _, g in parts)


# ---------------------------------------------------------------------------- the constraints
@pytest.mark.parametrize("G", [2, 3])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("kind", KINDS)
def test_closed_form_matches_the_double_sum(rng, kind, sparse, G):
    X, y, groups = sample(rng, G=G)
    kappa = 0.7
    cons = pairwise_fairness_constraints(sp.csr_matrix(X) if sparse else X, y, groups, kind, kappa)
    assert cons.n_constraints == G * (G - 1) and cons.n_features == X.shape[1]
    assert [tuple(p) for p in cons.pairs] == [(k, k2) for k in range(G) for k2 in range(G) if k2 != k]
    assert cons.names[0] == f"{kind}(0,1)"
    np.testing.assert_array_equal(cons.values(np.zeros(X.shape[1])), -kappa)
    for _ in range(3):
        w = rng.normal(size=X.shape[1])
        values, grads = cons.values(w), cons.gradients(w)
        for j, (k, k2) in enumerate(cons.pairs):
            v, g = naive(kind, X, y, groups, w, k, k2)
            assert values[j] == pytest.approx(v - kappa, rel=1e-12, abs=1e-12)
            np.testing.assert_allclose(grads[j], g, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_dense_and_csr_give_the_same_constraints(rng, kind):
    X, y, groups = sample(rng, n=60, G=3)
    dense = pairwise_fairness_constraints(X, y, groups, kind, 1.0)
    csr = pairwise_fairness_constraints(sp.csr_matrix(X), y, groups, kind, 1.0)
    np.testing.assert_allclose(csr.A, dense.A, rtol=0, atol=1e-12)
    np.testing.assert_allclose(csr.b, dense.b, rtol=0, atol=1e-14)
    np.testing.assert_array_equal(csr.c, dense.c)


@pytest.mark.parametrize("kind", KINDS)
def test_gradients_match_finite_differences(rng, kind):
    X, y, groups = sample(rng, G=3)
    cons = pairwise_fairness_constraints(X, y, groups, kind, 0.2)
    w, h = rng.normal(size=X.shape[1]), 1e-6
    fd = np.empty((cons.n_constraints, w.size))
    for i in range(w.size):
        e = np.zeros(w.size)
        e[i] = h
        fd[:, i] = (cons.values(w + e) - cons.values(w - e)) / (2 * h)
    np.testing.assert_allclose(cons.gradients(w), fd, rtol=1e-7, atol=1e-7)


@pytest.mark.parametrize("kind", KINDS)
def test_two_groups_share_one_hessian_with_opposite_linear_terms(rng, kind):
    X, y, groups = sample(rng)
    cons = pairwise_fairness_constraints(X, y, groups, kind, 0.5)
    assert cons.shared_hessian
    np.testing.assert_array_equal(cons.A[0], cons.A[1])
    np.testing.assert_array_equal(cons.b[0], -cons.b[1])
    # the constant column cancels in every pair difference: no intercept in a pairwise constraint
    np.testing.assert_array_equal(cons.A[:, 0, :], 0.0)
    assert np.all(np.abs(cons.b[:, 0]) < 1e-15)
    assert np.linalg.eigvalsh(cons.A[0])[0] > -1e-12


def test_bad_input_errors_name_the_field(rng):
    X, y, groups = sample(rng)
    with pytest.raises(ValueError, match="^kind: expected one of"):
        pairwise_fairness_constraints(X, y, groups, "auc", 0.5)
    with pytest.raises(ValueError, match="^bound: must be finite"):
        pairwise_fairness_constraints(X, y, groups, "group_auc", np.nan)
    with pytest.raises(TypeError, match="^bound: expected a number"):
        pairwise_fairness_constraints(X, y, groups, "group_auc", "0.5")
    bad = X.copy()
    bad[3, 2] = np.inf
    with pytest.raises(ValueError, match="^X: non-finite value"):
        pairwise_fairness_constraints(bad, y, groups, "group_auc", 0.5)
    with pytest.raises(ValueError, match="^y: binary labels"):
        pairwise_fairness_constraints(X, np.where(y > 0, 2.0, -1.0), groups, "group_auc", 0.5)
    with pytest.raises(ValueError, match="^y: has 39 labels"):
        pairwise_fairness_constraints(X, y[1:], groups, "group_auc", 0.5)
    with pytest.raises(ValueError, match="^groups: negative group id"):
        pairwise_fairness_constraints(X, y, groups - 1, "group_auc", 0.5)
    with pytest.raises(ValueError, match="^groups: pairwise fairness needs at least two groups"):
        pairwise_fairness_constraints(X, y, np.zeros_like(groups), "group_auc", 0.5)
    with pytest.raises(ValueError, match="^groups: .*None"):
        pairwise_fairness_constraints(X, y, None, "group_auc", 0.5)
    one_label = np.where(groups == 1, 1.0, y)           # group 1 has no negatives
    with pytest.raises(ValueError, match="^y: group 1 has no negative rows"):
        pairwise_fairness_constraints(X, one_label, groups, "intra_group", 0.5)
    pairwise_fairness_constraints(X, one_label, groups, "group_auc", 0.5)   # labels unused there


def test_quadratic_constraints_validation(rng):
    M = rng.normal(size=(3, 3))
    with pytest.raises(ValueError, match="^A: matrix 0 is not symmetric"):
        QuadraticConstraints(M[None], np.zeros((1, 3)), [0.0])
    with pytest.raises(ValueError, match="^A: matrix 1 is not positive semidefinite"):
        QuadraticConstraints([np.eye(3), -np.eye(3)], np.zeros((2, 3)), [0.0, 0.0])
    with pytest.raises(ValueError, match=r"^b: expected shape \(1, 3\)"):
        QuadraticConstraints(np.eye(3)[None], np.zeros((2, 3)), [0.0])
    with pytest.raises(ValueError, match=r"^c: expected shape \(1,\)"):
        QuadraticConstraints(np.eye(3)[None], np.zeros((1, 3)), [0.0, 1.0])
    with pytest.raises(ValueError, match="^c: contains NaN"):
        QuadraticConstraints(np.eye(3)[None], np.zeros((1, 3)), [np.nan])
    with pytest.raises(ValueError, match="^names: expected 1 names"):
        QuadraticConstraints(np.eye(3)[None], np.zeros((1, 3)), [0.0], names=["a", "b"])
    cons = QuadraticConstraints(np.eye(3)[None], np.zeros((1, 3)), [-1.0])
    with pytest.raises(ValueError, match=r"^w: expected shape \(3,\)"):
        cons.values(np.zeros(4))
    with pytest.raises(ValueError, match=r"^z: expected shape \(3,\)"):
        qcqp_projection(np.zeros(2), cons)
    with pytest.raises(ValueError, match="^tol: must be positive"):
        qcqp_projection(np.zeros(3), cons, tol=0.0)
    with pytest.raises(ValueError, match="^max_iter: must be an integer >= 1"):
        qcqp_projection(np.zeros(3), cons, max_iter=2.5)
    with pytest.raises(TypeError, match="^constraints: expected a QuadraticConstraints"):
        qcqp_projection(np.zeros(3), np.eye(3))


# ---------------------------------------------------------------------------- the projection
def random_constraints(rng, d, m, shared):
    A, b, c = [], [], []
    for j in range(m):
        if j == 0 or not shared:
            M = rng.normal(size=(d, max(1, d // 2)))   # rank-deficient PSD, as covariances of few rows
            Aj = M @ M.T
        A.append(Aj)
        b.append(rng.normal(size=d))
        c.append(-rng.uniform(0.5, 2.0))
    return QuadraticConstraints(np.array(A), np.array(b), np.array(c))


def assert_kkt(cons, z, res, tol=1e-8):
    w, lam = res.w, res.multipliers
    q = cons.values(w)
    assert np.all(lam >= 0)
    stationarity = w - z + lam @ cons.gradients(w)
    assert np.max(np.abs(stationarity)) <= tol * max(1.0, np.linalg.norm(z))
    assert np.max(q) <= tol
    assert np.max(np.abs(lam * q)) <= tol


def slsqp_projection(cons, z):
    con = [{"type": "ineq", "fun": lambda w, j=j: -cons.values(w)[j], "jac": lambda w, j=j: -cons.gradients(w)[j]}
           for j in range(cons.n_constraints)]
    res = minimize(lambda w: 0.5 * np.sum((w - z) ** 2), np.zeros_like(z), jac=lambda w: w - z, method="SLSQP",
                   constraints=con, options=dict(ftol=1e-14, maxiter=2000))
    # at this ftol SLSQP may end on "positive directional derivative" (status 8) at its solution
    assert res.status in (0, 8), res.message
    assert np.max(cons.values(res.x)) <= 1e-7
    return res.x


@pytest.mark.parametrize("m, shared", [(1, True), (2, True), (2, False), (3, False)])
@pytest.mark.parametrize("d", [5, 20, 50])
def test_projection_is_a_kkt_point_and_matches_slsqp(rng, d, m, shared):
    for trial in range(3):
        cons = random_constraints(rng, d, m, shared)
        z = rng.normal(size=d) * 4.0
        res = qcqp_projection(z, cons)
        assert res.converged and res.status == "converged", res.message
        assert res.iterations >= 1 and res.max_violation <= 1e-9
        assert_kkt(cons, z, res)
        ref = slsqp_projection(cons, z)
        np.testing.assert_allclose(res.w, ref, rtol=0, atol=1e-5 * max(1.0, np.linalg.norm(z)))
        # the projection is at least as close to z as SLSQP's feasible point
        assert np.linalg.norm(res.w - z) <= np.linalg.norm(ref - z) + 1e-9


def test_projection_onto_a_ball_matches_the_closed_form(rng):
    d, r = 7, 1.3
    a = rng.normal(size=d)
    # ||w - a||^2 <= r^2  <=>  (1/2) w^T (2I) w - 2 a^T w + ||a||^2 - r^2 <= 0
    cons = QuadraticConstraints(2.0 * np.eye(d)[None], -2.0 * a[None], [a @ a - r * r])
    for scale in (0.5, 3.0, 1e3):
        z = a + scale * rng.normal(size=d)
        res = qcqp_projection(z, cons)
        dist = np.linalg.norm(z - a)
        expected = z if dist <= r else a + r * (z - a) / dist
        np.testing.assert_allclose(res.w, expected, rtol=1e-12, atol=1e-12 * max(1.0, scale))
        assert res.converged
        if dist <= r:
            assert res.iterations == 0 and res.multipliers[0] == 0.0
        else:
            # stationarity (1 + 2 lam)(w - a) = z - a: lam = (dist / r - 1) / 2
            assert res.multipliers[0] == pytest.approx((dist / r - 1.0) / 2.0, rel=1e-10)


def test_feasible_point_is_returned_unchanged(rng):
    cons = random_constraints(rng, 6, 2, True)
    z = np.zeros(6)   # c < 0: the origin is strictly feasible
    res = qcqp_projection(z, cons)
    assert res.converged and res.iterations == 0
    np.testing.assert_array_equal(res.w, z)
    np.testing.assert_array_equal(res.multipliers, 0.0)


@pytest.mark.parametrize("kind", KINDS)
def test_projection_onto_fairness_constraints(rng, kind):
    X, y, groups = sample(rng, n=80, G=3)
    cons = pairwise_fairness_constraints(X, y, groups, kind, 0.1)
    z = rng.normal(size=X.shape[1]) * 2.0
    res = qcqp_projection(z, cons)
    assert res.converged, res.message
    assert_kkt(cons, z, res)
    # warm start from the solution's multipliers: the same point, at once
    again = qcqp_projection(z, cons, multipliers0=res.multipliers)
    assert again.converged and again.iterations <= 1
    np.testing.assert_allclose(again.w, res.w, atol=1e-9)


def test_infeasible_sets_are_reported_not_raised(rng):
    d = 4
    # q = 1 > 0 everywhere (A = 0, b = 0)
    cons = QuadraticConstraints(np.zeros((1, d, d)), np.zeros((1, d)), [1.0])
    res = qcqp_projection(np.ones(d), cons)
    assert not res.converged and res.status == "infeasible" and "min_w q(w) = 1" in res.message
    assert res.max_violation == pytest.approx(1.0)
    # a PD quadratic whose minimum is positive
    cons = QuadraticConstraints(np.eye(d)[None], -np.ones((1, d)), [3.0])
    res = qcqp_projection(5 * np.ones(d), cons)
    assert res.status == "infeasible"
    np.testing.assert_allclose(res.w, np.ones(d))           # argmin q: the least violating point
    # two constraints each feasible alone, jointly empty: (1/2)w^T A w +- b^T w + 0.1 <= 0 (kappa < 0)
    M = rng.normal(size=(d, d))
    A, b = M @ M.T, rng.normal(size=d)
    cons = QuadraticConstraints(np.array([A, A]), np.array([b, -b]), [0.1, 0.1])
    res = qcqp_projection(3 * np.ones(d), cons)
    assert res.status == "infeasible" and not res.converged
    assert res.max_violation > 0.05
    # distinct Hessians: two disjoint balls
    cons = QuadraticConstraints(np.array([2 * np.eye(d), 2 * np.eye(d) + np.diag(np.arange(d) * 0.1)]),
                                np.array([np.zeros(d), -2 * 3 * np.ones(d)]), [-1.0, 9.0 * d - 1.0])
    res = qcqp_projection(np.ones(d), cons, max_iter=200)
    assert not res.converged and res.status in ("infeasible", "max_iter")


def test_no_interior_ends_within_the_budget(rng):
    # {w : ||w||^2 / 2 <= 0} = {0}: the dual supremum is not attained, lambda grows without bound
    cons = QuadraticConstraints(np.eye(3)[None], np.zeros((1, 3)), [0.0])
    res = qcqp_projection(np.ones(3), cons, max_iter=5)
    assert res.status == "max_iter" and res.iterations == 5 and not res.converged
    res = qcqp_projection(np.ones(3), cons)          # converges in the tolerance's sense: q(w) <= tol
    assert res.converged and res.max_violation <= 1e-10 and np.linalg.norm(res.w) < 1e-4
