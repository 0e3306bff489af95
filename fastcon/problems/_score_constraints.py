r"""Constraint blocks on a linear model's scores: smoothed group-rate gaps and 1-D transport gaps.

**Rates.** A smoothed rate is a mean of :math:`\sigma((z_i - \theta)/\tau)` over cells (group, label)
— selection, true- and false-positive rates, both (equalized odds), or selection rates over a
threshold grid (``roc``, [HL23] eq. (11)) — and `RateGapConstraints` bounds every ordered pair of
groups, :math:`r_a(\theta_j) - r_b(\theta_j) - \kappa \le 0`, as the hard gaps of `fastcon.metrics`
measure it; one pass of `cell_sigmoid_sums` gives every rate, one of `cell_sigmoid_vjp` the gradient.
**Transport.** `TransportGapConstraints` bounds :math:`W_1(z_a, z_b) - \kappa \le 0` for every pair
of groups ([HL23] §5; exact by sorting on 1-D scores).
Design notes: docs/design.md, 'Module notes'.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._kernels._group_rates import cell_sigmoid_sums, cell_sigmoid_vjp, cell_step_sums, transport_gap
from .._memory_limit import check_memory

__all__ = ["RateGapConstraints", "TransportGapConstraints", "group_fairness_constraints", "rate_bound_constraint",
           "rate_block_bytes", "fairness_constraint_bytes", "FAIRNESS_CONSTRAINTS"]

#: Constraint names of `group_fairness_constraints`.
FAIRNESS_CONSTRAINTS = ("demographic_parity", "equal_opportunity", "false_positive_parity", "equalized_odds",
                        "roc", "wasserstein")


class _PairBound:
    r""":math:`\kappa` of a block, one entry per pair (a scalar is broadcast); settable between solves."""

    @property
    def bound(self):
        return self._bound

    @bound.setter
    def bound(self, value):
        value = np.broadcast_to(np.asarray(value, dtype=np.float64), (self.n_pairs,)).copy()
        if not np.all(np.isfinite(value)):
            raise ValueError("bound: must be finite")
        self._bound = value


class RateGapConstraints(_PairBound):
    r"""Linear constraints on smoothed rates: :math:`r_a(\theta_j) - r_b(\theta_j) - \kappa \le 0` per grid point.

    Parameters
    ----------
    scores : LinearScores
    cell : int64[n]
        Cell id of every row (-1: in no cell).
    rate_matrix : float64[R, n_cells]
        Rate :math:`r = M S` from the cell sums :math:`S` (entries: one over the total weight of
        the rate's rows).
    pairs : int64[K, 2]
        Constraint :math:`k` is :math:`r_{a_k} - r_{b_k} - \kappa_k` for ``pairs[k] = (a_k, b_k)``;
        :math:`b_k = -1` bounds the rate :math:`r_{a_k}` alone. Index pairs rather than a dense
        difference matrix :math:`D`: :math:`D` has :math:`K \times R` entries, :math:`O(G^3)` for
        every ordered pair of :math:`G` groups (160 groups: 4 million), the index pairs :math:`2K`.
    bound : float or float64[K]
        :math:`\kappa`.
    thresholds : float64[m]
        Grid :math:`\theta`, ascending (one point, 0, for rates at the decision threshold).
    smoothing : float
        :math:`\tau > 0`.
    names : list of str
        One description per pair.
    weight : float64[n], optional
        Row weights of the cell sums (default 1: rates are plain means).
    straddle : float
        :math:`\mu \ge 0`. With :math:`\mu > 0` constraint :math:`k` reads its first rate at
        :math:`\theta_j - \mu\tau` and its second at :math:`\theta_j + \mu\tau`:
        :math:`r_{a_k}(\theta_j - \mu\tau) - r_{b_k}(\theta_j + \mu\tau) - \kappa \le 0`. The first
        rate then counts a row at :math:`z_i = \theta_j` as :math:`\sigma(\mu)` (close to the step's
        1) and the second as :math:`\sigma(-\mu)` (close to its 0), so scores gathered just above
        the threshold in the higher group, or just below it in the lower one, no longer shrink the
        smoothed gap while the hard one stays (the piling-up that made a DP fit meet
        :math:`\kappa = 2\cdot10^{-4}` in sigmoid rates at a hard gap of 0.05: docs/benchmarks.md,
        "Large data"). Default 0: both rates at :math:`\theta_j`.

    Notes
    -----
    Constraint values are ordered pair-major: index ``k * m + j`` is pair ``k`` at ``thresholds[j]``.
    The block keeps :math:`O(n + (n_{cells} + R + K)\,m)` numbers (`rate_block_bytes`).
    """

    def __init__(self, scores, cell, rate_matrix, pairs, bound, thresholds, smoothing, names, weight=None, straddle=0.0):
        self.scores = scores
        self.cell = np.ascontiguousarray(cell, dtype=np.int64)
        self.weight = np.ones(self.cell.shape[0]) if weight is None else np.ascontiguousarray(weight, dtype=np.float64)
        self.rate_matrix = np.ascontiguousarray(rate_matrix, dtype=np.float64)
        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        n_rates = self.rate_matrix.shape[0]
        if np.any(pairs[:, 0] < 0) or np.any(pairs >= n_rates) or np.any(pairs[:, 1] < -1):
            raise ValueError(f"pairs: rate indices must lie in 0..{n_rates - 1} (-1 for no second rate)")
        self.pairs = pairs
        self.thresholds = np.ascontiguousarray(thresholds, dtype=np.float64)
        if np.any(np.diff(self.thresholds) < 0):
            raise ValueError("thresholds: must be ascending")
        smoothing = float(smoothing)
        if not (np.isfinite(smoothing) and smoothing > 0):
            raise ValueError(f"smoothing: must be a positive finite number, got {smoothing}")
        self.smoothing = smoothing
        self.names = list(names)
        # D (K x R, 2K entries) as a sparse matrix, built once: values D r, gradient coefficients D^T lambda
        k, second = np.arange(pairs.shape[0]), pairs[:, 1] >= 0
        self._pair_diff = sp.csr_matrix((np.r_[np.ones(k.size), -np.ones(int(second.sum()))],
                                         (np.r_[k, k[second]], np.r_[pairs[:, 0], pairs[second, 1]])),
                                        shape=(pairs.shape[0], n_rates))
        self._pair_diff_t = self._pair_diff.T.tocsr()
        # the two sides of D apart, for the straddle: D = first - second
        self._first = sp.csr_matrix((np.ones(k.size), (k, pairs[:, 0])), shape=(pairs.shape[0], n_rates))
        self._second = sp.csr_matrix((np.ones(int(second.sum())), (k[second], pairs[second, 1])),
                                     shape=(pairs.shape[0], n_rates))
        self._sums = np.empty((self.rate_matrix.shape[1], self.thresholds.shape[0]))
        self.n_pairs = pairs.shape[0]
        self.bound = bound
        self.straddle = straddle

    @property
    def straddle(self):
        return self._straddle

    @straddle.setter
    def straddle(self, value):
        value = float(value)
        if not (np.isfinite(value) and value >= 0):
            raise ValueError(f"straddle: must be a finite number >= 0, got {value}")
        self._straddle = value

    def curvature_weights(self):
        """Row weights summing to 1 over the rows some rate reads (0 elsewhere), for
        `fastcon.problems.LinearModelProblem.curvature_diagonal`; None when no row has weight."""
        c = np.where(self.cell >= 0, self.weight, 0.0)
        total = c.sum()
        return c / total if total > 0 else None

    def _shifted(self, sign):
        r"""The grid moved by ``sign`` straddles: :math:`\theta + \text{sign}\,\mu\tau`."""
        return self.thresholds + sign * self._straddle * self.smoothing

    @property
    def n_constraints(self) -> int:
        return self.pairs.shape[0] * self.thresholds.shape[0]

    def rates_from_scores(self, z) -> np.ndarray:
        """Smoothed rates, shape (R, m)."""
        cell_sigmoid_sums(z, self.cell, self.weight, 1.0 / self.smoothing, self.thresholds, self._sums)
        return self.rate_matrix @ self._sums

    def values_from_scores(self, z) -> np.ndarray:
        if self._straddle == 0.0:
            rates = self.rates_from_scores(z)
            return (self._pair_diff @ rates - self._bound[:, None]).ravel()
        gamma = 1.0 / self.smoothing
        cell_sigmoid_sums(z, self.cell, self.weight, gamma, self._shifted(-1.0), self._sums)
        first = self._first @ (self.rate_matrix @ self._sums)
        cell_sigmoid_sums(z, self.cell, self.weight, gamma, self._shifted(1.0), self._sums)
        second = self._second @ (self.rate_matrix @ self._sums)
        return (first - second - self._bound[:, None]).ravel()

    def hard_values_from_scores(self, z) -> np.ndarray:
        r"""The constraint values with the step :math:`[z_i > \theta_j]` in place of the sigmoid.

        :math:`r_a - r_b - \kappa` per pair and grid point (same order as `values_from_scores`),
        each rate the weighted fraction of its rows scored above the threshold: what a user
        measures on ``predict``'s labels (rows at :math:`z_i = \theta_j` count as below, as
        ``predict`` labels them). The straddle does not apply: it moves the smoothed rates only.
        """
        cell_step_sums(np.ascontiguousarray(z, dtype=np.float64), self.cell, self.weight, self.thresholds, self._sums)
        return (self._pair_diff @ (self.rate_matrix @ self._sums) - self._bound[:, None]).ravel()

    def vjp_and_curvature_from_scores(self, z, weights, v, h):
        r"""``v += d(sum_k weights_k g_k)/dz`` and ``h +=`` a bound on that sum's second derivative's diagonal.

        A row's part of the sum is :math:`c\,\sigma((z_i - \theta)/\tau)` per side of a pair it
        enters; its second derivative :math:`c\,\sigma''/\tau^2` is at most
        :math:`|c\,\sigma'|/\tau` (:math:`|\sigma''| \le \sigma'`), so ``h`` grows by the
        absolute gradient of each side over :math:`\tau` (the Newton steps of
        `fastcon.boosting._rate_fit` never overshoot the rates' curvature).
        """
        lam = np.asarray(weights, dtype=np.float64).reshape(self.n_pairs, self.thresholds.shape[0])
        part = np.empty_like(v)
        # one grid point and one side at a time: a row's parts at other thresholds have other sigma''
        for j in np.flatnonzero(np.any(lam != 0.0, axis=0)):
            one = np.zeros_like(lam)
            one[:, j] = lam[:, j]
            sides = ([(self.thresholds, self._pair_diff_t @ one)] if self._straddle == 0.0 else
                     [(self._shifted(-1.0), self._first.T @ one), (self._shifted(1.0), -(self._second.T @ one))])
            for grid, coef in sides:
                part[:] = 0.0
                self._sigmoid_vjp(z, grid, self.rate_matrix.T @ coef, part)
                v += part
                h += np.abs(part) / self.smoothing

    def vjp_from_scores(self, z, weights, v):
        r"""``v += d(sum_k weights_k g_k)/dz``."""
        lam = np.asarray(weights, dtype=np.float64).reshape(self.n_pairs, self.thresholds.shape[0])
        if not np.any(lam):
            return
        if self._straddle == 0.0:
            self._sigmoid_vjp(z, self.thresholds, self.rate_matrix.T @ (self._pair_diff_t @ lam), v)
            return
        self._sigmoid_vjp(z, self._shifted(-1.0), self.rate_matrix.T @ (self._first.T @ lam), v)
        self._sigmoid_vjp(z, self._shifted(1.0), -(self.rate_matrix.T @ (self._second.T @ lam)), v)

    def _sigmoid_vjp(self, z, grid, coef, v):
        r"""``v +=`` the scores' gradient of :math:`\sum` ``coef`` (n_cells, m) times the cell sums on ``grid``."""
        coef = np.ascontiguousarray(coef)
        active = np.flatnonzero(np.any(coef != 0.0, axis=0))
        if active.size == coef.shape[1]:
            cell_sigmoid_vjp(z, self.cell, self.weight, 1.0 / self.smoothing, grid, coef, v)
        elif active.size:
            cell_sigmoid_vjp(z, self.cell, self.weight, 1.0 / self.smoothing,
                             np.ascontiguousarray(grid[active]), np.ascontiguousarray(coef[:, active]), v)


def rate_block_bytes(n_samples, n_cells, n_rates, n_pairs, n_thresholds) -> int:
    r"""Bytes a `RateGapConstraints` block and one solve over it hold at most, counted before building it.

    Per row: cell id, weight, the scores' cache and gradient buffers (five 8-byte numbers). Per grid
    point: the cell sums and cell coefficients (:math:`2 n_{cells}`), the rates and their
    coefficients (:math:`2R`), and for the :math:`K` pairs the constraint values, the multipliers
    and two solver work vectors (:math:`4K`); per pair, its indices, bound and name (256 bytes:
    a name is a Python string of about 100 characters, the rest is index arrays and their
    temporaries while the block is built).
    """
    m = int(n_thresholds)
    per_point = 2 * int(n_cells) + 2 * int(n_rates) + 4 * int(n_pairs)
    return 8 * (5 * int(n_samples) + per_point * m + int(n_rates) * int(n_cells)) + 256 * int(n_pairs)


class TransportGapConstraints(_PairBound):
    r""":math:`W_1(z_a, z_b) - \kappa \le 0` for every pair of groups :math:`a < b` (module docstring).

    Parameters
    ----------
    scores : LinearScores
    group_rows : list of int64 arrays
        The rows of every group (kept ordered by the last scores seen).
    bound : float
        :math:`\kappa`.
    names : list of str, optional
    huber : float
        :math:`\mu \ge 0`: Huber-smoothed distances between matched quantiles (`transport_gap`); 0 is
        the exact :math:`W_1`.
    """

    #: Huber width per unit of ``smoothing`` (the :math:`\tau` of the rate constraints): an estimator
    #: sets one smoothing for every constraint kind.
    HUBER_PER_SMOOTHING = 1.0 / 50.0

    def __init__(self, scores, group_rows, bound, names=None, huber=0.0):
        self.scores = scores
        self.huber = float(huber)
        if not (np.isfinite(self.huber) and self.huber >= 0):
            raise ValueError(f"huber: must be a finite number >= 0, got {huber}")
        self.group_rows = [np.ascontiguousarray(r, dtype=np.int64) for r in group_rows]
        self.pair_index = [(a, b) for a in range(len(self.group_rows)) for b in range(a + 1, len(self.group_rows))]
        self.names = list(names) if names is not None else [f"W1(group {a}, group {b})" for a, b in self.pair_index]
        self.n_pairs = len(self.pair_index)
        self.bound = bound


    def _sort(self, z):
        """Order every group's rows by score. Each starts from its previous order, nearly sorted
        between nearby iterates, where NumPy's stable sort (timsort) runs in close to linear time
        (docs/measurements.md)."""
        for k, rows in enumerate(self.group_rows):
            self.group_rows[k] = rows[np.argsort(z[rows], kind="stable")]

    @property
    def smoothing(self):
        """``huber / HUBER_PER_SMOOTHING``; setting it sets ``huber``."""
        return self.huber / self.HUBER_PER_SMOOTHING

    @smoothing.setter
    def smoothing(self, value):
        self.huber = float(value) * self.HUBER_PER_SMOOTHING

    @property
    def n_constraints(self) -> int:
        return len(self.pair_index)

    def values_from_scores(self, z) -> np.ndarray:
        dummy = np.empty(0)
        self._sort(z)
        return np.array([transport_gap(z, self.group_rows[a], self.group_rows[b], self.huber, 0.0, dummy)
                         for a, b in self.pair_index]) - self._bound

    def vjp_from_scores(self, z, weights, v):
        self._sort(z)
        for (a, b), weight in zip(self.pair_index, weights):
            if weight != 0.0:
                transport_gap(z, self.group_rows[a], self.group_rows[b], self.huber, float(weight), v)


def fairness_constraint_bytes(n_samples, n_groups, constraint, n_thresholds=1) -> int:
    """Bytes the block of `group_fairness_constraints` and one solve over it hold, from the counts alone.

    What an estimator checks (`fastcon._memory_limit.check_memory`) before it builds anything:
    `rate_block_bytes` for the rate constraints; for ``"wasserstein"`` the rows (group orders and
    the scores' buffers) and, per pair of groups, its value, multiplier, two work entries and name.
    """
    if constraint not in FAIRNESS_CONSTRAINTS:
        raise ValueError(f"constraint: expected one of {FAIRNESS_CONSTRAINTS}, got {constraint!r}")
    n_samples, n_groups = int(n_samples), int(n_groups)
    if constraint == "wasserstein":
        return 8 * 5 * n_samples + (4 * 8 + 256) * (n_groups * (n_groups - 1) // 2)
    n_families = 2 if constraint == "equalized_odds" else 1
    n_rates = n_families * n_groups
    return rate_block_bytes(n_samples, 2 * n_groups, n_rates, n_families * n_groups * (n_groups - 1),
                            n_thresholds if constraint == "roc" else 1)


def _ordered_pairs(n_rates, offset):
    """Every ordered pair (a, b), a != b, of the rates offset..offset+n_rates-1, as an int64[K, 2] array."""
    a, b = np.divmod(np.arange(n_rates * n_rates, dtype=np.int64), n_rates)
    keep = a != b
    return np.stack([a[keep] + offset, b[keep] + offset], axis=1)


def group_fairness_constraints(scores, y01, groups, constraint, bound, *, smoothing=1.0, thresholds=None,
                               group_labels=None, sample_weight=None, straddle=0.0):
    r"""The constraint block of a named group-fairness constraint on a linear model's scores.

    Parameters
    ----------
    scores : LinearScores
    y01 : int array of shape (n,)
        Labels, 1 for the positive class and 0 for the negative one.
    groups : int array of shape (n,)
        Group codes 0..K-1 (every group non-empty), K >= 1.
    constraint : str
        One of `FAIRNESS_CONSTRAINTS` (module docstring for each definition).
    bound : float
        :math:`\kappa`, the largest allowed gap between any two groups.
    smoothing : float
        :math:`\tau` of the sigmoid rates; for ``"wasserstein"`` the Huber width of the matched-quantile
        distances is :math:`\tau/50` (a differentiable :math:`W_1`, at most :math:`\tau/100` below it).
    thresholds : array, optional
        The grid of ``"roc"`` (required for it); ignored otherwise (rates at threshold 0).
    group_labels : list, optional
        Names of the groups for the constraint descriptions.
    sample_weight : array of shape (n,), optional
        Row weights of the rates (weighted means); not for ``"wasserstein"``, whose quantile
        matching is unweighted (a ValueError).
    straddle : float
        The rate blocks' :math:`\mu` (`RateGapConstraints`); not used by ``"wasserstein"``.

    Returns
    -------
    RateGapConstraints or TransportGapConstraints
        With K = 1 the block has no constraints (a gap needs two groups).
    """
    if constraint not in FAIRNESS_CONSTRAINTS:
        raise ValueError(f"constraint: expected one of {FAIRNESS_CONSTRAINTS}, got {constraint!r}")
    groups = np.asarray(groups, dtype=np.int64)
    y01 = np.asarray(y01, dtype=np.int64)
    n_groups = int(groups.max()) + 1 if groups.size else 0
    labels = list(group_labels) if group_labels is not None else list(range(n_groups))
    if constraint == "wasserstein":
        check_memory("groups", f"the Wasserstein constraints of {n_groups:,} groups on {groups.shape[0]:,} rows",
                     fairness_constraint_bytes(groups.shape[0], n_groups, constraint))
        if sample_weight is not None:
            raise ValueError("sample_weight: the 'wasserstein' constraint matches unweighted quantiles; "
                             "fit without sample_weight or choose a rate constraint")
        rows = [np.flatnonzero(groups == k) for k in range(n_groups)]
        pairs = [(a, b) for a in range(n_groups) for b in range(a + 1, n_groups)]
        names = [f"W1(scores | {labels[a]!r}, scores | {labels[b]!r})" for a, b in pairs]
        return TransportGapConstraints(scores, rows, bound, names,
                                       huber=smoothing * TransportGapConstraints.HUBER_PER_SMOOTHING)
    families = {"demographic_parity": [("selection rate", (0, 1))], "roc": [("selection rate", (0, 1))],
                "equal_opportunity": [("true-positive rate", (1,))],
                "false_positive_parity": [("false-positive rate", (0,))],
                "equalized_odds": [("true-positive rate", (1,)), ("false-positive rate", (0,))]}[constraint]
    if constraint == "roc":
        if thresholds is None:
            raise ValueError("thresholds: the 'roc' constraint needs a threshold grid")
        grid = np.ascontiguousarray(thresholds, dtype=np.float64)
        if grid.ndim != 1 or grid.size == 0 or not np.all(np.isfinite(grid)):
            raise ValueError("thresholds: expected a non-empty 1-D array of finite numbers")
        grid = np.sort(grid)            # the kernels' anchor blocks run over an ascending grid
    else:
        grid = np.zeros(1)
    total_rates = n_groups * len(families)
    check_memory("thresholds" if constraint == "roc" and grid.size > 1 else "groups",
                 f"the {constraint!r} constraints of {n_groups:,} groups at {grid.size:,} threshold(s) on "
                 f"{groups.shape[0]:,} rows",
                 fairness_constraint_bytes(groups.shape[0], n_groups, constraint, grid.size))
    cell = groups * 2 + y01
    counts = np.bincount(cell, weights=sample_weight, minlength=2 * n_groups).astype(np.float64)
    rate_matrix = np.zeros((total_rates, 2 * n_groups))
    pairs, names = [], []
    for f, (what, ys) in enumerate(families):
        for k in range(n_groups):
            n_rows = sum(counts[2 * k + t] for t in ys)
            if n_rows == 0:
                kind = "positive" if ys == (1,) else "negative"
                raise ValueError(f"sensitive_features: group {labels[k]!r} has no {kind} samples (of positive "
                                 f"weight), so its "
                                 f"{what} is undefined; the {constraint!r} constraint needs both labels in every group")
            for t in ys:
                rate_matrix[f * n_groups + k, 2 * k + t] = 1.0 / n_rows
        index = _ordered_pairs(n_groups, f * n_groups)
        pairs.append(index)
        names += [f"{what}({labels[a - f * n_groups]!r}) - {what}({labels[b - f * n_groups]!r})" for a, b in index]
    pairs = np.concatenate(pairs) if pairs else np.empty((0, 2), dtype=np.int64)
    return RateGapConstraints(scores, cell, rate_matrix, pairs, bound, grid, smoothing, names,
                              weight=sample_weight, straddle=straddle)


def rate_bound_constraint(scores, rows, bound, *, smoothing=1.0, name="rate", sample_weight=None):
    r"""A smoothed positive rate of ``rows``, bounded: :math:`\bar r - \kappa \le 0`.

    :math:`\bar r = \sum_{i \in I}c_i\sigma(z_i/\tau) / \sum_{i \in I}c_i`.

    With ``rows`` the negative-class rows this is the smoothed type-I error of Neyman–Pearson
    classification (the hard one is the weighted fraction of them with :math:`z_i > 0`).
    ``sample_weight`` (all rows, default 1) gives the :math:`c_i`.

    Parameters
    ----------
    scores : LinearScores
        The scores :math:`z`.
    rows : array-like of int
        The rows :math:`I` whose rate is bounded.
    bound : float
        :math:`\kappa`.
    smoothing : float
        :math:`\tau > 0`, default 1.
    name : str
        Description of the constraint.
    sample_weight : array-like of shape (n,), optional
        The weights :math:`c_i` (all rows; default 1).
    """
    rows = np.asarray(rows, dtype=np.int64)
    weight = np.ones(scores.n_samples) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    total = float(weight[rows].sum())
    if not total > 0:
        raise ValueError("rows: a rate needs rows of positive total weight")
    cell = np.full(scores.n_samples, -1, dtype=np.int64)
    cell[rows] = 0
    return RateGapConstraints(scores, cell, np.array([[1.0 / total]]), np.array([[0, -1]]), bound, np.zeros(1),
                              smoothing, [name], weight=weight)
