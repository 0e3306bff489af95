"""Partial-fairness DC problems (models (13) and (17) of He, Huang, Yao & Lin): features, DC splits,
subgradients, penalties, feasibility of the start, and input errors."""
import numpy as np
import pytest
import scipy.sparse as sp
from reference import partial_rates as ref

from fastcon.datasets import Dataset
from fastcon.problems import (
    LinearLoss,
    LinearScores,
    PartialFairnessProblem,
    cross_term_features,
    partial_dp_constraints,
    weak_partial_dp_constraints,
)

INTERVAL = (0.1, 0.45)
KAPPA = 0.2


def _problem(rng, kind, surrogate, *, n=240, d=4, n_groups=3, sparse=False, grid="safe", interval=INTERVAL,
             kappa=KAPPA, rho=None):
    X = rng.normal(size=(n, d))
    groups = rng.permutation(np.arange(n) % n_groups)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    Xt = cross_term_features(sp.csr_matrix(X) if sparse else X, groups)
    ds = Dataset(Xt, y, groups=groups)
    scores = LinearScores(ds, fit_intercept=False)
    loss = LinearLoss(scores, ds.y, np.ones(n), ridge=0.01)
    if kind == "pdp":
        block = partial_dp_constraints(scores, groups, interval, kappa, n_levels=5, grid=grid, surrogate=surrogate,
                                       rho=rho)
    else:
        block = weak_partial_dp_constraints(scores, groups, interval, kappa, threshold=0.1, surrogate=surrogate,
                                            rho=rho)
    return PartialFairnessProblem(loss, block, name=f"{kind}-{surrogate}"), Xt, groups


def _random_point(rng, problem, scale=0.4):
    x = problem.x0.copy()
    x[problem.parts["w"]] = rng.normal(0.0, scale, problem.n_weights)
    x[problem.parts["theta"]] += rng.normal(0.0, 0.2, problem.block.n_thresholds)
    return x


def _direct_constraints(problem, Xt, groups, x):
    """The constraints of (13) / (17) from their definitions (plain NumPy)."""
    b = problem.block
    Xd = Xt.toarray() if sp.issparse(Xt) else Xt
    z = Xd @ x[problem.parts["w"]]
    theta = x[problem.parts["theta"]]
    if b.n_thresholds:
        return ref.partial_dp_constraints(z, groups, theta, b.levels, b.width, b.surrogate, b.n_groups)
    return ref.weak_partial_dp_constraints(z, groups, b.threshold, b.band_start, b.band_end, b.width, b.surrogate,
                                           b.n_groups)


CASES = [("pdp", "ramp"), ("pdp", "logistic"), ("weak", "ramp"), ("weak", "logistic")]


# ----------------------------------------------------------------------------- features
@pytest.mark.parametrize("n_groups", [1, 2, 4])
def test_cross_term_features_csr_equals_dense_and_reproduces_per_group_models(rng, n_groups):
    n, d = 60, 5
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.5)
    groups = rng.permutation(np.arange(n) % n_groups)
    dense = cross_term_features(X, groups)
    csr = cross_term_features(sp.csr_matrix(X), groups)
    assert isinstance(dense, np.ndarray) and dense.flags.c_contiguous and dense.shape == (n, (d + 1) * n_groups)
    assert sp.isspmatrix_csr(csr) and csr.has_sorted_indices
    np.testing.assert_array_equal(csr.toarray(), dense)
    np.testing.assert_array_equal(dense, ref.cross_term_features(X, groups, n_groups))
    # h(xi) = b_g + <v_g, xi> for per-group (b, v): w = (b_0, v_0, b_1 - b_0, v_1 - v_0, ...)
    b, v = rng.normal(size=n_groups), rng.normal(size=(n_groups, d))
    w = np.concatenate([np.concatenate([[b[0]], v[0]])]
                       + [np.concatenate([[b[k] - b[0]], v[k] - v[0]]) for k in range(1, n_groups)])
    np.testing.assert_allclose(dense @ w, b[groups] + np.einsum("ij,ij->i", X, v[groups]), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(csr @ w, dense @ w, rtol=1e-13, atol=1e-13)


def test_cross_term_features_with_absent_group_and_errors(rng):
    X = rng.normal(size=(6, 2))
    groups = np.array([0, 2, 0, 2, 2, 0])
    out = cross_term_features(X, groups, n_groups=4)             # groups 1 and 3 absent: zero columns
    assert out.shape == (6, 12) and not out[:, 3:6].any() and not out[:, 9:].any()
    with pytest.raises(ValueError, match=r"^groups: expected shape \(6,\)"):
        cross_term_features(X, groups[:5])
    with pytest.raises(ValueError, match=r"^groups: group id 2 out of range \[0, 2\)"):
        cross_term_features(X, groups, n_groups=2)
    with pytest.raises(ValueError, match=r"^groups: group id -1 out of range"):
        cross_term_features(X, np.array([0, -1, 0, 1, 1, 0]))
    with pytest.raises(ValueError, match="^groups: group ids must be integers"):
        cross_term_features(X, groups + 0.5)
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="^X: non-finite"):
        cross_term_features(bad, groups)
    with pytest.raises(ValueError, match="^X: non-finite"):
        cross_term_features(sp.csr_matrix(bad), groups)
    for empty in (np.empty((0, 2)), sp.csr_matrix((0, 2))):      # no rows: G must be given
        with pytest.raises(ValueError, match="^X: has no rows, so the number of groups is unknown"):
            cross_term_features(empty, np.empty(0, dtype=np.int64))
        assert cross_term_features(empty, np.empty(0, dtype=np.int64), n_groups=3).shape == (0, 9)


