"""One name, one meaning: the keywords every solver shares, one spelling each (no deprecated aliases).

Signatures are introspected, then every public solver runs on a tiny problem of the kind it takes
(a `ConstrainedProblem`: logistic risk s.t. a smoothed demographic-parity bound; a DC partial-fairness
problem for idca, switching_polyak and penalty_subgradient; a group-loss-gap score problem and a linear
model for abpp and cbpr; quadratic pairwise-fairness constraints for projected_gradient) to check that
``x0``, ``max_iter``, ``switching_level``, ``seed``, ``record_every``, ``callback``, ``verbose`` and
``step_size`` behave alike. ``KEYWORDS`` states, as data, which solver lacks which keyword and why.
"""
import inspect

import numpy as np
import pytest

from fastcon import metrics, problems, solvers
from fastcon.datasets import Dataset, make_fair_classification
from fastcon.problems import ConstrainedProblem, GroupLossGap, LinearLoss, LinearScoreModel, LinearScores, \
    PartialFairnessProblem, Whole, cross_term_features, less_equal, logistic_risk, pairwise_fairness_constraints, \
    partial_dp_constraints, smoothed_demographic_parity
from fastcon.solvers import abpp, augmented_lagrangian, cbpr, check_feasibility, conex, exact_penalty_trust_region, \
    idca, iqrc, near_stationarity, online_stochastic_subgradient, penalty_subgradient, projected_gradient, \
    proximal_point, spider, switching_polyak, switching_subgradient
from fastcon.solvers._common import DEFAULT_RECORDS, RECORD_BUDGET, default_record_every
from fastcon.solvers.conex import _conex
from fastcon.solvers.online_stochastic import _online_stochastic_subgradient
from fastcon.solvers.switching import _switching_subgradient

D = 5  # features


def tiny_problem(bound=0.05):
    data = make_fair_classification(200, D, shift=1.5, seed=0)
    p, u = data.subset(data.groups == 1), data.subset(data.groups == 0)
    return ConstrainedProblem(logistic_risk(data), [less_equal(smoothed_demographic_parity(p, u), bound)], Whole(),
                              x0=np.zeros(D))


# Each entry: (solver, settings that make it run fast here). Single-loop solvers take max_iter; the
# proximal-point family counts inner iterations (outer_iter x inner_iter).
SINGLE_LOOP = {
    "switching_subgradient": (switching_subgradient, dict(step_size=0.05)),
    "switching_stochastic": (switching_subgradient, dict(step_size=0.05, objective_oracle="stochastic",
                                                         objective_batch_size=8, output="last")),
    "conex": (conex, dict(primal_step=0.05, dual_step=1.0)),
    "online_stochastic_subgradient": (online_stochastic_subgradient, dict(objective_batch_size=8,
                                                                          constraint_batch_size=8)),
    "exact_penalty_trust_region": (exact_penalty_trust_region, dict(criticality_tolerance=1e-12)),
    "spider": (spider, dict(q=5, batch_size=10, objective_batch_size=10, step_size=0.05)),
}
NESTED = {
    "proximal_point": (proximal_point, dict(rho_hat=1.0, inner_params=dict(step_size=0.05))),
    "iqrc": (iqrc, dict(rho_hat=1.0)),
}
STOCHASTIC = ("switching_stochastic", "online_stochastic_subgradient", "spider")
PUBLIC = [switching_subgradient, conex, proximal_point, iqrc, online_stochastic_subgradient,
          exact_penalty_trust_region, spider]


def run(name, **kw):
    solver, settings = {**SINGLE_LOOP, **NESTED}[name]
    return solver(tiny_problem(), **{**settings, **kw})


def last_row(name, res):
    """Row of the last recorded iterate: x_{T-1} (before the last step) except spider, which records x_K."""
    return res.n_iter if name == "spider" else res.n_iter - 1


def without_time(history):
    return {k: v for k, v in history.items() if k not in ("time", "wall_time")}


def assert_same_bits(a, b):
    np.testing.assert_array_equal(a.x, b.x)
    ha, hb = without_time(a.history), without_time(b.history)
    assert ha.keys() == hb.keys()
    for key in ha:
        np.testing.assert_array_equal(ha[key], hb[key], err_msg=key)


