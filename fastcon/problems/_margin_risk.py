r"""Empirical margin risk: the mean of a margin loss over a dataset, as an oracle term.

For a binary dataset :math:`\{(a_i, b_i)\}_{i=1}^n`, :math:`b_i \in \{-1, +1\}`, and a margin loss
:math:`\phi`, the term is

.. math::

    L(w) = \frac{1}{n} \sum_{i=1}^n \phi(b_i\, a_i^\top w),

e.g. the hinge risk :math:`L(w) = \frac1n \sum_i \max(0, 1 - b_i a_i^\top w)` of [HL23] eq. (10). With
sample weights :math:`s_i` the mean becomes :math:`\sum_i s_i \phi(\cdot) / \sum_i s_i`.
"""
from __future__ import annotations

import numpy as np

from .._kernels._datafit import MARGIN, datafit_buffers, datafit_bundle, statistic_two_point
from .._kernels._linalg import CSR, n_chunks_for
from .._kernels._losses import (
    LOSS_CODES, csr_loss_value, csr_loss_value_grad, dense_loss_value, dense_loss_value_grad,
)
from ._validation import check_out, check_rows, check_x

__all__ = ["MarginRisk", "margin_risk", "hinge_risk", "logistic_risk", "sigmoid_risk", "squared_hinge_risk"]

_FORMULAS = {
    "hinge": "max(0, 1 - z)",
    "logistic": "log(1 + exp(-z))",
    "sigmoid": "1 / (1 + exp(z))",
    "squared_hinge": "max(0, 1 - z)^2",
}