# ----------------------------------------------------------------------------- DC identities
def test_ramp_and_identity_51():
    u = np.linspace(-3, 3, 601)
    np.testing.assert_array_equal(np.maximum(u + 0.5, 0) - np.maximum(u - 0.5, 0), ref.surrogate(u, "ramp"))
    rng = np.random.default_rng(1)
    B = rng.random(1000) * 2
    A = B + rng.random(1000)                                     # a = A - B in [0, 1], as for ramp means
    for c in (0.0, 0.1, 0.45, 1.0):
        np.testing.assert_allclose(np.minimum(A - B, c), A + c - np.maximum(B + c, A), atol=1e-15)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("kind, surrogate", CASES)
def test_dc_split_reproduces_the_constraints_of_13_and_17(rng, kind, surrogate, sparse):
    problem, Xt, groups = _problem(rng, kind, surrogate, sparse=sparse)
    assert problem.n_constraints == len(problem.names)
    for _ in range(5):
        x = _random_point(rng, problem)
        f = problem.constraint_values(x)
        np.testing.assert_allclose(f, _direct_constraints(problem, Xt, groups, x), rtol=1e-10, atol=1e-12)
        plus = problem.plus_values(x)
        minus, _ = problem.minus_linearization(x)
        np.testing.assert_allclose(plus - minus, f, atol=1e-12)
        assert np.any(np.abs(f) > 1e-3)                          # not a degenerate point


@pytest.mark.parametrize("kind, surrogate", CASES)
def test_linearized_constraints_majorize_and_touch(rng, kind, surrogate):
    problem, _, _ = _problem(rng, kind, surrogate)
    x = _random_point(rng, problem)
    minus_x, jac = problem.minus_linearization(x)
    f_x = problem.constraint_values(x)
    np.testing.assert_allclose(problem.plus_values(x) - minus_x, f_x, atol=1e-12)   # equality at v = x
    for scale in (0.01, 0.3, 2.0):
        for _ in range(10):
            v = x + rng.normal(0.0, scale, problem.dim)
            g = problem.plus_values(v) - (minus_x + jac @ (v - x))
            assert np.all(g >= problem.constraint_values(v) - 1e-10)


# ----------------------------------------------------------------------------- subgradients
def _directional_fd(fun, x, u, h=1e-6):
    return (fun(x + h * u) - fun(x - h * u)) / (2 * h)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("kind, surrogate", CASES)
def test_subgradients_match_finite_differences(rng, kind, surrogate, sparse):
    problem, _, _ = _problem(rng, kind, surrogate, sparse=sparse, rho=0.3 if surrogate == "ramp" else None)
    x = _random_point(rng, problem)
    g = np.empty(problem.dim)
    tol = {"rtol": 1e-5, "atol": 1e-7}
    for _ in range(3):
        u = rng.normal(size=problem.dim)
        problem.objective_value_and_gradient(x, g)
        np.testing.assert_allclose(g @ u, _directional_fd(problem.objective_value, x, u), **tol)
        minus, jac = problem.minus_linearization(x)
        plus = problem.plus_values(x)
        for i in range(problem.n_constraints):
            value = problem.plus_subgradient(x, i, g)
            assert value == plus[i]
            np.testing.assert_allclose(g @ u, _directional_fd(lambda y, i=i: problem.plus_values(y)[i], x, u), **tol)
            np.testing.assert_allclose(jac[i] @ u,
                                       _directional_fd(lambda y, i=i: problem.minus_linearization(y)[0][i], x, u), **tol)
            # the single-constraint path: subgradient of f+ minus the Jacobian row of f-
            value = problem.constraint_subgradient(x, i, g)
            assert value == pytest.approx(plus[i] - minus[i], abs=1e-14)
            g_plus = np.empty(problem.dim)
            problem.plus_subgradient(x, i, g_plus)
            np.testing.assert_allclose(g, g_plus - jac[i], rtol=1e-10, atol=1e-12)
        value = problem.penalty_value_and_subgradient(x, g)
        np.testing.assert_allclose(g @ u, _directional_fd(
            lambda y: problem.penalty_value_and_subgradient(y, np.empty(problem.dim)), x, u), **tol)