# ---------------------------------------------------------------------------- signatures
@pytest.mark.parametrize("solver", PUBLIC, ids=lambda f: f.__name__)
def test_common_keywords_exist_with_the_same_defaults(solver):
    params = inspect.signature(solver).parameters
    names = list(params)
    assert names[:2] == ["problem", "x0"] and params["x0"].default is None
    assert not [n for n in names if n.startswith("_")], "private plumbing in a public signature"
    for key, default in (("seed", 0), ("record_every", None), ("callback", None), ("verbose", False)):
        assert params[key].default == default, (solver.__name__, key)
        assert params[key].kind is inspect.Parameter.KEYWORD_ONLY
    nested = solver in (proximal_point, iqrc)
    assert ("max_iter" in params) != nested  # the proximal-point family counts outer_iter x inner_iter
    if nested:
        assert {"outer_iter", "inner_iter", "inner_solver", "inner_params"} <= set(params)
    # one spelling per idea across solvers
    for old in ("averaging_weights", "inner", "_record_problem", "record_problem"):
        assert old not in params, (solver.__name__, old)


def test_switching_level_and_step_size_appear_where_they_mean_the_same():
    every = [getattr(solvers, name) for name in KEYWORDS]
    has_level = {f.__name__ for f in every if "switching_level" in inspect.signature(f).parameters}
    # the level of the switching test g(x_t) <= eps_t in all four
    assert has_level == {"switching_subgradient", "iqrc", "idca", "switching_polyak"}
    assert not [f.__name__ for f in every if "tolerance" in inspect.signature(f).parameters]
    has_step = {f.__name__ for f in every if "step_size" in inspect.signature(f).parameters}
    # the primal step (its scale, a schedule of t, or a rule's name); the primal-dual methods say primal_step
    assert has_step == {"switching_subgradient", "spider", "penalty_subgradient", "projected_gradient",
                        "check_feasibility"}
    has_primal_step = {f.__name__ for f in every if "primal_step" in inspect.signature(f).parameters}
    assert has_primal_step == {"conex", "abpp", "cbpr"} and not has_primal_step & has_step
    for f in (switching_subgradient, conex):
        assert "average_weights" in inspect.signature(f).parameters


@pytest.mark.parametrize("public, impl", [(switching_subgradient, _switching_subgradient), (conex, _conex),
                                          (online_stochastic_subgradient, _online_stochastic_subgradient)])
def test_private_implementation_adds_only_record_problem(public, impl):
    pub, imp = inspect.signature(public).parameters, inspect.signature(impl).parameters
    assert list(imp) == list(pub) + ["record_problem"]
    for name, p in pub.items():
        assert (imp[name].kind, imp[name].default) == (p.kind, p.default), name


# ---------------------------------------------------------------------------- behaviour
@pytest.mark.parametrize("name", sorted(SINGLE_LOOP))
def test_max_iter_bounds_the_iterations(name):
    calls = []
    res = run(name, max_iter=7, record_every=1, callback=lambda t, x, info: calls.append(t) and False)
    assert res.n_iter <= 7
    if name != "exact_penalty_trust_region":  # may stop early at a critical point; the others run out
        assert res.n_iter == 7 and res.status in ("max_iter", "no_feasible_iterate")
    assert max(calls) <= 6 and calls == sorted(calls)
    assert max(res.history["iteration"]) <= last_row(name, res)


@pytest.mark.parametrize("name", sorted(NESTED))
def test_nested_solvers_count_inner_iterations(name):
    res = run(name, outer_iter=2, inner_iter=15, record_every=5)
    assert res.n_iter == 30 and res.counters["outer_iterations"] == 2
    # inner runs of 15 recorded every 5 (and at their last iteration), on the global inner count
    expected = [0, 5, 10, 14, 15, 20, 25, 29]
    np.testing.assert_array_equal(res.history["iteration"], expected)


@pytest.mark.parametrize("name", sorted(SINGLE_LOOP))
@pytest.mark.parametrize("k", [1, 4])
def test_record_every_gives_rows_at_the_same_iterations(name, k):
    res = run(name, max_iter=14, record_every=k)
    last = last_row(name, res)
    expected = sorted(set(range(0, last + 1, k)) | {last})
    np.testing.assert_array_equal(res.history["iteration"], expected)
    # row t describes x_t: row 0 is the start
    assert res.history["objective"][0] == pytest.approx(tiny_problem().f(np.zeros(D)), rel=1e-12)


