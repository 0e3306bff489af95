r"""Smoothed ROC-based fairness of Huang & Lin [HL23] (eq. 11) as an oracle term; see docs/references.md.

For a protected and an unprotected group and a fixed threshold grid :math:`\Theta`,

.. math::

    R(w) = \max_{\theta \in \Theta} |\Delta_\theta(w)|, \qquad
    \Delta_\theta(w) = \frac1{n_p}\sum_{i=1}^{n_p} \sigma(w^\top a^p_i - \theta)
                     - \frac1{n_u}\sum_{i=1}^{n_u} \sigma(w^\top a^u_i - \theta),

with the logistic :math:`\sigma` and a subgradient at the first maximiser :math:`\theta^*`. One
evaluation: both groups' scores, the threshold sweep (`fastcon._kernels._threshold_sweep`), the
argmax and one transposed product per group. Design notes: docs/design.md, 'Module notes'.
"""
from __future__ import annotations

import numpy as np

from .._kernels._threshold_sweep import grid_blocks, sigmoid_prime_weights, sigmoid_sweep, sweep_workspace
from .._kernels._datafit import ROC_GAP, datafit_bundle
from .._memory_limit import check_memory
from ._design import DesignMatrix
from ._groups import split_group_rows, stacked_csr, stratified_rows
from ._validation import check_out, check_x

__all__ = ["ROCFairness", "roc_fairness", "roc_fairness_from_dataset", "threshold_grid"]

#: :math:`\max_z |\sigma''(z)| = 1/(6\sqrt3)`, the smoothness constant of :math:`\sigma`.
SIGMA_SECOND_BOUND = 1.0 / (6.0 * np.sqrt(3.0))


def threshold_grid(erm_scores, n_thresholds=400, field="n_thresholds"):
    r"""The paper's grid: ``np.linspace(lo, hi, n_thresholds)`` around the ERM scores ([HL23] §6.1).

    :math:`lo = \min_i s_i - \frac12(\max_i s_i - \min_i s_i)`,
    :math:`hi = \max_i s_i + \frac12(\max_i s_i - \min_i s_i)`: twice the width of the score range,
    centred on it, endpoints included. If all scores are equal (e.g. :math:`w = 0`) the grid spans
    :math:`[s - 1, s + 1]` instead, so that it stays strictly increasing.

    Parameters
    ----------
    erm_scores : array-like of shape (n,)
        Scores :math:`w_{ERM}^\top a_i` on the constraint data :math:`\mathcal D`.
    n_thresholds : int
        Checked by `check_n_thresholds`.
    field : str
        The argument named in error messages.
    """
    s = _finite_vector(erm_scores, "erm_scores")
    n_thresholds = check_n_thresholds(n_thresholds, field)
    lo, hi = float(s.min()), float(s.max())
    half = 0.5 * (hi - lo) if hi > lo else 1.0
    return np.linspace(lo - half, hi + half, n_thresholds)


def check_n_thresholds(n_thresholds, field="n_thresholds") -> int:
    """A positive count of thresholds whose arrays this machine can hold.

    `ROCFairness` keeps at least eight float64 arrays of this length (the grid, its factors, the
    two group means, the sweep's per-chunk accumulators): a count whose arrays exceed half the
    memory is a ValueError naming ``field``, raised before any of them is built.
    """
    n_thresholds = _positive_int(n_thresholds, field)
    check_memory(field, f"{n_thresholds:,} thresholds (eight float64 arrays of that length)", 64 * n_thresholds)
    return n_thresholds


def _finite_vector(v, field):
    v = np.asarray(v, dtype=np.float64)
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"{field}: expected a non-empty 1-D array, got shape {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{field}: contains NaN or inf")
    return np.ascontiguousarray(v)


def _positive_int(k, field):
    if isinstance(k, (bool, np.bool_)) or int(k) != k or k < 1:
        raise ValueError(f"{field}: expected a positive number of thresholds, got {k!r}")
    return int(k)


def _as_dataset(group, field):
    """A Dataset, or a feature matrix (dense or scipy sparse) wrapped into one."""
    from ..datasets import Dataset

    if isinstance(group, Dataset):
        ds = group
    else:
        try:
            n = group.shape[0]
            ds = Dataset(group, np.ones(n), task="binary", name=field)
        except (AttributeError, ValueError, IndexError) as exc:
            raise ValueError(f"{field}: expected a Dataset or a 2-D feature matrix ({exc})") from None
    if ds.n_samples == 0:
        raise ValueError(f"{field}: the group has no rows")
    return ds