class MarginRisk:
    r"""Mean margin loss :math:`L(w) = \frac{1}{\sum_i s_i} \sum_{i=1}^n s_i\, \phi(b_i a_i^\top w)`.

    Unweighted (:math:`s_i = 1`) this is :math:`\frac1n \sum_i \phi(b_i a_i^\top w)`. Subgradients
    are :math:`\frac{1}{\sum_i s_i} \sum_i s_i \phi'(z_i) b_i a_i`; for the hinge loss the kink
    :math:`z_i = 1` contributes 0 (a valid choice in :math:`[-1, 0]`).

    Row-subset (minibatch) oracles return the unbiased estimate under uniform sampling of rows,

    .. math::

        \hat L_B(w) = \frac{n}{|B| \sum_i s_i} \sum_{i \in B} s_i\, \phi(b_i a_i^\top w),

    which is the plain batch mean :math:`\frac{1}{|B|}\sum_{i\in B}\phi(\cdot)` when unweighted.
    Repeated indices count repeatedly.

    Parameters
    ----------
    dataset : fastcon.Dataset
        Binary dataset (labels in {-1, +1}); CSR or dense. Binary-feature CSR data takes the path
        that never reads the values array.
    loss : {"hinge", "logistic", "sigmoid", "squared_hinge"}
    sample_weight : array-like of shape (n_samples,), "dataset" or None
        "dataset" (default) uses ``dataset.sample_weight`` when present.

    Attributes
    ----------
    n_samples : int
        Rows one full pass reads.
    n_features : int
        Dimension of ``x`` (the weight vector).
    rows_read : int
        Rows read by all oracle calls since construction or :meth:`reset_counters`; a full pass
        adds ``n_samples``, a subset call adds ``len(rows)``.
    """

    def __init__(self, dataset, loss="hinge", sample_weight="dataset"):
        if loss not in LOSS_CODES:
            raise ValueError(f"loss: expected one of {sorted(LOSS_CODES)}, got {loss!r}")
        if getattr(dataset, "task", "binary") != "binary":
            raise ValueError("dataset: a margin risk needs binary labels in {-1, +1}")
        self.loss = loss
        self._code = LOSS_CODES[loss]
        self.dataset = dataset
        n, d = dataset.shape
        if n == 0:
            raise ValueError("dataset: has no rows")
        self.n_samples = int(n)
        self.n_features = int(d)
        self._y = dataset.y
        if isinstance(sample_weight, str) and sample_weight == "dataset":
            sample_weight = dataset.sample_weight
        if sample_weight is not None:
            sample_weight = np.ascontiguousarray(sample_weight, dtype=np.float64)
            if sample_weight.shape != (n,):
                raise ValueError(f"sample_weight: expected shape ({n},), got {sample_weight.shape}")
            if not np.all(np.isfinite(sample_weight)) or np.any(sample_weight < 0):
                raise ValueError("sample_weight: weights must be finite and non-negative")
            total = float(sample_weight.sum())
            if total <= 0:
                raise ValueError("sample_weight: weights sum to zero")
            self._scale = 1.0 / total
        else:
            self._scale = 1.0 / n
        self._weights = sample_weight
        if dataset.is_sparse:
            indptr, indices, data = dataset.csr_arrays
            # the plain tuple of the CSR record's fields: cheaper for numba to dispatch per minibatch (as_csr)
            self._design = tuple(CSR(indptr, indices, None if dataset.is_binary_features else data))
            work = int(dataset.X.nnz)
            self._mean_row_work = max(1, work // n)
        else:
            self._design = (dataset.X,)
            work = n * d
            self._mean_row_work = max(1, d)
        self._workspace = np.zeros((n_chunks_for(n, work, d), d + 1))
        self._workspaces = {self._workspace.shape[0]: self._workspace}
        self.rows_read = 0

    def __repr__(self):
        return (f"MarginRisk(loss={self.loss!r}, dataset={getattr(self.dataset, 'name', '')!r}, "
                f"n_samples={self.n_samples}, n_features={self.n_features})")

    @property
    def formula(self) -> str:
        return f"L(w) = (1/n) sum_i {_FORMULAS[self.loss].replace('z', 'b_i a_i^T w')}"

    def reset_counters(self):
        """Set ``rows_read`` back to 0."""
        self.rows_read = 0

    # ------------------------------------------------------------------ validation
    def _check_x(self, x):
        return check_x(x, self.n_features)

    def _check_out(self, out):
        return check_out(out, self.n_features)

    def _check_rows(self, rows):
        return check_rows(rows, self.n_samples)

    def _subset_workspace(self, m):
        n_chunks = n_chunks_for(m, m * self._mean_row_work, self.n_features)
        ws = self._workspaces.get(n_chunks)
        if ws is None:
            ws = self._workspaces[n_chunks] = np.zeros((n_chunks, self.n_features + 1))
        return ws

    def _subset_scale(self, m):
        # Unbiased for uniform row sampling: E[(n / |B|) sum_B s_i phi_i] = sum_i s_i phi_i.
        return self._scale * self.n_samples / m

    # ------------------------------------------------------------------ oracles
    def value(self, x) -> float:
        """:math:`L(x)` over all rows."""
        x = self._check_x(x)
        self.rows_read += self.n_samples
        return self._value(x, None, self._scale, self._workspace)

    def value_and_subgradient(self, x, out) -> float:
        """:math:`L(x)`; writes a subgradient of :math:`L` at ``x`` into ``out``."""
        x = self._check_x(x)
        out = self._check_out(out)
        self.rows_read += self.n_samples
        return self._value_grad(x, None, self._scale, out, self._workspace)

    def value_rows(self, x, rows) -> float:
        r"""Minibatch estimate :math:`\hat L_B(x)` on the rows ``rows`` (see the class docstring)."""
        x = self._check_x(x)
        rows = self._check_rows(rows)
        m = rows.shape[0]
        self.rows_read += m
        return self._value(x, rows, self._subset_scale(m), self._subset_workspace(m))

    def value_and_subgradient_rows(self, x, rows, out) -> float:
        r""":math:`\hat L_B(x)`; writes its subgradient into ``out``."""
        x = self._check_x(x)
        out = self._check_out(out)
        rows = self._check_rows(rows)
        m = rows.shape[0]
        self.rows_read += m
        return self._value_grad(x, rows, self._subset_scale(m), out, self._subset_workspace(m))

    def value_rows_two_point(self, x, x_prev, rows):
        r"""``(L_B(x), L_B(x_prev))`` on the same rows, each row read once (the SPIDER difference).

        Equal to two `value_rows` calls up to round-off; ``rows_read`` grows by ``len(rows)`` once.
        """
        x = self._check_x(x)
        x_prev = check_x(x_prev, self.n_features, "x_prev")
        rows = self._check_rows(rows).astype(np.int64, copy=False)
        bundle = self.compiled_datafit()
        self.rows_read += rows.shape[0]
        a, b = statistic_two_point(bundle, x, x_prev, rows, rows.shape[0], datafit_buffers(bundle, rows.shape[0]))
        return float(a), float(b)

    def compiled_datafit(self):
        r"""The `fastcon._kernels._datafit` bundle (kind MARGIN) for compiled solver loops.

        Row scales :math:`s_i n / \sum_j s_j` (mean 1), so a batch mean is the unbiased estimate
        of the class docstring. Dense data is handed over as CSR.
        """
        if getattr(self, "_bundle", None) is None:
            if self.dataset.is_sparse:
                indptr, indices, data = self.dataset.csr_arrays
            else:
                import scipy.sparse as sp
                A = sp.csr_matrix(self.dataset.X)
                indptr, indices, data = A.indptr, A.indices, A.data
            scale = None if self._weights is None else self._weights * (self.n_samples * self._scale)
            self._bundle = datafit_bundle(MARGIN, indptr, indices, data, loss=self._code, y=self._y, scale=scale)
        return self._bundle

    # ------------------------------------------------------------------ kernel dispatch
    def _value(self, x, rows, scale, workspace):
        if len(self._design) == 3:
            return float(csr_loss_value(self._code, self._design, self._y, self._weights, scale, rows, x, workspace))
        return float(dense_loss_value(self._code, self._design[0], self._y, self._weights, scale, rows,
                                      x, workspace))

    def _value_grad(self, x, rows, scale, out, workspace):
        if len(self._design) == 3:
            return float(csr_loss_value_grad(self._code, self._design, self._y, self._weights, scale,
                                             rows, x, out, workspace))
        return float(dense_loss_value_grad(self._code, self._design[0], self._y, self._weights, scale,
                                           rows, x, out, workspace))


def margin_risk(dataset, loss="hinge", sample_weight="dataset") -> MarginRisk:
    r"""Empirical risk :math:`L(w) = \frac1n \sum_i \phi(b_i a_i^\top w)` of a margin loss.

    Parameters
    ----------
    dataset : fastcon.Dataset
        Binary-labelled data.
    loss : {"hinge", "logistic", "sigmoid", "squared_hinge"}
        :math:`\phi(z)` is :math:`\max(0, 1-z)`, :math:`\log(1+e^{-z})`, :math:`1/(1+e^{z})` or
        :math:`\max(0, 1-z)^2`.
    sample_weight : array-like, "dataset" or None
        See :class:`MarginRisk`.
    """
    return MarginRisk(dataset, loss=loss, sample_weight=sample_weight)


def hinge_risk(dataset, sample_weight="dataset") -> MarginRisk:
    r"""Hinge risk :math:`L(w) = \frac1n \sum_{i=1}^n \max(0, 1 - b_i a_i^\top w)` ([HL23] eq. 10).

    Parameters
    ----------
    dataset : fastcon.Dataset
        The rows :math:`(a_i, b_i)`, labels in {-1, +1}.
    sample_weight : array-like of shape (n_samples,), "dataset" or None
        "dataset" (default) uses ``dataset.sample_weight`` when present.
    """
    return MarginRisk(dataset, "hinge", sample_weight)


def logistic_risk(dataset, sample_weight="dataset") -> MarginRisk:
    r"""Logistic risk :math:`L(w) = \frac1n \sum_{i=1}^n \log(1 + e^{-b_i a_i^\top w})`.

    Parameters
    ----------
    dataset : fastcon.Dataset
        The rows :math:`(a_i, b_i)`, labels in {-1, +1}.
    sample_weight : array-like of shape (n_samples,), "dataset" or None
        "dataset" (default) uses ``dataset.sample_weight`` when present.
    """
    return MarginRisk(dataset, "logistic", sample_weight)


def sigmoid_risk(dataset, sample_weight="dataset") -> MarginRisk:
    r"""Sigmoid (smoothed 0-1) risk :math:`L(w) = \frac1n \sum_{i=1}^n 1/(1 + e^{b_i a_i^\top w})` (non-convex).

    Parameters
    ----------
    dataset : fastcon.Dataset
        The rows :math:`(a_i, b_i)`, labels in {-1, +1}.
    sample_weight : array-like of shape (n_samples,), "dataset" or None
        "dataset" (default) uses ``dataset.sample_weight`` when present.
    """
    return MarginRisk(dataset, "sigmoid", sample_weight)


def squared_hinge_risk(dataset, sample_weight="dataset") -> MarginRisk:
    r"""Squared-hinge risk :math:`L(w) = \frac1n \sum_{i=1}^n \max(0, 1 - b_i a_i^\top w)^2`.

    Parameters
    ----------
    dataset : fastcon.Dataset
        The rows :math:`(a_i, b_i)`, labels in {-1, +1}.
    sample_weight : array-like of shape (n_samples,), "dataset" or None
        "dataset" (default) uses ``dataset.sample_weight`` when present.
    """
    return MarginRisk(dataset, "squared_hinge", sample_weight)