@pytest.mark.parametrize("name", sorted(SINGLE_LOOP))
def test_default_record_every_keeps_about_a_hundred_rows_or_fewer(name):
    res = run(name, max_iter=500)
    rows = res.history["iteration"]
    assert 2 <= len(rows) <= DEFAULT_RECORDS + 2
    if name == "exact_penalty_trust_region":  # records read no data here: every ceil(500 / 100) = 5
        assert np.all(rows[:-1] % 5 == 0) and rows[-1] == res.n_iter - 1


def test_default_record_every_rule():
    assert default_record_every(1000, 0, 5) == 10  # free records: about 100 rows
    assert default_record_every(50, 0, 5) == 1
    # a record reads 65,122 rows, an iteration 540 (3S-Econ-S on a9a): records read <= a tenth
    p = default_record_every(10_000, 65_122, 540)
    assert p == 1206 and 65_122 <= RECORD_BUDGET * 540 * p < 65_122 + RECORD_BUDGET * 540
    assert default_record_every(100, 10, 0) == 100  # iterations read nothing: first and last rows only
    assert default_record_every(30, 10 ** 9, 1) == 30  # never beyond max_iter


def test_default_spider_history_reads_at_most_a_tenth_of_the_iterations_rows():
    res = run("spider", max_iter=3000)
    problem = tiny_problem()
    rows_per_record = problem.n_samples_f + problem.n_samples_g
    c = res.counters
    iteration_rows = c["rows_f_subgradient"] + c["rows_g_read"]
    # the start and the end are always recorded; the periodic rows obey the budget
    periodic = len(res.history["iteration"]) - 2
    assert periodic * rows_per_record <= RECORD_BUDGET * iteration_rows


@pytest.mark.parametrize("name", sorted(SINGLE_LOOP) + sorted(NESTED))
def test_seed_gives_the_same_bits(name):
    kw = dict(outer_iter=2, inner_iter=20) if name in NESTED else dict(max_iter=40)
    a, b = run(name, seed=3, record_every=4, **kw), run(name, seed=3, record_every=4, **kw)
    assert_same_bits(a, b)
    if name in STOCHASTIC:
        assert not np.array_equal(a.x, run(name, seed=4, record_every=4, **kw).x)


@pytest.mark.parametrize("name", sorted(SINGLE_LOOP))
def test_callback_true_stops_after_iteration_t(name):
    seen = []

    def stop(t, x, info):
        seen.append((t, x.copy()))
        return t >= 5

    res = run(name, max_iter=40, record_every=2, callback=stop)
    if name == "exact_penalty_trust_region" and res.status != "callback_stop":
        pytest.skip("stopped at a critical point before t = 5")
    t, x = seen[-1]
    assert res.status == "callback_stop" and res.n_iter == t + 1
    if name == "spider":  # called at records only: t + 1 is a recorded row holding x = x_{t+1}
        row = list(res.history["iteration"]).index(t + 1)
        assert res.history["objective"][row] == pytest.approx(tiny_problem().f(x), rel=1e-12)


@pytest.mark.parametrize("name", sorted(NESTED))
def test_callback_true_stops_after_outer_iteration_k(name):
    res = run(name, outer_iter=5, inner_iter=10, callback=lambda k, x, info: k >= 1)
    assert res.status == "callback_stop" and res.n_iter == 20 and res.counters["outer_iterations"] == 2


@pytest.mark.parametrize("name", sorted(SINGLE_LOOP) + sorted(NESTED))
def test_x0_is_the_start(name):
    x0 = np.full(D, 0.01)
    kw = dict(outer_iter=1, inner_iter=5) if name in NESTED else dict(max_iter=5)
    res = run(name, x0=x0, record_every=1, **kw)
    assert res.history["iteration"][0] == 0
    assert res.history["objective"][0] == pytest.approx(tiny_problem().f(x0), rel=1e-12)


