"""Solvers: one module per algorithm family, generic over `fastcon.problems.ConstrainedProblem`.

Every solver returns a `fastcon.SolveResult` and accepts schedules as a float or a callable of the
iteration (see `fastcon.solvers._schedules`).
"""
from ._schedules import as_schedule, constant, inverse_linear, inverse_sqrt, linear
from .conex import conex, prox_weights_to_steps
from .proximal_point import proximal_point
from .switching import check_certificate, switching_subgradient, theory_parameters

__all__ = [
    "switching_subgradient", "theory_parameters", "check_certificate", "conex", "prox_weights_to_steps",
    "proximal_point", "as_schedule", "constant", "inverse_sqrt", "linear", "inverse_linear",
]