class ROCFairness:
    r"""Smoothed ROC gap :math:`R(w) = \max_{\theta\in\Theta}|\Delta_\theta(w)|` ([HL23] eq. 11).

    Rows are numbered as in the concatenation ``[rows of group p, rows of group u]``: index ``i <
    n_p`` is row ``i`` of group p, index ``n_p + k`` is row ``k`` of group u.

    Minibatch oracles (``*_rows``) evaluate the same formula with the group means taken over the
    batch rows of each group, :math:`\hat R_B(w) = \max_\theta |\frac{1}{|B_p|}\sum_{i\in B_p}\sigma(\cdot)
    - \frac{1}{|B_u|}\sum_{k\in B_u}\sigma(\cdot)|` (repeated indices count repeatedly). Under
    uniform sampling each batch mean is unbiased for its group mean, but the maximum of their
    difference is not (it is biased upwards). A batch must hold rows of both groups, otherwise
    a ``ValueError`` is raised (sample the groups separately, e.g. stratified by group).

    Parameters
    ----------
    group_p, group_u : Dataset or (n, d) matrix (dense or scipy sparse)
        Feature rows of the protected and unprotected groups (same number of features). Labels and
        sample weights are not used: the paper's group means are unweighted.
    thresholds : array-like of shape (m,)
        The grid :math:`\Theta`, any order (the paper's is equally spaced and increasing). Ties in
        :math:`|\Delta_\theta|` resolve to the first index in this order.

    Attributes
    ----------
    n_samples : int
        :math:`n_p + n_u`, the rows one full pass reads.
    n_features : int
    thresholds : ndarray of shape (m,)
    last_threshold_index : int or None
        :math:`j^*` of the last oracle call (first maximiser of :math:`|\Delta_{\theta_j}|`).
    last_gap : float or None
        The signed :math:`\Delta_{\theta^*}` of the last call.
    rows_read : int
        Rows read since construction or :meth:`reset_counters`.
    """

    def __init__(self, group_p, group_u, thresholds):
        ds_p, ds_u = _as_dataset(group_p, "group_p"), _as_dataset(group_u, "group_u")
        if ds_p.n_features != ds_u.n_features:
            raise ValueError(f"group_u: has {ds_u.n_features} features, group_p has {ds_p.n_features}")
        self._design_p, self._design_u = DesignMatrix(ds_p), DesignMatrix(ds_u)
        self._X_p, self._X_u = ds_p.X, ds_u.X
        self.n_p, self.n_u = int(ds_p.n_samples), int(ds_u.n_samples)
        self.n_samples = self.n_p + self.n_u
        self.n_features = int(ds_p.n_features)
        self.thresholds = _finite_vector(thresholds, "thresholds").copy()  # the grid data below depend on it
        m = self.thresholds.shape[0]
        self._grid = grid_blocks(self.thresholds)  # anchors and exp factors, once per grid
        # Buffers reused by every full-pass call (no allocation per iteration).
        self._s_p, self._s_u = np.empty(self.n_p), np.empty(self.n_u)
        self._c_p, self._c_u = np.empty(self.n_p), np.empty(self.n_u)
        self._mean_p, self._mean_u = np.empty(m), np.empty(m)
        self._workspaces = {}
        self.last_threshold_index = None
        self.last_gap = None
        self.rows_read = 0

    def __repr__(self):
        return (f"ROCFairness(n_p={self.n_p}, n_u={self.n_u}, n_features={self.n_features}, "
                f"n_thresholds={self.thresholds.shape[0]})")

    formula = "R(w) = max_theta |mean_p sigma(w^T a - theta) - mean_u sigma(w^T a - theta)|"

    def reset_counters(self):
        """Set ``rows_read`` back to 0."""
        self.rows_read = 0

    # ------------------------------------------------------------------ constants
    def _row_norms(self):
        return self._design_p.row_norms(), self._design_u.row_norms()

    def weak_convexity_bound(self) -> float:
        r""":math:`\rho \le \frac{1}{6\sqrt3}(\overline{\|a^p\|^2} + \overline{\|a^u\|^2})` (bars: group means).

        Each :math:`\Delta_\theta` is smooth with that constant (:math:`|\sigma''| \le 1/(6\sqrt3)`);
        :math:`|\cdot|` of a smooth function and a max over :math:`\theta` keep it as weak convexity.
        """
        np_, nu_ = self._row_norms()
        return float(SIGMA_SECOND_BOUND * (np.mean(np_ ** 2) + np.mean(nu_ ** 2)))

    def lipschitz_bound(self) -> float:
        r""":math:`\|\zeta_R\| \le \frac14(\overline{\|a^p\|} + \overline{\|a^u\|})` (:math:`\sigma' \le 1/4`)."""
        np_, nu_ = self._row_norms()
        return float(0.25 * (np.mean(np_) + np.mean(nu_)))

    def rho_heuristic(self) -> float:
        r"""The paper's IPP heuristic :math:`\rho = \frac1n\sum_i \|a_i\|` over both groups ([HL23] §6.1).

        Really a Lipschitz constant of the hinge risk; only its scale matters.
        """
        np_, nu_ = self._row_norms()
        return float((np_.sum() + nu_.sum()) / self.n_samples)

    # ------------------------------------------------------------------ validation
    def _check_x(self, x):
        return check_x(x, self.n_features)

    def _check_out(self, out):
        return check_out(out, self.n_features)

    def _split_rows(self, rows):
        """Batch positions -> (rows of group p, rows of group u), each in batch order."""
        return split_group_rows(rows, self.n_p, self.n_u)

    def _workspace(self, n):
        ws = self._workspaces.get(n)
        if ws is None:
            # Keyed by size: the chunk count (hence the summation order) depends on the size only.
            ws = sweep_workspace(n, self.thresholds.shape[0])
            if len(self._workspaces) < 64:
                self._workspaces[n] = ws
        return ws

    # ------------------------------------------------------------------ oracles
    def value(self, x) -> float:
        """:math:`R(x)` over all rows."""
        x = self._check_x(x)
        self.rows_read += self.n_samples
        return self._evaluate(x, None, None, None)

    def value_and_subgradient(self, x, out) -> float:
        r""":math:`R(x)`; writes :math:`\zeta_R(x)` into ``out``."""
        x = self._check_x(x)
        out = self._check_out(out)
        self.rows_read += self.n_samples
        return self._evaluate(x, None, None, out)

    def value_rows(self, x, rows) -> float:
        r"""Minibatch estimate :math:`\hat R_B(x)`; ``rows`` index ``[group p rows, group u rows]``."""
        x = self._check_x(x)
        rows_p, rows_u = self._split_rows(rows)
        self.rows_read += rows_p.size + rows_u.size
        return self._evaluate(x, rows_p, rows_u, None)

    def value_and_subgradient_rows(self, x, rows, out) -> float:
        r""":math:`\hat R_B(x)`; writes its subgradient into ``out``."""
        x = self._check_x(x)
        out = self._check_out(out)
        rows_p, rows_u = self._split_rows(rows)
        self.rows_read += rows_p.size + rows_u.size
        return self._evaluate(x, rows_p, rows_u, out)

    def sample_rows(self, rng, batch=None) -> np.ndarray:
        """A stratified batch of ``batch`` rows: both groups, sizes proportional to the groups, no repeats.

        Solvers with a stochastic objective oracle use it (a uniform batch could miss a group).
        """
        if batch is None:
            raise ValueError("batch: the stratified ROC-fairness minibatch needs a size "
                             "(objective_batch_size), at least 2")
        return stratified_rows(rng, batch, self.n_p, self.n_u)

    def compiled_datafit(self):
        """The `fastcon._kernels._datafit` bundle (kind ROC_GAP) for compiled solver loops."""
        if getattr(self, "_bundle", None) is None:
            indptr, indices, data = stacked_csr(self._X_p, self._X_u)
            self._bundle = datafit_bundle(ROC_GAP, indptr, indices, data, n_split=self.n_p,
                                          thresholds=self.thresholds)
        return self._bundle

    def threshold_gaps(self, x) -> np.ndarray:
        r"""The signed gaps :math:`\Delta_{\theta_j}(x)` for every threshold (a copy; reads a full pass)."""
        self.value(x)
        return self._mean_p - self._mean_u

    # ------------------------------------------------------------------ the pass
    def _sweep(self, s, out):
        sigmoid_sweep(s, *self._grid, out, self._workspace(s.shape[0]))

    def _evaluate(self, x, rows_p, rows_u, out):
        full = rows_p is None
        n_p = self.n_p if full else rows_p.shape[0]
        n_u = self.n_u if full else rows_u.shape[0]
        s_p = self._s_p if full else np.empty(n_p)
        s_u = self._s_u if full else np.empty(n_u)
        self._design_p.matvec(x, s_p, rows_p)
        self._design_u.matvec(x, s_u, rows_u)
        self._sweep(s_p, self._mean_p)
        self._sweep(s_u, self._mean_u)
        gaps = self._mean_p - self._mean_u
        j = int(np.argmax(np.abs(gaps)))  # first index on ties
        gap = float(gaps[j])
        self.last_threshold_index, self.last_gap = j, gap
        if out is not None:
            out[:] = 0.0
            sign = float(np.sign(gap))  # sign(0) = 0: the zero subgradient at a zero gap
            if sign != 0.0:
                theta = self.thresholds[j]
                c_p = self._c_p[:n_p] if full else np.empty(n_p)
                c_u = self._c_u[:n_u] if full else np.empty(n_u)
                sigmoid_prime_weights(s_p, theta, sign / n_p, c_p)
                sigmoid_prime_weights(s_u, theta, -sign / n_u, c_u)
                self._design_p.rmatvec(c_p, out, rows_p)
                self._design_u.rmatvec(c_u, out, rows_u)
        return abs(gap)


