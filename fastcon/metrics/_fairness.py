r"""Fairness and accuracy metrics: pure functions of labels, predictions, scores and groups.

Argument order and names follow scikit-learn and fairlearn: ``(y_true, y_pred, *,
sensitive_features, sample_weight=None)`` for metrics of predictions and labels, ``(y_score, *,
sensitive_features, ...)`` for metrics of score distributions. Conventions: a score :math:`s`
predicts the positive class when :math:`s \ge \theta` (``threshold``), so that the
demographic-parity gap of scores at :math:`\theta` never exceeds the hard ROC gap. Groups are given
per sample by any labels (ints, bools, strings); ROC gaps need exactly two groups.
"""
from __future__ import annotations

import numpy as np

from .._kernels._threshold_sweep import (
    grid_blocks, hard_roc_gap_exact, hard_roc_gap_grid, sigmoid_sweep, sweep_workspace,
)
from ._group_metrics import _weights, group_rates

__all__ = ["roc_gap", "smoothed_roc_gap", "demographic_parity_gap", "accuracy"]


def _scores(scores, ndim=1, field="y_score"):
    a = np.asarray(scores)
    if a.dtype.kind == "c":   # a float cast would drop the imaginary part with a mere warning
        raise TypeError(f"{field}: expected real numbers, got dtype {a.dtype}")
    try:
        s = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{field}: expected real numbers, got dtype {a.dtype}") from None
    if s.ndim != ndim or s.shape[0] == 0:
        raise ValueError(f"{field}: expected a non-empty {ndim}-D array, got shape {s.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError(f"{field}: contains NaN or inf")
    return np.ascontiguousarray(s)


def _split_groups(s, sensitive_features, exactly_two):
    groups = np.asarray(sensitive_features)
    if groups.shape != (s.shape[0],):
        raise ValueError(f"sensitive_features: expected shape ({s.shape[0]},), got {groups.shape}")
    if groups.dtype.kind == "f" and not np.all(np.isfinite(groups)):
        raise ValueError("sensitive_features: contains NaN or inf")
    labels, inverse = np.unique(groups, return_inverse=True)
    if exactly_two and labels.size != 2:
        raise ValueError(f"sensitive_features: the ROC gap compares exactly two groups, found {labels.size}")
    if labels.size < 2:
        raise ValueError(f"sensitive_features: need at least two groups, found {labels.size}")
    return [s[inverse == g] for g in range(labels.size)]


def _thresholds(thresholds):
    t = np.asarray(thresholds, dtype=np.float64)
    if t.ndim != 1 or t.size == 0:
        raise ValueError(f"thresholds: expected a non-empty 1-D array, got shape {t.shape}")
    if not np.all(np.isfinite(t)):
        raise ValueError("thresholds: contains NaN or inf")
    return np.ascontiguousarray(t)


def _threshold(threshold):
    threshold = float(threshold)
    if not np.isfinite(threshold):
        raise ValueError(f"threshold: must be finite, got {threshold}")
    return threshold


def roc_gap(y_score, *, sensitive_features, thresholds=None) -> float:
    r"""Hard ROC gap :math:`\max_\theta |P_p(s \ge \theta) - P_u(s \ge \theta)|` ([HL23] §6.1, Vogel et al.).

    Parameters
    ----------
    y_score : array-like of shape (n,)
        Finite real scores.
    sensitive_features : array-like of shape (n,)
        Exactly two distinct group labels.
    thresholds : array-like of shape (m,), optional
        The grid :math:`\Theta`. None (default) takes the supremum over all real thresholds, which
        is attained at a score: exact in :math:`O(n \log n)` (a two-sample KS statistic).

    Returns
    -------
    float in [0, 1]
    """
    s = _scores(y_score)
    s_p, s_u = _split_groups(s, sensitive_features, exactly_two=True)
    if thresholds is None:
        return hard_roc_gap_exact(s_p, s_u)[0]
    return hard_roc_gap_grid(s_p, s_u, _thresholds(thresholds))[0]


def _sigmoid_means(s, thresholds):
    out = np.empty(thresholds.shape[0])
    sigmoid_sweep(s, *grid_blocks(thresholds), out, sweep_workspace(s.shape[0], thresholds.shape[0]))
    return out


def smoothed_roc_gap(y_score, *, sensitive_features, thresholds) -> float:
    r"""Smoothed ROC gap :math:`\max_{\theta\in\Theta}|\overline{\sigma(s_p-\theta)} - \overline{\sigma(s_u-\theta)}|`.

    The value of the objective of [HL23] eq. (11) for given scores (bars: group means,
    :math:`\sigma` the logistic sigmoid), with the one-exp-per-sample kernel.

    Parameters
    ----------
    y_score : array-like of shape (n,)
        Finite real scores.
    sensitive_features : array-like of shape (n,)
        Exactly two distinct group labels.
    thresholds : array-like of shape (m,)
        The grid :math:`\Theta`.

    Returns
    -------
    float in [0, 1]
    """
    s = _scores(y_score)
    s_p, s_u = _split_groups(s, sensitive_features, exactly_two=True)
    t = _thresholds(thresholds)
    return float(np.max(np.abs(_sigmoid_means(s_p, t) - _sigmoid_means(s_u, t))))


def demographic_parity_gap(y_true, y_pred, *, sensitive_features, threshold=None, sample_weight=None) -> float:
    r"""Demographic-parity gap :math:`\max_g P_g(\hat y = 1) - \min_g P_g(\hat y = 1)`.

    fairlearn's ``demographic_parity_difference``: ``y_true`` is accepted and ignored, as there.
    With ``threshold`` the predictions are :math:`\hat y = [s \ge \theta]` of scores ``y_pred``;
    with two groups this is :math:`|P_p(s \ge \theta) - P_u(s \ge \theta)|`, the ROC gap at one
    threshold. This is the hard gap; its sigmoid relaxation, a constraint term for the solvers, is
    `fastcon.problems.smoothed_demographic_parity`.

    Parameters
    ----------
    y_true : array-like of shape (n,) or None
        Ignored (the selection rate does not depend on the labels).
    y_pred : array-like of shape (n,)
        Predictions, 0/1, bool or -1/+1 (positive: 1, True, +1); or, with ``threshold``, finite
        real scores.
    sensitive_features : array-like of shape (n,) or (n, m), pandas Series or DataFrame, or GroupEncoding
        At least two groups, labels of any hashable type (:func:`fastcon.datasets.encode_groups`).
    threshold : float, optional
        :math:`\theta`: ``y_pred`` are scores and the prediction is positive when
        :math:`s \ge \theta` (0 for the sign of a decision value). None (default): ``y_pred`` are
        predictions.
    sample_weight : array-like of shape (n,), optional
        Row weights :math:`c_i \ge 0` of the selection rates (a weight of 2 counts as a repeated row).

    Returns
    -------
    float in [0, 1]
    """
    if threshold is None:
        pred = y_pred
    else:
        pred = _scores(y_pred, field="y_pred") >= _threshold(threshold)
    try:
        rates = group_rates(None, pred, sensitive_features=sensitive_features, sample_weight=sample_weight)
    except ValueError as exc:
        if threshold is None and str(exc).startswith("y_pred: expected 0/1"):
            raise ValueError(f"{exc}; for scores, pass threshold=") from None
        raise
    return rates.gap("selection_rate")


def accuracy(y_true, y_pred, *, threshold=None, sample_weight=None) -> float:
    r"""Fraction of correct predictions (weighted by ``sample_weight``).

    Three readings of ``y_pred``:

    - 1-D, ``threshold`` None: predicted labels, correct where ``y_pred == y_true`` (scikit-learn's
      ``accuracy_score``);
    - 1-D with ``threshold``: binary scores, the prediction is positive when :math:`s \ge \theta`,
      and ``y_true`` holds binary labels in {-1, +1} or {0, 1};
    - 2-D of shape (n, C): class scores, the prediction is the first arg-max and ``y_true`` holds
      integer labels 0..C-1.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        True labels.
    y_pred : array-like of shape (n,) or (n, C)
        Predicted labels, binary scores (with ``threshold``) or class scores (2-D).
    threshold : float, optional
        :math:`\theta` of binary scores (0 for the sign of a decision value); only for 1-D ``y_pred``.
    sample_weight : array-like of shape (n,), optional
        Row weights :math:`c_i \ge 0`, not all zero.

    Returns
    -------
    float in [0, 1]
    """
    y_true = np.asarray(y_true)
    if threshold is None and np.ndim(y_pred) != 2:
        pred = np.asarray(y_pred)
        if pred.ndim != 1 or pred.shape[0] == 0:
            raise ValueError(f"y_pred: expected a non-empty 1-D array, got shape {pred.shape}")
        if y_true.shape != pred.shape:
            raise ValueError(f"y_true: expected shape {pred.shape}, got {y_true.shape}")
        correct = pred == y_true
    else:
        s = _scores(y_pred, ndim=2 if np.ndim(y_pred) == 2 else 1, field="y_pred")
        if y_true.shape != (s.shape[0],):
            raise ValueError(f"y_true: expected shape ({s.shape[0]},), got {y_true.shape}")
        if s.ndim == 2:
            if threshold is not None:
                raise ValueError("threshold: applies to 1-D scores; 2-D class scores predict their arg-max")
            correct = np.argmax(s, axis=1) == y_true
        else:
            values = np.unique(y_true)
            if not (np.all(np.isin(values, (-1, 1))) or np.all(np.isin(values, (0, 1)))):
                raise ValueError(f"y_true: binary labels must be in {{-1, +1}} or {{0, 1}}, "
                                 f"found {values[:5].tolist()}")
            correct = (s >= _threshold(threshold)) == (y_true == 1)
    if sample_weight is None:
        return float(np.mean(correct))
    w = _weights(sample_weight, correct.shape[0])
    total = float(w.sum())
    if not total > 0:
        raise ValueError("sample_weight: all zero")
    return float(w @ correct) / total
