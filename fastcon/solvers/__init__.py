"""Solvers: one module per algorithm family, generic over `fastcon.problems.ConstrainedProblem`.

Every solver returns a `fastcon.SolveResult` and accepts schedules as a float or a callable of the
iteration (see `fastcon.solvers._schedules`).
"""
from ._schedules import as_schedule, constant, inverse_linear, inverse_sqrt, linear
from .conex import conex, prox_weights_to_steps
from .proximal_point import proximal_point
from .online_stochastic import online_stochastic_subgradient
from .iqrc import iqrc, iqrc_step_size
from .exact_penalty import exact_penalty_trust_region
from ._smoothed_penalty import kkt_multiplier, smoothed_plus, smoothed_plus_derivative
from .spider import spider
from .spider import theory_parameters as spider_theory_parameters
from .switching import check_certificate, switching_subgradient, theory_parameters
from .feasibility import FeasibilityResult, check_feasibility, support_function

__all__ = [
    "switching_subgradient", "theory_parameters", "check_certificate", "conex", "prox_weights_to_steps",
    "proximal_point", "iqrc", "iqrc_step_size", "online_stochastic_subgradient", "exact_penalty_trust_region",
    "spider", "spider_theory_parameters", "smoothed_plus", "smoothed_plus_derivative",
    "kkt_multiplier", "as_schedule", "constant", "inverse_sqrt", "linear", "inverse_linear",
    "check_feasibility", "FeasibilityResult", "support_function",
]