def roc_fairness(group_p, group_u, thresholds=400, erm_scores=None) -> ROCFairness:
    r"""ROC-fairness objective :math:`R(w)` of [HL23] eq. (11).

    .. math::

        R(w) = \max_{\theta\in\Theta}\Big|\frac1{n_p}\sum_i\sigma(w^\top a^p_i-\theta)
               - \frac1{n_u}\sum_i\sigma(w^\top a^u_i-\theta)\Big|

    Parameters
    ----------
    group_p, group_u : Dataset or (n, d) matrix (dense or scipy sparse)
        Features of the protected (p) and unprotected (u) groups. Labels are not used.
    thresholds : int or array-like of shape (m,)
        An explicit grid :math:`\Theta` (any finite values), or the
        number of points of the paper's grid built from ``erm_scores`` (:func:`threshold_grid`).
    erm_scores : array-like of shape (n,), optional
        ERM scores :math:`w_{ERM}^\top a_i` on the constraint data; required when ``thresholds`` is
        an int.

    Returns
    -------
    ROCFairness
    """
    if np.ndim(thresholds) == 0:
        m = check_n_thresholds(thresholds, "thresholds")
        if erm_scores is None:
            raise ValueError("erm_scores: needed to build the default threshold grid; pass ERM scores "
                             "or an explicit thresholds array")
        thresholds = threshold_grid(erm_scores, m, field="thresholds")
    elif erm_scores is not None:
        raise ValueError("erm_scores: give either a thresholds array or erm_scores, not both")
    return ROCFairness(group_p, group_u, thresholds)


