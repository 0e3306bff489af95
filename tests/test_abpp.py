"""ABPP (Lin & Deng [LD23] Algorithm 1), the linear score model and the Neyman-Pearson score problem.

The closed-form tests use a two-"row" score model whose losses are f(x) = ½‖x - c‖² (row 0) and the
affine a^T x - b (row 1), so that the Lagrangian weights W = (1, y) give the prox step in closed form.
"""
import math

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp
from scipy.special import expit

from fastcon.problems import LinearScoreModel, NeymanPearsonScores
from fastcon.solvers import abpp, abpp_lipschitz_constant
from fastcon.solvers.abpp import abpp_step_sizes, inexactness_schedule


# ---------------------------------------------------------------------------- closed-form test model
class QuadraticModel:
    """Protocol model: state = x (ndarray), 'losses' (½‖x - c‖², a^T x - b), D = ½‖x - x'‖²."""

    n_outputs = 1

    def __init__(self, c, a, b):
        self.c, self.a, self.b = np.asarray(c, float), np.asarray(a, float), float(b)
        self.n_samples = 2
        self.prox_calls = []

    def initial_state(self):
        return np.zeros_like(self.c)

    def scores(self, state):
        return np.array([0.5 * float((state - self.c) @ (state - self.c)), float(self.a @ state) - self.b])

    def divergence(self, state, anchor):
        return 0.5 * float((state - anchor) @ (state - anchor))

    def prox_step(self, anchor_k, inv_tau, weights, *, anchor_t=None, c=0.0, accuracy=None):
        w0, w1 = weights
        self.prox_calls.append((inv_tau, accuracy))
        center = w0 * self.c - w1 * self.a + inv_tau * anchor_k + (c * anchor_t if c else 0.0)
        return center / (w0 + inv_tau + c)

    def parameters(self, state):
        return np.array(state, dtype=float)

    def average(self, states, weights):
        weights = np.asarray(weights, float)
        return sum(w * s for w, s in zip(weights, states)) / weights.sum()


class QuadraticProblem:
    """min ½‖x - c‖² s.t. a^T x - b <= 0 on QuadraticModel; the Lagrangian weights are (1, y)."""

    n_constraints = 1

    def constraint_values(self, model, state):
        return model.scores(state)[1:]

    def objective_value(self, model, state):
        return float(model.scores(state)[0])

    def lagrangian(self, y):
        return np.array([1.0, float(y[0])]), 0.0, None


C = np.array([1.0, 2.0, -1.0])
A = np.array([1.0, 1.0, 1.0])


def closed_form_optimum(b):
    y_star = max(0.0, (A @ C - b) / (A @ A))
    return C - y_star * A, y_star


def error(res, b):
    """The quantity Corollary 1 bounds: max(|f(x) - f*|, ‖[g(x)]_+‖)."""
    x_star, _ = closed_form_optimum(b)
    f_star = 0.5 * float((x_star - C) @ (x_star - C))
    return max(abs(res.objective - f_star), res.max_violation)


# ---------------------------------------------------------------------------- §6.5 item 2: step sizes
@pytest.mark.parametrize("mu", [0.0, 0.3, 2.0, 20.0])
def test_step_size_identities(mu):
    tau0, sigma0, K = 0.1, 0.4, 300
    s = abpp_step_sizes(K, tau0, sigma0, mu)
    tau, sigma, theta, gamma = s["tau"], s["sigma"], s["theta"], s["gamma"]
    np.testing.assert_allclose(tau * sigma, tau0 * sigma0, rtol=1e-12)   # tau_k sigma_k = tau_0 sigma_0
    assert theta[0] == 1.0
    np.testing.assert_allclose(theta[1:], 1.0 / np.sqrt(1.0 + mu * tau[:-1]), rtol=1e-12)
    np.testing.assert_allclose(gamma[1:], gamma[:-1] * (1 + mu * tau), rtol=1e-12)
    k = np.arange(K + 1)
    assert np.all(gamma >= gamma[0] * (1 + mu ** 2 * tau0 ** 2 * k ** 2 / 9) * (1 - 1e-12))
    if mu * tau0 <= 2:
        assert np.all(gamma <= gamma[0] * (k + 1) ** 2 * (1 + 1e-12))
    T = np.cumsum(s["t"])                                               # T_k = sum_{i<k} t_i, k = 1..K
    kk = np.arange(1, K + 1)
    assert np.all(T >= 1 + mu * tau0 * kk * (kk - 1) / 6 - 1e-9)        # Lemma 3 (proof's (k-1)k)
    # Lemma 4: sum_k t_k sqrt(delta_{k+1} (mu + 1/tau_k)) <= 1 under the schedule of Corollary 1
    delta = inexactness_schedule("theory", K, tau0, mu)
    assert float(np.sum(s["t"] * np.sqrt(delta * (mu + 1 / tau)))) <= 1.0
    if mu == 0:
        np.testing.assert_array_equal(tau, tau0)
        np.testing.assert_array_equal(sigma, sigma0)
        np.testing.assert_array_equal(theta, 1.0)


