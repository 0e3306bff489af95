"""`ConstraintReport`: does the constraint hold on these data? The bound, the hard value, per-group rates, the solve."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import metrics

__all__ = ["ConstraintReport", "class_error_report", "fairness_gap"]


_RATE_OF = {"demographic_parity": ("selection_rate",), "equal_opportunity": ("true_positive_rate",),
            "false_positive_parity": ("false_positive_rate",),
            "equalized_odds": ("true_positive_rate", "false_positive_rate")}


def fairness_gap(constraint, scores, y01, codes, sample_weight=None, interval=None) -> float:
    """The hard gap of a named constraint (`fastcon.metrics`; prediction: score > 0), worst pair of groups.

    ``sample_weight`` weighs the rates (rate constraints only). ``interval`` is the rank band
    :math:`(\alpha, \beta)` of ``"partial_dp"`` (`fastcon.metrics.partial_dp`) and
    ``"weak_partial_dp"`` (`fastcon.metrics.weak_partial_dp` at threshold 0, the threshold of
    ``predict``); with fewer than two groups present both are 0.
    """
    if constraint in ("partial_dp", "weak_partial_dp"):
        if interval is None:
            raise ValueError(f"interval: constraint={constraint!r} needs the rank band (start, end)")
        if np.unique(codes).size < 2:   # one group has nobody to differ from
            return 0.0
        if constraint == "partial_dp":
            return metrics.partial_dp(scores, sensitive_features=codes, interval=interval)
        return metrics.weak_partial_dp(scores, sensitive_features=codes, interval=interval, threshold=0.0)
    if constraint in _RATE_OF:
        rates = metrics.group_rates(y01, (scores > 0).astype(np.int64), sensitive_features=codes,
                                    sample_weight=sample_weight)
        return max(rates.gap(rate) for rate in _RATE_OF[constraint])
    if constraint == "wasserstein":
        return metrics.wasserstein_gap(scores, sensitive_features=codes)
    if constraint == "roc":
        n_groups = int(codes.max()) + 1
        pairs = ((codes == a) | (codes == b) for a in range(n_groups) for b in range(a + 1, n_groups))
        gaps = [metrics.roc_gap(scores[rows], sensitive_features=codes[rows]) for rows in pairs]
        return float(max(gaps))
    raise ValueError(f"constraint: unknown {constraint!r}")


@dataclass
class ConstraintReport:
    """What a fitted constrained estimator promises and what it achieves on given data.

    Attributes
    ----------
    constraint : str
        The constraint's name.
    bound : float
        The requested bound on the hard metric.
    value : float
        The hard metric on the data given to ``constraint_report``.
    satisfied : bool
        ``value <= bound``.
    per_group : dict
        Group label -> dict of rates (``n``, ``selection_rate``, ``true_positive_rate``,
        ``false_positive_rate``; NaN where a group has no rows of a label).
    solver_status : str
        Status of the solve behind the model; ``solver_message`` explains it.
    solver_message : str
        The solver's message.
    certificate : dict
        The solver's certificate (KKT residuals and multipliers for the augmented Lagrangian).
    fit_value : float
        The hard metric where calibration measured it (training or validation rows; with
        ``FairClassifier(confidence=...)``, the certified bound on the tuning half).
    interval : tuple of float, optional
        The rank band :math:`(\alpha, \beta)` of ``"partial_dp"`` and ``"weak_partial_dp"``
        (He, Huang, Yao & Lin [HHYL25]); None for the other constraints.
    guarantee : str
        What the bound promises on new data, in words: ``"certified: ..."`` (a probability over
        the draw of the rows, from held-out rows no fit has seen), ``"not certified: ..."`` (the
        held-out rows could not certify it: no guarantee), or ``"no guarantee on new data: ..."``
        (what holds on the rows named there). Written by ``fit`` (``guarantee_``), so it describes
        the fitted model whatever the parameters say now; empty for models saved before it existed.
    """
    constraint: str
    bound: float
    value: float
    satisfied: bool
    per_group: dict = field(default_factory=dict)
    solver_status: str = ""
    solver_message: str = ""
    certificate: dict = field(default_factory=dict)
    fit_value: float = float("nan")
    interval: tuple = None
    guarantee: str = ""

    @classmethod
    def for_fairness(cls, estimator, scores, y01, codes, sample_weight=None):
        """The report of a `FairClassifier` from its scores on some rows (``sample_weight`` weighs the rates)."""
        interval = getattr(estimator, "interval_", None)
        value = fairness_gap(estimator.constraint, scores, y01, codes, sample_weight, interval=interval)
        rates = metrics.group_rates(y01, (scores > 0).astype(np.int64), sensitive_features=codes,
                                    sample_weight=sample_weight)
        present = {int(k) for k in np.unique(codes)}
        per_group = {}
        for k, label in enumerate(estimator.groups_):
            if k not in present:
                continue
            r = rates.labels.index(k)
            per_group[label] = {"n": int(rates.counts[r]), "selection_rate": float(rates.selection_rate[r]),
                                "true_positive_rate": float(rates.true_positive_rate[r]),
                                "false_positive_rate": float(rates.false_positive_rate[r])}
        return cls(estimator.constraint, float(estimator.bound), float(value), bool(value <= estimator.bound),
                   per_group, *_solve_summary(estimator), fit_value=float(estimator.fit_gap_),
                   guarantee=getattr(estimator, "guarantee_", ""),
                   interval=None if interval is None else tuple(float(v) for v in interval))

    @classmethod
    def for_class_rates(cls, estimator, scores, labels, codes):
        r"""The report of a multi-class rate constraint from scores of shape (n, J).

        Class :math:`j`'s rates are the one-vs-rest rates of its margin
        :math:`F_{ij} - \max_{k \ne j}F_{ik}` (positive: :math:`j` is predicted;
        `fastcon.problems._class_rate_constraints`); ``value`` is the largest gap over classes,
        ``per_group`` maps each group to ``n`` and, per class label, its selection, true-positive
        and false-positive rates.
        """
        from ..problems._class_rate_constraints import class_margins

        margins, _ = class_margins(np.asarray(scores, dtype=np.float64))
        present = {int(k) for k in np.unique(codes)}
        value, per_group = 0.0, {label: {"n": int(np.sum(codes == k))} for k, label in enumerate(estimator.groups_)
                                 if k in present}
        for j, name in enumerate(estimator.classes_):
            y01 = (labels == j).astype(np.int64)
            try:
                value = max(value, fairness_gap(estimator.constraint, margins[:, j], y01, codes))
            except ValueError as exc:   # name the class whose one-vs-rest rate is undefined
                raise ValueError(f"{exc} (class {name!r} against the rest)") from None
            rates = metrics.group_rates(y01, (margins[:, j] > 0).astype(np.int64), sensitive_features=codes)
            for k, label in enumerate(estimator.groups_):
                if k in present:
                    r = rates.labels.index(k)
                    per_group[label][f"class {name!r}"] = {
                        "selection_rate": float(rates.selection_rate[r]),
                        "true_positive_rate": float(rates.true_positive_rate[r]),
                        "false_positive_rate": float(rates.false_positive_rate[r])}
        return cls(estimator.constraint, float(estimator.bound), float(value), bool(value <= estimator.bound),
                   per_group, *_solve_summary(estimator), fit_value=float(estimator.fit_gap_),
                   guarantee=getattr(estimator, "guarantee_", ""))

    def __str__(self):
        band = "" if self.interval is None else f" on ranks [{self.interval[0]:.4g}, {self.interval[1]:.4g})"
        lines = [f"{self.constraint}{band}: {self.value:.4g} (bound {self.bound:.4g}) -> "
                 f"{'satisfied' if self.satisfied else 'VIOLATED'}; fit: {self.fit_value:.4g}; "
                 f"solver: {self.solver_status}"]
        if self.guarantee:
            lines.append(f"  guarantee: {self.guarantee}")
        for label, rates in self.per_group.items():
            lines.append(f"  {label!r}: " + ", ".join(_describe_rate(k, v) for k, v in rates.items()))
        return "\n".join(lines)


def _describe_rate(name, value):
    if isinstance(value, dict):      # a class's rates (multi-class rate constraints)
        return f"{name} (" + ", ".join(_describe_rate(k, v) for k, v in value.items()) + ")"
    return f"{name} {value:.4g}" if isinstance(value, float) else f"{name} {value}"


def _solve_summary(estimator):
    result = estimator.solve_result_
    certificate = {k: result.info[k] for k in ("kkt_stationarity", "complementarity") if k in result.info}
    certificate["max_violation"] = result.max_violation
    if result.multipliers is not None:
        certificate["multipliers"] = result.multipliers.tolist()
    return result.status, result.message, certificate


def class_error_report(estimator, y, y_pred, sample_weight=None) -> ConstraintReport:
    """Every class's error rate on ``(y, y_pred)`` against ``estimator.bound_`` (the largest excess).

    The report of the Neyman–Pearson estimators: ``per_group`` maps each class label to its row
    count, error rate and bound (None when unbounded); ``value`` is the largest error minus bound
    over the bounded classes present, ``fit_value`` the same on the training rows
    (``estimator.fit_errors_``). ``sample_weight`` weighs the error rates (a class whose rows all
    have weight 0 counts as absent).
    """
    if y_pred.shape[0] != y.shape[0]:
        raise ValueError(f"y: has {y.shape[0]} labels but X has {y_pred.shape[0]} rows")
    weight = np.ones(y.shape[0]) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    per_class, excess = {}, []
    for label in estimator.classes_.tolist():
        rows = (y == label) & (weight > 0)
        error = float(weight[rows] @ (y_pred[rows] != label)) / float(weight[rows].sum()) if np.any(rows) \
            else float("nan")
        bound = estimator.bound_.get(label)
        per_class[label] = {"n": int(np.sum(y == label)), "error": error, "bound": bound}
        if bound is not None and np.any(rows):
            excess.append(error - bound)
    value = max(excess) if excess else float("nan")
    fit_excess = [estimator.fit_errors_[c] - a for c, a in estimator.bound_.items()]
    return ConstraintReport("class_error_rates", 0.0, float(value), bool(not excess or value <= 0.0), per_class,
                            *_solve_summary(estimator),
                            fit_value=float(max(fit_excess)) if fit_excess else float("nan"),
                            guarantee=getattr(estimator, "guarantee_", ""))

