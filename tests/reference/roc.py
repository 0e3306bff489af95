r"""NumPy reference for the ROC-fairness objective ([HL23] eq. 11) and the fairness metrics.

One sigmoid per (sample, threshold) pair, materialised as a matrix: slow and obviously right.
"""
import numpy as np
from scipy.special import expit


def sigmoid_means(s, thresholds):
    r""":math:`\frac1n\sum_i \sigma(s_i - \theta_j)` for every j (``expit`` is accurate in both tails)."""
    return expit(np.asarray(s)[:, None] - np.asarray(thresholds)[None, :]).mean(axis=0)


def sigmoid_prime(z):
    r""":math:`\sigma'(z) = \sigma(z)\,\sigma(-z)`."""
    return expit(z) * expit(-z)


def roc_value_grad(A_p, A_u, w, thresholds):
    r"""Value :math:`R(w)`, subgradient :math:`\zeta_R`, maximising index and signed gap."""
    s_p, s_u = np.asarray(A_p @ w).ravel(), np.asarray(A_u @ w).ravel()
    gaps = sigmoid_means(s_p, thresholds) - sigmoid_means(s_u, thresholds)
    j = int(np.argmax(np.abs(gaps)))
    theta = thresholds[j]
    grad = np.sign(gaps[j]) * (
        np.asarray(A_p.T @ sigmoid_prime(s_p - theta)).ravel() / s_p.size
        - np.asarray(A_u.T @ sigmoid_prime(s_u - theta)).ravel() / s_u.size)
    return abs(gaps[j]), grad, j, gaps[j]


def hard_roc_gap(s_p, s_u, thresholds=None):
    r""":math:`\max_\theta |P_p(s\ge\theta) - P_u(s\ge\theta)|` by brute force over the grid, or over
    every score and a point beyond both ends when ``thresholds`` is None."""
    if thresholds is None:
        allv = np.concatenate([s_p, s_u])
        thresholds = np.concatenate([allv, [allv.min() - 1.0, allv.max() + 1.0]])
    rp = (np.asarray(s_p)[:, None] >= thresholds[None, :]).mean(axis=0)
    ru = (np.asarray(s_u)[:, None] >= thresholds[None, :]).mean(axis=0)
    return float(np.max(np.abs(rp - ru)))
