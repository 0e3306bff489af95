"""Problems: objective and constraint terms bound to data, with value/subgradient oracles."""
from ._compose import BlockTerm, CustomTerm, PenalizedTerm, ProximalTerm, ShiftedTerm, custom_term, less_equal, \
    penalized
from ._demographic_parity import DemographicParityGap, smoothed_demographic_parity
from ._design import DesignMatrix
from ._erm import ErmResult, erm_optimum, hinge_constrained_problem, hinge_constraint
from ._domains import Ball, Box, ColumnBalls, Domain, Product, ProductOfBalls, Whole
from ._margin_risk import (
    MarginRisk, hinge_risk, logistic_risk, margin_risk, sigmoid_risk, squared_hinge_risk,
)
from ._linear_model import LinearLoss, LinearModelProblem, LinearScores
from ._score_models import LinearScoreModel
from ._score_problems import GroupLossGap, NeymanPearsonScores
from ._score_constraints import (
    FAIRNESS_CONSTRAINTS, RateGapConstraints, TransportGapConstraints, group_fairness_constraints,
    rate_bound_constraint,
)
from ._multiclass_np import ClassPairwiseRisk, multiclass_neyman_pearson, neyman_pearson
from ._problem import ConstrainedProblem
from ._transport_domain import TransportPolytope, transport_domain
from ._wasserstein import WassersteinFairness, wasserstein_fairness
from ._roc_fairness import ROCFairness, roc_fairness, roc_fairness_from_dataset, threshold_grid
from ._scad import ScadPenalty, scad_penalty
from ._cross_terms import cross_term_features
from ._partial_dp import PartialDPConstraints, partial_dp_constraints
from ._weak_partial_dp import WeakPartialDPConstraints, weak_partial_dp_constraints
from ._partial_fairness import PartialFairnessProblem
from ._pairwise_fairness import QCQPProjection, QuadraticConstraints, pairwise_fairness_constraints, qcqp_projection

__all__ = [
    "MarginRisk", "margin_risk", "hinge_risk", "logistic_risk", "sigmoid_risk", "squared_hinge_risk",
    "ConstrainedProblem", "less_equal", "ShiftedTerm", "ProximalTerm", "BlockTerm", "custom_term",
    "CustomTerm", "DesignMatrix", "Domain", "Whole", "Ball", "ProductOfBalls", "ColumnBalls", "Box",
    "Product",
    "ErmResult", "erm_optimum", "hinge_constraint", "hinge_constrained_problem",
    "ROCFairness", "roc_fairness", "roc_fairness_from_dataset", "threshold_grid",
    "WassersteinFairness", "wasserstein_fairness", "TransportPolytope", "transport_domain",
    "DemographicParityGap", "smoothed_demographic_parity", "ScadPenalty", "scad_penalty", "PenalizedTerm", "penalized",
    "ClassPairwiseRisk", "multiclass_neyman_pearson", "neyman_pearson",
    "LinearScores", "LinearLoss", "LinearModelProblem", "RateGapConstraints", "TransportGapConstraints",
    "group_fairness_constraints", "rate_bound_constraint", "FAIRNESS_CONSTRAINTS",
    "cross_term_features", "partial_dp_constraints", "weak_partial_dp_constraints", "PartialDPConstraints",
    "WeakPartialDPConstraints", "PartialFairnessProblem",
    "QuadraticConstraints", "pairwise_fairness_constraints", "qcqp_projection", "QCQPProjection",
    "LinearScoreModel", "NeymanPearsonScores", "GroupLossGap",
]
