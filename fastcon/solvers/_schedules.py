r"""Step-size and switching-level schedules: a float, a callable of the iteration ``t``, or a named helper.

Solvers accept every schedule parameter (``step_size`` :math:`\eta_t`, ``switching_level``
:math:`\epsilon_t`, ConEx's ``primal_step``/``dual_step``/``theta``, averaging weights) in any of
these forms and turn it into a `Schedule` with `as_schedule`. A solver evaluates the schedule once
for ``t = 0..T-1`` before its loop (`Schedule.values`), so the loop reads a preallocated array and a
user callable is called exactly once per iteration index.

Named helpers (``c`` a constant, ``t`` the 0-based iteration):

=====================  ===========================  =============================================
helper                 value                        used by
=====================  ===========================  =============================================
``constant(c)``        :math:`c`                    static SSG ([HL23] Thm 4.2 Case I)
``inverse_sqrt(c)``    :math:`c / \sqrt{t + 1}`     diminishing SSG (Thm 4.2 Case II), ConEx
``linear(c)``          :math:`c\,(t + 1)`           IPP-ConEx prox weights, (k+1) averaging weights
``inverse_linear(c)``  :math:`c / (t + 1)`          IPP-ConEx dual prox weight, strongly convex SG
=====================  ===========================  =============================================
"""
from __future__ import annotations

import numbers

import numpy as np

__all__ = ["Schedule", "as_schedule", "constant", "inverse_sqrt", "linear", "inverse_linear"]


class Schedule:
    """A schedule :math:`t \\mapsto s_t` (``t = 0, 1, ...``).

    Parameters
    ----------
    func : callable ``t -> float``
        Evaluated on Python ints.
    name : str
        Shown by ``repr`` (and in ``SolveResult.info``).
    vectorized : callable ``ndarray[int] -> ndarray[float]``, optional
        Fast path for `values` (the named helpers have one).
    """

    def __init__(self, func, name="", vectorized=None):
        self._func = func
        self.name = name or getattr(func, "__name__", "schedule")
        self._vectorized = vectorized

    def __call__(self, t) -> float:
        return float(self._func(t))

    def values(self, n, start=0) -> np.ndarray:
        """``[s_start, ..., s_{start+n-1}]`` as a float64 array (checked: no NaN)."""
        if self._vectorized is not None:
            out = np.asarray(self._vectorized(np.arange(start, start + n, dtype=np.float64)),
                             dtype=np.float64)
            out = np.broadcast_to(out, (n,)).copy()
        else:
            out = np.fromiter((float(self._func(t)) for t in range(start, start + n)), np.float64, n)
        if np.isnan(out).any():
            t = int(np.flatnonzero(np.isnan(out))[0]) + start
            raise ValueError(f"{self.name}: schedule value at t={t} is NaN")
        return out

    def __repr__(self):
        return self.name


def constant(c) -> Schedule:
    r""":math:`s_t = c` (``c`` may be ``±inf``, e.g. a switching level that never/always switches).

    Parameters
    ----------
    c : float
        The constant value.
    """
    c = float(c)
    if np.isnan(c):
        raise ValueError("c: must not be NaN")
    return Schedule(lambda t: c, f"{c:g}", lambda t: np.full(t.shape, c))


def inverse_sqrt(c) -> Schedule:
    r""":math:`s_t = c / \sqrt{t + 1}`.

    Parameters
    ----------
    c : float
        The scale.
    """
    c = float(c)
    return Schedule(lambda t: c / np.sqrt(t + 1.0), f"{c:g}/sqrt(t+1)", lambda t: c / np.sqrt(t + 1.0))


def linear(c) -> Schedule:
    r""":math:`s_t = c\,(t + 1)`.

    Parameters
    ----------
    c : float
        The scale.
    """
    c = float(c)
    return Schedule(lambda t: c * (t + 1.0), f"{c:g}*(t+1)", lambda t: c * (t + 1.0))


def inverse_linear(c) -> Schedule:
    r""":math:`s_t = c / (t + 1)`.

    Parameters
    ----------
    c : float
        The scale.
    """
    c = float(c)
    return Schedule(lambda t: c / (t + 1.0), f"{c:g}/(t+1)", lambda t: c / (t + 1.0))


def as_schedule(value, name="schedule") -> Schedule:
    """Turn a float, a callable of ``t`` or a `Schedule` into a `Schedule`.

    Parameters
    ----------
    value : float, callable or Schedule
    name : str
        Parameter name used in error messages.
    """
    if isinstance(value, Schedule):
        return value
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        if np.isnan(value):
            raise ValueError(f"{name}: must not be NaN")
        return constant(value)
    if callable(value):
        return Schedule(value, getattr(value, "__name__", name))
    raise ValueError(f"{name}: expected a float or a callable of the iteration t, got {value!r}")