def test_run_uses_the_schedule_and_the_inexactness():
    model = QuadraticModel(C, A, 0.5)
    res = abpp(QuadraticProblem(), model, max_iter=20, primal_step=0.5, dual_step=0.3, mu=1.0, record_every=1)
    s = abpp_step_sizes(20, 0.5, 0.3, 1.0)
    np.testing.assert_array_equal(res.info["primal_steps"], s["tau"])
    np.testing.assert_array_equal(res.history["primal_step"][1:], s["tau"])
    np.testing.assert_array_equal(res.history["theta"][1:], s["theta"])
    inv_tau, acc = zip(*model.prox_calls)
    np.testing.assert_allclose(inv_tau, 1 / s["tau"], rtol=1e-15)
    np.testing.assert_allclose(acc, 0.5 / (np.arange(20) + 2.0) ** 7, rtol=1e-15)   # mu > 0: tau0/(k+2)^7
    res = abpp(QuadraticProblem(), QuadraticModel(C, A, 0.5), max_iter=5, mu=0.0)
    np.testing.assert_allclose(res.info["inexactness"], 0.1 / (np.arange(5) + 2.0) ** 4)


# ---------------------------------------------------------------------------- §6.5 item 3: closed form
def test_closed_form_kkt():
    b = 0.5
    x_star, y_star = closed_form_optimum(b)
    assert y_star > 0  # the constraint is active
    step = 1 / np.linalg.norm(A)  # tau0 sigma0 L_g^2 = 1 with L_g = ‖a‖
    # constant steps (mu = 0): the last iterate reaches the KKT point
    res = abpp(QuadraticProblem(), QuadraticModel(C, A, b), max_iter=400, primal_step=step, dual_step=step)
    x, y = res.x, float(res.multipliers[0])
    stationarity = np.linalg.norm(x - C + y * A)
    g = float(A @ x - b)
    assert stationarity < 1e-6 and max(g, 0.0) < 1e-6 and abs(y * g) < 1e-6 and y >= 0
    np.testing.assert_allclose(x, x_star, atol=1e-6)
    assert abs(y - y_star) < 1e-6
    # accelerated steps (mu = 1): tau_k -> 0, so x_K - x_{K-1} is divided by a shrinking tau in the
    # stationarity residual; objective gap and violation (Corollary 1's measure) are small
    res = abpp(QuadraticProblem(), QuadraticModel(C, A, b), max_iter=400, primal_step=step, dual_step=step, mu=1.0)
    assert error(res, b) < 1e-6 and np.linalg.norm(res.x - x_star) < 1e-3


@pytest.mark.parametrize("mu, power", [(1.0, 2), (0.0, 1)])
def test_ergodic_rate(mu, power):
    """Corollary 1: the t_k-weighted average has error O(1/K^2) for mu > 0 and O(1/K) for mu = 0."""
    b = 0.5
    step = 1 / np.linalg.norm(A)
    Ks = [25, 50, 100, 200, 400]
    errors = []
    for K in Ks:
        res = abpp(QuadraticProblem(), QuadraticModel(C, A, b), max_iter=K, primal_step=step, dual_step=step,
                   mu=mu, output="average")
        errors.append(error(res, b))
    scaled = np.array(errors) * np.array(Ks, float) ** power
    # bounded by C/K^power: the scaled errors do not grow (allow a factor 2 of slack)
    assert np.all(scaled[1:] <= 2 * scaled[0]), (errors, scaled)
    assert errors[-1] < errors[0] / 2 ** (power * 2)  # and they do shrink at (at least) that rate


