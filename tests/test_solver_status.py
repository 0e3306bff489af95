"""Statuses shared by every solver: "no_feasible_iterate" on an infeasible problem, and the common argument checks."""
import math

import numpy as np
import pytest

from fastcon.datasets import make_fair_classification
from fastcon.problems import Ball, ConstrainedProblem, erm_optimum, hinge_risk, less_equal
from fastcon import _memory_limit
from fastcon.solvers import (
    augmented_lagrangian, check_feasibility, conex, exact_penalty_trust_region, iqrc, near_stationarity,
    online_stochastic_subgradient, proximal_point, spider, switching_subgradient,
)


@pytest.fixture(scope="module")
def data():
    D = make_fair_classification(n_samples=300, n_features=5, seed=0)
    return D, erm_optimum(D)


def hinge_level_problem(data, delta):
    """min hinge(D) s.t. hinge(D) <= L* + delta over the ball of radius 5 ||w_ERM||, started at 0."""
    D, erm = data
    radius = 5.0 * float(np.linalg.norm(erm.w))
    return ConstrainedProblem(hinge_risk(D), [less_equal(hinge_risk(D), erm.value + delta)], Ball(radius),
                              x0=np.zeros(D.n_features))


SOLVERS = {
    "switching": lambda p: switching_subgradient(p, max_iter=300, step_size=0.05, record_every=50),
    "switching_last": lambda p: switching_subgradient(p, max_iter=300, step_size=0.05, output="last"),
    "conex": lambda p: conex(p, max_iter=300, primal_step=0.05, dual_step=1.0, record_every=50),
    "conex_average": lambda p: conex(p, max_iter=300, primal_step=0.05, dual_step=1.0, output="average"),
    "ipp_ssg": lambda p: proximal_point(p, rho_hat=1.0, outer_iter=5, inner_iter=50,
                                        inner_params=dict(step_size=0.05), record_every=10),
    "ipp_conex": lambda p: proximal_point(p, rho_hat=1.0, outer_iter=5, inner_iter=50, inner_solver="conex",
                                          inner_params=dict(primal_step=0.05, dual_step=1.0), record_every=10),
    "spider": lambda p: spider(p, variant="deterministic", max_iter=300, record_every=50),
    "spider_best": lambda p: spider(p, variant="deterministic", max_iter=300, record_every=50, output="best_feasible"),
    "exact_penalty": lambda p: exact_penalty_trust_region(p, max_iter=30),
    "iqrc": lambda p: iqrc(p, outer_iter=3, inner_iter=100, phase_one_iter=200),
    "online": lambda p: online_stochastic_subgradient(p, max_iter=300, objective_batch_size=20,
                                                      constraint_batch_size=20),
}


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_every_solver_reports_no_feasible_iterate_on_an_infeasible_problem(data, name):
    problem = hinge_level_problem(data, -0.1)  # min_X g = 0.1 > 0: nothing can be feasible
    res = SOLVERS[name](problem)
    assert res.status == "no_feasible_iterate", (res.status, res.message)
    assert not res.success
    assert "check_feasibility" in res.message and "g = " in res.message
    # the best value the message reports cannot beat the true minimum 0.1 of g
    best = float(res.message.split("g = ")[-1].split()[0].rstrip(".;,"))
    assert best >= 0.1 - 1e-9
    # ...and the feasibility check the message points to certifies the infeasibility
    assert check_feasibility(problem).status == "certified_infeasible"


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_no_solver_reports_it_on_a_feasible_problem(data, name):
    problem = hinge_level_problem(data, +0.1)
    res = SOLVERS[name](problem)
    assert res.status in ("max_iter", "converged"), (res.status, res.message)


# ---------------------------------------------------------------------------- argument checks
def small_problem(data):
    return hinge_level_problem(data, 0.1)


