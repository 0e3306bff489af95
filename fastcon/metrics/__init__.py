"""Evaluation metrics (pure functions of scores, groups and labels) and optimality certificates
on a problem and a point."""
from ._fairness import accuracy, demographic_parity_gap, roc_gap, smoothed_roc_gap
from ._stationarity import constraint_violation, kkt_residual, near_stationarity, preserved_counters

__all__ = ["roc_gap", "smoothed_roc_gap", "demographic_parity_gap", "accuracy", "near_stationarity",
           "kkt_residual", "constraint_violation", "preserved_counters"]