@pytest.mark.parametrize("sparse", [False, True])
def test_ramp_jacobian_reads_the_bins_of_its_own_point(rng, sparse):
    # minus_linearization reads the rows' bins that the level sums cached at x: after calls at other
    # points, in any order, its Jacobian is the masked row sums at x (lower: f- = S+ - p, cut theta - 1/2;
    # upper: f- = S- + p + delta, cut theta + 1/2), as one masked product per (group, cut) gives them
    problem, Xt, groups = _problem(rng, "pdp", "ramp", sparse=sparse, n_groups=2)
    Xd = Xt.toarray() if sp.issparse(Xt) else Xt
    b, n_w = problem.block, problem.n_weights
    sizes = np.bincount(groups)
    xs = [_random_point(rng, problem) for _ in range(3)]

    def want(x):
        z, theta = Xd @ x[:n_w], x[n_w:]
        jac = np.zeros((problem.n_constraints, problem.dim))
        for j in range(b.n_thresholds):
            for side, cut in ((0, theta[j] - 0.5), (1, theta[j] + 0.5)):
                rows = ref.masked_row_sums(Xd, z, groups, np.array([cut]), 2)[:, 0]
                counts = ref.hinge_cut_sums(z, groups, np.array([cut]), 2)[1][:, 0]
                for k in range(2):
                    i = 2 * (j * 2 + k) + side
                    jac[i, :n_w] = rows[k] / sizes[k]
                    jac[i, n_w + j] = -counts[k] / sizes[k]
        return jac

    for a, c in [(0, 1), (1, 2), (2, 0), (1, 1), (0, 2)]:
        problem.plus_values(xs[a])                               # caches the bins of xs[a]
        _, jac = problem.minus_linearization(xs[c])
        np.testing.assert_allclose(jac, want(xs[c]), rtol=1e-12, atol=1e-14)
    z = Xd @ xs[0][:n_w]
    grads, _ = b.base_gradients(z, xs[0][n_w:], problem.dim)     # no bins given: found again
    bins = b.new_bins()
    b.base_values(z, xs[0][n_w:], bins)
    np.testing.assert_array_equal(grads, b.base_gradients(z, xs[0][n_w:], problem.dim, bins)[0])


@pytest.mark.parametrize("kind, surrogate", CASES)
def test_penalty_and_hard_values_match_definitions(rng, kind, surrogate):
    problem, Xt, groups = _problem(rng, kind, surrogate)
    b = problem.block
    g = np.empty(problem.dim)
    for _ in range(3):
        x = _random_point(rng, problem, scale=1.0)
        z = Xt @ x[problem.parts["w"]]
        theta = x[problem.parts["theta"]]
        if kind == "pdp":
            want = ref.partial_dp_penalty(z, groups, theta, b.levels, b.band_start, b.band_end, surrogate, b.n_groups)
            hard = ref.partial_dp_constraints(z, groups, theta, b.levels, b.width, "step", b.n_groups)
        else:
            want = ref.weak_partial_dp_penalty(z, groups, b.threshold, b.band_start, b.band_end, surrogate, b.n_groups)
            hard = ref.weak_partial_dp_constraints(z, groups, b.threshold, b.band_start, b.band_end, b.width, "step",
                                                   b.n_groups)
        assert problem.penalty_value_and_subgradient(x, g) == pytest.approx(want, rel=1e-10, abs=1e-12)
        np.testing.assert_allclose(problem.hard_values(x), hard, atol=1e-14)


