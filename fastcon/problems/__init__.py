"""Problems: objective and constraint terms bound to data, with value/subgradient oracles."""
from ._margin_risk import (
    MarginRisk, hinge_risk, logistic_risk, margin_risk, sigmoid_risk, squared_hinge_risk,
)

__all__ = ["MarginRisk", "margin_risk", "hinge_risk", "logistic_risk", "sigmoid_risk", "squared_hinge_risk"]