def test_average_output_uses_sigma_weights():
    model = QuadraticModel(C, A, 0.5)
    iterates = []
    res = abpp(QuadraticProblem(), model, max_iter=12, primal_step=0.5, dual_step=0.5, mu=2.0, output="average",
               callback=lambda k, x, info: iterates.append(x) and False)
    t = abpp_step_sizes(12, 0.5, 0.5, 2.0)["t"]
    np.testing.assert_allclose(res.x, np.average(iterates, axis=0, weights=t), rtol=1e-12)


# ---------------------------------------------------------------------------- §6.5 item 4: dual update
def test_multipliers_stay_nonnegative():
    seen = []
    abpp(QuadraticProblem(), QuadraticModel(C, A, 0.5), max_iter=60, primal_step=1.0, dual_step=2.0,
         callback=lambda k, x, info: seen.append(info["multipliers"]) and False)
    seen = np.array(seen)
    assert np.all(seen >= 0) and np.any(seen == 0) and np.any(seen > 0)  # the projection was active


def test_strictly_feasible_problem_is_the_proximal_point_method():
    b = 10.0  # a^T c = 2 < b: the unconstrained minimiser is strictly feasible
    tau = 0.3
    res = abpp(QuadraticProblem(), QuadraticModel(C, A, b), max_iter=15, primal_step=tau, dual_step=1.0)
    assert res.multipliers[0] == 0.0 and res.history["multiplier_norm"].max() == 0.0
    x = np.zeros(3)
    for _ in range(15):
        x = (C + x / tau) / (1 + 1 / tau)  # plain proximal point on f
    np.testing.assert_allclose(res.x, x, rtol=1e-14)


def test_dual_stagnation_stops():
    res = abpp(QuadraticProblem(), QuadraticModel(C, A, 10.0), max_iter=50, dual_stagnation=1e-3)
    assert res.status == "converged" and res.n_iter == 5  # y = 0 from the start: the window fills at k = 4
    res = abpp(QuadraticProblem(), QuadraticModel(C, A, 10.0), max_iter=50)
    assert res.status == "max_iter" and res.n_iter == 50


# ---------------------------------------------------------------------------- linear NP data
def np_data(n=300, d=3, seed=1, n_classes=2):
    d = max(d, n_classes)
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if n_classes == 2:
        y = (X[:, 0] - 0.5 * X[:, 1] + 0.8 * rng.normal(size=n) > 0).astype(int)
    else:
        y = np.argmax(X[:, :n_classes] + 0.8 * rng.normal(size=(n, n_classes)), axis=1)
    return X, y


# ---------------------------------------------------------------------------- §6.5 item 5: vs SLSQP
def test_linear_np_matches_slsqp():
    X, y = np_data()
    n, d = X.shape
    ridge = 0.1
    At = np.hstack([X, np.ones((n, 1))])

    def losses(x):
        F = At @ x
        return np.logaddexp(0, F) - y * F

    def f(x):
        return losses(x)[y == 1].sum() + 0.5 * ridge * x @ x

    def grad_f(x):
        return At.T @ ((expit(At @ x) - y) * (y == 1)) + ridge * x

    def g(x):
        return losses(x)[y == 0].sum()

    def grad_g(x):
        return At.T @ ((expit(At @ x) - y) * (y == 0))

    alpha = 0.6 * math.log(2) * np.sum(y == 0)
    ref = scipy.optimize.minimize(f, np.zeros(d + 1), jac=grad_f, method="SLSQP", options={"ftol": 1e-14},
                                  constraints=[{"type": "ineq", "fun": lambda x: alpha - g(x),
                                                "jac": lambda x: -grad_g(x)}])
    xs = ref.x
    assert abs(g(xs) - alpha) < 1e-8  # active at the reference
    lam = -(grad_f(xs) @ grad_g(xs)) / (grad_g(xs) @ grad_g(xs))  # the lambda of grad f + lambda grad g = 0
    assert np.linalg.norm(grad_f(xs) + lam * grad_g(xs)) < 1e-5 and lam > 0.5

    model = LinearScoreModel(X, y, 2, ridge=ridge)
    problem = NeymanPearsonScores(y, 2, {0: alpha}, objective_weights={0: 0.0})
    res = abpp(problem, model, max_iter=300, primal_step=1.0, dual_step=1e-3, mu=ridge)
    assert res.status == "max_iter"
    assert abs(res.objective - f(xs)) <= 1e-4 * abs(f(xs))
    assert res.max_violation < 1e-5
    assert abs(res.multipliers[0] - lam) < 1e-4 * lam
    assert abs(res.objective - f(res.x)) < 1e-9 * f(xs)   # the problem's f is the one written out above
    np.testing.assert_allclose(res.x, xs, atol=1e-5)


