r"""Solvers: one module per algorithm family, generic over `fastcon.problems.ConstrainedProblem`.

Every solver returns a `fastcon.SolveResult` and accepts schedules as a float or a callable of the
iteration (see `fastcon.solvers._schedules`).

Common keywords mean the same in every solver that has them (tests/test_solver_keywords.py):
``x0`` (start, projected onto the domain), ``max_iter`` (an upper bound on the iterations run),
``switching_level`` (the level :math:`\epsilon_t` of the switching test :math:`g(x_t) \le \epsilon_t`),
``feasibility_tolerance`` (the threshold on :math:`g` below which a point counts as feasible),
``tol`` (a stopping tolerance on the solver's own progress measure), ``multipliers0`` (initial
multipliers), ``output="best_feasible"`` (the best feasible iterate), ``seed`` (same seed, same
bits), ``record_every`` (history rows at the multiples of it, plus the last iteration; default
None: `fastcon.solvers._common.default_record_every`), ``callback(t, x_{t+1}, info) -> bool`` (True
stops with status ``"callback_stop"``), ``verbose`` and ``step_size`` (the primal step's scale).
"""
from ._schedules import as_schedule, constant, inverse_linear, inverse_sqrt, linear
from .conex import conex, prox_weights_to_steps
from .proximal_point import proximal_point
from .online_stochastic import online_stochastic_subgradient
from .iqrc import iqrc, iqrc_step_size
from .exact_penalty import exact_penalty_trust_region
from ._smoothed_penalty import kkt_multiplier, smoothed_plus, smoothed_plus_derivative
from .spider import spider, spider_theory_parameters
from .switching import check_certificate, switching_subgradient, switching_theory_parameters
from .augmented_lagrangian import augmented_lagrangian
from .feasibility import FeasibilityResult, check_feasibility
from .projected_gradient import gradient_lipschitz_constant, projected_gradient
from .idca import idca, idca_theory_parameters
from .switching_polyak import switching_polyak
from .stationarity import near_stationarity
from .penalty_subgradient import penalty_subgradient
from .abpp import abpp, abpp_lipschitz_constant
from .cbpr import cbpr

__all__ = [
    "augmented_lagrangian",
    "switching_subgradient", "switching_theory_parameters", "check_certificate", "conex", "prox_weights_to_steps",
    "proximal_point", "iqrc", "iqrc_step_size", "online_stochastic_subgradient", "exact_penalty_trust_region",
    "spider", "spider_theory_parameters", "smoothed_plus", "smoothed_plus_derivative",
    "kkt_multiplier", "as_schedule", "constant", "inverse_sqrt", "linear", "inverse_linear",
    "check_feasibility", "FeasibilityResult",
    "idca", "idca_theory_parameters", "switching_polyak", "near_stationarity", "penalty_subgradient",
    "projected_gradient", "gradient_lipschitz_constant",
    "abpp", "abpp_lipschitz_constant", "cbpr",
]
