r"""Step rules of the switching core: how far one step goes along the chosen subgradient.

A switching iteration moves :math:`x_{t+1} = x_t - a\,\zeta` along the objective's or the
constraint's subgradient :math:`\zeta` (`fastcon.solvers._switching_core`). A step rule answers
:math:`a` and nothing else, so the core never switches on a rule's type; a new rule is one class
with a ``length`` method (tests/test_switching_core.py adds one in the test file).

``length(t, count, value, level, direction)`` receives the iteration :math:`t`, the number of earlier
steps of the same kind (objective or constraint) ``count``, the value of the function stepped on
(:math:`f(x_t)` or :math:`g(x_t)`), the switching level :math:`\epsilon_t` and :math:`\zeta`; it returns
:math:`a \ge 0`, or None when :math:`\zeta = 0` leaves nothing to do (the core then stops).
"""
from __future__ import annotations

import numpy as np

__all__ = ["ScheduleStep", "PolyakStep", "LevelStep", "StronglyConvexStep", "NormalizedStep"]


class ScheduleStep:
    r""":math:`a = \eta_t`: a constant or a schedule of the iteration ([HL23] Algorithm 1).

    Parameters
    ----------
    values : ndarray
        :math:`\eta_0, \dots, \eta_{T-1}`, checked by the caller (``check_schedule``).
    """

    def __init__(self, values):
        self.values = values

    def length(self, t, count, value, level, direction):
        """:math:`\\eta_t` (a zero :math:`\\zeta` simply does not move :math:`x`)."""
        return self.values[t]


class PolyakStep:
    r"""The Polyak constraint step onto the linearised level set.

    :math:`a = (g(x_t) - c)/\|\zeta\|^2`: the projection of :math:`x_t` onto
    :math:`\{y : g(x_t) + \zeta^\top (y - x_t) \le c\}` with target :math:`c`.

    Parameters
    ----------
    target : float
        :math:`c` (0: the feasible set :math:`g \le 0`).
    """

    def __init__(self, target=0.0):
        self.target = float(target)

    def length(self, t, count, value, level, direction):
        """The Polyak length, or None when :math:`\\zeta = 0`."""
        norm2 = float(direction @ direction)
        return None if norm2 == 0.0 else (value - self.target) / norm2


class LevelStep:
    r"""Nesterov's objective step of the switching method: :math:`a = \epsilon_t/\|\zeta\|^2`.

    The step that [HHYL25] Algorithm 2 (and Algorithm 3) takes on the objective when
    :math:`g(x_t) \le \epsilon_t`: a Polyak step toward a decrease of :math:`\epsilon_t`.
    """

    def length(self, t, count, value, level, direction):
        """:math:`\\epsilon_t/\\|\\zeta\\|^2`, or None when :math:`\\zeta = 0`."""
        norm2 = float(direction @ direction)
        return None if norm2 == 0.0 else level / norm2


class StronglyConvexStep:
    r""":math:`a = 2/(\mu (j + 2))`, :math:`j` the number of earlier objective steps.

    The objective step of the switching method for a :math:`\mu`-strongly convex objective
    ([MLY20] Algorithm 2), counted in objective steps so that constraint steps do not shrink it.

    Parameters
    ----------
    mu : float
        :math:`\mu > 0`.
    """

    def __init__(self, mu):
        self.mu = float(mu)

    def length(self, t, count, value, level, direction):
        """:math:`2/(\\mu(j+2))` with :math:`j` = ``count``."""
        return 2.0 / (self.mu * (count + 2.0))


class NormalizedStep:
    r"""Steps of a given length: :math:`a = \lambda/\|\zeta\|` with :math:`\lambda` a schedule of the
    iteration, or the Polyak length :math:`\lambda = (g(x_t) - c)/\|\zeta\|` when ``lengths`` is None.

    Normalised steps suit a non-smooth function of any scale (`check_feasibility`).

    Parameters
    ----------
    lengths : ndarray or None
        :math:`\lambda_0, \dots`; None for the Polyak length.
    target : float
        :math:`c` of the Polyak length.
    """

    def __init__(self, lengths=None, target=0.0):
        self.lengths, self.target = lengths, float(target)

    def step_length(self, t, value, norm):
        """:math:`\\lambda_t`."""
        return (value - self.target) / norm if self.lengths is None else float(self.lengths[t])

    def length(self, t, count, value, level, direction):
        """:math:`\\lambda_t/\\|\\zeta\\|`, or None when :math:`\\zeta = 0`."""
        norm = float(np.linalg.norm(direction))
        if norm == 0.0:
            return None
        return self.step_length(t, value, norm) / norm

