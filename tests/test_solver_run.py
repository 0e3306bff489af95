"""The solver scaffold `SolverRun`: history rows, callback stop, best feasible iterate, statuses."""
import inspect
import math

import numpy as np
import pytest

from fastcon.problems import ConstrainedProblem, Whole, custom_term, less_equal
from fastcon.solvers._common import no_feasible_message
from fastcon.solvers._run import SolverRun


def test_common_keywords_are_checked_by_name():
    with pytest.raises(ValueError, match="^max_iter:"):
        SolverRun("s", 0)
    with pytest.raises(ValueError, match="^outer_iter:"):
        SolverRun("s", 2.0, count_name="outer_iter")
    with pytest.raises(ValueError, match="^record_every:"):
        SolverRun("s", 3, record_every=0)
    with pytest.raises(TypeError, match="^callback:"):
        SolverRun("s", 3, callback=1)
    with pytest.raises(ValueError, match="^feasibility_tolerance:"):
        SolverRun("s", 3, feasibility_tolerance=-1.0)
    with pytest.raises(ValueError, match="^seed:"):
        SolverRun("s", 3, seed=-1)


def test_history_rows_at_multiples_and_the_last_iteration():
    run = SolverRun("s", 10, record_every=4).start()
    for t in range(10):
        if run.due(t):
            run.record(t, force=True, value=float(t), extra={"late": 1.0} if t == 8 else None)
        run.tick(t, None)
    h = run.finish(np.zeros(1)).history
    assert h["iteration"].tolist() == [0, 4, 8, 9]
    assert list(h) == ["iteration", "time", "value", "late"]
    np.testing.assert_array_equal(h["late"], [math.nan, math.nan, 1.0, math.nan])


def test_record_without_force_follows_the_period_and_ignores_repeats():
    run = SolverRun("s", 10, record_every=3).start()
    assert [t for t in range(10) if run.record(t, value=1.0)] == [0, 3, 6, 9]
    assert not run.record(9, force=True, value=2.0)


def test_default_period_is_the_shared_rule():
    assert SolverRun("s", 1000).start().record_every == 10
    assert SolverRun("s", 1000).start(record_rows=100, iteration_rows=10).record_every == 100
    assert SolverRun("s", 1000).start(default_every=1).record_every == 1
    assert SolverRun("s", 1000, record_every=7).start(default_every=1).record_every == 7


def _metered_problem():
    data = np.arange(6.0)

    def value(x):
        return float(np.mean((data - x[0]) ** 2))

    def value_and_gradient(x, out):
        out[0] = -2.0 * float(np.mean(data - x[0]))
        return value(x)

    def g_value_and_gradient(x, out):
        out[0] = 1.0
        return float(x[0])

    f = custom_term(value, value_and_gradient, n_features=1, n_samples=6)
    g = custom_term(lambda x: float(x[0]), g_value_and_gradient, n_features=1, n_samples=2)
    return ConstrainedProblem(f, [less_equal(g, 1.0)], Whole(), x0=np.zeros(1))


def test_metered_rows_exclude_history_evaluations():
    problem = _metered_problem()
    run = SolverRun("s", 3, record_every=1).start(problem)
    grad = np.empty(1)
    x = np.zeros(1)
    for t in range(3):
        problem.f_and_subgradient(x, grad)       # algorithm: one pass of f
        with run.meter:
            f = problem.f(x)                     # history only
        run.record(t, objective=f)
        run.tick(t, x)
    res = run.finish(x)
    assert list(res.history) == ["iteration", "time", "objective", "data_passes_f", "data_passes_g"]
    np.testing.assert_array_equal(res.history["data_passes_f"], [1.0, 2.0, 3.0])
    assert res.counters["rows_f"] == 18 and res.counters["rows_g"] == 0


def test_callback_true_stops_with_callback_stop_and_the_info():
    seen = []

    def callback(t, x, info):
        seen.append((t, info["y"]))
        return t == 2

    run = SolverRun("s", 10, callback=callback).start()
    with run:
        for t in range(10):
            if run.tick(t, np.zeros(1), {"y": 2 * t}):
                break
    res = run.finish(np.zeros(1), message="m")
    assert seen == [(0, 0), (1, 2), (2, 4)]
    assert (res.status, res.n_iter, res.message) == ("callback_stop", 3, "m")


def test_callback_stop_does_not_replace_a_status_set_in_the_same_iteration():
    run = SolverRun("s", 10, callback=lambda t, x, info: True).start()
    run.status = "converged"
    assert run.tick(0, None)
    assert run.finish(np.zeros(1)).status == "converged"


def test_best_feasible_is_the_lowest_objective_among_feasible_offers():
    run = SolverRun("s", 5, feasibility_tolerance=0.1).start()
    x = np.zeros(1)
    for t, (f, g) in enumerate([(0.0, 0.5), (3.0, 0.1), (2.0, 0.0), (2.0, -1.0), (1.0, 0.2)]):
        x[0] = t
        run.offer(t, g, x, f)
    assert run.best_iteration == 2 and run.best_x.tolist() == [2.0] and run.best_objective == 2.0
    assert run.best_constraint == -1.0
    x[0] = 7.0  # the kept iterate is a copy
    assert run.best_x.tolist() == [2.0]
    assert run.finish(x).status == "max_iter"


