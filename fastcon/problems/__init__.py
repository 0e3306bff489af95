"""Problems: objective and constraint terms bound to data, with value/subgradient oracles."""
from ._compose import BlockTerm, CustomTerm, ProximalTerm, ShiftedTerm, custom_term, less_equal
from ._design import DesignMatrix
from ._domains import Ball, Box, Product, ProductOfBalls, Whole
from ._margin_risk import (
    MarginRisk, hinge_risk, logistic_risk, margin_risk, sigmoid_risk, squared_hinge_risk,
)
from ._problem import ConstrainedProblem

__all__ = [
    "MarginRisk", "margin_risk", "hinge_risk", "logistic_risk", "sigmoid_risk", "squared_hinge_risk",
    "ConstrainedProblem", "less_equal", "ShiftedTerm", "ProximalTerm", "BlockTerm", "custom_term",
    "CustomTerm", "DesignMatrix", "Whole", "Ball", "ProductOfBalls", "Box", "Product",
]