CALLS = {
    "switching_subgradient": (lambda p, **kw: switching_subgradient(p, **kw), "max_iter"),
    "conex": (lambda p, **kw: conex(p, **kw), "max_iter"),
    "spider": (lambda p, **kw: spider(p, **kw), "max_iter"),
    "exact_penalty_trust_region": (lambda p, **kw: exact_penalty_trust_region(p, **kw), "max_iter"),
    "online_stochastic_subgradient": (lambda p, **kw: online_stochastic_subgradient(p, **kw), "max_iter"),
    "proximal_point_outer": (lambda p, **kw: proximal_point(p, rho_hat=1.0, **kw), "outer_iter"),
    "proximal_point_inner": (lambda p, **kw: proximal_point(p, rho_hat=1.0, **kw), "inner_iter"),
    "iqrc_outer": (lambda p, **kw: iqrc(p, **kw), "outer_iter"),
    "iqrc_inner": (lambda p, **kw: iqrc(p, **kw), "inner_iter"),
}


@pytest.mark.parametrize("value", [2.7, 0, -1, True, math.nan, 10.0])
@pytest.mark.parametrize("name", sorted(CALLS))
def test_iteration_counts_must_be_positive_integers(data, name, value):
    call, argument = CALLS[name]
    with pytest.raises(ValueError, match=f"^{argument}: must be an integer >= 1"):
        call(small_problem(data), **{argument: value})


# Solvers that evaluate a schedule for every iteration before their loop, and the count that sets its length.
SCHEDULED = {
    "switching_subgradient": (lambda p, n: switching_subgradient(p, max_iter=n, step_size=0.05), "max_iter"),
    "conex": (lambda p, n: conex(p, max_iter=n), "max_iter"),
    "proximal_point": (lambda p, n: proximal_point(p, rho_hat=1.0, inner_iter=n), "inner_iter"),
    "iqrc": (lambda p, n: iqrc(p, inner_iter=n), "inner_iter"),
    "iqrc_phase_one": (lambda p, n: iqrc(p, phase_one_iter=n, phase_one_step_size=0.1), "phase_one_iter"),
    "check_feasibility": (lambda p, n: check_feasibility(p, max_iter=n, step_size=0.5), "max_iter"),
    "check_feasibility_default_step": (lambda p, n: check_feasibility(p, max_iter=n), "max_iter"),
}


@pytest.mark.parametrize("name", sorted(SCHEDULED))
def test_iteration_counts_beyond_memory_are_refused_at_once(data, name):
    """A count whose schedule arrays cannot be held is an error naming it, raised before the loop (it was a
    bare MemoryError, or a machine driven into swap at counts just under that)."""
    call, argument = SCHEDULED[name]
    with pytest.raises(ValueError, match=f"^{argument}: 10,000,000,000,000 values of the .* schedule \\(evaluated "
                                         r"before the loop\) would need 72\.8 TiB, more than 1/8 of this machine's"):
        call(small_problem(data), 10**13)


def test_schedule_limit_is_an_eighth_of_the_memory(data, monkeypatch):
    """At a stated memory: 200 iterations (1,600 bytes per schedule) pass at 8 x 1,600 bytes, not one byte less."""
    monkeypatch.setattr(_memory_limit, "physical_memory", lambda: 8 * 1600)
    assert switching_subgradient(small_problem(data), max_iter=200, step_size=0.05).n_iter == 200
    monkeypatch.setattr(_memory_limit, "physical_memory", lambda: 8 * 1600 - 8)
    with pytest.raises(ValueError, match=r"^max_iter: 200 values of the step_size schedule .* would need 1\.6 KiB, "
                                         r"more than 1/8 of this machine's memory \(12\.5 KiB\)"):
        switching_subgradient(small_problem(data), max_iter=200, step_size=0.05)
    monkeypatch.setattr(_memory_limit, "physical_memory", lambda: None)   # the OS does not say: no check
    assert switching_subgradient(small_problem(data), max_iter=200, step_size=0.05).n_iter == 200


@pytest.mark.parametrize("name", ["switching_subgradient", "conex", "spider", "exact_penalty_trust_region",
                                  "online_stochastic_subgradient", "proximal_point_outer", "iqrc_outer"])
