"""The switching core (`fastcon.solvers._switching_core`) and its step rules against a plain loop; a new
step rule and a new oracle added in this file alone (issue 37: adding a step rule touches one file)."""
import math

import numpy as np
import pytest

from fastcon.solvers._step_rules import LevelStep, NormalizedStep, PolyakStep, ScheduleStep, StronglyConvexStep
from fastcon.solvers._switching_core import FusedOracle, switching_loop

# f(x) = ||x - c||_1 (non-smooth), g(x) = max_i (a_i x - b_i): a polyhedral problem in R^3.
C = np.array([2.0, -1.0, 0.5])
A = np.array([[1.0, 1.0, 0.0], [0.0, -1.0, 2.0], [-1.0, 0.0, 0.0]])
B = np.array([0.5, 1.0, 0.2])


class PolyhedralOracle:
    """The oracle protocol of the core: constraint value and active index, its subgradient, the objective."""

    def __init__(self):
        self.calls = {"constraint": 0, "subgradient": 0, "objective": 0}

    def constraint(self, x):
        self.calls["constraint"] += 1
        v = A @ x - B
        i = int(np.argmax(v))
        return float(v[i]), i

    def constraint_subgradient(self, x, i, out):
        self.calls["subgradient"] += 1
        out[:] = A[i]

    def objective(self, x, out):
        self.calls["objective"] += 1
        out[:] = np.sign(x - C)
        return float(np.abs(x - C).sum())


def reference(x, levels, T, objective_length, constraint_length, radius=None):
    """The switching iteration written out: the oracle's definitions and the step lengths inline."""
    x = x.copy()
    n_obj = n_con = 0
    kinds = []
    for t in range(T):
        v = A @ x - B
        i = int(np.argmax(v))
        if v[i] <= levels[t]:
            d = np.sign(x - C)
            a = objective_length(t, n_obj, float(np.abs(x - C).sum()), levels[t], d)
            n_obj += 1
            kinds.append("f")
        else:
            d = A[i].copy()
            a = constraint_length(t, n_con, float(v[i]), levels[t], d)
            n_con += 1
            kinds.append("g")
        if a is None:
            break
        x = x - a * d
        if radius is not None and np.linalg.norm(x) > radius:
            x = x * (radius / np.linalg.norm(x))
    return x, kinds


def _project_ball(radius):
    def project(x):
        n = np.linalg.norm(x)
        if n > radius:
            x *= radius / n
    return project


RULES = {
    "schedule": (lambda T: ScheduleStep(0.1 / np.sqrt(np.arange(T) + 1.0)),
                 lambda t, c, v, lev, d: 0.1 / math.sqrt(t + 1.0)),
    "polyak": (lambda T: PolyakStep(), lambda t, c, v, lev, d: None if d @ d == 0 else v / (d @ d)),
    "strongly_convex": (lambda T: StronglyConvexStep(4.0), lambda t, c, v, lev, d: 2.0 / (4.0 * (c + 2.0))),
    "normalized": (lambda T: NormalizedStep(0.3 / np.sqrt(np.arange(T) + 1.0)),
                   lambda t, c, v, lev, d: 0.3 / math.sqrt(t + 1.0) / np.linalg.norm(d)),
}


@pytest.mark.parametrize("objective_rule", sorted(RULES))
@pytest.mark.parametrize("constraint_rule", ["schedule", "polyak", "normalized"])
@pytest.mark.parametrize("radius", [None, 1.5])
def test_core_equals_the_written_out_loop(objective_rule, constraint_rule, radius):
    T = 200
    levels = np.full(T, 1e-3)
    x0 = np.array([3.0, 2.0, -2.0])
    x = x0.copy()
    kinds = []
    run = switching_loop(x, PolyhedralOracle(), levels, T, objective_rule=RULES[objective_rule][0](T),
                         constraint_rule=RULES[constraint_rule][0](T),
                         project=None if radius is None else _project_ball(radius),
                         before_step=lambda s: kinds.append(s.kind))
    want, want_kinds = reference(x0, levels, T, RULES[objective_rule][1], RULES[constraint_rule][1], radius)
    np.testing.assert_allclose(x, want, rtol=1e-12, atol=1e-14)
    assert kinds == want_kinds
    assert run.objective_steps == kinds.count("f") and run.constraint_steps == kinds.count("g")
    assert run.n_iter == T and run.stop is None


def test_level_step_reaches_the_constrained_minimum():
    """Nesterov's switching method (LevelStep / PolyakStep): the best nearly-feasible objective tends to
    the optimum of min ||x - c||_1 s.t. Ax <= b, computed here by an LP."""
    from scipy.optimize import linprog

    def lp(b):  # min sum(u) s.t. -u <= x - c <= u, A x <= b: variables (x, u)
        n = 3
        return linprog(np.r_[np.zeros(n), np.ones(n)],
                       A_ub=np.block([[np.eye(n), -np.eye(n)], [-np.eye(n), -np.eye(n)], [A, np.zeros((3, n))]]),
                       b_ub=np.r_[C, -C, b], bounds=[(None, None)] * 2 * n).fun
    best = [math.inf]

    def keep(state):
        if state.kind == "f":
            best[0] = min(best[0], state.objective)

    eps = 1e-3
    x = np.zeros(3)
    switching_loop(x, PolyhedralOracle(), np.full(20000, eps), 20000, objective_rule=LevelStep(),
                   constraint_rule=PolyakStep(), before_step=keep)
    # iterates with g <= eps may go below the optimum, not below that of the relaxed set Ax <= b + eps
    assert lp(B + eps) - 1e-9 <= best[0] <= lp(B) + 0.01


