r"""Argument checks shared by every solver, so that a bad number is rejected alike everywhere.

Each check returns the normalised value and raises with a message that starts with the argument's
name. Numbers of the wrong kind (``2.7`` iterations, ``True``, NaN, a negative step) raise
`ValueError`; values that are not numbers at all (a string, None where a number is required) raise
`TypeError`.

Conventions (the solvers' docstrings say which applies to each parameter):

- *counts* (``max_iter``, ``record_every``, batch sizes): Python or NumPy integers, never ``bool``
  and never a float, even an integral one — ``max_iter=2.7`` used to run 2 iterations silently,
  and accepting ``10.0`` but not ``10.5`` would make the rule depend on the value.
- *step sizes and tolerances*: finite reals, non-negative or positive as the parameter needs; a
  schedule (callable of ``t``) is evaluated once over the run and every value is checked. The count
  that sets a schedule's length is refused, by name, when the float64 array would take more than
  an eighth of the machine's memory (`check_schedule_length`).
- *seeds*: an integer >= 0, a `numpy.random.SeedSequence`, a `numpy.random.Generator` or None
  (fresh entropy).
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from .._memory_limit import check_memory
from ._schedules import as_schedule

__all__ = ["check_count", "check_optional_count", "check_real", "check_optional_real", "check_schedule",
           "check_schedule_length", "check_seed", "check_callback"]


def _is_integer(value) -> bool:
    return isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_count(name, value, minimum=1) -> int:
    """An integer ``>= minimum`` (``bool`` and floats, even integral ones, are rejected)."""
    if _is_integer(value):
        if value < minimum:
            raise ValueError(f"{name}: must be an integer >= {minimum}, got {value!r}")
        return int(value)
    if isinstance(value, (numbers.Real, np.bool_)):
        raise ValueError(f"{name}: must be an integer >= {minimum}, got {value!r}")
    raise TypeError(f"{name}: expected an integer >= {minimum}, got {type(value).__name__} {value!r}")


def check_optional_count(name, value, minimum=1):
    """None, or `check_count`."""
    return None if value is None else check_count(name, value, minimum)


def check_real(name, value, *, positive=False, allow_inf=False, maximum=None) -> float:
    """A real number, finite unless ``allow_inf``, ``> 0`` if ``positive`` else ``>= 0`` (NaN never)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise TypeError(f"{name}: expected a number, got {type(value).__name__} {value!r}")
    value = float(value)
    if math.isnan(value) or (math.isinf(value) and not allow_inf):
        raise ValueError(f"{name}: must be finite, got {value!r}")
    if positive and not value > 0.0:
        raise ValueError(f"{name}: must be positive, got {value!r}")
    if not positive and not value >= 0.0:
        raise ValueError(f"{name}: must be non-negative, got {value!r}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name}: must be at most {maximum:g}, got {value!r}")
    return value


def check_optional_real(name, value, **kwargs):
    """None, or `check_real`."""
    return None if value is None else check_real(name, value, **kwargs)


def check_schedule_length(count, n, name="step_size") -> int:
    """``n``, or a ValueError naming ``count`` when a float64 schedule of ``n`` values would take more
    than an eighth of the machine's memory (a solver holds up to four such arrays)."""
    check_memory(count, f"{n:,} values of the {name} schedule (evaluated before the loop)", 8 * n, share=8)
    return n


def check_schedule(name, value, n, *, positive=False, signed=False, allow_inf=False, count="max_iter") -> np.ndarray:
    """The values :math:`s_0..s_{n-1}` of a float/callable/`Schedule`, each checked like `check_real`.

    ``signed=True`` allows negative values (e.g. a switching level below 0 is a stricter test).
    ``count`` names the argument that set ``n``: an ``n`` whose ``8 n`` bytes exceed an eighth of
    the machine's memory is a ValueError naming it (a solver holds up to four such arrays).
    """
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}: expected a float or a callable of the iteration t, got {value!r}")
    check_schedule_length(count, n, name)
    try:
        values = as_schedule(value, name).values(n)
    except ValueError as exc:
        message = str(exc)
        raise ValueError(message if message.startswith(f"{name}:") else f"{name}: {message}") from None
    if not allow_inf and not np.all(np.isfinite(values)):
        t = int(np.flatnonzero(~np.isfinite(values))[0])
        raise ValueError(f"{name}: values must be finite, got {values[t]!r} at t={t}")
    if positive and not np.all(values > 0.0):
        t = int(np.flatnonzero(~(values > 0.0))[0])
        raise ValueError(f"{name}: values must be positive, got {values[t]!r} at t={t}")
    if not (positive or signed) and not np.all(values >= 0.0):
        t = int(np.flatnonzero(~(values >= 0.0))[0])
        raise ValueError(f"{name}: values must be non-negative, got {values[t]!r} at t={t}")
    return values


def check_seed(name, value):
    """An integer >= 0, a `SeedSequence`, a `Generator` or None; returned unchanged (ints as int)."""
    if value is None or isinstance(value, (np.random.SeedSequence, np.random.Generator)):
        return value
    if _is_integer(value):
        if value < 0:
            raise ValueError(f"{name}: must be a non-negative integer, got {value!r}")
        return int(value)
    if isinstance(value, (numbers.Real, np.bool_)):
        raise ValueError(f"{name}: must be a non-negative integer, a numpy Generator or None, got {value!r}")
    raise TypeError(f"{name}: expected a non-negative integer, a numpy SeedSequence/Generator or None, got "
                    f"{type(value).__name__} {value!r}")


def check_callback(name, value):
    """None or a callable."""
    if value is not None and not callable(value):
        raise TypeError(f"{name}: must be callable or None, got {value!r}")
    return value
