r"""Hard group-fairness metrics of predictions and scores, for any number of groups.

For a rate :math:`r_g` measured on each group :math:`g` (selection rate, true-positive rate,
false-positive rate), the *gap* is the worst pair:

.. math::

    \Delta r = \max_g r_g - \min_g r_g = \max_{g, h} |r_g - r_h|,

fairlearn's ``between_groups`` difference. With two groups it is :math:`|r_a - r_b|`.

Signatures follow fairlearn: ``(y_true, y_pred, *, sensitive_features, sample_weight=None)``, and
``(y_score, *, sensitive_features)`` for the Wasserstein gap of scores. Encodings: predictions
``y_pred`` and labels ``y_true`` are 0/1, bool or -1/+1; the positive class is 1 / True / +1.
Groups (``sensitive_features``) are any labels :func:`fastcon.datasets.encode_groups` accepts
(ints, strings, mixed objects, several columns for intersectional groups).
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np

from ..datasets._groups import GroupEncoding, encode_groups

__all__ = ["GroupRates", "group_rates", "equal_opportunity_gap", "false_positive_rate_gap", "equalized_odds_gap",
           "wasserstein_gap"]

_RATES = ("selection_rate", "true_positive_rate", "false_positive_rate")


def _encoding(sensitive_features):
    # An encoding is reused as is: callers that evaluate many predictions on one data set encode once.
    return sensitive_features if isinstance(sensitive_features, GroupEncoding) else encode_groups(sensitive_features)


def _weights(sample_weight, n):
    """Row weights: shape (n,), finite, >= 0."""
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.shape != (n,):
        raise ValueError(f"sample_weight: expected shape ({n},), got {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("sample_weight: must be finite and non-negative")
    return w


def _binary(values, field, n=None):
    """Boolean "is positive" of 0/1, bool or -1/+1 values (1 / True / +1 positive)."""
    v = np.asarray(values)
    if v.ndim != 1:
        raise ValueError(f"{field}: expected a 1-D array, got shape {v.shape}")
    if n is not None and v.shape[0] != n:
        raise ValueError(f"{field}: has {v.shape[0]} values but y_pred has {n}")
    if v.dtype.kind == "b":
        return v.copy()
    if v.dtype.kind not in "iuf":
        raise ValueError(f"{field}: expected 0/1, bool or -1/+1 values, got dtype {v.dtype}")
    if v.dtype.kind == "f" and not np.all(np.isfinite(v)):
        raise ValueError(f"{field}: contains NaN or inf")
    present = np.unique(v)
    if not (np.all(np.isin(present, (0, 1))) or np.all(np.isin(present, (-1, 1)))):
        bad = present[~np.isin(present, (-1, 0, 1))]
        shown = (bad if bad.size else present)[:5].tolist()
        raise ValueError(f"{field}: expected 0/1, bool or -1/+1 values (one encoding), found {shown}")
    return v == 1


@dataclass(frozen=True, eq=False)
class GroupRates:
    r"""Per-group counts and rates of binary predictions.

    Attributes
    ----------
    labels : list
        Group labels in group order (see :func:`fastcon.datasets.encode_groups`).
    counts : ndarray of int64
        :math:`n_g`, samples per group.
    selection_rate : ndarray of float64
        :math:`P(\hat y = 1 \mid G = g)`.
    positives, negatives : ndarray of int64 or None
        Samples with :math:`y = 1` / :math:`y \ne 1` per group (None without ``y_true``).
    true_positive_rate : ndarray of float64 or None
        :math:`P(\hat y = 1 \mid y = 1, G = g)`; NaN for a group without positives.
    false_positive_rate : ndarray of float64 or None
        :math:`P(\hat y = 1 \mid y \ne 1, G = g)`; NaN for a group without negatives.
    """

    labels: list
    counts: np.ndarray
    selection_rate: np.ndarray
    positives: np.ndarray | None = None
    negatives: np.ndarray | None = None
    true_positive_rate: np.ndarray | None = None
    false_positive_rate: np.ndarray | None = None

    def gap(self, rate="selection_rate") -> float:
        r"""Worst-pair gap :math:`\max_g r_g - \min_g r_g` of one rate.

        Parameters
        ----------
        rate : {"selection_rate", "true_positive_rate", "false_positive_rate"}

        Raises
        ------
        ValueError
            Fewer than two groups, no ``y_true`` for a conditional rate, or a group on which the
            rate is undefined (no positives for the TPR, no negatives for the FPR).
        """
        if rate not in _RATES:
            raise ValueError(f"rate: expected one of {_RATES}, got {rate!r}")
        if len(self.labels) < 2:
            raise ValueError(f"sensitive_features: a gap compares at least two groups, found {len(self.labels)}")
        values = getattr(self, rate)
        if values is None:
            raise ValueError(f"y_true: required for the {rate.replace('_', ' ')}")
        undefined = np.flatnonzero(np.isnan(values))
        if undefined.size:
            g = self.labels[int(undefined[0])]
            kind = "positive" if rate == "true_positive_rate" else "negative"
            raise ValueError(f"y_true: group {g!r} has no {kind} samples, so its {rate.replace('_', ' ')} "
                             "is undefined")
        return float(values.max() - values.min())


def group_rates(y_true, y_pred, *, sensitive_features, sample_weight=None) -> GroupRates:
    r"""Selection rate, true- and false-positive rates of binary predictions in each group.

    .. math::

        \mathrm{SR}_g = \frac{|\{i \in g : \hat y_i = 1\}|}{n_g}, \quad
        \mathrm{TPR}_g = \frac{|\{i \in g : \hat y_i = 1, y_i = 1\}|}{|\{i \in g : y_i = 1\}|}, \quad
        \mathrm{FPR}_g = \frac{|\{i \in g : \hat y_i = 1, y_i \ne 1\}|}{|\{i \in g : y_i \ne 1\}|}.

    Parameters
    ----------
    y_true : array-like of shape (n,) or None
        True labels, 0/1, bool or -1/+1 (independently of ``y_pred``'s encoding). None: only the
        selection rates are computed.
    y_pred : array-like of shape (n,)
        Predictions, 0/1, bool or -1/+1 (positive: 1, True, +1).
    sensitive_features : array-like of shape (n,) or (n, m), pandas Series or DataFrame, or GroupEncoding
        Group labels of any hashable type; several columns give intersectional groups
        (:func:`fastcon.datasets.encode_groups`). An encoding is used as it is (its ``codes``).
    sample_weight : array-like of shape (n,), optional
        Row weights :math:`c_i \ge 0`: every count in the rates becomes a sum of weights (a weight
        of 2 counts as a repeated row). ``counts``, ``positives`` and ``negatives`` stay row counts.

    Returns
    -------
    GroupRates
        Per-group rates in the order of ``labels``; ``gap(rate)`` gives the worst-pair gap.
    """
    pred = _binary(y_pred, "y_pred")
    n = pred.shape[0]
    if n == 0:
        raise ValueError("y_pred: no samples")
    enc = _encoding(sensitive_features)
    if enc.codes.shape[0] != n:
        raise ValueError(f"sensitive_features: has {enc.codes.shape[0]} labels but y_pred has {n}")
    K = enc.n_groups
    counts = enc.counts
    w = np.ones(n) if sample_weight is None else _weights(sample_weight, n)
    totals = np.bincount(enc.codes, weights=w, minlength=K)
    selected = np.bincount(enc.codes, weights=w * pred, minlength=K)
    with np.errstate(invalid="ignore", divide="ignore"):  # a group of zero total weight: NaN
        rates = dict(labels=enc.labels, counts=counts, selection_rate=selected / totals)
    if y_true is not None:
        truth = _binary(y_true, "y_true", n)
        positives = np.bincount(enc.codes, weights=truth, minlength=K).astype(np.int64)
        negatives = counts - positives
        positive_weight = np.bincount(enc.codes, weights=w * truth, minlength=K)
        negative_weight = totals - positive_weight
        true_pos = np.bincount(enc.codes, weights=w * (pred & truth), minlength=K)
        false_pos = selected - true_pos
        with np.errstate(invalid="ignore", divide="ignore"):  # 0/0 -> NaN: the rate is undefined
            rates.update(positives=positives, negatives=negatives,
                         true_positive_rate=np.where(positive_weight > 0, true_pos / positive_weight, np.nan),
                         false_positive_rate=np.where(negative_weight > 0, false_pos / negative_weight, np.nan))
    return GroupRates(**rates)


def equal_opportunity_gap(y_true, y_pred, *, sensitive_features, sample_weight=None) -> float:
    r"""True-positive-rate gap :math:`\max_g \mathrm{TPR}_g - \min_g \mathrm{TPR}_g` (equal opportunity).

    Hardt, Price & Srebro, "Equality of opportunity in supervised learning" (2016); fairlearn's
    ``true_positive_rate_difference``.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        True labels, 0/1, bool or -1/+1.
    y_pred : array-like of shape (n,)
        Predictions, 0/1, bool or -1/+1 (positive: 1, True, +1).
    sensitive_features : array-like of shape (n,) or (n, m), pandas Series or DataFrame, or GroupEncoding
        Group labels of any hashable type (:func:`fastcon.datasets.encode_groups`).
    sample_weight : array-like of shape (n,), optional
        Row weights :math:`c_i \ge 0` of the rates (:func:`group_rates`).

    Returns
    -------
    float in [0, 1]

    Raises
    ------
    ValueError
        When a group has no positive samples (its TPR is undefined), or there is one group.
    """
    return group_rates(y_true, y_pred, sensitive_features=sensitive_features,
                       sample_weight=sample_weight).gap("true_positive_rate")


def false_positive_rate_gap(y_true, y_pred, *, sensitive_features, sample_weight=None) -> float:
    r"""False-positive-rate gap :math:`\max_g \mathrm{FPR}_g - \min_g \mathrm{FPR}_g`.

    fairlearn's ``false_positive_rate_difference``.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        True labels, 0/1, bool or -1/+1.
    y_pred : array-like of shape (n,)
        Predictions, 0/1, bool or -1/+1 (positive: 1, True, +1).
    sensitive_features : array-like of shape (n,) or (n, m), pandas Series or DataFrame, or GroupEncoding
        Group labels of any hashable type (:func:`fastcon.datasets.encode_groups`).
    sample_weight : array-like of shape (n,), optional
        Row weights :math:`c_i \ge 0` of the rates (:func:`group_rates`).

    Returns
    -------
    float in [0, 1]

    Raises
    ------
    ValueError
        When a group has no negative samples (its FPR is undefined), or there is one group.
    """
    return group_rates(y_true, y_pred, sensitive_features=sensitive_features,
                       sample_weight=sample_weight).gap("false_positive_rate")


def equalized_odds_gap(y_true, y_pred, *, sensitive_features, sample_weight=None) -> float:
    r"""Equalized-odds gap: the larger of the TPR and FPR gaps.

    .. math::

        \max\bigl(\max_g \mathrm{TPR}_g - \min_g \mathrm{TPR}_g,\;
                  \max_g \mathrm{FPR}_g - \min_g \mathrm{FPR}_g\bigr),

    fairlearn's ``equalized_odds_difference`` (``agg="worst_case"``).

    Parameters
    ----------
    y_true : array-like of shape (n,)
        True labels, 0/1, bool or -1/+1.
    y_pred : array-like of shape (n,)
        Predictions, 0/1, bool or -1/+1 (positive: 1, True, +1).
    sensitive_features : array-like of shape (n,) or (n, m), pandas Series or DataFrame, or GroupEncoding
        Group labels of any hashable type (:func:`fastcon.datasets.encode_groups`).
    sample_weight : array-like of shape (n,), optional
        Row weights :math:`c_i \ge 0` of the rates (:func:`group_rates`).

    Returns
    -------
    float in [0, 1]

    Raises
    ------
    ValueError
        When a group lacks positive or negative samples, or there is one group.
    """
    rates = group_rates(y_true, y_pred, sensitive_features=sensitive_features, sample_weight=sample_weight)
    return max(rates.gap("true_positive_rate"), rates.gap("false_positive_rate"))


def _w1_sorted(a, b) -> float:
    r""":math:`\int |F_a - F_b|` of two sorted samples: the CDFs are steps, constant between
    consecutive points of the merged sample, so the integral is a finite sum."""
    merged = np.concatenate([a, b])
    merged.sort(kind="mergesort")  # two sorted runs: a linear merge
    widths = np.diff(merged)
    F_a = np.searchsorted(a, merged[:-1], side="right") / a.shape[0]
    F_b = np.searchsorted(b, merged[:-1], side="right") / b.shape[0]
    return float(np.dot(np.abs(F_a - F_b), widths))


def wasserstein_gap(y_score, *, sensitive_features) -> float:
    r"""Largest 1-D Wasserstein-1 distance between the score distributions of two groups.

    For groups :math:`a, b` with empirical CDFs :math:`F_a, F_b` of their scores,

    .. math::

        W_1(a, b) = \int_{-\infty}^{\infty} |F_a(t) - F_b(t)|\, dt,

    evaluated exactly (the integrand is a step function; the same value as
    ``scipy.stats.wasserstein_distance``), and the gap is :math:`\max_{a<b} W_1(a, b)`. Cost
    :math:`O(n \log n)` for two groups, :math:`O(K n \log n)` for :math:`K` groups (each pair
    merges only its two groups' sorted scores).

    Parameters
    ----------
    y_score : array-like of shape (n,)
        Finite real scores (decision values, probabilities).
    sensitive_features : array-like of shape (n,) or (n, m), pandas Series or DataFrame, or GroupEncoding
        At least two groups, labels of any hashable type (:func:`fastcon.datasets.encode_groups`).

    Returns
    -------
    float >= 0
        In the units of the scores.
    """
    s = np.asarray(y_score, dtype=np.float64)
    if s.ndim != 1 or s.shape[0] == 0:
        raise ValueError(f"y_score: expected a non-empty 1-D array, got shape {s.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError("y_score: contains NaN or inf")
    enc = _encoding(sensitive_features)
    if enc.codes.shape[0] != s.shape[0]:
        raise ValueError(f"sensitive_features: has {enc.codes.shape[0]} labels but y_score has {s.shape[0]}")
    if enc.n_groups < 2:
        raise ValueError(f"sensitive_features: a gap compares at least two groups, found {enc.n_groups}")
    # One sort of everything, then a stable split by group keeps each group's scores sorted.
    order = np.argsort(s, kind="stable")
    by_group = order[np.argsort(enc.codes[order], kind="stable")]
    bounds = np.concatenate([[0], np.cumsum(enc.counts)])
    parts = [s[by_group[bounds[k]:bounds[k + 1]]] for k in range(enc.n_groups)]
    return max(_w1_sorted(parts[a], parts[b]) for a, b in combinations(range(enc.n_groups), 2))
