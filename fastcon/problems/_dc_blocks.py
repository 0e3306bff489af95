r"""The base of the difference-of-convex constraint blocks of He, Huang, Yao & Lin [HHYL25]: groups,
bounds, and per-group surrogate means of a linear model's scores (the *base functions*).

Surrogates: the ramp :math:`\sigma(u) = \max\{u + \tfrac12, 0\} - \max\{u - \tfrac12, 0\}` (the
paper's experiments) and the logistic function. All ramp quantities are per-group hinge means at the
cuts :math:`\theta_p \mp \tfrac12` (`fastcon._kernels._partial_rates`); the cut is rounded first and
a score equal to it is outside the mask (kink convention :math:`\partial\max\{u, 0\} \ni \mathbf 1\{u > 0\}`,
used everywhere, also for :math:`\max\{a, b\} = b + \max\{a - b, 0\}`).

Cost per call, :math:`n` rows, :math:`P` levels, :math:`G` groups: `~PartialFairnessProblem.plus_values`
one :math:`\tilde Xw` (cached for the last :math:`w`) and one :math:`O(n\cdot 2P)` or
:math:`O(n\log P)` hinge pass; a single subgradient one :math:`\tilde X^\top v` over the rows where
:math:`v \ne 0`; `~PartialFairnessProblem.minus_linearization` (all :math:`m = 2GP` subgradients) one
pass over :math:`\tilde X` for the ramp (nested masks, binned), :math:`O(\mathrm{nnz}\,P)` for the
logistic surrogate.
"""
from __future__ import annotations

import math

import numpy as np

from .._kernels._partial_rates import (
    hinge_cut_row_sums_csr,
    hinge_cut_row_sums_dense,
    hinge_cut_sums,
    logistic_level_row_sums_csr,
    logistic_level_row_sums_dense,
    logistic_level_sums,
)
from ..metrics._partial_fairness import check_interval
from ._validation import check_choice, check_groups, check_memory, check_nonnegative

__all__ = ["GRIDS", "LOGISTIC_MAX_CURVATURE", "SURROGATES"]

#: Surrogates of the step function.
SURROGATES = ("ramp", "logistic")
#: Level grids of model (13).
GRIDS = ("safe", "paper")
#: :math:`\max_u|\sigma''(u)|` of the logistic function, :math:`1/(6\sqrt3)` (at :math:`\sigma = (3 \pm \sqrt3)/6`).
LOGISTIC_MAX_CURVATURE = 1.0 / (6.0 * math.sqrt(3.0))

#: Kinds of base function: the mean of a hinge at a cut, or of the logistic function at a level.
_HINGE, _LOGISTIC = 0, 1


