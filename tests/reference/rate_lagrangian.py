r"""Plain NumPy/SciPy references for rate-constrained boosting (`fastcon.boosting._rate_fit`) and the hard and
smoothed pair values of `fastcon.problems.RateGapConstraints` at threshold 0: one obvious expression per formula,
no fastcon code.

Rates of a group :math:`k` over its rows of a family (all rows: selection rate; positive rows: true-positive
rate; negative rows: false-positive rate), weighted means of :math:`[F_i > 0]` (hard: a row at exactly 0 is
*not* above, as ``predict`` labels it) or of :math:`\sigma(F_i/\tau)` (smoothed). Pair values
:math:`r_a - r_b - \kappa` for every ordered pair :math:`a \ne b` (``a`` major, ``b`` minor), family by
family (equalized odds: the true-positive pairs, then the false-positive ones).
"""
import numpy as np
from scipy.special import expit

#: The label sets of each family's rows, family by family, per constraint name.
FAMILIES = {"demographic_parity": [(0, 1)], "equal_opportunity": [(1,)], "false_positive_parity": [(0,)],
            "equalized_odds": [(1,), (0,)]}


def _rates(values, y01, codes, weight, ys):
    """Weighted mean of ``values`` over each group's rows whose label is in ``ys`` (groups 0..max code)."""
    out = []
    for k in range(int(codes.max()) + 1):
        rows = (codes == k) & np.isin(y01, ys)
        out.append(np.sum(weight[rows] * values[rows]) / np.sum(weight[rows]))
    return np.array(out)


def _pair_values(values, constraint, y01, codes, weight, bound):
    y01, codes = np.asarray(y01), np.asarray(codes)
    weight = np.ones(codes.shape[0]) if weight is None else np.asarray(weight, dtype=np.float64)
    out = []
    for ys in FAMILIES[constraint]:
        r = _rates(values, y01, codes, weight, ys)
        out += [r[a] - r[b] - bound for a in range(r.size) for b in range(r.size) if a != b]
    return np.array(out)


def hard_pair_values(constraint, scores, y01, codes, weight=None, bound=0.0):
    r""":math:`r_a - r_b - \kappa` per ordered pair, :math:`r` the weighted fraction of rows with score > 0."""
    return _pair_values((np.asarray(scores, dtype=np.float64) > 0).astype(np.float64), constraint, y01, codes,
                        weight, bound)


def smoothed_pair_values(constraint, scores, y01, codes, tau, weight=None, bound=0.0):
    r""":math:`\tilde r_a - \tilde r_b - \kappa` per ordered pair, :math:`\tilde r` the weighted mean of
    :math:`\sigma(F_i/\tau)`."""
    return _pair_values(expit(np.asarray(scores, dtype=np.float64) / tau), constraint, y01, codes, weight, bound)


def logistic_losses(F, y01):
    r""":math:`\ell_i = \log(1 + e^{F_i}) - y_i F_i`."""
    return np.logaddexp(0.0, F) - y01 * F


def lagrangian(F, y01, codes, constraint, multipliers, tau, bound):
    r""":math:`\sum_i \ell(F_i; y_i) + n\sum_k \lambda_k\,\tilde g_k(F)` (unit row weights)."""
    F = np.asarray(F, dtype=np.float64)
    return float(np.sum(logistic_losses(F, y01))
                 + F.shape[0] * np.dot(multipliers, smoothed_pair_values(constraint, F, y01, codes, tau,
                                                                          bound=bound)))


def multiplier_step(multipliers, hard_gaps, tolerance, dual_step, aim):
    r""":math:`\lambda_k \leftarrow \max\{0,\ \lambda_k + \eta\,(g_k - a\varepsilon)\}`, :math:`g_k = r_a - r_b`
    the hard pair gap."""
    return np.maximum(0.0, np.asarray(multipliers, dtype=np.float64)
                      + dual_step * (np.asarray(hard_gaps, dtype=np.float64) - aim * tolerance))
