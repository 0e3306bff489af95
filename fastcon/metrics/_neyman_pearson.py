r"""Neyman-Pearson classification: type-I / type-II errors and the umbrella threshold.

In Neyman-Pearson classification the *constrained* class (class 0 in Tong, Feng & Li [TFL18]; label
-1 in `fastcon.problems.neyman_pearson`) must be misclassified with probability at most
:math:`\alpha` (type I) while the other class's error (type II) is minimised. The umbrella algorithm
of [TFL18] thresholds any scores at the held-out order statistic :math:`s_{(k)}` of the constrained
class with the smallest :math:`k` such that
:math:`v(k) = \sum_{j=k}^{n} \binom{n}{j} (1-\alpha)^j \alpha^{n-j} \le \delta`, so that
:math:`P(R_0 > \alpha) \le \delta` for any score distribution, ties included.
Proof sketch: docs/design.md, 'Module notes'.
"""
from __future__ import annotations

import math

import numpy as np

from ._group_metrics import _weights

__all__ = ["np_umbrella_rank", "np_umbrella_threshold", "np_umbrella_min_samples", "type_one_error",
           "type_two_error"]


def _level(value, field):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{field}: expected a number in (0, 1), got {type(value).__name__}")
    value = float(value)
    if not 0.0 < value < 1.0:
        raise ValueError(f"{field}: expected a number in (0, 1), got {value}")
    return value


def _binom_sf(k, n, p) -> float:
    r""":math:`P(\mathrm{Bin}(n, p) > k)`, the survival function ``scipy.stats.binom.sf(k, n, p)``.

    Computed as the regularized incomplete beta function :math:`I_p(k+1, n-k)` (``scipy.special.betainc``,
    Boost's ``ibeta``, the function ``binom.sf`` evaluates): the same value to the last bit for
    every integer ``0 <= k < n`` (checked on 627,823 points, ``n`` up to 5,000), without importing
    ``scipy.stats`` (half a second) at ``import fastcon``. ``scipy.special.bdtrc`` would be the same
    function through Cephes, but it differs in the last digits (up to 1.6e-12 relative, against
    1e-14 for ``betainc``, on exact rational sums). Outside ``0 <= k < n`` the answer is exact:
    1 for ``k < 0``, 0 for ``k >= n`` (where ``bdtrc`` returns nan for ``k > n``).
    """
    if k < 0:
        return 1.0
    if k >= n:
        return 0.0
    from scipy.special import betainc  # here, not at import: scipy.special costs ~90 ms to import

    return float(betainc(k + 1.0, n - k, p))


def np_umbrella_min_samples(bound, delta) -> int:
    r"""Smallest held-out size :math:`n` for which the umbrella rule exists.

    The largest rank :math:`k = n` has :math:`v(n) = (1-\alpha)^n`, so
    :math:`n_{\min} = \lceil \log\delta / \log(1-\alpha) \rceil` (59 for
    :math:`\alpha = \delta = 0.05`).

    Parameters
    ----------
    bound : float
        :math:`\alpha`, the type-I error bound, in (0, 1).
    delta : float
        :math:`\delta`, the allowed probability of violating it, in (0, 1).
    """
    bound, delta = _level(bound, "bound"), _level(delta, "delta")
    n = max(1, math.ceil(math.log(delta) / math.log1p(-bound)))
    # The ratio may round across an integer: settle on (1-bound)^n <= delta with `_binom_sf` itself,
    # the quantity np_umbrella_rank compares.
    while n > 1 and _binom_sf(n - 2, n - 1, 1.0 - bound) <= delta:
        n -= 1
    while _binom_sf(n - 1, n, 1.0 - bound) > delta:
        n += 1
    return n


def np_umbrella_rank(n, bound, delta) -> int:
    r"""1-based rank :math:`k` of the umbrella threshold among :math:`n` held-out scores.

    The smallest :math:`k` with :math:`v(k) = P(\mathrm{Bin}(n, 1-\alpha) \ge k) \le \delta`
    (module docstring), found by bisection on :math:`k` (:math:`v` decreases in :math:`k`), each
    :math:`v(k)` computed as ``scipy.stats.binom.sf(k - 1, n, 1 - bound)`` (through `scipy.special.betainc`,
    bit for bit), which is accurate
    in relative terms even where :math:`v(k)` underflows a direct sum of terms.

    Parameters
    ----------
    n : int
        Number of held-out scores of the constrained class.
    bound : float in (0, 1)
        Type-I error bound.
    delta : float in (0, 1)
        Allowed probability that the type-I error exceeds ``bound``.

    Returns
    -------
    int in [1, n]

    Raises
    ------
    ValueError
        ``"n: ..."`` when :math:`(1-\alpha)^n > \delta` (no rank works), with the smallest valid n.
    """
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"n: expected an integer, got {type(n).__name__}")
    n = int(n)
    bound, delta = _level(bound, "bound"), _level(delta, "delta")
    p = 1.0 - bound
    if n < 1 or _binom_sf(n - 1, n, p) > delta:
        raise ValueError(f"n: {n} held-out samples of the constrained class are too few for bound={bound:g}, "
                         f"delta={delta:g}: even the largest score leaves P(type-I error > bound) = "
                         f"(1 - bound)^n > delta; the umbrella rule needs n >= "
                         f"{np_umbrella_min_samples(bound, delta)}")
    lo, hi = 1, n  # invariant: v(hi) <= delta; v(k) > delta for every k < lo
    while lo < hi:
        mid = (lo + hi) // 2
        if _binom_sf(mid - 1, n, p) <= delta:
            hi = mid
        else:
            lo = mid + 1
    return lo


