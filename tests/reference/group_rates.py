r"""Plain NumPy/SciPy references for the score-space kernels (`fastcon._kernels._group_rates`) and the
hard fairness gaps the estimators bound: one obvious expression per formula, no fastcon code."""
import numpy as np
from scipy.special import expit
from scipy.stats import ks_2samp, wasserstein_distance


# --------------------------------------------------------------------------- kernels
def cell_sigmoid_sums(z, cell, weight, tau, thresholds, n_cells):
    r""":math:`S_{cj} = \sum_{i: c(i) = c}c_i\sigma((z_i - \theta_j)/\tau)`; rows with ``cell < 0`` are skipped."""
    sig = weight[:, None] * expit((z[:, None] - thresholds[None, :]) / tau)
    out = np.zeros((n_cells, thresholds.size))
    for c in range(n_cells):
        out[c] = sig[cell == c].sum(axis=0)
    return out


def cell_step_sums(z, cell, weight, thresholds, n_cells):
    """S[c, j] = sum of weight over rows of cell c with z > thresholds[j] (cell -1: no cell)."""
    out = np.zeros((n_cells, len(thresholds)))
    for j, t in enumerate(thresholds):
        keep = (cell >= 0) & (z > t)
        out[:, j] = np.bincount(cell[keep], weights=weight[keep], minlength=n_cells)
    return out


def cell_sigmoid_vjp(z, cell, weight, tau, thresholds, coef):
    r""":math:`v_i = c_i\tau^{-1}\sum_j C_{c(i) j}\,\sigma'((z_i - \theta_j)/\tau)` (0 outside every cell)."""
    sig = expit((z[:, None] - thresholds[None, :]) / tau)
    rows = np.where(cell >= 0, cell, 0)
    v = weight * (coef[rows] * sig * (1.0 - sig)).sum(axis=1) / tau
    return np.where(cell >= 0, v, 0.0)


def weighted_margin_loss(loss, z, y, weight):
    r""":math:`\sum_i c_i\phi(y_i z_i)` and :math:`v_i = c_i y_i\phi'(y_i z_i)` for logistic and hinge."""
    m = y * z
    if loss == "logistic":
        phi, dphi = np.logaddexp(0.0, -m), -expit(-m)
    elif loss == "hinge":
        phi, dphi = np.maximum(0.0, 1.0 - m), np.where(m < 1.0, -1.0, 0.0)
    else:
        raise ValueError(f"loss: no reference for {loss!r}")
    return float(np.sum(weight * phi)), weight * y * dphi


# --------------------------------------------------------------------------- hard gaps (prediction: score > 0)
def rates(scores, y01, groups):
    """``{label: (n, selection rate, TPR, FPR)}`` of the prediction ``scores > 0`` per group label."""
    pred = np.asarray(scores) > 0
    y01 = np.asarray(y01)
    out = {}
    for label in np.unique(groups):
        k = groups == label
        pos, neg = k & (y01 == 1), k & (y01 == 0)
        out[label.item() if hasattr(label, "item") else label] = (
            int(k.sum()), pred[k].mean(), pred[pos].mean() if pos.any() else np.nan,
            pred[neg].mean() if neg.any() else np.nan)
    return out


def hard_gap(constraint, scores, y01, groups):
    """The hard gap of a named constraint, worst pair of groups (max minus min of the rates; KS; W1)."""
    scores = np.asarray(scores, dtype=np.float64)
    groups = np.asarray(groups)
    labels = np.unique(groups)
    if constraint in ("roc", "wasserstein"):
        dist = (lambda a, b: ks_2samp(a, b).statistic) if constraint == "roc" else wasserstein_distance
        return max(dist(scores[groups == a], scores[groups == b])
                   for i, a in enumerate(labels) for b in labels[i + 1:])
    table = np.array([r[1:] for r in rates(scores, y01, groups).values()])
    gap = np.ptp(table, axis=0)                              # selection, TPR, FPR
    return {"demographic_parity": gap[0], "equal_opportunity": gap[1], "false_positive_parity": gap[2],
            "equalized_odds": max(gap[1], gap[2])}[constraint]


def transport_gap(za, zb, huber=0.0):
    r""":math:`\int_0^1 \psi_\mu(Q_a(u) - Q_b(u))\,du` over the merged quantile breakpoints (:math:`\psi_0 = |\cdot|`,
    else Huber's: :math:`d^2/(2\mu)` for :math:`|d| \le \mu`, :math:`|d| - \mu/2` beyond)."""
    za, zb = np.sort(za), np.sort(zb)
    na, nb = za.size, zb.size
    # breakpoints in integer units of 1/(na nb): exact, like the kernel's merge
    cuts = np.union1d(np.arange(na + 1) * nb, np.arange(nb + 1) * na)
    widths = np.diff(cuts) / (na * nb)
    mid = (cuts[:-1] + cuts[1:]) / 2                          # units of 1/(na nb): index = floor(mid / nb)
    d = za[(mid // nb).astype(np.int64)] - zb[(mid // na).astype(np.int64)]
    ad = np.abs(d)
    psi = ad if huber == 0 else np.where(ad <= huber, d * d / (2 * huber), ad - huber / 2)
    return float(widths @ psi)
