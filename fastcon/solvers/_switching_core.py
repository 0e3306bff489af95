r"""The one switching-subgradient loop behind SSG, switching-Polyak, IDCA's and IQRC's inner solvers and
the stationarity certificate.

For :math:`t = 0, 1, \dots, T-1`:

.. math::

    x_{t+1} = \operatorname{proj}_{\mathcal X}\bigl(x_t - a_t \zeta_t\bigr), \qquad
    \zeta_t \in \begin{cases} \partial f(x_t) & g(x_t) \le \epsilon_t \ \text{(objective step)}, \\
    \partial g_{i^*}(x_t) & \text{otherwise (constraint step, } i^* \text{ the active constraint)}, \end{cases}

the scheme that [HL23] Algorithm 1, [MLY20] Algorithm 2 and [HHYL25] Algorithms 2–3 specialise. The
oracle, the step rules (`fastcon.solvers._step_rules`) and the hooks ``before_step`` / ``after_step``
are objects, never a switch on their type. Design notes: docs/design.md, 'Module notes'.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._kernels._vector import axpy

__all__ = ["SwitchingState", "SwitchingOutcome", "FusedOracle", "switching_loop"]


class FusedOracle:
    """An oracle whose constraint pass gives the value and the subgradient together.

    ``constraint`` calls ``eval_g(x, buffer)`` (one read of the constraint data, as [HL23] counts an
    iteration) and `switching_loop` must be given the same ``buffer`` as its ``constraint_buffer``;
    ``objective`` is ``eval_f(x, out) -> f``.

    Parameters
    ----------
    eval_g : callable ``(x, out) -> (g, i)``
    eval_f : callable ``(x, out) -> f`` or None
        None for a loop that never steps on the objective (its levels are :math:`-\\infty`, and a
        hook stops at :math:`g = -\\infty`).
    buffer : ndarray
    """

    def __init__(self, eval_g, eval_f, buffer):
        self.eval_g, self.eval_f, self.buffer = eval_g, eval_f, buffer

    def constraint(self, x):
        return self.eval_g(x, self.buffer)

    def constraint_subgradient(self, x, i, out):
        """Nothing to do: `constraint` wrote the subgradient into the shared buffer."""

    def objective(self, x, out):
        # Without eval_f only g = -inf (no constraint) reaches here, and the hooks stop on it.
        return math.nan if self.eval_f is None else self.eval_f(x, out)


@dataclass
class SwitchingState:
    """What the hooks see at iteration ``t`` (one object, updated in place).

    Attributes
    ----------
    t : int
        The iteration.
    kind : str
        ``"f"`` (objective step) or ``"g"`` (constraint step).
    constraint : float
        :math:`g(x_t)` as the oracle reports it.
    index : int
        The active constraint :math:`i^*` (-1 without constraints).
    objective : float
        :math:`f(x_t)` on objective steps, NaN on constraint steps.
    level : float
        :math:`\\epsilon_t`.
    direction : ndarray
        :math:`\\zeta_t` (a live buffer).
    step : float
        :math:`a_t` (NaN until the rule has answered).
    count : int
        Steps of this kind taken before this one.
    """

    t: int = -1
    kind: str = ""
    constraint: float = math.nan
    index: int = -1
    objective: float = math.nan
    level: float = math.nan
    direction: np.ndarray = None
    step: float = math.nan
    count: int = 0


@dataclass
class SwitchingOutcome:
    """How `switching_loop` ended.

    Attributes
    ----------
    n_iter : int
        Iterations run (the stopping one included).
    stop : str or None
        None when all ``max_iter`` iterations ran; ``"zero_objective_direction"`` /
        ``"zero_constraint_direction"`` when a step rule met :math:`\\zeta = 0`; else the hook's reason.
    objective_steps, constraint_steps : int
        Steps of each kind taken (the stopping iteration's choice counted).
    best_constraint : float
        The smallest :math:`g(x_t)` seen.
    last : SwitchingState
        The state of the last iteration.
    """

    n_iter: int
    stop: object
    objective_steps: int
    constraint_steps: int
    best_constraint: float
    last: SwitchingState


def switching_loop(x, oracle, levels, max_iter, *, objective_rule, constraint_rule, project=None,
                   before_step=None, after_step=None, objective_buffer=None, constraint_buffer=None):
    """Run the switching iteration on ``x`` in place (module docstring).

    Parameters
    ----------
    x : ndarray
        :math:`x_0`, overwritten by the iterates.
    oracle : object
        ``constraint(x) -> (g, i)``, ``constraint_subgradient(x, i, out)``, ``objective(x, out) -> f``.
    levels : ndarray
        :math:`\\epsilon_0, \\dots, \\epsilon_{T-1}` of the switching test :math:`g(x_t) \\le \\epsilon_t`.
    max_iter : int
        :math:`T`.
    objective_rule, constraint_rule : step rule
        :math:`a_t` of each kind of step (`fastcon.solvers._step_rules`).
    project : callable ``(x) -> None``, optional
        In-place projection onto the domain after each step.
    before_step, after_step : callable ``(SwitchingState) -> reason or None``, optional
        Hooks before the update (on :math:`x_t`) and after it (on :math:`x_{t+1}`).
    objective_buffer, constraint_buffer : ndarray, optional
        Subgradient buffers (allocated when not given).

    Returns
    -------
    SwitchingOutcome
    """
    grad = np.empty_like(x) if objective_buffer is None else objective_buffer
    sub = np.empty_like(x) if constraint_buffer is None else constraint_buffer
    state = SwitchingState()
    n_obj = n_con = 0
    best_g = math.inf
    stop, t = None, -1
    for t in range(max_iter):
        g, i = oracle.constraint(x)
        if g < best_g:
            best_g = g
        level = levels[t]
        if g <= level:
            f = oracle.objective(x, grad)
            kind, direction, rule, count = "f", grad, objective_rule, n_obj
            n_obj += 1
        else:
            oracle.constraint_subgradient(x, i, sub)
            kind, direction, rule, count, f = "g", sub, constraint_rule, n_con, math.nan
            n_con += 1
        state.t, state.kind, state.constraint, state.index, state.objective = t, kind, g, i, f
        state.level, state.direction, state.step, state.count = level, direction, math.nan, count
        if before_step is not None:
            stop = before_step(state)
            if stop:
                break
        a = rule.length(t, count, f if kind == "f" else g, level, direction)
        if a is None:
            stop = "zero_objective_direction" if kind == "f" else "zero_constraint_direction"
            break
        state.step = a
        axpy(-a, direction, x)
        if project is not None:
            project(x)
        if after_step is not None:
            stop = after_step(state)
            if stop:
                break
    return SwitchingOutcome(t + 1, stop or None, n_obj, n_con, best_g, state)