def test_hooks_stop_and_zero_directions():
    # after_step's reason ends the run after the step of that iteration
    x = np.array([3.0, 2.0, -2.0])
    run = switching_loop(x, PolyhedralOracle(), np.full(50, 1e-3), 50, objective_rule=ScheduleStep(np.full(50, 0.1)),
                         constraint_rule=ScheduleStep(np.full(50, 0.1)),
                         after_step=lambda s: "enough" if s.t == 6 else None)
    assert run.stop == "enough" and run.n_iter == 7 and run.last.t == 6

    # before_step's reason ends it before the step: x is x_t
    x = np.array([3.0, 2.0, -2.0])
    seen = []
    run = switching_loop(x, PolyhedralOracle(), np.full(50, 1e-3), 50, objective_rule=ScheduleStep(np.full(50, 0.1)),
                         constraint_rule=ScheduleStep(np.full(50, 0.1)),
                         before_step=lambda s: seen.append(x.copy()) or ("here" if s.t == 3 else None))
    assert run.stop == "here" and run.n_iter == 4
    np.testing.assert_array_equal(x, seen[-1])

    # a zero subgradient stops a Polyak-type rule with a reason naming the kind of step
    class Flat(PolyhedralOracle):
        def constraint_subgradient(self, x, i, out):
            out[:] = 0.0
    run = switching_loop(np.array([3.0, 2.0, -2.0]), Flat(), np.full(10, 1e-3), 10, objective_rule=LevelStep(),
                         constraint_rule=PolyakStep())
    assert run.stop == "zero_constraint_direction" and run.n_iter == 1 and run.constraint_steps == 1
    # ... and a schedule rule does not stop on it (x stays put)
    x = np.array([3.0, 2.0, -2.0])
    run = switching_loop(x, Flat(), np.full(10, 1e-3), 10, objective_rule=ScheduleStep(np.ones(10)),
                         constraint_rule=ScheduleStep(np.ones(10)))
    assert run.stop is None and run.n_iter == 10
    np.testing.assert_array_equal(x, [3.0, 2.0, -2.0])


def test_fused_oracle_reads_the_constraint_once_per_iteration():
    calls = {"g": 0}

    def eval_g(x, out):
        calls["g"] += 1
        v = A @ x - B
        i = int(np.argmax(v))
        out[:] = A[i]
        return float(v[i]), i

    buf = np.empty(3)
    oracle = PolyhedralOracle()
    x = np.array([3.0, 2.0, -2.0])
    run = switching_loop(x, FusedOracle(eval_g, oracle.objective, buf), np.full(30, 1e-3), 30,
                         objective_rule=ScheduleStep(np.full(30, 0.05)), constraint_rule=ScheduleStep(np.full(30, 0.05)),
                         constraint_buffer=buf)
    assert calls["g"] == 30 and oracle.calls["objective"] == run.objective_steps
    x_ref = np.array([3.0, 2.0, -2.0])
    switching_loop(x_ref, PolyhedralOracle(), np.full(30, 1e-3), 30, objective_rule=ScheduleStep(np.full(30, 0.05)),
                   constraint_rule=ScheduleStep(np.full(30, 0.05)))
    np.testing.assert_array_equal(x, x_ref)


class AdaGradNormStep:
    """A step rule the library does not have, written here only: a = c / sqrt(sum of ||zeta_s||^2 so far)
    (AdaGrad-norm, Ward, Wu & Bottou 2019), over the steps of its own kind."""

    def __init__(self, c):
        self.c, self.total = c, 0.0

    def length(self, t, count, value, level, direction):
        self.total += float(direction @ direction)
        return None if self.total == 0.0 else self.c / math.sqrt(self.total)


def test_a_new_step_rule_is_one_class():
    T = 3000
    x = np.array([3.0, 2.0, -2.0])
    best = [math.inf, None]

    def keep(state):
        if state.kind == "f" and state.objective < best[0]:
            best[:] = [state.objective, x.copy()]

    run = switching_loop(x, PolyhedralOracle(), np.full(T, 1e-2), T, objective_rule=AdaGradNormStep(0.5),
                         constraint_rule=AdaGradNormStep(0.5), before_step=keep)
    assert run.objective_steps > 0 and run.constraint_steps > 0
    # the same rule written out in the reference loop gives the same iterates
    totals = {"f": 0.0, "g": 0.0}

    def ada(kind):
        def length(t, c, v, lev, d):
            totals[kind] += float(d @ d)
            return 0.5 / math.sqrt(totals[kind])
        return length
    want, _ = reference(np.array([3.0, 2.0, -2.0]), np.full(T, 1e-2), T, ada("f"), ada("g"))
    np.testing.assert_allclose(x, want, rtol=1e-12)
    # and it solves the problem: the best nearly-feasible point is nearly feasible and near the LP value
    assert np.max(A @ best[1] - B) <= 1e-2
