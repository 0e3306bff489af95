"""Evaluation metrics (pure functions of labels, predictions, scores and groups) and optimality
certificates on a problem and a point.

The metrics follow scikit-learn and fairlearn: ``(y_true, y_pred, *, sensitive_features,
sample_weight=None)`` for metrics of predictions and labels, ``(y_score, *, sensitive_features, ...)``
for metrics of score distributions (docs/design.md, "Naming (issue 37)")."""
from ._fairness import accuracy, demographic_parity_gap, roc_gap, smoothed_roc_gap
from ._group_metrics import (
    GroupRates, equal_opportunity_gap, equalized_odds_gap, false_positive_rate_gap, group_rates, wasserstein_gap,
)
from ._neyman_pearson import (
    np_umbrella_min_samples, np_umbrella_rank, np_umbrella_threshold, type_one_error, type_two_error,
)
from ._partial_fairness import (
    IntervalChoice, ScoreCCDFCurves, choose_interval, ks_demographic_parity, partial_dp, score_ccdf_curves,
    weak_partial_dp,
)
from ._stationarity import constraint_violation, kkt_residual, preserved_counters

__all__ = ["roc_gap", "smoothed_roc_gap", "demographic_parity_gap", "accuracy",
           "kkt_residual", "constraint_violation", "preserved_counters"]
__all__ += ["GroupRates", "group_rates", "equal_opportunity_gap", "false_positive_rate_gap", "equalized_odds_gap",
            "wasserstein_gap", "np_umbrella_threshold", "np_umbrella_rank", "np_umbrella_min_samples",
            "type_one_error", "type_two_error"]
__all__ += ["partial_dp", "weak_partial_dp", "ks_demographic_parity", "choose_interval", "IntervalChoice",
            "score_ccdf_curves", "ScoreCCDFCurves"]
