"""The one up-front check of what a problem, a model or a term can do.

Solvers are duck-typed: a problem is whatever has the methods a solver calls. Each solver states the
methods it needs once, at its top, through `require_capabilities`, so a missing one stops the call
before any work with one error naming the solver, the argument and every missing method, instead
of an AttributeError deep inside an iteration.
"""
from __future__ import annotations

__all__ = ["missing_capabilities", "require_capabilities"]


def missing_capabilities(obj, names) -> list:
    """The names in ``names`` that ``obj`` has no attribute for, in the given order.

    Parameters
    ----------
    obj : object
        The problem, model or term.
    names : iterable of str
        Method or attribute names.

    Returns
    -------
    list of str
    """
    return [name for name in names if not hasattr(obj, name)]


def require_capabilities(obj, field, names, solver, hint=None):
    """Raise one TypeError unless ``obj`` has every method (or attribute) in ``names``.

    Parameters
    ----------
    obj : object
        The problem, model or term the solver was given.
    field : str
        The argument the error is about (``"problem"``, ``"model"``, or the option that needs the
        methods, e.g. ``"early_stop"``); the message starts with it.
    names : iterable of str
        What the solver calls on ``obj``.
    solver : str
        The solver's name, for the message.
    hint : str, optional
        What to do instead, appended to the message.

    Raises
    ------
    TypeError
        ``"{field}: {solver} needs {names}; {class of obj} lacks {missing} ({hint})"``.
    """
    names = tuple(names)
    missing = missing_capabilities(obj, names)
    if missing:
        raise TypeError(f"{field}: {solver} needs {', '.join(names)}; {type(obj).__name__} lacks "
                        f"{', '.join(missing)}" + (f" ({hint})" if hint else ""))
