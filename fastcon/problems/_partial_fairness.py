r"""Partial demographic parity as difference-of-convex (DC) constraints on a linear model's scores.

He, Huang, Yao & Lin [HHYL25] ask for demographic parity only among the samples whose within-group
rank lies in an interval :math:`\mathcal I = [\alpha, \beta)`. On cross-term features
(`cross_term_features`) they train model (13), *partial DP* (`partial_dp_constraints`:
:math:`p \le S_{kp} \le p + \kappa(\beta - \alpha)` for the group means :math:`S_{kp}` of a surrogate
step at thresholds :math:`\theta_p`), or model (17), *weak partial DP*
(`weak_partial_dp_constraints`). Every constraint is :math:`f_i = f_i^+ - f_i^-` with both parts
convex in :math:`x = (w, \theta)` (Appendix B.2/B.3), and `PartialFairnessProblem` serves the DC
problem protocol of IDCA (Algorithm 1), the direct switching subgradient (Algorithm 3) and the
penalty models (78)/(83). Design notes: docs/design.md, 'Module notes'.
"""
from __future__ import annotations

import numpy as np

from ._validation import check_out, check_x

__all__ = ["PartialFairnessProblem"]


class PartialFairnessProblem:
    r"""A DC-constrained problem :math:`\min f_0(w)` s.t. :math:`f_i^+(x) - f_i^-(x) \le 0`, :math:`x = (w, \theta)`.

    The DC problem protocol of `fastcon.solvers.idca` (He, Huang, Yao & Lin [HHYL25], problem (21)),
    with :math:`f_0` a convex `LinearLoss` (:math:`f_0^- = 0`) and the constraints of a
    `PartialDPConstraints` or `WeakPartialDPConstraints` block on the same `LinearScores`.

    Parameters
    ----------
    objective : LinearLoss
        On the block's `LinearScores` (``fit_intercept=False``).
    block : PartialDPConstraints or WeakPartialDPConstraints
    name : str

    Attributes
    ----------
    dim : int
        :math:`n_w + P`.
    n_constraints : int
    x0 : ndarray
        :math:`(0, \theta^0)`, :math:`\theta^0` = ``block.initial_thresholds()``: feasible.
    parts : dict
        ``{"w": slice, "theta": slice}`` (``theta`` empty for model (17)).
    names : list of str
        The block's constraint names.
    rows_read : int
        Rows of :math:`\tilde X` read by every product and kernel pass.

    Notes
    -----
    Scores :math:`\tilde Xw` and the base values of the last point are cached, so
    ``plus_values(v)`` then ``plus_subgradient(v, i)`` or ``objective_value_and_gradient(v)``
    reads :math:`\tilde X` once for :math:`\tilde Xw` plus once for the :math:`\tilde X^\top v`.
    """

    def __init__(self, objective, block, name=""):
        if getattr(objective, "scores", None) is not block.scores:
            raise ValueError("objective: must be a LinearLoss on the block's LinearScores")
        self.objective = objective
        self.block = block
        self.name = str(name)
        self.n_weights = block.n_weights
        self.dim = self.n_weights + block.n_thresholds
        self.n_constraints = block.n_constraints
        self.names = list(block.names)
        self.parts = {"w": slice(0, self.n_weights), "theta": slice(self.n_weights, self.dim)}
        self.x0 = np.concatenate([np.zeros(self.n_weights), block.initial_thresholds()])
        self._rows_read = 0
        self._cache_x = np.full(self.dim, np.nan)
        self._cache_vals = None
        self._cache_bins = block.new_bins()
        self._v = np.zeros(block.scores.n_samples)

    # ---- counters
    @property
    def rows_read(self) -> int:
        return int(self.block.scores.rows_read + self._rows_read)

    def reset_counters(self):
        self.block.scores.rows_read = 0
        self._rows_read = 0

    # ---- helpers
    def _split(self, x):
        x = check_x(x, self.dim)
        return x, x[:self.n_weights], x[self.n_weights:]

    def _base(self, x, w, theta):
        """Scores and base values at x (both cached for the last point, with the rows' bins)."""
        z = self.block.scores.scores(w)
        if not np.array_equal(x, self._cache_x):
            self._cache_vals = self.block.base_values(z, theta, self._cache_bins)
            self._cache_x[:] = x
        return z, self._cache_vals

    def _rho_value(self, x):
        return 0.5 * self.block.rho * float(x @ x)

    def _gradient(self, x, z, theta, pieces, out):
        r"""``out`` = :math:`\sum c\,\nabla b` over ``pieces`` ((base, coefficient) pairs): one :math:`\tilde X^\top v`."""
        block, n_w = self.block, self.n_weights
        v = self._v
        out[:] = 0.0
        any_rows = False
        for b, c in pieces:
            if c == 0.0:
                continue
            rows, wts, dtheta = block.base_rows(z, theta, b)
            v[rows] += c * wts
            any_rows = True
            level = block.base_level[b]
            if level >= 0:
                out[n_w + level] += c * dtheta
        if any_rows:
            # rows in two nested masks with opposite signs cancel exactly and are not read
            rows = np.flatnonzero(v)
            coef = v[rows]
            v[:] = 0.0
            if rows.size:
                block.scores.design.rmatvec(coef, out[:n_w], rows=rows)
                self._rows_read += int(rows.size)
        return out

    @staticmethod
    def _pieces(idx, coef, i, sign=1.0):
        return [(int(idx[i, s]), sign * float(coef[i, s])) for s in range(idx.shape[1])]

    def _check_index(self, i):
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= i < self.n_constraints:
            raise ValueError(f"i: expected a constraint index in [0, {self.n_constraints}), got {i!r}")
        return int(i)

    # ---- objective
    def objective_value(self, x) -> float:
        x, w, _ = self._split(x)
        return self.objective.value(w)

    def objective_value_and_gradient(self, x, out) -> float:
        x, w, _ = self._split(x)
        out = check_out(out, self.dim)
        value = self.objective.value_and_subgradient(w, out[:self.n_weights])
        out[self.n_weights:] = 0.0
        return value

    # ---- constraints
    def plus_values(self, x) -> np.ndarray:
        r""":math:`f_i^+(x)` for every constraint (one :math:`\tilde Xw`, cached, and one base-value pass)."""
        x, w, theta = self._split(x)
        _, vals = self._base(x, w, theta)
        return self.block.values_parts(vals)[0][0] + self._rho_value(x)

    def constraint_values(self, x) -> np.ndarray:
        r""":math:`f_i(x) = f_i^+(x) - f_i^-(x)`."""
        x, w, theta = self._split(x)
        _, vals = self._base(x, w, theta)
        (plus, _, _), (minus, _, _) = self.block.values_parts(vals)
        return plus - minus

    def plus_subgradient(self, x, i, out) -> float:
        r""":math:`f_i^+(x)`; writes a subgradient of :math:`f_i^+` at ``x`` into ``out`` (one :math:`\tilde X^\top v`)."""
        i = self._check_index(i)
        x, w, theta = self._split(x)
        out = check_out(out, self.dim)
        z, vals = self._base(x, w, theta)
        (plus, idx, coef), _ = self.block.values_parts(vals)
        self._gradient(x, z, theta, self._pieces(idx, coef, i), out)
        if self.block.rho:
            out += self.block.rho * x
        return float(plus[i]) + self._rho_value(x)

    def constraint_subgradient(self, x, i, out) -> float:
        r""":math:`f_i(x)`; writes a subgradient of :math:`f_i^+` minus one of :math:`f_i^-` into ``out``
        (one :math:`\tilde X^\top v`; the :math:`\rho` terms cancel)."""
        i = self._check_index(i)
        x, w, theta = self._split(x)
        out = check_out(out, self.dim)
        z, vals = self._base(x, w, theta)
        (plus, pidx, pcoef), (minus, midx, mcoef) = self.block.values_parts(vals)
        pieces = self._pieces(pidx, pcoef, i) + self._pieces(midx, mcoef, i, -1.0)
        self._gradient(x, z, theta, pieces, out)
        return float(plus[i] - minus[i])

    def minus_linearization(self, x):
        r"""``(values, jacobian)``: :math:`f_i^-(x)` and one subgradient of every :math:`f_i^-` (rows, shape (m, dim)).

        Ramp: one pass over :math:`\tilde X` adds every row to the row sum of its bin among the
        cuts (the bins of the level sums at ``x``, cached) and a suffix sum over the bins gives the
        masked row sums of every cut (`fastcon._kernels._partial_rates.hinge_cut_row_sums_csr`);
        logistic: one pass with a :math:`P`-wide weight vector per row.
        """
        x, w, theta = self._split(x)
        z, vals = self._base(x, w, theta)
        _, (minus, idx, coef) = self.block.values_parts(vals)
        grads, read = self.block.base_gradients(z, theta, self.dim, self._cache_bins)
        self._rows_read += read
        jac = np.zeros((self.n_constraints, self.dim))
        for s in range(idx.shape[1]):
            jac += coef[:, s, None] * grads[idx[:, s]]
        if self.block.rho:
            jac += self.block.rho * x[None, :]
        return minus + self._rho_value(x), jac

    def penalty_value_and_subgradient(self, x, out) -> float:
        r"""The fairness penalty of (78) (partial DP block) or (83) (weak block) of [HHYL25] and a subgradient.

        (78): :math:`\frac{2}{\beta - \alpha}\max_p\max_k|S_{kp} - p|` over the block's levels,
        :math:`\theta` free; (83): :math:`\frac{1}{\beta - \alpha}\max_{k, k'}|c_k - c_{k'}|`,
        :math:`c = \min\{a, \beta\} - \min\{a, \alpha\}`. The first maximiser in constraint order is
        the active piece; :math:`|u|` and the clips follow the kink convention.
        """
        x, w, theta = self._split(x)
        out = check_out(out, self.dim)
        z, vals = self._base(x, w, theta)
        value, pieces = self.block.penalty_pieces(vals)
        self._gradient(x, z, theta, pieces, out)
        return float(value)

    def hard_values(self, x) -> np.ndarray:
        """Every constraint with the indicator :math:`\\mathbf 1\\{u > 0\\}` in place of the surrogate (for reports)."""
        x, w, theta = self._split(x)
        z = self.block.scores.scores(w)
        return self.block.hard_values(z, theta)

    def __repr__(self):
        kind = "partial DP (13)" if self.block.n_thresholds else "weak partial DP (17)"
        return (f"PartialFairnessProblem({self.name!r}, {kind}, {self.block.surrogate}, dim={self.dim}, "
                f"{self.n_constraints} constraint(s))")