@pytest.mark.parametrize("kwargs, error, argument", [
    (dict(record_every=0), ValueError, "record_every"), (dict(record_every=2.5), ValueError, "record_every"),
    (dict(seed=-1), ValueError, "seed"), (dict(seed=0.5), ValueError, "seed"), (dict(seed="x"), TypeError, "seed"),
    (dict(callback="no"), TypeError, "callback"),
])
def test_common_arguments_are_checked_alike(data, name, kwargs, error, argument):
    call, _ = CALLS[name]
    extra = {"max_iter": 5} if name in ("online_stochastic_subgradient",) else {}
    with pytest.raises(error, match=f"^{argument}: "):
        call(small_problem(data), **kwargs, **extra)


@pytest.mark.parametrize("call, kwargs, argument", [
    (conex, dict(primal_step=-0.1), "primal_step"), (conex, dict(dual_step=math.inf), "dual_step"),
    (conex, dict(theta=math.nan), "theta"), (conex, dict(feasibility_tolerance=-1.0), "feasibility_tolerance"),
    (spider, dict(step_size=0.0), "step_size"), (spider, dict(q=2.5), "q"),
    (spider, dict(batch_size=1.5), "batch_size"),
    (spider, dict(max_data_passes_g=0.0), "max_data_passes_g"), (spider, dict(nu=math.inf), "nu"),
    (online_stochastic_subgradient, dict(max_iter=5, V=math.nan), "V"),
    (online_stochastic_subgradient, dict(max_iter=5, feasibility_tolerance=math.nan), "feasibility_tolerance"),
])
def test_step_sizes_and_tolerances_are_checked(data, call, kwargs, argument):
    with pytest.raises(ValueError, match=f"^{argument}: "):
        call(small_problem(data), **kwargs)


def test_proximal_point_and_iqrc_real_arguments(data):
    with pytest.raises(ValueError, match="^rho_hat: "):
        proximal_point(small_problem(data), rho_hat=math.inf)
    with pytest.raises(ValueError, match="^feasibility_tolerance: "):
        proximal_point(small_problem(data), rho_hat=1.0, feasibility_tolerance=-1e-3)
    with pytest.raises(ValueError, match="^phase_one_step_size: "):
        iqrc(small_problem(data), phase_one_step_size=-0.1)
    with pytest.raises(TypeError, match="^switching_level: "):
        iqrc(small_problem(data), switching_level="1e-3")


# ---------------------------------------------------------------------------- one status vocabulary
def test_status_lists_have_one_meaning_per_word():
    from fastcon._results import FEASIBILITY_STATUSES, PHASE_ONE_STATUSES, STATUSES
    for statuses in (STATUSES, FEASIBILITY_STATUSES, PHASE_ONE_STATUSES):
        assert len(set(statuses)) == len(statuses)
    # the words shared by the lists mean the same in each (see fastcon/_results.py)
    assert set(PHASE_ONE_STATUSES) - {"not_needed", "skipped"} <= set(FEASIBILITY_STATUSES) | set(STATUSES)
    for old in ("stalled_infeasible", "stationary_infeasible", "budget_exhausted"):
        assert old not in STATUSES + FEASIBILITY_STATUSES + PHASE_ONE_STATUSES


def test_every_status_the_solver_sources_set_is_listed():
    """A status literal assigned in fastcon/solvers (``status = "..."``, ``run.status = ... if ... else ...``,
    the first field of ``stop = ("...", reason, message)``) is in STATUSES or FEASIBILITY_STATUSES."""
    import ast
    from pathlib import Path

    import fastcon.solvers
    from fastcon._results import FEASIBILITY_STATUSES, STATUSES

    def literals(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, ast.IfExp):
            return literals(node.body) + literals(node.orelse)
        return []

    def is_status(target):
        return (isinstance(target, ast.Name) and target.id == "status"
                or isinstance(target, ast.Attribute) and target.attr == "status")

    found = {}
    for path in Path(fastcon.solvers.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Assign):
                continue
            for target in node.targets:
                values = []
                if is_status(target):
                    values = literals(node.value)
                elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    values = [v for t, e in zip(target.elts, node.value.elts) if is_status(t) for v in literals(e)]
                elif isinstance(target, ast.Name) and target.id == "stop" and isinstance(node.value, ast.Tuple):
                    values = literals(node.value.elts[0])
                for word in values:
                    found.setdefault(word, path.name)
    assert {"infeasible_stationary", "penalty_limit", "radius_limit", "certified_infeasible"} <= set(found)
    unknown = {word: where for word, where in found.items() if word not in STATUSES + FEASIBILITY_STATUSES}
    assert not unknown


