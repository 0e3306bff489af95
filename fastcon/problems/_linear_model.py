r"""Linear models in score space: one product :math:`z = Xw + b` shared by the loss and every constraint.

A linear classifier's loss and its fairness or Neyman–Pearson constraints all depend on the data
through the scores :math:`z = Xw + b` only. `LinearScores` computes :math:`z` once per point (and
caches it for the last point), `LinearLoss` is the regularised margin loss

.. math::

    f(w, b) = \sum_i c_i\,\phi(y_i z_i) + \frac{\lambda}{2}\|w\|^2,\qquad \textstyle\sum_i c_i = 1,

and the constraint blocks of `fastcon.problems._score_constraints` read the same :math:`z`.
`LinearModelProblem` is a `ConstrainedProblem` whose :meth:`~LinearModelProblem.lagrangian`
fuses everything: one :math:`Xw`, the row kernels, one :math:`X^\top v` for the gradient of
:math:`f + \sum_j \lambda_j g_j`, whatever the number of constraints. Groups are index arrays into
the one design matrix: no part of the data is copied per group.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._kernels._group_rates import weighted_margin_loss
from .._kernels._losses import LOSS_CODES
from ._design import design_of
from ._problem import ConstrainedProblem
from ._validation import check_out, check_rows, check_x

__all__ = ["LinearScores", "LinearLoss", "LinearModelProblem"]

#: :math:`\sup_z |\phi''(z)|` of each margin loss: the logistic loss's 1/4, the squared hinge's 2,
#: the sigmoid loss's :math:`1/(6\sqrt3)`; the hinge has no curvature (0).
LOSS_CURVATURE = {"logistic": 0.25, "squared_hinge": 2.0, "sigmoid": 1.0 / (6.0 * np.sqrt(3.0)), "hinge": 0.0}


class LinearScores:
    r"""Scores :math:`z = Xw + b` of a dataset at :math:`x = (w, b)`, cached for the last point.

    Parameters
    ----------
    dataset : fastcon.Dataset
        Its X (dense or CSR, kept as stored), or a `fastcon.problems._dask_design.DistributedDataset`
        whose X is on dask workers (the products run there; z stays here).
    fit_intercept : bool
        With an intercept :math:`x = (w, b)` has ``n_features + 1`` entries, else :math:`x = w`.
    rows : int array, optional
        Score only these rows of X, in this order (a training part next to a held-out one): the
        products read them through the row index, so no part of X is copied. Default: all rows.

    Attributes
    ----------
    n_samples, n_features : int
        Rows scored (``len(rows)``, or all rows of X) and entries of :math:`x`.
    rows_read : int
        Rows read by :math:`Xw` and :math:`X^\top v` products.
    """

    def __init__(self, dataset, fit_intercept=True, rows=None):
        self.design = design_of(dataset)
        if rows is not None:
            rows = check_rows(rows, int(self.design.n_rows))
        self.rows = rows
        self.n_samples = int(self.design.n_rows if rows is None else rows.shape[0])
        self.n_weights = int(self.design.n_features)
        self.fit_intercept = bool(fit_intercept)
        self.n_features = self.n_weights + int(self.fit_intercept)
        self._x = np.full(self.n_features, np.nan)
        self._z = np.empty(self.n_samples)
        self.rows_read = 0

    def scores(self, x) -> np.ndarray:
        """:math:`z` at ``x`` (read-only view of the cache; recomputed only when ``x`` changed)."""
        if not np.array_equal(x, self._x):
            self.design.matvec(x[:self.n_weights], self._z, self.rows)
            if self.fit_intercept:
                self._z += x[self.n_weights]
            self._x[:] = x
            self.rows_read += self.n_samples
        return self._z

    def scores_on(self, x, rows, out):
        """``out = X[rows] w + b``: scores of other rows of X (a held-out part) at ``x``, no copy of X."""
        self.design.matvec(x[:self.n_weights], out, rows)
        if self.fit_intercept:
            out += x[self.n_weights]
        return out

    def gauss_newton_diagonal(self, c, out):
        r"""``out = (sum_i c_i a_i^2, sum_i c_i)``: the diagonal of :math:`J^\top \operatorname{diag}(c) J`,
        :math:`J = \partial z/\partial x` (squares entrywise; the intercept's column is ones)."""
        out[:self.n_weights] = 0.0
        self.design.weighted_column_squares(c, out[:self.n_weights], self.rows)
        if self.fit_intercept:
            out[self.n_weights] = c.sum()
        return out

    def backprop(self, v, out):
        r"""``out = (X^T v, sum v)`` (``X^T v`` without intercept): the gradient in x of a function of z."""
        out[:self.n_weights] = 0.0
        self.design.rmatvec(v, out[:self.n_weights], self.rows)
        if self.fit_intercept:
            out[self.n_weights] = v.sum()
        self.rows_read += self.n_samples
        return out


class LinearLoss:
    r"""Weighted mean margin loss plus a ridge on :math:`w` (not on the intercept), on `LinearScores`.

    Parameters
    ----------
    scores : LinearScores
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    weight : ndarray of shape (n,)
        Row weights :math:`c_i \ge 0` (0 leaves a row out of the loss), normalised here to sum to 1.
    loss : {"logistic", "hinge", "squared_hinge", "sigmoid"}
    ridge : float
        Ridge :math:`\lambda \ge 0`.
    """

    def __init__(self, scores, y, weight, loss="logistic", ridge=0.0):
        if loss not in LOSS_CODES:
            raise ValueError(f"loss: expected one of {sorted(LOSS_CODES)}, got {loss!r}")
        self.scores = scores
        self.loss = loss
        self._code = LOSS_CODES[loss]
        self.y = np.ascontiguousarray(y, dtype=np.float64)
        weight = np.asarray(weight, dtype=np.float64)
        total = weight.sum()
        if not total > 0:
            raise ValueError("weight: the loss needs at least one row with a positive weight")
        self.weight = np.ascontiguousarray(weight / total)
        self.ridge = float(ridge)
        self.n_features = scores.n_features
        self.n_samples = int(np.count_nonzero(self.weight))
        self._v = np.empty(scores.n_samples)

    @property
    def rows_read(self):
        return self.scores.rows_read

    def reset_counters(self):
        self.scores.rows_read = 0

    def _ridge(self, x):
        w = x[:self.scores.n_weights]
        return 0.5 * self.ridge * float(w @ w)

    def value_and_grad_scores(self, z, v) -> float:
        """Loss without ridge at scores ``z``; writes its gradient in ``z`` into ``v``."""
        return float(weighted_margin_loss(self._code, z, self.y, self.weight, v))

    def value(self, x) -> float:
        x = check_x(x, self.n_features)
        return self.value_and_grad_scores(self.scores.scores(x), self._v) + self._ridge(x)

    def value_and_subgradient(self, x, out) -> float:
        x = check_x(x, self.n_features)
        out = check_out(out, self.n_features)
        value = self.value_and_grad_scores(self.scores.scores(x), self._v)
        self.scores.backprop(self._v, out)
        self.add_ridge_gradient(x, out)
        return value + self._ridge(x)

    def add_ridge_gradient(self, x, out):
        k = self.scores.n_weights
        out[:k] += self.ridge * x[:k]

    def curvature_diagonal(self, n_penalised=None):
        r"""An estimate of the Hessian's diagonal, :math:`\kappa\sum_i c_i a_{ij}^2 + \lambda`.

        :math:`\kappa = \sup|\phi''|` (`LOSS_CURVATURE`): the Gauss–Newton diagonal at the
        loss's largest curvature (at :math:`w = 0` for the logistic loss), plus the ridge on the
        first ``n_penalised`` weights (default: all of :math:`w`). One pass over X; a quasi-Newton
        solver scales its variables by :math:`1/\sqrt{\cdot}` of it
        (`fastcon.solvers.augmented_lagrangian`; `LinearModelProblem.curvature_diagonal` adds the
        constraints' rows). None for a loss without curvature (the hinge).
        """
        kappa = LOSS_CURVATURE[self.loss]
        if kappa == 0.0:
            return None
        h = self.scores.gauss_newton_diagonal(self.weight, np.empty(self.n_features))
        h *= kappa
        h[:self.scores.n_weights if n_penalised is None else n_penalised] += self.ridge
        return h


class _ConstraintView:
    """Constraint ``index`` of a block as a scalar term (the protocol every solver reads).

    Holds no array of its own: a view is made on demand by `_BlockConstraints` and borrows the
    sequence's shared row buffer, so m constraints cost O(m) memory, not O(m (n + m)).
    """

    __slots__ = ("block", "index", "_shared")

    def __init__(self, block, index, shared):
        self.block = block
        self.index = int(index)
        self._shared = shared

    @property
    def n_features(self):
        return self.block.scores.n_features

    @property
    def n_samples(self):
        return self.block.scores.n_samples

    @property
    def rows_read(self):
        return self.block.scores.rows_read

    def reset_counters(self):
        self.block.scores.rows_read = 0

    def value(self, x) -> float:
        x = check_x(x, self.n_features)
        return float(self.block.values_from_scores(self.block.scores.scores(x))[self.index])

    def value_and_subgradient(self, x, out) -> float:
        x = check_x(x, self.n_features)
        out = check_out(out, self.n_features)
        z = self.block.scores.scores(x)
        value = float(self.block.values_from_scores(z)[self.index])
        v = self._shared.scratch()
        v[:] = 0.0
        unit = np.zeros(self.block.n_constraints)     # O(m), as the values computed above
        unit[self.index] = 1.0
        self.block.vjp_from_scores(z, unit, v)
        self.block.scores.backprop(v, out)
        return value


class _BlockConstraints(Sequence):
    """The constraints of a list of blocks as a read-only sequence of scalar terms, made on demand.

    ``len`` is the total number of constraints; item ``i`` is a `_ConstraintView` of the block that
    holds it. One row-length scratch vector is shared by all views (allocated at first use), so a
    problem with m constraints holds O(n + m) numbers for them.
    """

    def __init__(self, blocks, n_samples):
        self._blocks = list(blocks)
        self._offsets = np.cumsum([0] + [b.n_constraints for b in self._blocks])
        self._n_samples = int(n_samples)
        self._scratch = None

    def __len__(self):
        return int(self._offsets[-1])

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        i = int(i)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(f"constraint index {i} out of range for {len(self)} constraints")
        k = int(np.searchsorted(self._offsets, i, side="right")) - 1
        return _ConstraintView(self._blocks[k], i - int(self._offsets[k]), self)

    def scratch(self):
        if self._scratch is None:
            self._scratch = np.empty(self._n_samples)
        return self._scratch



class LinearModelProblem(ConstrainedProblem):
    r"""A `ConstrainedProblem` over a linear model's :math:`x = (w, b)` with constraint blocks on its scores.

    Every constraint of every block is a scalar term in ``constraints`` (so any solver runs on it);
    :meth:`lagrangian` evaluates the loss, all constraints and the gradient of
    :math:`f + \sum_j \lambda_j g_j` with one :math:`Xw` and one :math:`X^\top v`.

    Parameters
    ----------
    objective : LinearLoss
    blocks : sequence of constraint blocks
        Objects with ``scores`` (the same `LinearScores` as the objective), ``n_constraints``,
        ``values_from_scores(z)`` and ``vjp_from_scores(z, weights, v)``
        (`fastcon.problems._score_constraints`).
    name : str
    """

    def __init__(self, objective, blocks=(), name=""):
        self.blocks = list(blocks)
        self.linear_scores = objective.scores
        for k, block in enumerate(self.blocks):
            if block.scores is not objective.scores:
                raise ValueError(f"blocks: block {k} reads other scores than the objective")
        parts = {"w": slice(0, objective.scores.n_weights)}
        if objective.scores.fit_intercept:
            parts["b"] = slice(objective.scores.n_weights, objective.scores.n_features)
        super().__init__(objective, (), parts=parts, name=name)
        # every block acts on the objective's x (checked above): no per-constraint dimension check
        self.constraints = _BlockConstraints(self.blocks, objective.scores.n_samples)
        self._v = np.empty(objective.scores.n_samples)

    # The constraints share the objective's scores: one counter for all of them, not one per constraint.
    @property
    def rows_read_g(self) -> int:
        return int(self.linear_scores.rows_read) if len(self.constraints) else 0

    @property
    def n_samples_g(self) -> int:
        return int(self.linear_scores.n_samples) if len(self.constraints) else 0

    def reset_counters(self):
        self.linear_scores.rows_read = 0

    def constraint_values(self, x) -> np.ndarray:
        """All constraint values at ``x`` from one :math:`Xw`."""
        x = self.check_x(x)
        z = self.linear_scores.scores(x)
        if not self.blocks:
            return np.empty(0)
        return np.concatenate([b.values_from_scores(z) for b in self.blocks])

    def curvature_diagonal(self):
        r"""The objective's diagonal (`LinearLoss.curvature_diagonal`) plus the constraints' rows.

        A block that reads rows the loss leaves out (a Neyman–Pearson loss weighs one class, its
        constraint the other) adds :math:`\kappa\sum_i c^{(b)}_i a_{ij}^2` over its rows, with
        its rows' weights :math:`c^{(b)}` summing to 1 (``block.curvature_weights()``; the
        multipliers, unknown before a solve, count as 1). Else a feature seen only in those rows
        would get the ridge alone, and a scale :math:`\lambda^{-1/2}` that stretches the
        constraint's curvature (a reviewer's case: 1,092 evaluations scaled against 262
        unscaled). Weights that sum to 1 keep a weight of 2 and a repeated row the same.
        """
        h = self.objective.curvature_diagonal()
        if h is None:
            return None
        kappa = LOSS_CURVATURE[self.objective.loss]
        work = np.empty(h.shape[0])
        for block in self.blocks:
            weights = getattr(block, "curvature_weights", None)
            c = None if weights is None else weights()
            if c is not None:
                h += kappa * self.linear_scores.gauss_newton_diagonal(c, work)
        return h

    def lagrangian(self, x, multipliers_of, out):
        r"""``(f(x), g(x))``; writes :math:`\nabla f(x) + \sum_j \lambda_j \nabla g_j(x)` into ``out``.

        Parameters
        ----------
        x : ndarray
        multipliers_of : callable
            ``g_values -> lambda`` (non-negative, one per constraint), called once the constraint
            values at ``x`` are known (an augmented Lagrangian's weights depend on them).
        out : ndarray
            Gradient output.
        """
        z = self.linear_scores.scores(x)
        f = self.objective.value_and_grad_scores(z, self._v) + self.objective._ridge(x)
        values = [b.values_from_scores(z) for b in self.blocks]
        g = np.concatenate(values) if values else np.empty(0)
        lam = np.asarray(multipliers_of(g), dtype=np.float64)
        start = 0
        for block, vals in zip(self.blocks, values):
            weights = lam[start:start + vals.shape[0]]
            start += vals.shape[0]
            if np.any(weights != 0.0):
                block.vjp_from_scores(z, weights, self._v)
        self.linear_scores.backprop(self._v, out)
        self.objective.add_ridge_gradient(x, out)
        return f, g
