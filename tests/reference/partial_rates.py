r"""Plain NumPy references for the partial-fairness kernels (`fastcon._kernels._partial_rates`) and the
constraints of models (13) and (17) of He, Huang, Yao & Lin [HHYL25], written from the definitions:
one obvious expression per formula, no fastcon code."""
import numpy as np
from scipy.special import expit


# --------------------------------------------------------------------------- kernels
def hinge_cut_sums(z, groups, cuts, n_groups):
    r"""Group means of :math:`\max\{z - t_q, 0\}` and counts of :math:`z > t_q`, shapes (G, Q)."""
    u = z[:, None] - cuts[None, :]
    sums = np.zeros((n_groups, cuts.size))
    counts = np.zeros((n_groups, cuts.size), dtype=np.int64)
    for k in range(n_groups):
        rows = groups == k
        sums[k] = np.maximum(u[rows], 0.0).sum(axis=0) / rows.sum()
        counts[k] = (u[rows] > 0).sum(axis=0)
    return sums, counts


def masked_row_sums(X, z, groups, cuts, n_groups):
    r""":math:`\sum_{i \in k,\ z_i > t_q}\tilde x_i`, shape (G, Q, n_w): one masked product per (group, cut)."""
    out = np.zeros((n_groups, cuts.size, X.shape[1]))
    for k in range(n_groups):
        for q, t in enumerate(cuts):
            mask = ((groups == k) & (z > t)).astype(np.float64)
            out[k, q] = X.T @ mask
    return out


def logistic_level_sums(z, groups, theta, n_groups):
    r"""Group means of :math:`\sigma(z - \theta_p)` and of :math:`\sigma'`, shapes (G, P)."""
    u = z[:, None] - theta[None, :]
    s, d = expit(u), expit(u) * expit(-u)
    sums = np.array([s[groups == k].mean(axis=0) for k in range(n_groups)])
    dsums = np.array([d[groups == k].mean(axis=0) for k in range(n_groups)])
    return sums, dsums


def logistic_row_sums(X, z, groups, theta, n_groups):
    r""":math:`\frac{1}{n_k}\sum_{i \in k}\sigma'(z_i - \theta_p)\tilde x_i`, shape (G, P, n_w)."""
    u = z[:, None] - theta[None, :]
    d = expit(u) * expit(-u)
    out = np.zeros((n_groups, theta.size, X.shape[1]))
    for k in range(n_groups):
        rows = groups == k
        for p in range(theta.size):
            out[k, p] = X.T @ (d[:, p] * rows) / rows.sum()
    return out


# --------------------------------------------------------------------------- features
def cross_term_features(X, groups, n_groups):
    """``[1, X, e_1, e_1 X, ..., e_{G-1}, e_{G-1} X]`` by stacking dense columns."""
    ones = np.ones((X.shape[0], 1))
    blocks = [np.hstack([ones, X])]
    for k in range(1, n_groups):
        e = (groups == k).astype(np.float64)[:, None]
        blocks.append(np.hstack([e, e * X]))
    return np.hstack(blocks)


# --------------------------------------------------------------------------- constraints from the definitions
def surrogate(u, kind):
    """Ramp ``clip(u + 1/2, 0, 1)``, logistic ``expit(u)`` or the step ``1{u > 0}``."""
    if kind == "ramp":
        return np.clip(u + 0.5, 0.0, 1.0)
    if kind == "logistic":
        return expit(u)
    return (u > 0).astype(np.float64)


def group_means(z, groups, thresholds, kind, n_groups):
    r""":math:`S_{kp} = \frac{1}{n_k}\sum_{i \in k}\sigma(z_i - \theta_p)`, shape (G, P)."""
    s = surrogate(z[:, None] - np.asarray(thresholds)[None, :], kind)
    return np.array([s[groups == k].mean(axis=0) for k in range(n_groups)])


def partial_dp_constraints(z, groups, theta, levels, width, kind, n_groups):
    """Model (13): for every level p, group k: ``p - S <= 0`` then ``S - p - width <= 0``."""
    S = group_means(z, groups, theta, kind, n_groups)
    out = []
    for j, p in enumerate(levels):
        for k in range(n_groups):
            out += [p - S[k, j], S[k, j] - p - width]
    return np.array(out)


def clip_rate(a, alpha, beta):
    return np.minimum(a, beta) - np.minimum(a, alpha)


def weak_partial_dp_constraints(z, groups, threshold, alpha, beta, width, kind, n_groups):
    """Model (17): every ordered pair (k, k'), k major."""
    a = group_means(z, groups, [threshold], kind, n_groups)[:, 0]
    c = clip_rate(a, alpha, beta)
    return np.array([c[k] - c[l] - width for k in range(n_groups) for l in range(n_groups) if l != k])


def partial_dp_penalty(z, groups, theta, levels, alpha, beta, kind, n_groups):
    """Penalty (78): ``2 / (beta - alpha) * max_p max_k |S_kp - p|``."""
    S = group_means(z, groups, theta, kind, n_groups)
    return 2.0 / (beta - alpha) * np.max(np.abs(S - np.asarray(levels)[None, :]))


def weak_partial_dp_penalty(z, groups, threshold, alpha, beta, kind, n_groups):
    """Penalty (83), largest over pairs: ``1 / (beta - alpha) * max_{k,k'} |c_k - c_k'|``."""
    a = group_means(z, groups, [threshold], kind, n_groups)[:, 0]
    c = clip_rate(a, alpha, beta)
    return float(np.ptp(c)) / (beta - alpha)
