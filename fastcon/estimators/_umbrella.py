"""The umbrella rule's two steps shared by the Neyman–Pearson estimators: the held-out split and the strict threshold.

Tong, Feng & Li, "Neyman-Pearson classification algorithms and NP receiver operating
characteristics" (Science Advances, 2018): hold out rows of the constrained class that no fit sees,
and threshold the fitted scores at an order statistic of theirs (`fastcon.metrics.np_umbrella_threshold`).
"""
from __future__ import annotations

import numpy as np

from ..metrics._neyman_pearson import np_umbrella_min_samples

__all__ = ["calibration_rows", "certified_class_shift", "strict_threshold"]


def calibration_rows(rows, fraction, bound, delta, rng, name="the constrained class"):
    """A random ``fraction`` of the constrained class's ``rows`` to hold out (sorted), at least the rule's minimum.

    A ValueError naming ``calibration_fraction`` when the part is smaller than
    :math:`\\lceil\\log\\delta/\\log(1-\\alpha)\\rceil` (`np_umbrella_min_samples`) or takes every row;
    ``name`` names the class in the message.
    """
    k = int(round(fraction * rows.size))
    need = np_umbrella_min_samples(bound, delta)
    if k < need:
        raise ValueError(f"calibration_fraction: {k} held-out rows of {name}, but the umbrella "
                         f"rule at bound={bound:g}, delta={delta:g} needs at least {need} (about "
                         f"{need / max(fraction, 1e-12):.0f} rows of that class at this "
                         "fraction); use more rows, a larger bound or delta, or delta=None")
    if k >= rows.size:
        raise ValueError(f"calibration_fraction: holds out all {rows.size} rows of {name}, "
                         "none is left to fit the scores; lower it")
    return np.sort(rng.permutation(rows)[:k])


def strict_threshold(scores, threshold) -> float:
    """``threshold`` (one of ``scores``) moved halfway to the next larger score, for the rule "other class iff s > t".

    A row at the threshold itself could land on either side once its score is recomputed in another
    order of sums (+5.6e-17 was seen, and with the sign flipped an exact 0 goes to the other class).
    Halfway to the next larger score keeps the same rows on each side and none on the boundary; the
    umbrella guarantee only improves (the error at a higher threshold is no larger).
    """
    above = scores[scores > threshold]
    return (0.5 * (threshold + float(above.min())) if above.size
            else threshold + 1e-9 * (1.0 + float(np.abs(scores).max())))


#: The path of `certified_class_shift`: fitting-row error shares gamma * alpha_k against the
#: unshifted classes, gamma = 0 (none: the most conservative) then 1% of the bounds up to twice them.
_SHIFT_PATH = np.r_[0.0, np.geomspace(0.01, 2.0, 47)]