def test_lipschitz_constant_bounds_the_constraint_map():
    for n_classes in (2, 3):
        X, y = np_data(n=200, n_classes=n_classes)
        model = LinearScoreModel(X, y, n_classes)
        problem = NeymanPearsonScores(y, n_classes, {0: 10.0, 1: 5.0})
        Lg = abpp_lipschitz_constant(problem, model)
        rng = np.random.default_rng(0)
        ratios = []
        for _ in range(200):
            x1, x2 = (model.as_state(rng.normal(scale=s, size=model.parameters(model.initial_state()).size))
                      for s in (1.0, 1.0))
            dg = np.linalg.norm(problem.constraint_values(model, x1) - problem.constraint_values(model, x2))
            ratios.append(dg / math.sqrt(2 * model.divergence(x1, x2)))
        assert max(ratios) <= Lg and max(ratios) > Lg / 20  # a bound, and not a vacuous one


class ScoresModel:
    """Function-space protocol model (a boosted ensemble's geometry): state = the training scores F,
    D = ½‖F - F'‖²; no ``row_norms``."""

    def __init__(self, n, n_classes):
        self.n_samples, self.n_outputs = n, (1 if n_classes == 2 else n_classes)

    def scores(self, state):
        return state

    def divergence(self, state, anchor):
        return 0.5 * float(np.sum((state - anchor) ** 2))


def _worst_scores(y, n_classes, sign):
    """Scores far on the wrong side of every label (``sign`` = 1), so |p - y| -> 1: the bound's worst case."""
    if n_classes == 2:
        return -sign * 12.0 * (2 * y - 1.0)
    F = np.zeros((y.size, n_classes))
    F[np.arange(y.size), (y + 1) % n_classes] = sign * 12.0
    F[np.arange(y.size), y] = -sign * 12.0
    return F


