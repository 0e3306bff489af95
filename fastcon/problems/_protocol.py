"""The one up-front check of what a problem, a model or a term can do.

Solvers are duck-typed: a problem is whatever has the methods a solver calls. Each solver states the
methods it needs once, at its top, through `require_capabilities`, so a missing one stops the call
before any work with one error naming the solver, the argument and every missing method, instead
of an AttributeError deep inside an iteration.
"""
from __future__ import annotations

__all__ = ["CONSTRAINED_PROBLEM", "DC_PROBLEM", "SCORE_PROBLEM", "SCORE_MODEL", "missing_capabilities",
           "require_capabilities", "require_constrained_problem"]

#: The `fastcon.problems.ConstrainedProblem` protocol: what the solvers of ``min f s.t. g <= 0 over
#: a domain`` (switching_subgradient, conex, spider, iqrc, ...) read from their ``problem``.
CONSTRAINED_PROBLEM = ("objective", "constraints", "domain", "dim", "x0", "n_constraints", "check_x", "f",
                       "f_and_subgradient", "constraint_values", "g", "g_and_subgradient", "max_violation",
                       "lagrangian", "curvature_diagonal", "project", "project_inplace", "n_samples_f",
                       "n_samples_g", "rows_read_f", "rows_read_g", "reset_counters")

#: The DC problem of partial fairness (`fastcon.problems.PartialFairnessProblem`) as
#: `fastcon.solvers.idca` reads it: :math:`g_i = g_i^+ - g_i^-`, with :math:`g^-` linearised.
DC_PROBLEM = ("dim", "n_constraints", "x0", "objective_value", "objective_value_and_gradient", "constraint_values",
              "plus_values", "plus_subgradient", "minus_linearization")

#: A score problem and a score model (`fastcon.problems.NeymanPearsonScores`, `GroupLossGap`,
#: `LinearScoreModel`) as `fastcon.solvers.abpp` and `cbpr` read them.
SCORE_PROBLEM = ("n_constraints", "constraint_values", "objective_value", "lagrangian")
SCORE_MODEL = ("n_samples", "n_outputs", "initial_state", "scores", "divergence", "prox_step", "parameters")


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


def require_constrained_problem(problem, solver):
    """Raise one TypeError unless ``problem`` has the `CONSTRAINED_PROBLEM` protocol.

    Parameters
    ----------
    problem : object
        The solver's ``problem`` argument.
    solver : str
        The solver's name, for the message.

    Raises
    ------
    TypeError
        Naming ``problem``, ``solver`` and every missing method (see `require_capabilities`).
    """
    require_capabilities(problem, "problem", CONSTRAINED_PROBLEM, solver,
                         hint="a fastcon.problems.ConstrainedProblem(objective, constraints, domain)")