@pytest.mark.parametrize("name", sorted(SINGLE_LOOP))
def test_verbose_does_not_change_the_result(name, capsys):
    quiet, loud = run(name, max_iter=20, verbose=False), run(name, max_iter=20, verbose=True)
    capsys.readouterr()
    np.testing.assert_array_equal(quiet.x, loud.x)


def test_switching_level_is_the_switching_threshold_in_switching_and_iqrc():
    tol = 2e-3
    ssg = run("switching_subgradient", max_iter=20, switching_level=tol, record_every=1)
    np.testing.assert_array_equal(ssg.history["switching_level"], tol)
    np.testing.assert_array_equal(ssg.history["constraint"] <= tol, ssg.history["step_kind"] == "f")
    res = run("iqrc", outer_iter=1, inner_iter=10, switching_level=tol)
    assert res.info["switching_threshold"] == tol and res.info["level_reading"] == "threshold"
    # the old squaring stays reachable, explicitly
    old = run("iqrc", outer_iter=1, inner_iter=10, switching_level=tol, level_reading="eps_hat")
    assert old.info["switching_threshold"] == pytest.approx(tol ** 2)


@pytest.mark.parametrize("name", ["switching_subgradient", "spider"])
def test_step_size_scales_the_primal_step(name):
    kw = dict(variant="deterministic") if name == "spider" else {}
    res = run(name, max_iter=5, record_every=1, step_size=0.02, **kw)
    assert res.history["step_size"][0] == 0.02
    frozen_start = run(name, max_iter=1, record_every=1, step_size=1e-300, **kw)
    np.testing.assert_allclose(frozen_start.x, np.zeros(D), atol=1e-290)


def test_average_weights_mean_the_same_in_switching_and_conex():
    x_lin = run("conex", max_iter=30, output="average", average_weights="linear").x
    from fastcon.solvers import linear
    np.testing.assert_array_equal(x_lin, run("conex", max_iter=30, output="average",
                                             average_weights=linear(1.0)).x)
    x_step = run("conex", max_iter=30, output="average", average_weights="step_size").x
    np.testing.assert_array_equal(x_step, run("conex", max_iter=30, output="average", average_weights=0.05).x)
    ssg = run("switching_subgradient", max_iter=30, output="average", average_weights="linear", switching_level=np.inf)
    np.testing.assert_array_equal(ssg.x, run("switching_subgradient", max_iter=30, output="average",
                                             average_weights=lambda t: t + 1.0, switching_level=np.inf).x)
    with pytest.raises(ValueError, match="^average_weights"):
        run("conex", max_iter=5, average_weights="uniform")


def test_the_best_feasible_output_has_one_name():
    """The best (nearly) feasible iterate is ``output="best_feasible"`` wherever a solver offers it."""
    import importlib
    for module in ("switching", "switching_polyak", "idca", "spider"):
        outputs = importlib.import_module(f"fastcon.solvers.{module}")._OUTPUTS
        assert "best_feasible" in outputs and "best" not in outputs, module
    for name in ("switching_subgradient", "spider"):
        res = run(name, max_iter=20, record_every=1, output="best_feasible")
        assert res.status == "max_iter" and res.max_violation <= 1e-5
        with pytest.raises(ValueError, match="^output: "):
            run(name, max_iter=5, output="best")


# ---------------------------------------------------------------------------- one name, no aliases
def test_old_names_are_gone():
    """fastcon is unreleased (issue 37): renamed functions and keywords have no deprecated aliases."""
    assert not hasattr(problems, "demographic_parity_gap")  # now smoothed_demographic_parity
    assert not hasattr(solvers, "theory_parameters")  # now switching_theory_parameters
    import importlib
    assert not hasattr(importlib.import_module("fastcon.solvers.spider"), "theory_parameters")
    assert switching_subgradient.theory_parameters is solvers.switching_theory_parameters
    assert spider.theory_parameters is solvers.spider_theory_parameters
    assert "3S-Econ" in spider.__doc__ and "Liu & Xu" in spider.__doc__
    # the metric keeps its name: the hard gap of predictions (or of scores at a threshold)
    assert metrics.demographic_parity_gap(None, np.array([1.0, -1.0, 1.0, 1.0]),
                                          sensitive_features=np.array([0, 0, 1, 1])) == 0.5
    kw = dict(max_iter=5, record_every=5)
    with pytest.raises(TypeError, match="'averaging_weights'"):
        run("conex", averaging_weights="linear", **kw)
    with pytest.raises(TypeError, match="'inner'"):
        run("iqrc", outer_iter=1, inner_iter=10, inner="switching")
    with pytest.raises(TypeError, match="'tolerance'"):
        exact_penalty_trust_region(tiny_problem(), tolerance=1e-6, **kw)


