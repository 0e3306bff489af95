"""Synthetic datasets with a known generative model: fairness, Neyman-Pearson, multi-class.

They are the embedded default of the README demo and of fast tests, so they must be cheap,
dependency-free and exactly reproducible: every generator draws from one
``numpy.random.default_rng(seed)`` in a fixed order, so the same arguments give bit-identical
output. Class and group sizes are exact (proportion x n, rounded, the remainder going to the
first class/group) rather than sampled, so small datasets never have an empty class or group.

Dense designs have i.i.d. N(0, 1) noise. Sparse designs (CSR) store each entry independently
with probability ``density``; a stored entry is N(0, 1) noise plus the row's mean shift for that
column, so the *signal* also lives only on stored entries and ``density`` does not change the
nature of the problem, only its sparsity.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._dataset import Dataset

__all__ = ["make_fair_classification", "make_neyman_pearson", "make_multiclass"]


def _check(n_samples, n_features, density, n_min=1):
    if int(n_samples) < n_min:
        raise ValueError(f"n_samples: expected at least {n_min}, got {n_samples}")
    if int(n_features) < 1:
        raise ValueError(f"n_features: expected at least 1, got {n_features}")
    if not 0 < density <= 1:
        raise ValueError(f"density: expected a value in (0, 1], got {density}")


def _exact_labels(rng, n, proportions, what):
    """A random permutation of exactly round(p_k n) copies of each k (remainder to k = 0)."""
    p = np.asarray(proportions, dtype=np.float64)
    if p.ndim != 1 or np.any(p <= 0) or abs(p.sum() - 1) > 1e-9:
        raise ValueError(f"{what}: expected positive proportions summing to 1, got {p.tolist()}")
    counts = np.floor(p * n + 0.5).astype(np.int64)
    counts[0] += n - counts.sum()
    if np.any(counts <= 0):
        raise ValueError(f"{what}: n_samples={n} leaves an empty class/group for proportions {p.tolist()}")
    return rng.permutation(np.repeat(np.arange(p.size), counts))


def _design(rng, means, row_ids, sparse, density, dense_cols=()):
    """X[i] = noise + means[row_ids[i]], dense or sparse (see the module docstring).

    ``dense_cols`` are stored for every row even when sparse, for columns whose shift must reach
    every row (the fairness proxy).
    """
    n, d = row_ids.size, means.shape[1]
    if not sparse:
        return rng.standard_normal((n, d)) + means[row_ids]
    nnz = rng.binomial(n * d, density)
    # Positions in the flattened matrix: sorted, distinct, so (rows, cols) is already CSR order.
    flat = np.sort(rng.choice(n * d, size=nnz, replace=False))
    for j in dense_cols:
        flat = np.union1d(flat, np.arange(n, dtype=np.int64) * d + j)
    rows, cols = np.divmod(flat, d)
    vals = rng.standard_normal(rows.size) + means[row_ids[rows], cols]
    return sp.csr_matrix((vals, (rows, cols)), shape=(n, d))


def make_fair_classification(n_samples=1000, n_features=20, n_groups=2, group_proportions=None, shift=1.0,
                             sparse=False, density=0.1, noise=0.5, seed=0) -> Dataset:
    r"""Binary classification whose groups differ in score, so an unconstrained classifier is unfair.

    Generative model
        1. Groups: exactly ``round(p_g n)`` rows of group g (``group_proportions``, default
           equal), in random order. Group g has the offset :math:`t_g = g / (G - 1)` (0 for
           group 0, 1 for the last group; 0 when G = 1).
        2. Features: :math:`x_i = z_i - \text{shift}\, t_{g_i} e_0`, with :math:`z_i` the noise
           of the module docstring. Column 0 is the *group proxy*; when sparse it is stored for
           every row so that the shift reaches every row.
        3. Labels: with :math:`w^\star_0 = 1` and :math:`w^\star_{1:}` Gaussian, scaled so that
           :math:`\langle w^\star_{1:}, z_{1:}\rangle` has unit variance,
           :math:`y_i = \operatorname{sign}(\langle w^\star, x_i\rangle + \text{noise}\,\varepsilon_i)`
           (:math:`\varepsilon_i \sim N(0, 1)`, sign(0) = +1).

    The group-mean difference of the true score :math:`\langle w^\star, x\rangle` between the
    first and last group is ``shift`` in expectation, so group 0 gets more positive labels and
    more positive predictions from any classifier fitted without constraints.

    Parameters
    ----------
    n_samples, n_features : int
    n_groups : int
    group_proportions : sequence of float, optional
        Length ``n_groups``, positive, summing to 1.
    shift : float
        Score gap between the first and the last group (0 gives fair data).
    sparse : bool
        CSR design with about ``density`` of the entries stored (plus the proxy column).
    density : float in (0, 1]
    noise : float
        Standard deviation of the label noise added to the score (0: separable by w*).
    seed : int

    Returns
    -------
    Dataset
        y in {-1, +1}, groups 0..G-1 named ``"group0"``, ....
    """
    _check(n_samples, n_features, density, n_min=n_groups)
    if int(n_groups) < 1:
        raise ValueError(f"n_groups: expected at least 1, got {n_groups}")
    rng = np.random.default_rng(seed)
    n, d, G = int(n_samples), int(n_features), int(n_groups)
    groups = _exact_labels(rng, n, np.full(G, 1.0 / G) if group_proportions is None else group_proportions,
                           "group_proportions")
    if len(np.unique(groups)) != G:
        raise ValueError(f"group_proportions: expected {G} proportions")
    t = np.arange(G) / (G - 1) if G > 1 else np.zeros(1)
    means = np.zeros((G, d))
    means[:, 0] = -shift * t
    X = _design(rng, means, groups, sparse, density, dense_cols=(0,))
    w = rng.standard_normal(d)
    stored = density if sparse else 1.0
    w[1:] /= np.sqrt(stored * max(np.sum(w[1:] ** 2), 1e-300))
    w[0] = 1.0
    score = X @ w + noise * rng.standard_normal(n)
    y = np.where(score >= 0, 1.0, -1.0)
    return Dataset(X, y, groups=groups, group_names=[f"group{g}" for g in range(G)],
                   name=f"fair_classification(seed={seed})", feature_names=[f"x{j}" for j in range(d)],
                   task="binary")


def make_neyman_pearson(n_samples=1000, n_features=20, positive_fraction=0.5, class_sep=2.0, sparse=False,
                        density=0.1, seed=0) -> Dataset:
    r"""Binary Gaussian classes for Neyman-Pearson classification, optionally imbalanced.

    Generative model
        Exactly ``round(positive_fraction * n)`` rows have y = +1, the rest y = -1, in random
        order. A direction :math:`\mu` is drawn uniformly on the unit sphere and
        :math:`x_i = z_i + y_i \frac{\text{class\_sep}}{2} \mu / \text{density}` on the stored
        entries (``density = 1`` when dense), so :math:`E\langle \mu, x\rangle \mid y = \pm
        \text{class\_sep}/2`: the classes' projections on :math:`\mu` are ``class_sep`` apart.

    Parameters
    ----------
    n_samples, n_features : int
    positive_fraction : float in (0, 1)
        Share of +1 labels; e.g. 0.1 for the rare-positive (fraud-like) setting.
    class_sep : float
        Distance between the class means along :math:`\mu` (larger is easier).
    sparse : bool
    density : float in (0, 1]
    seed : int

    Returns
    -------
    Dataset
        y in {-1, +1}, no groups.
    """
    _check(n_samples, n_features, density, n_min=2)
    if not 0 < positive_fraction < 1:
        raise ValueError(f"positive_fraction: expected a value in (0, 1), got {positive_fraction}")
    rng = np.random.default_rng(seed)
    n, d = int(n_samples), int(n_features)
    cls = _exact_labels(rng, n, [1 - positive_fraction, positive_fraction], "positive_fraction")
    mu = rng.standard_normal(d)
    mu /= np.linalg.norm(mu)
    scale = class_sep / 2 / (density if sparse else 1.0)
    means = np.stack([-scale * mu, scale * mu])
    X = _design(rng, means, cls, sparse, density)
    return Dataset(X, np.where(cls == 1, 1.0, -1.0), name=f"neyman_pearson(seed={seed})",
                   feature_names=[f"x{j}" for j in range(d)], task="binary")


def make_multiclass(n_samples=1000, n_features=20, n_classes=3, sparse=False, density=0.1, class_sep=2.0,
                    class_proportions=None, seed=0) -> Dataset:
    r"""Multi-class Gaussian mixture.

    Generative model
        Exactly ``round(p_k n)`` rows of class k (``class_proportions``, default equal), in random
        order. Class centres :math:`c_k` are drawn uniformly on the sphere of radius
        :math:`\text{class\_sep}/\sqrt2` (so centres are about ``class_sep`` apart) and
        :math:`x_i = z_i + c_{y_i} / \text{density}` on the stored entries (``density = 1`` when
        dense).

    Parameters
    ----------
    n_samples, n_features, n_classes : int
    sparse : bool
    density : float in (0, 1]
    class_sep : float
    class_proportions : sequence of float, optional
    seed : int

    Returns
    -------
    Dataset
        y in 0..n_classes-1 (int64), no groups.
    """
    _check(n_samples, n_features, density, n_min=n_classes)
    if int(n_classes) < 2:
        raise ValueError(f"n_classes: expected at least 2, got {n_classes}")
    rng = np.random.default_rng(seed)
    n, d, C = int(n_samples), int(n_features), int(n_classes)
    y = _exact_labels(rng, n, np.full(C, 1.0 / C) if class_proportions is None else class_proportions,
                      "class_proportions")
    if len(np.unique(y)) != C:
        raise ValueError(f"class_proportions: expected {C} proportions")
    centres = rng.standard_normal((C, d))
    centres *= class_sep / np.sqrt(2) / np.linalg.norm(centres, axis=1, keepdims=True)
    X = _design(rng, centres / (density if sparse else 1.0), y, sparse, density)
    return Dataset(X, y, name=f"multiclass(seed={seed})", feature_names=[f"x{j}" for j in range(d)],
                   task="multiclass")