def _loss_gradient(F, y, n_classes):
    """d l_i / d F_i of the cross-entropy, (n,) or (n, J)."""
    if n_classes == 2:
        return expit(F) - y
    P = np.exp(F - F.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    P[np.arange(y.size), y] -= 1.0
    return P


@pytest.mark.parametrize("n_classes, n_groups", [(2, 2), (2, 3), (3, 2)])
def test_lipschitz_constant_in_function_space(n_classes, n_groups):
    """Boosting geometry: |g(F) - g(F')| <= L_g ||F - F'||; L_g is the norm of per-constraint constants
    c sqrt(n_j) (NP class sums) or beta c sqrt(1/n_a + 1/n_b) (group-loss gaps), each attained where
    |p - y| -> c along the constraint's gradient."""
    from fastcon.problems import GroupLossGap

    rng = np.random.default_rng(3)
    n = 600
    y = rng.integers(0, n_classes, n)
    groups = np.minimum(rng.integers(0, n_groups + 1, n), n_groups - 1)   # unequal group sizes
    model = ScoresModel(n, n_classes)
    shape = (n,) if n_classes == 2 else (n, n_classes)
    c = 1.0 if n_classes == 2 else math.sqrt(2.0)
    sizes = np.bincount(groups)
    for problem in (GroupLossGap(y, n_classes, groups, 0.01),                     # beta = min n_a
                    GroupLossGap(y, n_classes, groups, 0.01, scale=2.5),
                    NeymanPearsonScores(y, n_classes, {0: 10.0, 1: 5.0})):
        if hasattr(problem, "pairs"):
            own = [problem.scale * c * math.sqrt(1 / sizes[a] + 1 / sizes[b]) for a, b in problem.pairs]
        else:
            own = [c * math.sqrt(np.count_nonzero(y == j)) for j in (0, 1)]
        Lg = abpp_lipschitz_constant(problem, model)
        assert Lg == pytest.approx(np.linalg.norm(own), rel=1e-12)
        ratios = []
        for _ in range(100):
            F1, F2 = rng.normal(scale=3.0, size=shape), rng.normal(scale=3.0, size=shape)
            dg = np.linalg.norm(problem.constraint_values(model, F1) - problem.constraint_values(model, F2))
            ratios.append(dg / math.sqrt(2 * model.divergence(F1, F2)))
        assert max(ratios) <= Lg
        # constraint 0 at scores far on the wrong side of every label, along its own gradient
        F = _worst_scores(y, n_classes, 1.0)
        G = _loss_gradient(F, y, n_classes)
        if hasattr(problem, "pairs"):
            a, b = problem.pairs[0]
            scale = np.where(groups == a, problem.scale / sizes[a],
                             np.where(groups == b, -problem.scale / sizes[b], 0.0))
        else:
            scale = (y == 0).astype(float)
        grad = G * (scale if n_classes == 2 else scale[:, None])
        step = 1e-5 * grad / np.linalg.norm(grad)
        slope = (problem.constraint_values(model, F + step)[0] - problem.constraint_values(model, F)[0]) / 1e-5
        assert slope == pytest.approx(own[0], rel=1e-3)


def test_dual_step_auto_meets_the_step_condition_with_equality():
    from fastcon.problems import GroupLossGap
    from fastcon.solvers.abpp import resolve_dual_step

    rng = np.random.default_rng(0)
    y, groups = rng.integers(0, 2, 300), (rng.random(300) < 0.3).astype(int)
    model, problem = ScoresModel(300, 2), GroupLossGap(y, 2, groups, 0.05)
    Lg = abpp_lipschitz_constant(problem, model)
    n0, n1 = np.bincount(groups)
    assert Lg == pytest.approx(min(n0, n1) * math.sqrt(2 * (1 / n0 + 1 / n1)), rel=1e-12)
    sigma = resolve_dual_step("auto", 0.25, problem, model)
    assert 0.25 * sigma * Lg ** 2 == pytest.approx(1.0, rel=1e-12)
    assert resolve_dual_step(0.3, 0.25, problem, model) == 0.3
    with pytest.raises(ValueError, match=r"^dual_step"):
        resolve_dual_step("big", 0.25, problem, model)
    with pytest.raises(ValueError, match=r"^dual_step"):
        resolve_dual_step(-1.0, 0.25, problem, model)
    with pytest.raises(TypeError, match=r"^dual_step: 'auto' needs L_g"):
        resolve_dual_step("auto", 0.25, object(), model)


def test_abpp_dual_step_auto_on_the_linear_model():
    X, y = np_data(n=200, n_classes=2)
    model = LinearScoreModel(X, y, 2)
    problem = NeymanPearsonScores(y, 2, {0: 10.0})
    Lg = abpp_lipschitz_constant(problem, model)
    res = abpp(problem, model, max_iter=5, primal_step=0.3, dual_step="auto")
    np.testing.assert_allclose(res.info["dual_steps"], 1 / (0.3 * Lg ** 2), rtol=1e-12)   # mu = 0: constant


# ---------------------------------------------------------------------------- §6.5 item 8: multipliers as weights
@pytest.mark.parametrize("n_classes, sparse", [(2, False), (3, False), (3, True)])
def test_multiplier_as_weight_prox_step(n_classes, sparse):
    """One prox step with W = w + y_{b_i} equals the minimiser of f + <y, g> + (1/2tau)‖x - x_k‖² written out."""
    X, y = np_data(n=150, n_classes=n_classes)
    n, d = X.shape
    mult = np.array([0.7, 1.9])
    weights = {0: 0.5, 2 if n_classes == 3 else 1: 2.0}
    model = LinearScoreModel(sp.csr_matrix(X) if sparse else X, y, n_classes, ridge=0.05)
    problem = NeymanPearsonScores(y, n_classes, {0: 3.0, 1: 4.0}, objective_weights=weights)
    rng = np.random.default_rng(3)
    anchor = model.as_state(rng.normal(size=model.parameters(model.initial_state()).size))
    inv_tau = 2.5
    W, c, anchor_t = problem.lagrangian(mult)
    assert c == 0.0 and anchor_t is None
    got = model.prox_step(anchor, inv_tau, W, accuracy=1e-16)
    assert model.last_prox_info["met"]

    At = np.hstack([X, np.ones((n, 1))])
    J = 1 if n_classes == 2 else n_classes
    w_obj = np.array([weights.get(int(b), 1.0) for b in y])
    xk = model.parameters(anchor)

    def lagrangian_plus_prox(x):
        Xm = x.reshape(d + 1, J) if J > 1 else x
        F = At @ Xm
        if J == 1:
            ell = np.logaddexp(0, F) - y * F
        else:
            ell = scipy.special.logsumexp(F, axis=1) - F[np.arange(n), y]
        value = w_obj @ ell + sum(mult[j] * (ell[y == j].sum() - a) for j, a in enumerate([3.0, 4.0]))
        return value + 0.025 * x @ x + 0.5 * inv_tau * (x - xk) @ (x - xk)

    ref = scipy.optimize.minimize(lagrangian_plus_prox, xk, method="BFGS", options={"gtol": 1e-10})
    np.testing.assert_allclose(model.parameters(got), ref.x, atol=1e-6)


# ---------------------------------------------------------------------------- §6.5 item 9: alpha heuristics
@pytest.mark.parametrize("n_classes", [2, 4])
def test_initial_alpha_makes_the_multipliers_grow(n_classes):
    X, y = np_data(n=200, n_classes=n_classes)
    rates = {0: 0.1, 1: 0.05}
    problem = NeymanPearsonScores.from_error_rates(y, n_classes, rates)
    model = LinearScoreModel(X, y, n_classes)
    values = problem.constraint_values(model, model.initial_state())
    counts = np.bincount(y, minlength=n_classes)
    expected = np.array([counts[k] * math.log(n_classes) * (1 - e) for k, e in rates.items()])
    np.testing.assert_allclose(values, expected, rtol=1e-12)
    assert np.all(values > 0)
    res = abpp(problem, model, max_iter=1)
    assert np.all(res.multipliers > 0)  # y_1 = [0 + sigma_0 z_0]_+ > 0 for every constrained class


def test_bound_reset_at_half_way():
    X, y = np_data(n=200)
    problem = NeymanPearsonScores.from_error_rates(y, 2, {0: 0.1})
    model = LinearScoreModel(X, y, 2)
    iterates = []
    res = abpp(problem, model, max_iter=10, bound_reset=True,
               callback=lambda k, x, info: iterates.append(x) and False)
    x_half = model.as_state(iterates[4])  # x_5: the reset happens at k = ceil(10/2) = 5, on x_5
    losses = model.losses(x_half)
    new = res.problem
    np.testing.assert_allclose(new.bounds, [0.1 * losses[y == 0].sum()], rtol=1e-12)
    assert not np.allclose(new.bounds, problem.bounds)
    # the reset bound leaves the constraint violated by (1 - e) of the class loss: the sign of the heuristic
    assert new.constraint_values(model, x_half)[0] > 0
    with pytest.raises(ValueError, match="^target_rates"):
        abpp(NeymanPearsonScores(y, 2, {0: 1.0}), model, max_iter=4, bound_reset=True)


def test_outlier_removal():
    X, y = np_data(n=200)
    model = LinearScoreModel(X, y, 2)
    problem = NeymanPearsonScores(y, 2, {0: 50.0})
    state = model.as_state(np.array([3.0, -1.5, 0.0, 0.0]))
    losses = model.losses(state)
    worst = np.argsort(losses)[::-1]
    kept = problem.without_outliers(model, state, threshold=5.0)
    dropped = np.flatnonzero(kept.keep == 0)
    top = worst[:20]
    base = np.sort(losses)[:180].mean()
    np.testing.assert_array_equal(np.sort(dropped), np.sort(top[losses[top] > 5.0 * base]))
    assert dropped.size > 0
    # dropped rows leave the constraint sums and the Lagrangian weights
    np.testing.assert_allclose(kept.constraint_values(model, state)[0],
                               np.delete(losses, dropped)[np.delete(y, dropped) == 0].sum() - 50.0)
    assert np.all(kept.lagrangian([1.0])[0][dropped] == 0)
    # never empties a class: a class with one row that is an outlier is kept by raising the threshold
    y2 = y.copy()
    y2[:] = 1
    y2[worst[0]] = 0
    model2 = LinearScoreModel(X, y2, 2)
    p2 = NeymanPearsonScores(y2, 2, {0: 1.0})
    state2 = model2.as_state(np.array([0.0, 0.0, 0.0, 20.0]))  # class 0's only row has loss ~20, the rest ~0
    with pytest.raises(ValueError, match="^outlier_threshold"):
        p2.without_outliers(model2, state2, threshold=2.0)
    res = abpp(problem, model, max_iter=6, outlier_threshold=5.0)
    assert res.problem is not None and res.problem.keep.sum() < 200


def test_early_stop_when_rates_are_met():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    y = (X[:, 0] > 0).astype(int)
    X[:, 0] += np.where(y == 1, 2.0, -2.0)  # separable: training errors reach 0
    problem = NeymanPearsonScores.from_error_rates(y, 2, {0: 0.2})
    model = LinearScoreModel(X, y, 2)
    res = abpp(problem, model, max_iter=30, early_stop=True)
    assert res.status == "converged" and res.n_iter == 2 * math.ceil(30 / 3) + 1
    assert abpp(problem, model, max_iter=30).status == "max_iter"


# ---------------------------------------------------------------------------- the linear model and errors
def test_linear_model_scores_and_csr_equal_dense():
    X, y = np_data(n=120, n_classes=3)
    X[np.abs(X) < 0.8] = 0.0
    dense = LinearScoreModel(X, y, 3, ridge=0.1)
    sparse = LinearScoreModel(sp.csr_matrix(X), y, 3, ridge=0.1)
    assert sparse.is_sparse
    rng = np.random.default_rng(0)
    state = dense.as_state(rng.normal(size=(4, 3)))
    np.testing.assert_allclose(dense.scores(state), np.hstack([X, np.ones((120, 1))]) @ state.x, rtol=1e-12)
    W = rng.uniform(0.5, 2.0, 120)
    a = dense.prox_step(state, 3.0, W, accuracy=1e-14)
    b = sparse.prox_step(sparse.as_state(state.x), 3.0, W, accuracy=1e-14)
    np.testing.assert_allclose(a.x, b.x, atol=1e-8)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_newton_cg_and_lbfgs_agree(n_classes):
    X, y = np_data(n=150, n_classes=n_classes)
    rng = np.random.default_rng(2)
    W = rng.uniform(-0.3, 2.0, 150)
    states = []
    for solver in ("lbfgs", "newton-cg"):
        model = LinearScoreModel(X, y, n_classes, solver=solver)
        states.append(model.prox_step(model.initial_state(), 4.0, W, accuracy=1e-14))
        assert model.last_prox_info["met"]
    np.testing.assert_allclose(states[0].x, states[1].x, atol=1e-7)


def test_prox_step_rejects_a_dominated_prox():
    X, y = np_data(n=100)
    model = LinearScoreModel(X, y, 2)
    W = -np.ones(100) * 5.0
    with pytest.raises(ValueError, match="^inv_tau"):
        model.prox_step(model.initial_state(), 1.0, W)
    kappa = model.negative_curvature(W)
    assert kappa == pytest.approx(0.25 * 5.0 * model.gram_lambda_max())
    model.prox_step(model.initial_state(), kappa * 1.01, W)  # dominated: accepted


def test_argument_errors_name_the_field():
    X, y = np_data(n=50)
    model = LinearScoreModel(X, y, 2)
    problem = NeymanPearsonScores(y, 2, {0: 1.0})
    with pytest.raises(ValueError, match="^max_iter"):
        abpp(problem, model, max_iter=0)
    with pytest.raises(ValueError, match=r"^max_iter: the step sizes of 10,000,000,000,000 iterations"):
        abpp(problem, model, max_iter=10**13)
    with pytest.raises(ValueError, match="^primal_step"):
        abpp(problem, model, primal_step=-1.0)
    with pytest.raises(ValueError, match="^multipliers0: "):
        abpp(problem, model, multipliers0=[-1.0])
    with pytest.raises(ValueError, match="^output"):
        abpp(problem, model, output="best")
    with pytest.raises(ValueError, match="^inexactness"):
        abpp(problem, model, inexactness="loose")
    with pytest.raises(ValueError, match="^bounds"):
        NeymanPearsonScores(y, 2, {2: 1.0})
    with pytest.raises(ValueError, match="^labels"):
        LinearScoreModel(X, y + 5, 2)
    with pytest.raises(ValueError, match="^model"):
        abpp(NeymanPearsonScores(y[:40], 2, {0: 1.0}), model)
    with pytest.raises(TypeError, match="^problem"):
        abpp(object(), model)
    with pytest.raises(ValueError, match="^weights"):
        model.prox_step(model.initial_state(), 1.0, np.ones(3))