def roc_fairness_from_dataset(dataset, w_ref, thresholds=400, protected=1) -> ROCFairness:
    r"""ROC fairness on a two-group :class:`Dataset`, grid from the scores of ``w_ref`` on all rows.

    Parameters
    ----------
    dataset : Dataset
        With ``groups`` holding exactly two groups.
    w_ref : array-like of shape (d,)
        Reference model (the ERM solution in [HL23]); its scores on ``dataset`` set the grid.
    thresholds : int or array-like
        As in :func:`roc_fairness` (an int builds the paper's grid from ``w_ref``'s scores).
    protected : int or str
        Id or name of the protected group p (default 1; for a9a, group 1 is "female").
    """
    if dataset.groups is None or dataset.n_groups != 2:
        raise ValueError(f"dataset: needs exactly two sensitive groups, has {dataset.n_groups}")
    if isinstance(protected, str):
        if protected not in dataset.group_names:
            raise ValueError(f"protected: {protected!r} is not one of {dataset.group_names}")
        protected = dataset.group_names.index(protected)
    if protected not in (0, 1):
        raise ValueError(f"protected: expected group id 0 or 1, got {protected!r}")
    w_ref = np.asarray(w_ref, dtype=np.float64)
    if w_ref.shape != (dataset.n_features,):
        raise ValueError(f"w_ref: expected shape ({dataset.n_features},), got {w_ref.shape}")
    mask = dataset.groups == protected
    erm = None
    if np.ndim(thresholds) == 0:
        erm = np.asarray(dataset.X @ w_ref).ravel()
    return roc_fairness(dataset.subset(mask), dataset.subset(~mask), thresholds, erm)