def test_ramp_kink_convention_at_exact_cuts(rng):
    # alpha = 0: level 0 is p = 0 and theta_0 = 1/2, so at w = 0 every score sits exactly on the cut
    # theta_0 - 1/2 = 0 of S+: outside the mask (1{u > 0}), no row and no theta term in its subgradient
    problem, _, _ = _problem(rng, "pdp", "ramp", interval=(0.0, 0.4))
    x = problem.x0.copy()
    assert x[problem.parts["theta"]][0] == 0.5                   # level 0 is p = 0 with alpha = 0
    g = np.empty(problem.dim)
    problem.plus_subgradient(x, 1, g)                            # upper of (p=0, k=0): f+ = S+ at cut 0
    assert not g[problem.parts["w"]].any() and g[problem.n_weights] == 0.0
    _, jac = problem.minus_linearization(x)
    assert not jac[0].any()                                      # lower (p=0, k=0): f- = S+ - p


# ----------------------------------------------------------------------------- start point and counters
@pytest.mark.parametrize("surrogate", ["ramp", "logistic"])
@pytest.mark.parametrize("grid", ["safe", "paper"])
@pytest.mark.parametrize("interval", [(0.0, 0.25), (0.05, 0.3), (0.7, 1.0)])
def test_start_is_feasible(rng, surrogate, grid, interval):
    problem, _, _ = _problem(rng, "pdp", surrogate, grid=grid, interval=interval, kappa=0.05)
    assert problem.constraint_values(problem.x0).max() <= 1e-12
    assert problem.x0[:problem.n_weights].tolist() == [0.0] * problem.n_weights
    weak, _, _ = _problem(rng, "weak", surrogate, interval=interval, kappa=0.0)
    assert weak.constraint_values(weak.x0).max() <= 1e-12 and weak.dim == weak.n_weights


def test_levels_of_both_grids(rng):
    safe, _, _ = _problem(rng, "pdp", "ramp", grid="safe", interval=(0.1, 0.5), kappa=0.25)
    paper, _, _ = _problem(rng, "pdp", "ramp", grid="paper", interval=(0.1, 0.5), kappa=0.25)
    np.testing.assert_allclose(safe.block.levels, 0.1 + np.arange(5) * (0.5 - 0.25 * 0.4 - 0.1) / 5)
    np.testing.assert_allclose(paper.block.levels, 0.1 + np.arange(5) * 0.4 / 5)
    assert safe.names[:3] == ["p=0.100,k=0,lower", "p=0.100,k=0,upper", "p=0.100,k=1,lower"]


def test_one_product_per_point(rng):
    problem, _, _ = _problem(rng, "pdp", "ramp", sparse=True)
    n = problem.block.scores.n_samples
    x = _random_point(rng, problem)
    problem.reset_counters()
    problem.plus_values(x)
    assert problem.rows_read == n                                # one X w
    g = np.empty(problem.dim)
    problem.plus_subgradient(x, 3, g)
    problem.objective_value_and_gradient(x, g)
    assert n < problem.rows_read <= 3 * n                        # X w cached: masked rows + one X^T v


# ----------------------------------------------------------------------------- bad input
def test_bad_inputs_name_the_field(rng):
    n, d = 40, 3
    X = rng.normal(size=(n, d))
    groups = np.arange(n) % 2
    ds = Dataset(cross_term_features(X, groups), np.where(rng.random(n) < 0.5, -1, 1), groups=groups)
    scores = LinearScores(ds, fit_intercept=False)
    cases = [
        ({"groups": groups[:-1]}, r"^groups: expected shape"),
        ({"groups": np.where(groups == 1, -1, 0)}, r"^groups: group id -1 out of range"),
        ({"groups": groups * 2}, r"^groups: group 1 is empty"),
        ({"groups": np.zeros(n, dtype=np.int64)}, r"^groups: partial fairness compares groups and needs at least two"),
        ({"interval": (-0.1, 0.5)}, r"^interval:"),
        ({"interval": (0.2, 1.5)}, r"^interval:"),
        ({"interval": (0.5, 0.5)}, r"^interval:"),
        ({"interval": (0.6, 0.5)}, r"^interval:"),
        ({"interval": 0.5}, r"^interval:"),
        ({"kappa": -0.1}, r"^bound:"),
        ({"kappa": np.inf}, r"^bound:"),
        ({"kappa": np.nan}, r"^bound:"),
        ({"surrogate": "hinge"}, r"^surrogate:"),
        ({"rho": -1.0}, r"^rho:"),
    ]
    base = {"groups": groups, "interval": (0.1, 0.5), "kappa": 0.1}
    for change, message in cases:
        args = {**base, **change}
        for make in (partial_dp_constraints, weak_partial_dp_constraints):
            with pytest.raises(ValueError, match=message):
                make(scores, args["groups"], args["interval"], args["kappa"], surrogate=args.get("surrogate", "ramp"),
                     rho=args.get("rho"))
    for levels in (0, -3, 2.5):
        with pytest.raises(ValueError, match=r"^n_levels:"):
            partial_dp_constraints(scores, groups, (0.1, 0.5), 0.1, n_levels=levels)
    with pytest.raises(ValueError, match=r"^grid:"):
        partial_dp_constraints(scores, groups, (0.1, 0.5), 0.1, grid="uniform")
    with pytest.raises(ValueError, match=r"^bound: the 'safe' grid"):
        partial_dp_constraints(scores, groups, (0.1, 0.5), 1.0)
    with pytest.raises(ValueError, match=r"^bound: the logistic surrogate needs bound > 0"):
        partial_dp_constraints(scores, groups, (0.0, 0.5), 0.0, surrogate="logistic")
    with pytest.raises(ValueError, match=r"^threshold:"):
        weak_partial_dp_constraints(scores, groups, (0.1, 0.5), 0.1, threshold=np.nan)
    with pytest.raises(TypeError, match=r"^bound:"):
        partial_dp_constraints(scores, groups, (0.1, 0.5), "0.1")
    with pytest.raises(ValueError, match=r"^scores: build LinearScores with fit_intercept=False"):
        partial_dp_constraints(LinearScores(ds), groups, (0.1, 0.5), 0.1)
    block = partial_dp_constraints(scores, groups, (0.1, 0.5), 0.1)
    other = LinearLoss(LinearScores(ds, fit_intercept=False), ds.y, np.ones(n))
    with pytest.raises(ValueError, match=r"^objective:"):
        PartialFairnessProblem(other, block)
    problem = PartialFairnessProblem(LinearLoss(scores, ds.y, np.ones(n)), block)
    with pytest.raises(ValueError, match=r"^i:"):
        problem.plus_subgradient(problem.x0, problem.n_constraints, np.empty(problem.dim))
    with pytest.raises(ValueError, match=r"^x:"):
        problem.constraint_values(problem.x0[:-1])


