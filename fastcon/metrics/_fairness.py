r"""Fairness and accuracy metrics: pure functions of scores, groups and labels.

Conventions: a score :math:`s` predicts the positive class when :math:`s \ge \theta` (``threshold``,
0 by default), so that the demographic-parity gap at :math:`\theta` never exceeds the hard ROC gap.
Groups are given per sample by any labels (ints, bools, strings); ROC gaps need exactly two groups.
"""
from __future__ import annotations

import numpy as np

from .._kernels._threshold_sweep import (
    grid_blocks, hard_roc_gap_exact, hard_roc_gap_grid, sigmoid_sweep, sweep_workspace,
)

__all__ = ["roc_gap", "smoothed_roc_gap", "demographic_parity_gap", "accuracy"]


def _scores(scores, ndim=1):
    a = np.asarray(scores)
    if a.dtype.kind == "c":   # a float cast would drop the imaginary part with a mere warning
        raise TypeError(f"scores: expected real numbers, got dtype {a.dtype}")
    try:
        s = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"scores: expected real numbers, got dtype {a.dtype}") from None
    if s.ndim != ndim or s.shape[0] == 0:
        raise ValueError(f"scores: expected a non-empty {ndim}-D array, got shape {s.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores: contains NaN or inf")
    return np.ascontiguousarray(s)


def _split_groups(s, groups, exactly_two):
    groups = np.asarray(groups)
    if groups.shape != (s.shape[0],):
        raise ValueError(f"groups: expected shape ({s.shape[0]},), got {groups.shape}")
    if groups.dtype.kind == "f" and not np.all(np.isfinite(groups)):
        raise ValueError("groups: contains NaN or inf")
    labels, inverse = np.unique(groups, return_inverse=True)
    if exactly_two and labels.size != 2:
        raise ValueError(f"groups: the ROC gap compares exactly two groups, found {labels.size}")
    if labels.size < 2:
        raise ValueError(f"groups: need at least two groups, found {labels.size}")
    return [s[inverse == g] for g in range(labels.size)]


def _thresholds(thresholds):
    t = np.asarray(thresholds, dtype=np.float64)
    if t.ndim != 1 or t.size == 0:
        raise ValueError(f"thresholds: expected a non-empty 1-D array, got shape {t.shape}")
    if not np.all(np.isfinite(t)):
        raise ValueError("thresholds: contains NaN or inf")
    return np.ascontiguousarray(t)


def roc_gap(scores, groups, thresholds=None) -> float:
    r"""Hard ROC gap :math:`\max_\theta |P_p(s \ge \theta) - P_u(s \ge \theta)|` ([HL23] §6.1, Vogel et al.).

    Parameters
    ----------
    scores : array-like of shape (n,)
    groups : array-like of shape (n,)
        Exactly two distinct group labels.
    thresholds : array-like of shape (m,), optional
        The grid :math:`\Theta`. None (default) takes the supremum over all real thresholds, which
        is attained at a score: exact in :math:`O(n \log n)` (a two-sample KS statistic).

    Returns
    -------
    float in [0, 1]
    """
    s = _scores(scores)
    s_p, s_u = _split_groups(s, groups, exactly_two=True)
    if thresholds is None:
        return hard_roc_gap_exact(s_p, s_u)[0]
    return hard_roc_gap_grid(s_p, s_u, _thresholds(thresholds))[0]


def _sigmoid_means(s, thresholds):
    out = np.empty(thresholds.shape[0])
    sigmoid_sweep(s, *grid_blocks(thresholds), out, sweep_workspace(s.shape[0], thresholds.shape[0]))
    return out


def smoothed_roc_gap(scores, groups, thresholds) -> float:
    r"""Smoothed ROC gap :math:`\max_{\theta\in\Theta}|\overline{\sigma(s_p-\theta)} - \overline{\sigma(s_u-\theta)}|`.

    The value of the objective of [HL23] eq. (11) for given scores (bars: group means,
    :math:`\sigma` the logistic sigmoid), with the one-exp-per-sample kernel.

    Parameters
    ----------
    scores : array-like of shape (n,)
    groups : array-like of shape (n,)
        Exactly two distinct group labels.
    thresholds : array-like of shape (m,)
    """
    s = _scores(scores)
    s_p, s_u = _split_groups(s, groups, exactly_two=True)
    t = _thresholds(thresholds)
    return float(np.max(np.abs(_sigmoid_means(s_p, t) - _sigmoid_means(s_u, t))))


def demographic_parity_gap(scores, groups, threshold=0.0) -> float:
    r"""Demographic-parity gap :math:`\max_g P_g(s \ge \theta) - \min_g P_g(s \ge \theta)`.

    With two groups this is :math:`|P_p(s \ge \theta) - P_u(s \ge \theta)|`, the ROC gap at one
    threshold. This is the hard gap; its sigmoid relaxation, a constraint term for the solvers, is
    `fastcon.problems.smoothed_demographic_parity`.

    Parameters
    ----------
    scores : array-like of shape (n,)
    groups : array-like of shape (n,)
        At least two distinct group labels.
    threshold : float
    """
    s = _scores(scores)
    threshold = float(threshold)
    if not np.isfinite(threshold):
        raise ValueError(f"threshold: must be finite, got {threshold}")
    rates = [np.mean(part >= threshold) for part in _split_groups(s, groups, exactly_two=False)]
    return float(max(rates) - min(rates))


def accuracy(scores, y, threshold=0.0) -> float:
    r"""Fraction of correct predictions.

    Binary: ``scores`` of shape (n,), labels in {-1, +1} (or {0, 1}); the prediction is positive
    when :math:`s \ge \theta`. Multi-class: ``scores`` of shape (n, C), integer labels 0..C-1; the
    prediction is the first arg-max.
    """
    s = np.asarray(scores, dtype=np.float64)
    s = _scores(s, ndim=2 if s.ndim == 2 else 1)
    y = np.asarray(y)
    if y.shape != (s.shape[0],):
        raise ValueError(f"y: expected shape ({s.shape[0]},), got {y.shape}")
    if s.ndim == 2:
        return float(np.mean(np.argmax(s, axis=1) == y))
    values = np.unique(y)
    if not (np.all(np.isin(values, (-1, 1))) or np.all(np.isin(values, (0, 1)))):
        raise ValueError(f"y: binary labels must be in {{-1, +1}} or {{0, 1}}, found {values[:5].tolist()}")
    return float(np.mean((s >= float(threshold)) == (y == 1)))