def certified_class_shift(raw, intercept, y_index, calibration, bounds, fitted, delta):
    r"""The common score shift of the bounded classes that the held-out rows certify (multi-class NP).

    The multi-class form of the umbrella rule, by fixed-sequence testing (Bauer, "Multiple testing
    in clinical trials", Statistics in Medicine 1991; its use for risk control: Angelopoulos, Bates,
    Candès, Jordan & Lei, "Learn then test: calibrating predictive algorithms to achieve risk
    control", 2021). Predictions are :math:`\arg\max_c (s_c + t\,[c \in B])`, every class
    :math:`k \in B` with a bound :math:`\alpha_k < 1` (the keys of ``calibration``) raised by
    the same :math:`t`. A row of class :math:`k \in B` is then misclassified iff another class
    of :math:`B` outscores it (no common shift changes that) or an unshifted class (the priority
    class among them) outscores :math:`s_k + t`. So :math:`e_k(t)` falls as :math:`t` grows,
    the priority class's error rises, and the confusions inside :math:`B` stay as fitted: when
    they alone exceed a bound, nothing is certified. (Separate shifts per class would trade
    those confusions too; they chase each other upward when the bounds conflict, so one common
    shift is used.)

    *Candidates* come from the fitting rows only (rows no certificate reads):
    :math:`t(\gamma) = \max_k q_k(1 - \gamma\alpha_k)`, :math:`q_k` the quantiles of the
    shift each fitting row of class :math:`k` needs to beat every unshifted class, for
    :math:`\gamma = 0` (every such row beats them) and then from 1% of the bounds to twice them,
    each moved halfway to the next larger margin of the fitting rows, so that no row sharing a
    margin with a fitting row (discrete features) sits on the decision boundary, where the
    rounding of a product would decide its class.

    *Test.* For each candidate in turn, the null hypothesis "some :math:`e_k(t) > \alpha_k`" is
    rejected when every class's exact binomial p-value :math:`P(\mathrm{Bin}(m_k, \alpha_k) \le
    c_k(t))` is at most :math:`\delta` (:math:`c_k` errors among its :math:`m_k` held-out rows);
    the sequence stops at the first candidate not rejected. The probability that any rejected
    candidate misses a bound is then at most :math:`\delta` over the draw of the held-out rows
    (no union bound over candidates or classes is needed), and the last one rejected before the
    first failure, the smallest shift tested, is kept. When the first candidate already fails,
    nothing is certified: :math:`P(\text{certified and some } e_k > \alpha_k) \le \delta`. With
    two classes this is the umbrella rule of Tong, Feng & Li (2018) on a grid.

    Parameters
    ----------
    raw : ndarray of shape (n, C)
        :math:`X W^\top` without intercepts, computed as `predict` computes it.
    intercept : ndarray of shape (C,)
        The fitted intercepts (the scores are ``raw + intercept``, then the shift).
    y_index : ndarray of int of shape (n,)
        Every row's class index.
    calibration : dict
        Class index -> its held-out rows (never used by the fit).
    bounds : dict
        Class index -> :math:`\alpha_k`.
    fitted : ndarray of bool of shape (n,)
        Mask of the rows the scores were fitted on.
    delta : float
        The level of each test, in (0, 1).

    Returns
    -------
    dict
        ``shift`` (ndarray of shape (C,): :math:`t` on the classes of ``calibration``, 0
        elsewhere; the most conservative candidate when none is certified), ``certified``,
        ``p_value`` (the largest class p-value at ``shift``), ``errors`` and ``rows`` (class
        index -> held-out error and row count at ``shift``), ``tested`` (how many candidates
        were tested).
    """
    from scipy.special import bdtr

    C = raw.shape[1]
    classes = np.array(sorted(calibration))
    shifted = np.zeros(C)
    shifted[classes] = 1.0
    needed = {}
    for k in classes:   # the shift each fitting row of class k needs to beat every unshifted class
        scores = raw[np.flatnonzero(fitted & (y_index == k))] + intercept
        needed[k] = scores[:, shifted == 0].max(axis=1) - scores[:, k]
    margins = np.unique(np.concatenate(list(needed.values())))
    candidates = []
    for gamma in _SHIFT_PATH:
        t = -np.inf
        for k in classes:
            if needed[k].size:
                t = max(t, float(np.quantile(needed[k], 1.0 - min(gamma * bounds[k], 1.0)) if gamma > 0.0
                                 else needed[k].max()))
        if not np.isfinite(t):
            candidates.append(np.zeros(C))
            continue
        above = margins[np.searchsorted(margins, t, side="right"):]   # a row wins iff its margin is below t
        t = 0.5 * (t + float(above[0])) if above.size else t + 1e-9 * (1.0 + abs(t))
        candidates.append(t * shifted)

    held = np.concatenate([calibration[k] for k in classes])
    held_class = y_index[held]
    held_raw = raw[held]
    counts = np.bincount(held_class, minlength=C)[classes]
    alphas = np.array([bounds[k] for k in classes])

    def test(t):
        wrong = np.argmax(held_raw + (intercept + t), axis=1) != held_class
        errors = np.bincount(held_class[wrong], minlength=C)[classes]
        return float(np.max(bdtr(errors, counts, alphas))), errors

    tested, chosen = 0, None
    for t in candidates:
        p_value, errors = test(t)
        tested += 1
        if p_value > delta:
            break
        chosen = (t, p_value, errors)
    certified = chosen is not None
    if not certified:   # the most conservative candidate, reported as not certified
        chosen = (candidates[0], *test(candidates[0]))
    t, p_value, errors = chosen
    return {"shift": t, "certified": certified, "p_value": p_value,
            "errors": {int(k): float(e / m) for k, e, m in zip(classes, errors, counts)},
            "rows": {int(k): int(m) for k, m in zip(classes, counts)}, "tested": tested}