def np_umbrella_threshold(scores_constrained, bound, delta) -> float:
    r"""Umbrella threshold of Tong, Feng & Li [TFL18]: a high-probability type-I error bound.

    Predicting the other class iff :math:`s > t` with :math:`t = s_{(k)}`,
    :math:`k` = :func:`np_umbrella_rank` (n, bound, delta), gives a type-I error above
    :math:`\alpha` with probability at most :math:`\delta` over the held-out sample (module
    docstring; any score distribution, ties included).

    Parameters
    ----------
    scores_constrained : array-like of shape (n,)
        Scores of :math:`n` held-out samples of the constrained class (higher score = predicted as
        the other class), independent of the data that fitted the scoring function.
    bound : float in (0, 1)
        Type-I error bound.
    delta : float in (0, 1)
        Violation probability.

    Returns
    -------
    float
        The :math:`k`-th smallest score. Use the strict rule ``score > threshold``.

    Raises
    ------
    ValueError
        ``"scores_constrained: ..."`` for non-finite or non 1-D scores, or ``n`` below
        :func:`np_umbrella_min_samples` (the message names n and the smallest valid n).
    """
    s = np.asarray(scores_constrained, dtype=np.float64)
    if s.ndim != 1:
        raise ValueError(f"scores_constrained: expected a 1-D array, got shape {s.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores_constrained: contains NaN or inf")
    try:
        k = np_umbrella_rank(s.shape[0], bound, delta)
    except ValueError as exc:
        if str(exc).startswith("n:"):
            raise ValueError("scores_constrained: " + str(exc)) from None
        raise
    return float(np.partition(s, k - 1)[k - 1])


def _labels(y_true, y_pred, sample_weight):
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.ndim != 1:
        raise ValueError(f"y_true: expected a 1-D array, got shape {y_true.shape}")
    if y_pred.shape != y_true.shape:
        raise ValueError(f"y_pred: expected shape {y_true.shape} (as y_true), got {y_pred.shape}")
    if sample_weight is not None:
        sample_weight = _weights(sample_weight, y_true.shape[0])
    return y_true, y_pred, sample_weight


def _share(wrong, mask, sample_weight, field):
    """The (weighted) share of ``wrong`` among the rows of ``mask``."""
    if sample_weight is None:
        return float(np.mean(wrong[mask]))
    w = sample_weight[mask]
    total = float(w.sum())
    if not total > 0:
        raise ValueError(f"sample_weight: the rows of {field} have zero total weight")
    return float(w @ wrong[mask]) / total


def type_one_error(y_true, y_pred, *, constrained_class, sample_weight=None) -> float:
    r"""Type-I error :math:`P(\hat y \ne c \mid y = c)` of the constrained class :math:`c`.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        True labels.
    y_pred : array-like of shape (n,)
        Predicted labels, in the encoding of ``y_true`` (compared with ``==``).
    constrained_class : label
        The label :math:`c` whose misclassification is bounded (class 0 of [TFL18]).
    sample_weight : array-like of shape (n,), optional
        Row weights :math:`c_i \ge 0`: the share becomes a weighted mean over the rows of class :math:`c`.

    Returns
    -------
    float in [0, 1]

    Raises
    ------
    ValueError
        ``"constrained_class: ..."`` when no sample has that label.
    """
    y_true, y_pred, sample_weight = _labels(y_true, y_pred, sample_weight)
    mask = y_true == constrained_class
    if not np.any(mask):
        raise ValueError(f"constrained_class: no sample of y_true has the label {constrained_class!r}")
    return _share(y_pred != constrained_class, mask, sample_weight, "the constrained class")


def type_two_error(y_true, y_pred, *, constrained_class, sample_weight=None) -> float:
    r"""Type-II error :math:`P(\hat y = c \mid y \ne c)`: the other class predicted as :math:`c`.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        True labels.
    y_pred : array-like of shape (n,)
        Predicted labels, in the encoding of ``y_true`` (compared with ``==``).
    constrained_class : label
        The label :math:`c` of the constrained class.
    sample_weight : array-like of shape (n,), optional
        Row weights :math:`c_i \ge 0`: the share becomes a weighted mean over the rows not of class :math:`c`.

    Returns
    -------
    float in [0, 1]

    Raises
    ------
    ValueError
        ``"y_true: ..."`` when every sample has the label ``constrained_class``.
    """
    y_true, y_pred, sample_weight = _labels(y_true, y_pred, sample_weight)
    mask = y_true != constrained_class
    if not np.any(mask):
        raise ValueError(f"y_true: every sample has the constrained label {constrained_class!r}; the type-II "
                         "error needs samples of the other class")
    return _share(y_pred == constrained_class, mask, sample_weight, "the other class")