# ---------------------------------------------------------------------------- every public solver
# The names of fastcon.solvers.__all__ that do not solve: parameter rules, checks of given parameters,
# schedules, smoothing functions and result types.
NOT_SOLVERS = {"switching_theory_parameters", "check_certificate", "prox_weights_to_steps", "iqrc_step_size",
               "spider_theory_parameters", "smoothed_plus", "smoothed_plus_derivative", "kkt_multiplier",
               "as_schedule", "constant", "inverse_sqrt", "linear", "inverse_linear", "FeasibilityResult",
               "idca_theory_parameters", "gradient_lipschitz_constant", "abpp_lipschitz_constant"}

DETERMINISTIC = "deterministic (full oracles, no random draw): nothing to seed"
SCORE_PAIR = ("a score problem is the pair (problem, model): the model owns the space x lives in, so it comes "
              "before the start")
#: Which solver has which shared keyword. An entry is True, or the reason the solver lacks it (for
#: ``x0``: a pair (position, reason) where it is not second). ``iterations`` is "max_iter" or
#: "nested" (``outer_iter`` x ``inner_iter``); ``n_iter`` says what the result counts; ``last_row``
#: is the iterate the final history row describes (x_{T-1} before the last step, or x_T).
KEYWORDS = {
    "switching_subgradient": dict(iterations="max_iter", last_row="x_{T-1}"),
    "conex": dict(iterations="max_iter", last_row="x_{T-1}"),
    "online_stochastic_subgradient": dict(iterations="max_iter", last_row="x_{T-1}"),
    "exact_penalty_trust_region": dict(iterations="max_iter", last_row="x_{T-1}"),
    "spider": dict(iterations="max_iter", last_row="x_T"),
    "proximal_point": dict(iterations="nested", n_iter="inner iterations"),
    "iqrc": dict(iterations="nested", n_iter="inner iterations"),
    "augmented_lagrangian": dict(iterations="max_iter", last_row="x_{T-1}", seed=DETERMINISTIC),
    "projected_gradient": dict(
        iterations="max_iter", last_row="x_T", seed=DETERMINISTIC,
        problem="the problem is the pair (objective, constraints): the exact projection needs the quadratic "
                "constraints' matrices (QuadraticConstraints), which a ConstrainedProblem does not expose",
        x0=(2, "after the pair (objective, constraints)")),
    "idca": dict(iterations="nested", n_iter="outer iterations (DC linearisations)", last_row="x_T",
                 seed=DETERMINISTIC),
    "switching_polyak": dict(iterations="max_iter", last_row="x_{T-1}", seed=DETERMINISTIC),
    "penalty_subgradient": dict(iterations="max_iter", last_row="x_{T-1}", seed=DETERMINISTIC),
    "abpp": dict(iterations="max_iter", last_row="x_T", seed=DETERMINISTIC, x0=(2, SCORE_PAIR)),
    "cbpr": dict(iterations="nested", n_iter="outer iterations (proximal points)", last_row="x_T",
                 seed=DETERMINISTIC, x0=(2, SCORE_PAIR)),
    "check_feasibility": dict(
        iterations="max_iter", last_row="x_{T-1}", seed=DETERMINISTIC,
        callback="a check run to its verdict (feasible, certified infeasible, undecided): no user stop",
        verbose="a check of a few hundred cheap steps, no progress to report"),
    "near_stationarity": dict(
        iterations="max_iter", seed=DETERMINISTIC,
        x0=(None, "x is the point whose stationarity is measured, not a start"),
        record_every="a measurement returning a distance (and details), not a run with a history",
        callback="a measurement run to its tolerance: no user stop",
        verbose="a measurement, no progress to report"),
}
SHARED_DEFAULTS = (("seed", 0), ("record_every", None), ("callback", None), ("verbose", False))