def test_offers_without_x_track_the_smallest_constraint_only():
    run = SolverRun("s", 5, feasibility_tolerance=0.1).start()
    run.offer(0, 0.05)
    assert run.best_x is None and run.best_constraint == 0.05


def test_no_feasible_iterate_status_and_message():
    run = SolverRun("s", 5, feasibility_tolerance=1e-3).start()
    for t, g in enumerate([0.5, 0.2, 0.3]):
        run.offer(t, g)
    res = run.finish(np.zeros(1), message="ran 3 iterations", subject="neither an iterate nor the output")
    assert res.status == "no_feasible_iterate"
    assert res.message == "ran 3 iterations; " + no_feasible_message(0.2, 1e-3, "neither an iterate nor the output")
    bare = SolverRun("s", 5, feasibility_tolerance=1e-3).start()
    bare.offer(0, 0.5)
    assert bare.finish(np.zeros(1)).message == no_feasible_message(0.5, 1e-3)


def test_no_feasible_iterate_only_replaces_the_listed_statuses():
    for status, listed, expected in (("callback_stop", ("max_iter",), "callback_stop"),
                                     ("penalty_limit", ("max_iter", "penalty_limit"),
                                      "no_feasible_iterate"),
                                     ("converged", ("max_iter",), "converged")):
        run = SolverRun("s", 5, feasibility_tolerance=0.0).start()
        run.offer(0, 1.0)
        run.status = status
        assert run.finish(np.zeros(1), no_feasible_from=listed).status == expected


def test_a_finish_tolerance_replaces_the_runs():
    run = SolverRun("s", 5).start()
    run.offer(0, 0.5)
    res = run.finish(np.zeros(1), message="m", feasibility_tolerance=0.25)
    assert res.status == "no_feasible_iterate"
    assert res.message == "m; " + no_feasible_message(0.5, 0.25)
    run = SolverRun("s", 5, feasibility_tolerance=0.25).start()
    run.offer(0, 0.5)
    assert run.finish(np.zeros(1), feasibility_tolerance=0.5).status == "max_iter"
    assert SolverRun("s", 5).start().finish(np.zeros(1)).status == "max_iter"  # no tolerance: no verdict
    assert not {"feasible", "tolerance"} & set(inspect.signature(SolverRun.finish).parameters)


def test_progress_is_closed_when_the_loop_raises(capsys):
    run = SolverRun("s", 10, verbose="lines").start()
    assert run.progress.active
    with pytest.raises(RuntimeError):
        with run:
            for t in range(10):
                run.tick(t, None, value=1.0)
                if t == 3:
                    raise RuntimeError("boom")
    assert not run.progress.active


def test_finish_closes_progress_and_uses_the_given_history():
    run = SolverRun("s", 4, verbose="lines").start()
    res = run.finish(np.ones(2), objective=1.5, max_violation=0.0, n_iter=2, info={"a": 1},
                     history={"iteration": np.arange(2)}, solver="s[x]")
    assert not run.progress.active
    assert (res.solver, res.n_iter, res.objective, res.info) == ("s[x]", 2, 1.5, {"a": 1})
    assert res.history["iteration"].tolist() == [0, 1]


def test_callable_progress_values_are_evaluated_only_when_shown(capsys):
    calls = []

    def value():
        calls.append(1)
        return 2.0

    silent = SolverRun("s", 3).start()
    for t in range(3):
        silent.tick(t, None, value=value)
    assert calls == []
    shown = SolverRun("s", 3, verbose="lines").start()
    for t in range(3):
        shown.tick(t, None, value=value)
    shown.close()
    assert len(calls) == 3
    assert "value=2" in capsys.readouterr().err


def test_a_solver_that_raises_before_its_loop_closes_its_progress(monkeypatch):
    from test_idca import QuadraticDC

    import fastcon.solvers._run as run_module
    from fastcon.solvers import exact_penalty_trust_region, idca
    shown = []

    class Tracked(run_module.Progress):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            shown.append(self)
    monkeypatch.setattr(run_module, "Progress", Tracked)

    def fail(*args):
        raise RuntimeError("oracle failed")
    with pytest.raises(RuntimeError, match="oracle failed"):  # the start is evaluated after start()
        exact_penalty_trust_region(ConstrainedProblem(custom_term(fail, fail, 1), [], Whole()), verbose="lines")

    class Broken(QuadraticDC):
        def objective_value(self, x):
            raise RuntimeError("oracle failed")
    with pytest.raises(RuntimeError, match="oracle failed"):
        idca(Broken([0.0], [0.0], halfspaces=[([1.0], 1.0)]), verbose="lines")
    assert len(shown) == 2 and not any(progress.active for progress in shown)
