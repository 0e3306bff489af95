r"""Plain NumPy/SciPy references for the multi-class rate constraints (`fastcon.problems._class_rate_constraints`)
and for the certified bound of a binary rate gap (`fastcon.estimators._certify`): one obvious expression per
formula, no fastcon code.

Multi-class: scores :math:`F \in \mathbb R^{n \times J}`, prediction :math:`\arg\max_j F_{ij}`. Class :math:`j`'s
one-vs-rest rates of group :math:`k` are means of :math:`[\hat y_i = j]` over the group's rows of a family (all
rows: selection rate; rows with :math:`y_i = j`: true-positive rate; rows with :math:`y_i \ne j`: false-positive
rate). Values :math:`r_a - r_b - \kappa` for every ordered pair :math:`a \ne b` (``a`` major, ``b`` minor),
family by family within a class (equalized odds: the true-positive pairs, then the false-positive ones), class by
class (class-major). The smoothed values replace :math:`[\hat y_i = j]` by :math:`\sigma(m_{ij}/\tau)`,
:math:`m_{ij} = F_{ij} - \max_{k \ne j} F_{ik}`.
"""
import numpy as np
from scipy.special import expit
from scipy.stats import beta, norm

#: Per constraint, each family of rows of class j as a predicate on (label == j): "all", "pos", "neg".
FAMILIES = {"demographic_parity": ["all"], "equal_opportunity": ["pos"], "false_positive_parity": ["neg"],
            "equalized_odds": ["pos", "neg"]}


def margins(F):
    r""":math:`m_{ij} = F_{ij} - \max_{k \ne j} F_{ik}` and that :math:`k` (the first of equal ones), by loops."""
    F = np.asarray(F, dtype=np.float64)
    n, J = F.shape
    m, rival = np.empty((n, J)), np.empty((n, J), dtype=np.int64)
    for i in range(n):
        for j in range(J):
            others = [k for k in range(J) if k != j]
            k = others[int(np.argmax([F[i, o] for o in others]))]
            rival[i, j] = k
            m[i, j] = F[i, j] - F[i, k]
    return m, rival


def _family_rows(family, labels, j):
    if family == "all":
        return np.ones(labels.shape[0], dtype=bool)
    return labels == j if family == "pos" else labels != j


def _class_values(indicator, constraint, labels, codes, bound):
    """Pair values from a per-row, per-class indicator or smoothed indicator (n, J)."""
    labels, codes = np.asarray(labels), np.asarray(codes)
    G, J = int(codes.max()) + 1, indicator.shape[1]
    out = []
    for j in range(J):
        for family in FAMILIES[constraint]:
            rows = _family_rows(family, labels, j)
            r = [indicator[rows & (codes == k), j].mean() for k in range(G)]
            out += [r[a] - r[b] - bound for a in range(G) for b in range(G) if a != b]
    return np.array(out)


def hard_class_values(constraint, F, labels, codes, bound=0.0):
    r"""Class-major pair values of the one-vs-rest rates of the ``argmax`` predictions."""
    F = np.asarray(F, dtype=np.float64)
    predicted = np.argmax(F, axis=1)
    indicator = (predicted[:, None] == np.arange(F.shape[1])[None, :]).astype(np.float64)
    return _class_values(indicator, constraint, labels, codes, bound)


def smoothed_class_values(constraint, F, labels, codes, tau, bound=0.0):
    r"""Class-major pair values of the smoothed rates, means of :math:`\sigma(m_{ij}/\tau)`."""
    m, _ = margins(F)
    return _class_values(expit(m / tau), constraint, labels, codes, bound)


def class_rates(F, labels, codes):
    """``rates[k][j] = (selection rate, TPR, FPR)`` of class j's argmax predictions in group k (NaN: no rows)."""
    F, labels, codes = np.asarray(F, dtype=np.float64), np.asarray(labels), np.asarray(codes)
    predicted = np.argmax(F, axis=1)
    out = {}
    for k in np.unique(codes):
        g = codes == k
        out[int(k)] = {}
        for j in range(F.shape[1]):
            hit = predicted == j
            pos, neg = g & (labels == j), g & (labels != j)
            out[int(k)][j] = (hit[g].mean(), hit[pos].mean() if pos.any() else np.nan,
                              hit[neg].mean() if neg.any() else np.nan)
    return out


def class_gap(constraint, F, labels, codes):
    """The largest gap between two groups over every class's rates of the constraint (argmax predictions)."""
    which = {"demographic_parity": (0,), "equal_opportunity": (1,), "false_positive_parity": (2,),
             "equalized_odds": (1, 2)}[constraint]
    table = class_rates(F, labels, codes)
    gap = 0.0
    for j in range(np.asarray(F).shape[1]):
        for t in which:
            r = np.array([table[k][j][t] for k in table])
            r = r[~np.isnan(r)]
            if r.size:
                gap = max(gap, float(r.max() - r.min()))
    return gap


# --------------------------------------------------------------------------- two classes: exact and certified gaps
def binary_rate_gap(constraint, predicted, y01, codes, weight=None):
    r"""The gap of the rates of binary predictions, each group's rate a ``weight``-weighted mean.

    With ``weight`` the probabilities of a finite support (one row per support point), this is the
    exact population gap of a classifier whose predictions on the support are ``predicted``.
    """
    predicted, y01, codes = np.asarray(predicted, dtype=np.float64), np.asarray(y01), np.asarray(codes)
    weight = np.ones(predicted.shape[0]) if weight is None else np.asarray(weight, dtype=np.float64)
    families = {"demographic_parity": [(0, 1)], "equal_opportunity": [(1,)], "false_positive_parity": [(0,)],
                "equalized_odds": [(1,), (0,)]}[constraint]
    gap = 0.0
    for ys in families:
        r = []
        for k in np.unique(codes):
            rows = (codes == k) & np.isin(y01, ys)
            r.append(np.sum(weight[rows] * predicted[rows]) / np.sum(weight[rows]))
        gap = max(gap, max(r) - min(r))
    return float(gap)


def clopper_pearson_gap(constraint, predicted, y01, codes, delta, aim=0.0):
    r""":math:`\max_{a \ne b} U_a - L_b` over the families: one-sided Clopper-Pearson bounds by Beta quantiles,
    each at level :math:`a = \delta / (2 R G)` (:math:`R` families, :math:`G` groups), capped at 1. With ``aim``
    each level becomes :math:`\Phi(\Phi^{-1}(a) - \text{aim})` (every bound widened by ``aim`` standard
    normal deviates)."""
    predicted, y01, codes = np.asarray(predicted, dtype=bool), np.asarray(y01), np.asarray(codes)
    families = {"demographic_parity": [(0, 1)], "equal_opportunity": [(1,)], "false_positive_parity": [(0,)],
                "equalized_odds": [(1,), (0,)]}[constraint]
    G = int(codes.max()) + 1
    level = delta / (2 * len(families) * G)
    if aim:
        level = norm.cdf(norm.ppf(level) - aim)
    worst = 0.0
    for ys in families:
        upper, lower = [], []
        for k in range(G):
            rows = (codes == k) & np.isin(y01, ys)
            n, s = int(rows.sum()), int(predicted[rows].sum())
            lower.append(beta.ppf(level, s, n - s + 1) if s > 0 else 0.0)
            upper.append(beta.ppf(1 - level, s + 1, n - s) if s < n else 1.0)
        worst = max(worst, max(upper[a] - lower[b] for a in range(G) for b in range(G) if a != b))
    return min(worst, 1.0)