class _DCBlock:
    r"""What the DC blocks share: groups, bounds, and *base functions*.

    Every part :math:`f_i^\pm` is a combination of at most two base functions plus constants,
    :math:`f_i^\pm = \sum_{s=1,2} c^\pm_{is}\,b_{j^\pm_{is}} + \text{const} + \tfrac\rho2\|x\|^2`,
    where a base function is a per-group mean of a hinge :math:`\max\{z_i - t, 0\}` (ramp) or of
    :math:`\sigma(z_i - \theta_p)` (logistic), and the coefficients :math:`c` are the chosen
    subgradient's (for a max, 0/1 by the kink convention). So the values of all parts need one pass
    for the base values, a single subgradient one :math:`\tilde X^\top v` over the base functions'
    rows, and the whole Jacobian the gradients of all base functions (one kernel pass).
    """

    def _setup(self, scores, groups, interval, bound, surrogate, rho):
        if getattr(scores, "fit_intercept", None) is not False:
            raise ValueError("scores: build LinearScores with fit_intercept=False (cross-term features carry "
                             "the constant column)")
        self.scores = scores
        self.groups, self.n_groups, sizes = check_groups(groups, scores.n_samples)
        if self.n_groups < 2:
            raise ValueError(f"groups: partial fairness compares groups and needs at least two, got {self.n_groups}")
        self.sizes = sizes.astype(np.int64)
        self.inv_size = 1.0 / sizes.astype(np.float64)
        self.group_rows = [np.flatnonzero(self.groups == k) for k in range(self.n_groups)]
        self.band_start, self.band_end = check_interval(interval)
        self.bound = check_nonnegative(bound, "bound")
        self.surrogate = check_choice("surrogate", surrogate, SURROGATES)
        self.width = self.bound * (self.band_end - self.band_start)
        self.n_weights = scores.n_weights
        if rho is not None:
            self.rho = check_nonnegative(rho, "rho")
        elif surrogate == "ramp":
            self.rho = 0.0       # hinge means of a linear model are convex: no curvature to offset
        else:
            self.rho = self._default_rho(float(np.max(scores.design.row_norms(), initial=0.0)) ** 2)

    def _check_size(self, field, n_constraints, n_base, n_thresholds):
        """Refuse a block whose dense Jacobians cannot be held: `minus_linearization` builds the
        ``(n_base, dim)`` base gradients and the ``(m, dim)`` Jacobian, ``dim = n_w + n_thresholds``."""
        dim = self.n_weights + n_thresholds
        check_memory(field, f"{n_constraints:,} constraints on {dim:,} variables (dense Jacobians)",
                     8 * (n_constraints + n_base) * dim)

    # ---- base functions
    def base_rows(self, z, theta, b):
        r"""Rows, weights and :math:`\theta`-derivative of base function ``b``: its gradient is
        :math:`(\sum_j \mathrm{wts}_j\tilde x_{\mathrm{rows}_j},\ \mathrm{dtheta}\,e_{\mathrm{level}})`."""
        k = self.base_group[b]
        rows = self.group_rows[k]
        zk = z[rows]
        level = self.base_level[b]
        t = theta[level] if level >= 0 else self.threshold
        inv = self.inv_size[k]
        if self.base_kind == _HINGE:
            mask = zk > t + self.base_shift[b]
            rows = rows[mask]
            return rows, np.full(rows.shape[0], inv), -rows.shape[0] * inv
        from scipy.special import expit  # here, not at import: scipy.special costs ~90 ms to import

        u = zk - t
        d = expit(u) * expit(-u) * inv
        return rows, d, -float(d.sum())

    def _kernel_design(self):
        design = self.scores.design
        return (design._csr, None) if design.is_sparse else (None, design._X)

    def base_gradients(self, z, theta, dim, bins=None):
        """Gradient of every base function, ``(n_base, dim)``, and the rows read (one pass).

        ``bins``: the rows' bins that `base_values` wrote for the same ``z`` and ``theta`` (ramp; found
        again when None).
        """
        csr, dense = self._kernel_design()
        n_w = self.n_weights
        grads = np.zeros((self.n_base, dim))
        levels = self.base_level.reshape(self.n_groups, -1)[0]
        if self.base_kind == _HINGE:
            cuts = self._cuts(theta)
            if bins is None:
                bins = self.new_bins()
                self.base_values(z, theta, bins)
            out = np.empty((self.n_groups, cuts.shape[0], n_w))
            counts = np.empty((self.n_groups, cuts.shape[0]), dtype=np.int64)
            if csr is not None:
                read = hinge_cut_row_sums_csr(*csr, bins, self.groups, cuts, out, counts)
            else:
                read = hinge_cut_row_sums_dense(dense, bins, self.groups, cuts, out, counts)
            grads[:, :n_w] = (out * self.inv_size[:, None, None]).reshape(self.n_base, n_w)
            dtheta = -counts * self.inv_size[:, None]
        else:
            th = self._level_thetas(theta)
            out = np.empty((self.n_groups, th.shape[0], n_w))
            dsums = np.empty((self.n_groups, th.shape[0]))
            if csr is not None:
                logistic_level_row_sums_csr(*csr, z, self.groups, th, self.inv_size, out, dsums)
            else:
                logistic_level_row_sums_dense(dense, z, self.groups, th, self.inv_size, out, dsums)
            read = z.shape[0]
            grads[:, :n_w] = out.reshape(self.n_base, n_w)
            dtheta = -dsums
        if self.n_thresholds:
            rows = np.arange(self.n_base).reshape(self.n_groups, -1)
            grads[rows, n_w + levels[None, :]] = dtheta
        return grads, int(read)

    def new_bins(self):
        """A buffer for the rows' bins among the cuts (`base_values`), or None (logistic: no bins)."""
        return np.empty(self.groups.shape[0], dtype=np.int32) if self.base_kind == _HINGE else None

    def base_values(self, z, theta, bins=None):
        """Values of every base function, ``(n_base,)`` (k-major: group, then cut or level).

        Ramp: ``bins`` (from `new_bins`) receives every row's bin among the cuts, which
        `base_gradients` reads for the same point; a scratch buffer when None.
        """
        if self.base_kind == _HINGE:
            cuts = self._cuts(theta)
            sums = np.empty((self.n_groups, cuts.shape[0]))
            counts = np.empty((self.n_groups, cuts.shape[0]), dtype=np.int64)
            hinge_cut_sums(z, self.groups, cuts, self.inv_size, sums, counts,
                           self.new_bins() if bins is None else bins)
        else:
            th = self._level_thetas(theta)
            sums = np.empty((self.n_groups, th.shape[0]))
            dsums = np.empty_like(sums)
            logistic_level_sums(z, self.groups, th, self.inv_size, sums, dsums)
        return sums.ravel()

    def _rates_at(self, z, thresholds):
        """Hard rates :math:`\\frac{1}{n_k}\\#\\{z_i > t\\}`, shape (G, len(thresholds))."""
        sums = np.empty((self.n_groups, thresholds.shape[0]))
        counts = np.empty((self.n_groups, thresholds.shape[0]), dtype=np.int64)
        hinge_cut_sums(z, self.groups, np.ascontiguousarray(thresholds, dtype=np.float64), self.inv_size, sums,
                       counts, np.empty(z.shape[0], dtype=np.int32))
        return counts * self.inv_size[:, None]
