r"""Plain-NumPy references for the partial demographic-parity metrics (`fastcon.metrics._partial_fairness`):
the definitions of He, Huang, Yao & Lin [HHYL25] (eqs. (6) and (9)) computed directly on the truncated
samples, without the closed form (29), and the θ scan of their Lemma 5.1. No fastcon code."""
import itertools

import numpy as np


def within_group_rank(scores, groups):
    r"""Rank of every row in its own group: :math:`\#\{j \in k : s_j > s_i\} / n_k` (Definition 4.1)."""
    rank = np.empty(scores.shape[0])
    for label in np.unique(groups):
        k = groups == label
        s_k = scores[k]
        rank[k] = (s_k[None, :] > s_k[:, None]).sum(axis=1) / s_k.size
    return rank


def truncated_samples(scores, groups, interval):
    """``{label: scores of the rows of that group whose within-group rank lies in [alpha, beta)}``."""
    alpha, beta = interval
    rank = within_group_rank(scores, groups)
    keep = (rank >= alpha) & (rank < beta)
    return {label: scores[keep & (groups == label)] for label in np.unique(groups)}


def ks_distance(a, b):
    r""":math:`\sup_\theta |\Pr_a(s > \theta) - \Pr_b(s > \theta)|`, attained at a sample value."""
    thresholds = np.concatenate([a, b])
    rate_a = (a[None, :] > thresholds[:, None]).mean(axis=1)
    rate_b = (b[None, :] > thresholds[:, None]).mean(axis=1)
    return float(np.max(np.abs(rate_a - rate_b)))


def partial_dp(scores, groups, interval):
    """KS distance of the truncated samples (eq. (6)), worst pair of groups."""
    kept = truncated_samples(np.asarray(scores, float), np.asarray(groups), interval)
    return max(ks_distance(kept[a], kept[b]) for a, b in itertools.combinations(kept, 2))


def weak_partial_dp(scores, groups, interval, threshold=0.0):
    """Gap of the rates of ``s > threshold`` in the truncated samples (eq. (9)), worst pair of groups."""
    kept = truncated_samples(np.asarray(scores, float), np.asarray(groups), interval)
    rates = [np.mean(kept[label] > threshold) for label in kept]
    return float(max(rates) - min(rates))


def ccdf_scan(scores, groups):
    r"""Every group's CCDF at θ = −∞, each sample value, +∞: shape (G, n + 2); all CCDF vectors occur here."""
    thresholds = np.concatenate([[-np.inf], scores, [np.inf]])
    return np.array([(scores[groups == label][None, :] > thresholds[:, None]).mean(axis=1)
                     for label in np.unique(groups)])


def lemma_5_1_windows(ccdf, levels, width):
    r"""For each level :math:`p`: is there a θ of the scan with :math:`p \le \bar F_k(\theta) \le p + w` for all k?"""
    low, high = ccdf.min(axis=0), ccdf.max(axis=0)
    return np.array([bool(np.any((low >= p) & (high <= p + width))) for p in levels])