def has(name, keyword):
    return KEYWORDS[name].get(keyword, True) is True


def dc_problem():
    """Logistic loss s.t. a partial demographic-parity block on cross-term features (a DC problem)."""
    rng = np.random.default_rng(0)
    n = 120
    X, groups = rng.normal(size=(n, 3)), np.arange(n) % 2
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    ds = Dataset(cross_term_features(X, groups), y, groups=groups)
    scores = LinearScores(ds, fit_intercept=False)
    block = partial_dp_constraints(scores, groups, (0.1, 0.45), 0.2, n_levels=3)
    return PartialFairnessProblem(LinearLoss(scores, ds.y, np.ones(n), ridge=0.01), block)


def pairwise_problem():
    """(objective, QuadraticConstraints): ridge logistic loss s.t. a group-AUC pairwise-fairness bound."""
    rng = np.random.default_rng(0)
    n = 120
    xi, g = rng.normal(size=(n, 2)), (rng.random(n) < 0.4).astype(int)
    y = np.where(xi[:, 0] + 1.5 * g + 0.3 * rng.normal(size=n) > 0.5, 1.0, -1.0)
    X = np.hstack([np.ones((n, 1)), xi, g[:, None]])
    ds = Dataset(X, y, groups=g)
    loss = LinearLoss(LinearScores(ds, fit_intercept=False), ds.y, np.ones(n), "logistic", ridge=1e-2)
    return loss, pairwise_fairness_constraints(X, y, g, "group_auc", 0.5)


def score_problem():
    """(GroupLossGap, LinearScoreModel): a two-group loss-gap bound on a linear two-class model."""
    rng = np.random.default_rng(0)
    n = 80
    g, X = rng.integers(0, 2, n), rng.normal(size=(n, 3))
    X[:, 2] = g - 0.5
    y = (X[:, 0] + g - 0.5 + 0.7 * rng.normal(size=n) > 0).astype(int)
    return GroupLossGap(y, 2, g, 0.02), LinearScoreModel(X, y, 2)


# The solvers not in SINGLE_LOOP / NESTED above: each called on its tiny problem with fast settings.
OTHERS = {
    "augmented_lagrangian": lambda **kw: augmented_lagrangian(tiny_problem(), **{"tol": 1e-300, **kw}),
    "projected_gradient": lambda **kw: projected_gradient(*pairwise_problem(), **{"tol": 0.0, **kw}),
    "idca": lambda **kw: idca(dc_problem(), **kw),
    "switching_polyak": lambda **kw: switching_polyak(dc_problem(), **kw),
    "penalty_subgradient": lambda **kw: penalty_subgradient(dc_problem(), penalty=1.0, **kw),
    "abpp": lambda **kw: abpp(*score_problem(), **kw),
    "cbpr": lambda **kw: cbpr(*score_problem(), **kw),
    # a gap below -1 is out of reach and the gap is not convex (no certificate): the check runs its budget
    "check_feasibility": lambda **kw: check_feasibility(tiny_problem(bound=-1.0), **kw),
    "near_stationarity": lambda **kw: near_stationarity(tiny_problem(), np.zeros(D), 1.0, return_details=True,
                                                        **kw),
}


def budget(name, n):
    """``n`` iterations of the solver's own count (outer ones, with short inner runs, where nested)."""
    return dict(outer_iter=n, inner_iter=5) if KEYWORDS[name]["iterations"] == "nested" else dict(max_iter=n)


def n_iter_of(res):
    return res["n_iter"] if isinstance(res, dict) else res.n_iter


def test_the_table_covers_every_public_solver():
    assert set(KEYWORDS) == set(solvers.__all__) - NOT_SOLVERS
    assert set(OTHERS) | set(SINGLE_LOOP) | set(NESTED) >= set(KEYWORDS)
    assert {f.__name__ for f in PUBLIC} | set(OTHERS) == set(KEYWORDS)


