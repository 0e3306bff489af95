r"""Smoothed demographic-parity gap of Liu & Xu [LX25] (Problem 2, eq. 47; see docs/references.md).

.. math::

    \Psi_0(w) = |d(w)|,\qquad d(w) = \frac1{n_p}\sum_{i=1}^{n_p}\sigma(w^\top a^p_i)
    - \frac1{n_u}\sum_{i=1}^{n_u}\sigma(w^\top a^u_i),\qquad \sigma(t) = \frac1{1+e^{-t}},

the sigmoid relaxation of :math:`|P_p(w^\top a \ge 0) - P_u(w^\top a \ge 0)|`. Its subgradient is
:math:`\mathrm{sign}(d)\,\nabla d` (0 at :math:`d = 0`), with :math:`\nabla d = \frac1{n_p}\sum
\sigma'(w^\top a^p_i)a^p_i - \frac1{n_u}\sum\sigma'(w^\top a^u_i)a^u_i`. :math:`\Psi_0` is the absolute
value of a difference of means, not a mean of per-row terms, so stochastic methods track the signed
gap :math:`d` (a difference of means, which *is* linear in the rows) and take :math:`|\cdot|` after
(fastcon's reading of [LX25], whose SPIDER recursion is for expectations):
:meth:`DemographicParityGap.signed_gap_rows_two_point` is that statistic.
"""
from __future__ import annotations

import numpy as np

from .._kernels._datafit import GROUP_GAP, datafit_buffers, datafit_bundle, datafit_value_grad, statistic, \
    statistic_two_point
from ._groups import split_group_rows, stacked_csr, stratified_rows
from ._roc_fairness import _as_dataset
from ._validation import check_out, check_x

__all__ = ["DemographicParityGap", "smoothed_demographic_parity"]


class DemographicParityGap:
    r"""Smoothed demographic-parity gap :math:`|d(w)|` between two groups (module docstring).

    Rows are numbered ``[rows of group p, rows of group u]``. Minibatch oracles take the group
    means over the batch rows of each group (both groups must be present; `sample_rows` draws
    stratified batches); the batch estimate of :math:`d` is unbiased, that of :math:`|d|` is not.

    Parameters
    ----------
    group_p, group_u : Dataset or (n, d) matrix (dense or scipy sparse)
        Features of the two groups (labels unused). Which group is "protected" does not matter:
        :math:`|d|` is symmetric.

    Attributes
    ----------
    n_samples, n_p, n_u, n_features : int
    rows_read : int
        Rows read since construction or :meth:`reset_counters` (a two-point call counts each row once).
    """

    formula = "|mean_p sigma(w^T a) - mean_u sigma(w^T a)|"

    def __init__(self, group_p, group_u):
        ds_p, ds_u = _as_dataset(group_p, "group_p"), _as_dataset(group_u, "group_u")
        if ds_p.n_features != ds_u.n_features:
            raise ValueError(f"group_u: has {ds_u.n_features} features, group_p has {ds_p.n_features}")
        self.n_p, self.n_u = int(ds_p.n_samples), int(ds_u.n_samples)
        self.n_samples = self.n_p + self.n_u
        self.n_features = int(ds_p.n_features)
        indptr, indices, data = stacked_csr(ds_p.X, ds_u.X)
        self._bundle = datafit_bundle(GROUP_GAP, indptr, indices, data, n_split=self.n_p)
        self._all = np.arange(self.n_samples, dtype=np.int64)
        self._bufs = datafit_buffers(self._bundle, self.n_samples)
        self.rows_read = 0

    def __repr__(self):
        return f"DemographicParityGap(n_p={self.n_p}, n_u={self.n_u}, n_features={self.n_features})"

    def reset_counters(self):
        """Set ``rows_read`` back to 0."""
        self.rows_read = 0

    def compiled_datafit(self):
        """The `fastcon._kernels._datafit` bundle (kind GROUP_GAP) for compiled solver loops."""
        return self._bundle

    def _rows(self, rows):
        rows_p, rows_u = split_group_rows(rows, self.n_p, self.n_u)
        # the kernels want group p rows first, as global indices
        return np.concatenate([rows_p, rows_u + self.n_p])

    def _eval(self, x, rows, out):
        x = check_x(x, self.n_features)
        if out is not None:
            out = check_out(out, self.n_features)
            out[:] = 0.0
        if rows is None:
            rows, bufs = self._all, self._bufs
        else:
            rows = self._rows(rows)
            bufs = datafit_buffers(self._bundle, rows.shape[0])
        self.rows_read += rows.shape[0]
        dummy = out if out is not None else np.empty(0)
        return float(datafit_value_grad(self._bundle, x, rows, rows.shape[0], out is not None, 1.0, dummy, bufs))

    def value(self, x) -> float:
        r""":math:`|d(x)|` over all rows."""
        return self._eval(x, None, None)

    def value_and_subgradient(self, x, out) -> float:
        r""":math:`|d(x)|`; writes :math:`\mathrm{sign}(d)\nabla d(x)` into ``out``."""
        return self._eval(x, None, out)

    def value_rows(self, x, rows) -> float:
        r"""Batch estimate :math:`|\hat d_B(x)|` (group means over the batch rows of each group)."""
        return self._eval(x, rows, None)

    def value_and_subgradient_rows(self, x, rows, out) -> float:
        r""":math:`|\hat d_B(x)|` and its subgradient on the batch."""
        return self._eval(x, rows, out)

    def signed_gap(self, x) -> float:
        r"""The signed statistic :math:`d(x)` over all rows."""
        x = check_x(x, self.n_features)
        self.rows_read += self.n_samples
        return float(statistic(self._bundle, x, self._all, self.n_samples, self._bufs))

    def signed_gap_rows_two_point(self, x, x_prev, rows):
        r"""``(d_B(x), d_B(x_prev))`` on the same batch, each row read once (the SPIDER difference)."""
        x = check_x(x, self.n_features)
        x_prev = check_x(x_prev, self.n_features, "x_prev")
        rows = self._rows(rows)
        self.rows_read += rows.shape[0]
        a, b = statistic_two_point(self._bundle, x, x_prev, rows, rows.shape[0],
                                   datafit_buffers(self._bundle, rows.shape[0]))
        return float(a), float(b)

    def sample_rows(self, rng, batch) -> np.ndarray:
        """A stratified batch of ``batch`` rows (both groups, proportional sizes, no repeats)."""
        return stratified_rows(rng, batch, self.n_p, self.n_u)


def smoothed_demographic_parity(group_p, group_u) -> DemographicParityGap:
    r"""The smoothed demographic-parity gap :math:`\Psi_0(w) = |d(w)|` of [LX25] eq. (47), as a term.

    Use it as a constraint with `less_equal` (:math:`\Psi_0(w) \le \kappa_2`, paper: 0.02). The
    hard gap a user measures on scores, :math:`|P_p(s \ge \theta) - P_u(s \ge \theta)|`, is
    `fastcon.metrics.demographic_parity_gap`; this term is its sigmoid relaxation, which bounds
    neither from above nor from below.

    Parameters
    ----------
    group_p, group_u : Dataset or (n, d) matrix
        The two groups' feature rows.

    Returns
    -------
    DemographicParityGap
    """
    return DemographicParityGap(group_p, group_u)