def test_every_status_returned_in_these_scenarios_is_listed(data):
    from test_idca import QuadraticDC
    from test_iqrc import ring_problem

    from fastcon._results import FEASIBILITY_STATUSES, PHASE_ONE_STATUSES, STATUSES
    from fastcon.solvers import idca, penalty_subgradient, switching_polyak
    seen = {}
    for delta in (-0.1, 0.1):
        for name, solve in SOLVERS.items():
            seen[name, delta] = solve(hinge_level_problem(data, delta)).status
        seen["check_feasibility", delta] = check_feasibility(hinge_level_problem(data, delta)).status
    # x = 0 is a stationary point of the violated 1 - ||x|| <= 0: both DC solvers stop there
    stuck = QuadraticDC([0.2, 0.0], [0.0, 0.0], outside=[1.0])
    seen["switching_polyak_stuck"] = switching_polyak(stuck, max_iter=50).status
    seen["idca_stuck"] = idca(stuck, outer_iter=2, inner_iter=20).status
    assert seen["switching_polyak_stuck"] == seen["idca_stuck"] == "infeasible_stationary"
    ok = QuadraticDC([0.2, 0.0], [0.0, 2.0], outside=[1.0], halfspaces=[([1.0, 0.0], 5.0)])
    seen["switching_polyak"] = switching_polyak(ok, max_iter=200).status
    seen["idca"] = idca(ok, outer_iter=3, inner_iter=50).status
    seen["penalty_subgradient"] = penalty_subgradient(ok, penalty=1.0, max_iter=50, output="best_penalised").status
    feasibility = {key: seen.pop(key) for key in [k for k in seen if k[0] == "check_feasibility"]}
    assert set(feasibility.values()) == {"feasible", "certified_infeasible"}
    assert set(feasibility.values()) <= set(FEASIBILITY_STATUSES)
    assert set(seen.values()) <= set(STATUSES), seen
    phases = [iqrc(ring_problem([0.0], [0.0]), rho_hat=3.0, rho=2.0, outer_iter=1, inner_iter=10),
              iqrc(ring_problem([0.0], [0.5]), rho_hat=3.0, rho=2.0, outer_iter=1, inner_iter=10, phase_one_iter=5,
                   phase_one_step_size=1e-3),
              iqrc(ring_problem([0.0], [0.5]), rho_hat=3.0, rho=2.0, outer_iter=1, inner_iter=10),
              iqrc(ring_problem([0.0], [1.5]), rho_hat=3.0, rho=2.0, outer_iter=1, inner_iter=10)]
    assert [r.info["phase_one"]["status"] for r in phases] == ["infeasible_stationary", "undecided", "feasible",
                                                               "not_needed"]
    assert {r.status for r in phases} <= set(STATUSES)


@pytest.mark.parametrize("name, solve", [
    ("switching_subgradient", lambda p: switching_subgradient(p)),
    ("conex", lambda p: conex(p)),
    ("spider", lambda p: spider(p)),
    ("exact_penalty_trust_region", lambda p: exact_penalty_trust_region(p)),
    ("augmented_lagrangian", lambda p: augmented_lagrangian(p)),
    ("check_feasibility", lambda p: check_feasibility(p)),
    ("proximal_point", lambda p: proximal_point(p, rho_hat=1.0)),
    ("iqrc", lambda p: iqrc(p)),
    ("online_stochastic_subgradient", lambda p: online_stochastic_subgradient(p, max_iter=10)),
    ("near_stationarity", lambda p: near_stationarity(p, p.x0, 1.0)),
])
def test_a_constrained_problem_solver_names_the_missing_methods_of_another_problem(name, solve):
    from test_idca import QuadraticDC
    dc = QuadraticDC([0.2, 0.0], [0.0, 2.0], outside=[1.0])
    with pytest.raises(TypeError, match=rf"^problem: {name} needs .*; QuadraticDC lacks objective, constraints, "
                                        r"domain, check_x, f, f_and_subgradient, g, g_and_subgradient"):
        solve(dc)