@pytest.mark.parametrize("name", sorted(KEYWORDS))
def test_every_solver_has_the_shared_keywords_or_says_why_not(name):
    entry = KEYWORDS[name]
    params = inspect.signature(getattr(solvers, name)).parameters
    names = list(params)
    assert (names[0] == "problem") == has(name, "problem"), name
    position, _why = entry.get("x0", (1, None))
    if position is None:
        assert "x0" not in params
    else:
        assert names.index("x0") == position and params["x0"].default is None
        assert params["x0"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        # what comes before x0 is the problem (no method parameter ahead of the start)
        assert all(params[n].default is inspect.Parameter.empty for n in names[:position])
    for key, default in SHARED_DEFAULTS:
        assert (key in params) == has(name, key), (name, key)
        if key in params:
            assert params[key].default == default and params[key].kind is inspect.Parameter.KEYWORD_ONLY, (name, key)
    if entry["iterations"] == "nested":
        assert {"outer_iter", "inner_iter"} <= set(params) and "max_iter" not in params
    else:
        assert "max_iter" in params and params["max_iter"].kind is inspect.Parameter.KEYWORD_ONLY
        assert not {"outer_iter", "inner_iter"} & set(params)
    for key in ("max_iter", "outer_iter", "inner_iter", "step_size", "switching_level", "output"):
        if key in params:
            assert params[key].kind is inspect.Parameter.KEYWORD_ONLY, (name, key)


@pytest.mark.parametrize("name", sorted(OTHERS))
def test_max_iter_bounds_the_iterations_of_every_solver(name):
    calls = []
    kw = dict(callback=lambda t, x, info: calls.append(t) and False) if has(name, "callback") else {}
    res = OTHERS[name](**budget(name, 7), **kw)
    assert 1 <= n_iter_of(res) <= 7
    if has(name, "callback"):
        assert calls == list(range(n_iter_of(res)))  # called once per iteration, with t = 0, 1, ...


@pytest.mark.parametrize("name", sorted(n for n in OTHERS if has(n, "record_every")))
@pytest.mark.parametrize("k", [1, 3])
def test_record_every_gives_rows_at_the_multiples_and_the_last(name, k):
    res = OTHERS[name](**budget(name, 8), record_every=k)
    last = res.n_iter if KEYWORDS[name]["last_row"] == "x_T" else res.n_iter - 1
    expected = sorted(set(range(0, last + 1, k)) | {last})
    np.testing.assert_array_equal(res.history["iteration"], expected)


@pytest.mark.parametrize("name", sorted(n for n in OTHERS if has(n, "callback")))
def test_callback_true_stops_with_callback_stop_in_every_solver(name):
    seen = []

    def stop(t, x, info):
        assert isinstance(x, np.ndarray) and isinstance(info, dict)
        seen.append(t)
        return t >= 3

    res = OTHERS[name](**budget(name, 20), callback=stop)
    assert seen == [0, 1, 2, 3]
    assert res.status == "callback_stop" and res.n_iter == seen[-1] + 1
    # the history ends at the last iterate however the run stopped
    last = res.n_iter if KEYWORDS[name]["last_row"] == "x_T" else res.n_iter - 1
    assert res.history["iteration"][-1] == last


@pytest.mark.parametrize("name", sorted(OTHERS))
def test_same_inputs_give_the_same_bits_in_every_solver(name):
    kw = dict(seed=3) if "seed" in inspect.signature(getattr(solvers, name)).parameters else {}
    a, b = OTHERS[name](**budget(name, 6), **kw), OTHERS[name](**budget(name, 6), **kw)
    if isinstance(a, dict):  # near_stationarity's details
        np.testing.assert_array_equal(a["x_hat"], b["x_hat"])
        assert a["distance"] == b["distance"]
    else:
        assert_same_bits(a, b)


@pytest.mark.parametrize("name", sorted(n for n in {**SINGLE_LOOP, **NESTED, **OTHERS} if n in KEYWORDS
                                        and has(n, "verbose")))
def test_verbose_prints_to_stderr_and_leaves_the_result(name, capsys):
    call = OTHERS.get(name) or (lambda **kw: run(name, **kw))
    quiet = call(**budget(name, 6))
    assert capsys.readouterr().err == ""
    loud = call(**budget(name, 6), verbose=True)
    out = capsys.readouterr()
    assert out.err and not out.out
    np.testing.assert_array_equal(quiet.x, loud.x)
