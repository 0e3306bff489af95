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

__all__ = ["CERTIFIED_CONSTRAINTS", "CONFIDENCE_HOLDOUT", "CERTIFY_AIM", "certified_gap", "certified_rate_bounds",
           "clopper_pearson", "guarantee_text", "not_certified_message"]

#: The held-out share with ``confidence`` when ``validation_fraction`` is not given: half of it
#: steers the fit, half certifies the kept model (`fastcon.FairClassifier`, the boosted one).
CONFIDENCE_HOLDOUT = 0.4
#: With ``confidence``, the steering half's bound is widened by this many standard errors
#: (`certified_gap`'s ``aim``): the certifying half's rates differ from the steering half's by
#: about sqrt(2) standard errors of each, and 1.28 of them more makes the certificate pass in about
#: 9 fits in 10 where the bound is within reach (instead of about half).
CERTIFY_AIM = 1.2816
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


def certified_rate_bounds(constraint, predicted, y01, codes, n_groups, delta, aim=0.0):
    r"""Lower and upper bounds on every rate the constraint compares, all valid at once with probability :math:`\ge 1 - \delta`.

    Parameters
    ----------
    constraint, predicted, y01, codes, n_groups, delta, aim
        As in `certified_gap`.

    Returns
    -------
    lower, upper : ndarray of shape (R,)
        Rate :math:`r = f G + g` is family :math:`f`'s rate (`CERTIFIED_CONSTRAINTS` order: for
        equalized odds the true-positive rates, then the false-positive ones) of group :math:`g`,
        the order of `fastcon.problems.group_fairness_constraints`' rates. A rate without a
        held-out row is bounded by [0, 1] only.
    """
    families = CERTIFIED_CONSTRAINTS[constraint]
    level = float(delta) / (2 * len(families) * n_groups)
    if aim > 0.0:
        from scipy.special import ndtr, ndtri
        level = float(ndtr(ndtri(level) - aim))
    predicted = np.asarray(predicted, dtype=bool)
    lower, upper = np.zeros(len(families) * n_groups), np.ones(len(families) * n_groups)
    for f, labels in enumerate(families):
        rows = np.isin(y01, labels)
        trials = np.bincount(codes[rows], minlength=n_groups)
        successes = np.bincount(codes[rows & predicted], minlength=n_groups)
        low, up = clopper_pearson(successes, trials, level)
        seen = trials > 0
        lower[f * n_groups:(f + 1) * n_groups] = np.where(seen, low, 0.0)
        upper[f * n_groups:(f + 1) * n_groups] = np.where(seen, up, 1.0)
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
        the held-out rows meets the bound certifies on the other half, whose rates scatter
        around the first's, in most fits rather than about half of them.
    """
    for labels in CERTIFIED_CONSTRAINTS[constraint]:
        if np.any(np.bincount(codes[np.isin(y01, labels)], minlength=n_groups) == 0):
            return 1.0      # a rate with no held-out row is bounded by nothing but [0, 1]
    lower, upper = certified_rate_bounds(constraint, predicted, y01, codes, n_groups, delta, aim)
    worst = 0.0
    for f in range(len(CERTIFIED_CONSTRAINTS[constraint])):
        part = slice(f * n_groups, (f + 1) * n_groups)
        gaps = upper[part][:, None] - lower[part][None, :]
        np.fill_diagonal(gaps, -np.inf)
        worst = max(worst, float(gaps.max()))
    return min(worst, 1.0)


def guarantee_text(constraint, certified, bound, confidence, n_rows):
    """``guarantee_`` of a certified fit: ``"certified: ..."`` or ``"not certified: ..."``."""
    verdict = ("certified" if certified <= bound else
               f"not certified (bound {bound:g}; no guarantee at the bound)")
    return (f"{verdict}: population {constraint} gap <= {certified:.4g} with probability >= {confidence:g} "
            f"(Clopper-Pearson bounds on {n_rows} held-out rows)")


def not_certified_message(constraint, certified, bound, confidence, n_rows):
    """The UserWarning of a fit whose certified bound is above ``bound``."""
    return (f"bound: {bound} cannot be certified at confidence {confidence} with the rows available: the "
            f"certified bound on the {constraint} gap is {certified:.4g} ({n_rows} certifying rows), the smallest "
            "bound this model certifies; use more rows, a lower confidence or a larger bound")