def test_sizes_beyond_memory_are_refused_at_once(rng, monkeypatch):
    """A count of levels or of groups whose dense Jacobians cannot be held is an error naming it, raised
    before anything of that size is built (it was a MemoryError after minutes, or a hang in the pair list)."""
    from fastcon import _memory_limit

    n = 60
    X = rng.normal(size=(n, 3))
    groups = np.arange(n) % 2
    scores = LinearScores(Dataset(cross_term_features(X, groups), np.where(rng.random(n) < 0.5, -1, 1),
                                  groups=groups), fit_intercept=False)
    with pytest.raises(ValueError, match=r"^n_levels: 40,000,000 constraints on 10,000,008 variables \(dense "
                                         r"Jacobians\) would need 5\.\d PiB, more than half of this machine's"):
        partial_dp_constraints(scores, groups, (0.1, 0.5), 0.1, n_levels=10**7)   # petabytes on any machine
    # at a stated memory, just below and above the limit (half of it): 16 (2 G P) (n_w + P) bytes, G = 2
    need = 16 * (4 * 100) * (8 + 100)
    monkeypatch.setattr(_memory_limit, "physical_memory", lambda: 2 * need)
    assert partial_dp_constraints(scores, groups, (0.1, 0.5), 0.1, n_levels=100).n_constraints == 400
    monkeypatch.setattr(_memory_limit, "physical_memory", lambda: 2 * need - 2)
    with pytest.raises(ValueError, match=r"^n_levels: 400 constraints on 108 variables"):
        partial_dp_constraints(scores, groups, (0.1, 0.5), 0.1, n_levels=100)
    # one group per row: the G (G - 1) ordered pairs of model (17), 8 (3540 + 2 G) 8 = 234,240 bytes, and the
    # 2 G P rows of model (13), 8 (1200 + 1200) 18 = 345,600 bytes, against a limit of 200,000
    monkeypatch.setattr(_memory_limit, "physical_memory", lambda: 400_000)
    ids = np.arange(n)
    per_row = LinearScores(Dataset(cross_term_features(X, groups), np.ones(n), groups=ids), fit_intercept=False)
    with pytest.raises(ValueError, match=r"^groups: 3,540 constraints on 8 variables"):
        weak_partial_dp_constraints(per_row, ids, (0.1, 0.5), 0.1)
    with pytest.raises(ValueError, match=r"^groups: 1,200 constraints on 18 variables"):
        partial_dp_constraints(per_row, ids, (0.1, 0.5), 0.1)
    monkeypatch.setattr(_memory_limit, "physical_memory", lambda: None)   # the OS does not say: no check
    assert weak_partial_dp_constraints(per_row, ids, (0.1, 0.5), 0.1).n_constraints == n * (n - 1)
