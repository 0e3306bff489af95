"""The umbrella rule's two steps shared by the Neyman–Pearson estimators: the held-out split and the strict threshold.

Tong, Feng & Li, "Neyman-Pearson classification algorithms and NP receiver operating
characteristics" (Science Advances, 2018): hold out rows of the constrained class that no fit sees,
and threshold the fitted scores at an order statistic of theirs (`fastcon.metrics.np_umbrella_threshold`).
"""
from __future__ import annotations

import numpy as np

from ..metrics._neyman_pearson import np_umbrella_min_samples

__all__ = ["calibration_rows", "strict_threshold"]


def calibration_rows(rows, fraction, alpha, delta, rng):
    """A random ``fraction`` of the constrained class's ``rows`` to hold out (sorted), at least the rule's minimum.

    A ValueError naming ``calibration_fraction`` when the part is smaller than
    :math:`\\lceil\\log\\delta/\\log(1-\\alpha)\\rceil` (`np_umbrella_min_samples`) or takes every row.
    """
    k = int(round(fraction * rows.size))
    need = np_umbrella_min_samples(alpha, delta)
    if k < need:
        raise ValueError(f"calibration_fraction: {k} held-out rows of the constrained class, but the umbrella "
                         f"rule at alpha={alpha:g}, delta={delta:g} needs at least {need} (about "
                         f"{need / max(fraction, 1e-12):.0f} rows of that class at this "
                         "fraction); use more rows, a larger alpha or delta, or delta=None")
    if k >= rows.size:
        raise ValueError(f"calibration_fraction: holds out all {rows.size} rows of the constrained class, "
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
