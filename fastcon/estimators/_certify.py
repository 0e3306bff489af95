r"""A finite-sample upper bound on a rate gap between groups, from held-out rows (issue 34, part 2).

For a fixed classifier, the rate of group :math:`k` (selection rate, true- or false-positive rate)
is a binomial proportion on the held-out rows of that group (and label). Clopper–Pearson gives
one-sided bounds :math:`L_k \le r_k \le U_k`, each failing with probability at most :math:`a`
(exact, for any rate):

.. math::

    L_k = B^{-1}(a;\ s_k,\ n_k - s_k + 1), \qquad U_k = B^{-1}(1 - a;\ s_k + 1,\ n_k - s_k)

(:math:`s_k` positive predictions among :math:`n_k` rows, :math:`B^{-1}` the inverse regularised
incomplete beta function; :math:`L_k = 0` at :math:`s_k = 0`, :math:`U_k = 1` at :math:`s_k = n_k`).
The gap of a family of rates is :math:`\max_{a \ne b} r_a - r_b \le \max_{a \ne b} U_a - L_b`. With
:math:`a = \delta / (2R)` over the :math:`R` rates the constraint compares, every bound holds at
once with probability at least :math:`1 - \delta` (union bound): the population gap is then at most
the certified gap.
"""
from __future__ import annotations

import numpy as np
from scipy.special import betaincinv

__all__ = ["CERTIFIED_CONSTRAINTS", "certified_gap", "clopper_pearson"]

#: The label sets of each rate family, per constraint: rows of a group with these labels.
CERTIFIED_CONSTRAINTS = {"demographic_parity": [(0, 1)], "equal_opportunity": [(1,)],
                         "false_positive_parity": [(0,)], "equalized_odds": [(1,), (0,)]}


def clopper_pearson(successes, trials, level):
    """One-sided Clopper–Pearson bounds ``(lower, upper)`` on a proportion, each wrong with probability ``level``."""
    s, n = np.asarray(successes, dtype=np.float64), np.asarray(trials, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        lower = np.where(s > 0, betaincinv(np.maximum(s, 1.0), n - s + 1.0, level), 0.0)
        upper = np.where(s < n, betaincinv(s + 1.0, np.maximum(n - s, 1.0), 1.0 - level), 1.0)
    return lower, upper


def certified_gap(constraint, predicted, y01, codes, n_groups, delta, aim=0.0) -> float:
    r"""Upper bound on the population gap of ``constraint``, valid with probability :math:`\ge 1 - \delta`.

    Parameters
    ----------
    constraint : str
        One of `CERTIFIED_CONSTRAINTS`.
    predicted : bool array of shape (n,)
        The classifier's positive predictions on held-out rows it was not fitted on.
    y01, codes : int arrays of shape (n,)
        Labels (0/1) and group codes ``0..n_groups-1`` of those rows.
    n_groups : int
    delta : float
        Probability that the bound fails, split over the :math:`2R` one-sided bounds.
    aim : float
        :math:`\ge 0`. Widen each one-sided bound by ``aim`` standard errors (in the normal
        approximation: the level :math:`a` becomes :math:`\bar\Phi(\bar\Phi^{-1}(a) + \text{aim})`).
        Not a certificate then but a target: a model tuned until this wider bound on one half of
        the held-out rows meets the tolerance certifies on the other half, whose rates scatter
        around the first's, in most fits rather than about half of them.
    """
    families = CERTIFIED_CONSTRAINTS[constraint]
    level = float(delta) / (2 * len(families) * n_groups)
    if aim > 0.0:
        from scipy.special import ndtr, ndtri
        level = float(ndtr(ndtri(level) - aim))
    predicted = np.asarray(predicted, dtype=bool)
    worst = 0.0
    for labels in families:
        rows = np.isin(y01, labels)
        trials = np.bincount(codes[rows], minlength=n_groups)
        successes = np.bincount(codes[rows & predicted], minlength=n_groups)
        if np.any(trials == 0):
            return 1.0      # a rate with no held-out row is bounded by nothing but [0, 1]
        lower, upper = clopper_pearson(successes, trials, level)
        gaps = upper[:, None] - lower[None, :]
        np.fill_diagonal(gaps, -np.inf)
        worst = max(worst, float(gaps.max()))
    return min(worst, 1.0)
