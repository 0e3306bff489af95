r"""Partial demographic parity as difference-of-convex (DC) constraints on a linear model's scores.

He, Huang, Yao & Lin [HHYL25] ask for demographic parity only among the samples whose within-group
rank lies in an interval :math:`\mathcal I = [\alpha, \beta)`. For a linear model
:math:`h(\xi) = \langle w, \tilde x\rangle` on cross-term features (`cross_term_features`) they train

* model (13), *partial DP* (`partial_dp_constraints`): with auxiliary thresholds :math:`\theta_p`,
  one per rank level :math:`p` of a grid :math:`\widehat{\mathcal I}`, and the group means
  :math:`S_{kp} = \frac{1}{n_k}\sum_{i \in k}\sigma(z_i - \theta_p)` of a surrogate :math:`\sigma`
  of the step :math:`\mathbf 1\{u > 0\}`,

  .. math::

      p \le S_{kp} \le p + \kappa(\beta - \alpha)\qquad\forall p \in \widehat{\mathcal I},\ k;

* model (17), *weak partial DP* (`weak_partial_dp_constraints`): with
  :math:`a_k = \frac{1}{n_k}\sum_{i \in k}\sigma(z_i - \hat\theta)`, for every ordered pair
  :math:`(k, k')`,

  .. math::

      \min\{a_k, \beta\} - \min\{a_k, \alpha\} - \min\{a_{k'}, \beta\} + \min\{a_{k'}, \alpha\}
      \le \kappa(\beta - \alpha).

Every constraint is written :math:`f_i = f_i^+ - f_i^-` with both parts convex in the variable
:math:`x = (w, \theta)` (Appendix B.2/B.3 of [HHYL25]), and `PartialFairnessProblem` serves the DC
problem protocol its IDCA (Algorithm 1) and direct switching subgradient (Algorithm 3) call, plus
the penalty models (78)/(83).

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
import scipy.sparse as sp
from scipy.special import expit

from .._kernels._partial_rates import (
    hinge_cut_row_sums_csr,
    hinge_cut_row_sums_dense,
    hinge_cut_sums,
    logistic_level_row_sums_csr,
    logistic_level_row_sums_dense,
    logistic_level_sums,
)
from ..datasets._dataset import _as_design
from ._validation import check_out, check_x

__all__ = [
    "GRIDS",
    "SURROGATES",
    "PartialDPConstraints",
    "PartialFairnessProblem",
    "WeakPartialDPConstraints",
    "cross_term_features",
    "partial_dp_constraints",
    "weak_partial_dp_constraints",
]

#: Surrogates of the step function.
SURROGATES = ("ramp", "logistic")
#: Level grids of model (13).
GRIDS = ("safe", "paper")
#: :math:`\max_u|\sigma''(u)|` of the logistic function, :math:`1/(6\sqrt3)` (at :math:`\sigma = (3 \pm \sqrt3)/6`).
LOGISTIC_MAX_CURVATURE = 1.0 / (6.0 * math.sqrt(3.0))

_HINGE, _LOGISTIC = 0, 1


# --------------------------------------------------------------------------- input checks
def _check_groups(groups, n, n_groups=None, allow_empty=False):
    """``(groups as int64, G, sizes)``; ids must be integers in ``[0, G)``, G given or ``max + 1``."""
    groups = np.asarray(groups)
    if groups.ndim != 1 or groups.shape[0] != n:
        raise ValueError(f"groups: expected shape ({n},), got {groups.shape}")
    if groups.dtype.kind not in "biu" and not (
            groups.dtype.kind == "f" and np.all(np.isfinite(groups)) and np.all(groups == np.round(groups))):
        raise ValueError(f"groups: group ids must be integers 0..G-1, got dtype {groups.dtype}")
    groups = np.ascontiguousarray(groups, dtype=np.int64)
    if n_groups is None:
        n_groups = int(groups.max()) + 1 if n else 0
    else:
        if isinstance(n_groups, bool) or not isinstance(n_groups, (int, np.integer)) or n_groups < 1:
            raise ValueError(f"n_groups: expected a positive integer, got {n_groups!r}")
        n_groups = int(n_groups)
    if n and (groups.min() < 0 or groups.max() >= n_groups):
        bad = int(groups[(groups < 0) | (groups >= n_groups)][0])
        raise ValueError(f"groups: group id {bad} out of range [0, {n_groups})")
    sizes = np.bincount(groups, minlength=n_groups)
    if not allow_empty and np.any(sizes == 0):
        raise ValueError(f"groups: group {int(np.flatnonzero(sizes == 0)[0])} is empty (ids must be 0..G-1, "
                         "every group non-empty: its rates are means over its rows)")
    return groups, n_groups, sizes


def _check_interval(interval):
    try:
        alpha, beta = (float(v) for v in interval)
    except (TypeError, ValueError):
        raise ValueError(f"interval: expected a pair (alpha, beta), got {interval!r}") from None
    if not (np.isfinite(alpha) and np.isfinite(beta) and 0.0 <= alpha < beta <= 1.0):
        raise ValueError(f"interval: expected 0 <= alpha < beta <= 1, got ({alpha}, {beta})")
    return alpha, beta


def _check_nonnegative(value, field):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{field}: expected a real number, got {type(value).__name__}")
    value = float(value)
    if not (np.isfinite(value) and value >= 0.0):
        raise ValueError(f"{field}: expected a finite number >= 0, got {value}")
    return value


def _check_choice(value, choices, field):
    if value not in choices:
        raise ValueError(f"{field}: expected one of {choices}, got {value!r}")
    return value


def cross_term_features(X, groups, n_groups=None):
    r"""Cross-term features :math:`\tilde x = (1, \xi, e_1, e_1\xi, \dots, e_{G-1}, e_{G-1}\xi)`, :math:`e_k = \mathbf 1\{\gamma = k\}`.

    The linear model :math:`\langle w, \tilde x\rangle` is then a separate affine model per group
    (group 0 the reference, group :math:`k` adding its own intercept and slopes): for :math:`G = 2`
    the model :math:`\langle w, (1, \xi, \gamma, \gamma\xi)\rangle` of He, Huang, Yao & Lin [HHYL25] §7.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix of shape (n, d)
        Finite values. Sparse input gives CSR output, built without densifying; dense input gives
        a C-contiguous float64 array.
    groups : array-like of int, shape (n,)
        Group id of every row, ``0..G-1``.
    n_groups : int, optional
        :math:`G` (default ``max(groups) + 1``); give it to build the features of a sample that
        misses some group (their columns are then zero), e.g. a test split.

    Returns
    -------
    ndarray or scipy.sparse.csr_matrix of shape (n, (d + 1) G)
        Column block :math:`k` (columns ``k(d+1) .. (k+1)(d+1) - 1``) is :math:`(1, \xi)` for every
        row when :math:`k = 0`, and :math:`e_k(1, \xi)` otherwise.
    """
    X = _as_design(X, copy=False)
    n, d = X.shape
    groups, n_groups, _ = _check_groups(groups, n, n_groups, allow_empty=True)
    width = d + 1
    if not sp.issparse(X):
        out = np.zeros((n, width * n_groups))
        out[:, 0] = 1.0
        out[:, 1:width] = X
        for k in range(1, n_groups):
            rows = groups == k
            out[rows, k * width] = 1.0
            out[rows, k * width + 1:(k + 1) * width] = X[rows]
        return out
    # Base block B = [1, X] (canonical CSR: the constant column first), then every row of group
    # k >= 1 repeats its B entries shifted by k(d + 1) columns: sorted indices by construction.
    x_len = np.diff(X.indptr).astype(np.int64)
    b_len = x_len + 1
    b_ptr = np.concatenate([[0], np.cumsum(b_len)])
    x_row = np.repeat(np.arange(n), x_len)
    x_pos = b_ptr[x_row] + 1 + (np.arange(X.nnz) - X.indptr[x_row])
    b_ind = np.zeros(int(b_ptr[-1]), dtype=np.int64)
    b_dat = np.ones(int(b_ptr[-1]))
    b_ind[x_pos] = X.indices + 1
    b_dat[x_pos] = X.data
    crossed = groups >= 1
    length = b_len * (1 + crossed)
    ptr = np.concatenate([[0], np.cumsum(length)])
    row = np.repeat(np.arange(n), b_len)
    offset = np.arange(b_ind.shape[0]) - b_ptr[row]
    indices = np.empty(int(ptr[-1]), dtype=np.int64)
    data = np.empty(int(ptr[-1]))
    first = ptr[row] + offset
    indices[first] = b_ind
    data[first] = b_dat
    sel = crossed[row]
    second = ptr[row[sel]] + b_len[row[sel]] + offset[sel]
    indices[second] = b_ind[sel] + groups[row[sel]] * width
    data[second] = b_dat[sel]
    index_dtype = np.int32 if max(int(ptr[-1]), width * n_groups) < 2 ** 31 else np.int64
    return sp.csr_matrix((data, indices.astype(index_dtype), ptr.astype(index_dtype)), shape=(n, width * n_groups))


# --------------------------------------------------------------------------- blocks
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

    def _setup(self, scores, groups, interval, kappa, surrogate, rho):
        if getattr(scores, "fit_intercept", None) is not False:
            raise ValueError("scores: build LinearScores with fit_intercept=False (cross-term features carry "
                             "the constant column)")
        self.scores = scores
        self.groups, self.n_groups, sizes = _check_groups(groups, scores.n_samples)
        self.sizes = sizes.astype(np.int64)
        self.inv_size = 1.0 / sizes.astype(np.float64)
        self.group_rows = [np.flatnonzero(self.groups == k) for k in range(self.n_groups)]
        self.alpha, self.beta = _check_interval(interval)
        self.kappa = _check_nonnegative(kappa, "kappa")
        self.surrogate = _check_choice(surrogate, SURROGATES, "surrogate")
        self.width = self.kappa * (self.beta - self.alpha)
        self.n_weights = scores.n_weights
        if rho is not None:
            self.rho = _check_nonnegative(rho, "rho")
        elif surrogate == "ramp":
            self.rho = 0.0       # hinge means of a linear model are convex: no curvature to offset
        else:
            self.rho = self._default_rho(float(np.max(scores.design.row_norms(), initial=0.0)) ** 2)

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


class PartialDPConstraints(_DCBlock):
    r"""The constraints of model (13) of He, Huang, Yao & Lin [HHYL25] on a linear model's scores.

    For every level :math:`p` of the grid and group :math:`k`, with :math:`\delta = \kappa(\beta - \alpha)`:

    * ``lower``: :math:`f = p - S_{kp} \le 0`;
    * ``upper``: :math:`f = S_{kp} - p - \delta \le 0`.

    **Order**: constraint ``2 (j G + k) + s`` is level ``j``, group ``k``, ``s = 0`` lower, ``s = 1``
    upper (level-major); ``names`` spells it (``"p=0.050,k=1,lower"``).

    **DC split.** Ramp (Example B.3), :math:`S^\pm_{kp}` the means of
    :math:`\max\{z_i - \theta_p \pm \tfrac12, 0\}`, convex in :math:`(w, \theta_p)`:
    lower :math:`f^+ = S^-_{kp}`, :math:`f^- = S^+_{kp} - p`; upper :math:`f^+ = S^+_{kp}`,
    :math:`f^- = S^-_{kp} + p + \delta`. Logistic (Example B.4), :math:`S_{kp}` weakly convex:
    lower :math:`f^+ = 0`, :math:`f^- = S_{kp} - p`; upper :math:`f^+ = S_{kp}`, :math:`f^- = p + \delta`.
    Both parts get :math:`\frac\rho2\|x\|^2`, :math:`x = (w, \theta)`.

    Attributes
    ----------
    levels : float64[P]
        The grid :math:`\widehat{\mathcal I}` (see `partial_dp_constraints`).
    n_thresholds : int
        :math:`P`, the auxiliary variables :math:`\theta`.
    names : list of str
    rho : float
    """

    def __init__(self, scores, groups, interval, kappa, *, n_levels=10, grid="safe", surrogate="ramp", rho=None):
        self._setup(scores, groups, interval, kappa, surrogate, rho)
        if isinstance(n_levels, bool) or not isinstance(n_levels, (int, np.integer)) or n_levels < 1:
            raise ValueError(f"n_levels: expected an integer >= 1, got {n_levels!r}")
        self.grid = _check_choice(grid, GRIDS, "grid")
        P = int(n_levels)
        alpha, beta = self.alpha, self.beta
        if grid == "safe":
            if self.kappa >= 1.0:
                raise ValueError(f"kappa: the 'safe' grid [alpha, beta - kappa (beta - alpha)) is empty for "
                                 f"kappa >= 1 (got {self.kappa}); partial DP <= kappa then holds for every model")
            top = beta - self.width
        else:
            top = beta
        self.levels = alpha + np.arange(P) * ((top - alpha) / P)
        if surrogate == "logistic" and self.levels[0] == 0.0 and self.width == 0.0:
            raise ValueError("kappa: the logistic surrogate needs kappa > 0 when the grid holds p = 0 (alpha = 0): "
                             "sigma(z - theta) < 0 + kappa (beta - alpha) has no finite theta")
        G = self.n_groups
        self.n_thresholds = P
        self.n_constraints = 2 * G * P
        self.names = [f"p={p:.3f},k={k},{side}" for p in self.levels for k in range(G) for side in ("lower", "upper")]
        j = np.repeat(np.arange(P), G)
        k = np.tile(np.arange(G), P)
        if surrogate == "ramp":
            # base k * 2P + q: the hinge at cut theta_q - 1/2 (q < P, S+) or theta_{q-P} + 1/2 (S-)
            self.base_kind = _HINGE
            self.n_base = 2 * G * P
            self.base_group = np.repeat(np.arange(G), 2 * P)
            self.base_level = np.tile(np.concatenate([np.arange(P), np.arange(P)]), G)
            self.base_shift = np.tile(np.concatenate([np.full(P, -0.5), np.full(P, 0.5)]), G)
            s_plus, s_minus = k * 2 * P + j, k * 2 * P + P + j
            plus_idx = np.stack([s_minus, s_plus], axis=1)          # lower: S-, upper: S+
            minus_idx = np.stack([s_plus, s_minus], axis=1)
            plus_coef = np.ones((G * P, 2))
            minus_coef = np.ones((G * P, 2))
            plus_const = np.zeros((G * P, 2))
        else:
            self.base_kind = _LOGISTIC
            self.n_base = G * P
            self.base_group = np.repeat(np.arange(G), P)
            self.base_level = np.tile(np.arange(P), G)
            self.base_shift = np.zeros(self.n_base)
            s = k * P + j
            plus_idx = np.stack([s, s], axis=1)
            minus_idx = np.stack([s, s], axis=1)
            plus_coef = np.tile([0.0, 1.0], (G * P, 1))            # lower: 0, upper: S
            minus_coef = np.tile([1.0, 0.0], (G * P, 1))           # lower: S - p, upper: p + delta
            plus_const = np.zeros((G * P, 2))
        p = self.levels[j]
        minus_const = np.stack([-p, p + self.width], axis=1)
        # one slot per constraint (the second unused: coefficient 0); shape (m, 2)
        self._plus = (plus_idx.reshape(-1, 1), plus_coef.reshape(-1, 1), plus_const.reshape(-1))
        self._minus = (minus_idx.reshape(-1, 1), minus_coef.reshape(-1, 1), minus_const.reshape(-1))
        self._pairs = None

    def _default_rho(self, max_sq_norm):
        # Hessian of sigma(x~^T w - theta_p) in (w, theta_p): sigma'' (x~, -1)(x~, -1)^T
        return LOGISTIC_MAX_CURVATURE * (max_sq_norm + 1.0)

    def _cuts(self, theta):
        return np.concatenate([theta - 0.5, theta + 0.5])

    def _level_thetas(self, theta):
        return np.ascontiguousarray(theta, dtype=np.float64)

    def initial_thresholds(self) -> np.ndarray:
        r""":math:`\theta` making :math:`w = 0` (every score 0) feasible.

        Ramp: :math:`\theta_p = \tfrac12 - p`, so :math:`\sigma(0 - \theta_p) = p` exactly. Logistic:
        :math:`\theta_p = \ln\frac{1 - p}{p}`, so :math:`\sigma(-\theta_p) = p`; for :math:`p = 0`,
        :math:`\ln\frac{1 - q}{q}` with :math:`q = \kappa(\beta - \alpha)/2`, inside the window
        :math:`[0, \kappa(\beta - \alpha)]`.
        """
        if self.surrogate == "ramp":
            return 0.5 - self.levels
        p = np.where(self.levels > 0.0, self.levels, 0.5 * self.width)
        return np.log1p(-p) - np.log(p)

    def values_parts(self, vals):
        """``(plus, minus)`` values without the rho term, and the active base functions and coefficients."""
        out = []
        for idx, coef, const in (self._plus, self._minus):
            out.append(((coef * vals[idx]).sum(axis=1) + const, idx, coef))
        return out

    def penalty_pieces(self, vals):
        r"""Penalty (78) of [HHYL25]: :math:`\frac{2}{\beta - \alpha}\max_p\max_k|S_{kp} - p|` and its pieces."""
        G, P = self.n_groups, self.n_thresholds
        if self.base_kind == _HINGE:
            table = vals.reshape(G, 2 * P)
            S = table[:, :P] - table[:, P:]
        else:
            S = vals.reshape(G, P)
        D = (S - self.levels[None, :]).T                         # (P, G): constraint order
        flat = int(np.argmax(np.abs(D).ravel()))
        j, k = divmod(flat, G)
        d = float(D[j, k])
        scale = 2.0 / (self.beta - self.alpha)
        sign = (d > 0) - (d < 0)
        if self.base_kind == _HINGE:
            pieces = [(k * 2 * P + j, sign * scale), (k * 2 * P + P + j, -sign * scale)]
        else:
            pieces = [(k * P + j, sign * scale)]
        return scale * abs(d), pieces

    def hard_values(self, z, theta):
        """The indicator version of every constraint (``sigma(u) = 1{u > 0}``), same order."""
        F = self._rates_at(z, theta).T                           # (P, G)
        p = self.levels[:, None]
        return np.stack([p - F, F - p - self.width], axis=2).ravel()


class WeakPartialDPConstraints(_DCBlock):
    r"""The constraints of model (17) of He, Huang, Yao & Lin [HHYL25]: one per ordered pair of groups.

    With :math:`\delta = \kappa(\beta - \alpha)` and :math:`a_k` the surrogate rate of group
    :math:`k` at the threshold :math:`\hat\theta`, constraint ``(k, k')`` is

    .. math::

        f = \min\{a_k, \beta\} - \min\{a_k, \alpha\} - \min\{a_{k'}, \beta\} + \min\{a_{k'}, \alpha\} - \delta \le 0.

    **Order**: ordered pairs ``(k, k')``, ``k`` major, ``k' != k`` ascending (``names``: ``"k=0,k'=1"``).

    **DC split.** Ramp (Example B.5): with :math:`A_j, B_j` the means of
    :math:`\max\{z_i - \hat\theta \pm \tfrac12, 0\}` (:math:`a_j = A_j - B_j`) and
    :math:`\varphi_c(j) = \max\{B_j + c, A_j\}` (convex), identity (51) with the mean :math:`A_j`
    (the paper prints the sum; the identity needs the mean) gives
    :math:`f^+ = \varphi_\alpha(k) + \varphi_\beta(k')`, :math:`f^- = \varphi_\beta(k) + \varphi_\alpha(k') + \delta`
    (the paper's :math:`A_k + A_{k'}` in both parts cancel and are left out).
    Logistic (Example B.6): :math:`f^+ = \max\{-a_k, -\alpha\} + \max\{-a_{k'}, -\beta\}`,
    :math:`f^- = \max\{-a_k, -\beta\} + \max\{-a_{k'}, -\alpha\} + \delta`. Both parts get
    :math:`\frac\rho2\|w\|^2`. No auxiliary variable: ``n_thresholds = 0``.
    """

    def __init__(self, scores, groups, interval, kappa, *, threshold=0.0, surrogate="ramp", rho=None):
        self._setup(scores, groups, interval, kappa, surrogate, rho)
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.integer, np.floating)):
            raise TypeError(f"threshold: expected a real number, got {type(threshold).__name__}")
        self.threshold = float(threshold)
        if not np.isfinite(self.threshold):
            raise ValueError(f"threshold: must be finite, got {self.threshold}")
        G = self.n_groups
        self.n_thresholds = 0
        self.levels = np.empty(0)
        self._pairs = np.array([(k, l) for k in range(G) for l in range(G) if l != k], dtype=np.int64).reshape(-1, 2)
        self.n_constraints = self._pairs.shape[0]
        self.names = [f"k={k},k'={l}" for k, l in self._pairs]
        if surrogate == "ramp":
            self.base_kind = _HINGE                               # base 2k: A_k, 2k + 1: B_k
            self.n_base = 2 * G
            self.base_group = np.repeat(np.arange(G), 2)
            self.base_shift = np.tile([-0.5, 0.5], G)
        else:
            self.base_kind = _LOGISTIC                            # base k: a_k
            self.n_base = G
            self.base_group = np.arange(G)
            self.base_shift = np.zeros(G)
        self.base_level = np.full(self.n_base, -1, dtype=np.int64)

    def _default_rho(self, max_sq_norm):
        # f+ and f- each hold two maxima of -a_j (each needs rho_a/2 ||w||^2 with rho_a = max|sigma''| max||x~||^2)
        return 2.0 * LOGISTIC_MAX_CURVATURE * max_sq_norm

    def _cuts(self, theta):
        return np.array([self.threshold - 0.5, self.threshold + 0.5])

    def _level_thetas(self, theta):
        return np.array([self.threshold])

    def initial_thresholds(self) -> np.ndarray:
        """Empty: model (17) has no auxiliary variable (``w = 0`` is feasible, every rate being equal)."""
        return np.empty(0)

    def rates(self, vals):
        """The surrogate rates :math:`a_k` from the base values."""
        if self.base_kind == _HINGE:
            table = vals.reshape(self.n_groups, 2)
            return table[:, 0] - table[:, 1]
        return vals.copy()

    def values_parts(self, vals):
        k, l = self._pairs[:, 0], self._pairs[:, 1]
        alpha, beta = self.alpha, self.beta
        if self.base_kind == _HINGE:
            table = vals.reshape(self.n_groups, 2)
            A, B = table[:, 0], table[:, 1]

            def phi(j, c):     # value and active base of max{B_j + c, A_j} (B when B_j + c > A_j)
                return np.maximum(B[j] + c, A[j]), np.where(B[j] + c > A[j], 2 * j + 1, 2 * j)

            (pa, ia), (pb, ib) = phi(k, alpha), phi(l, beta)
            (ma, ja), (mb, jb) = phi(k, beta), phi(l, alpha)
            ones = np.ones((k.shape[0], 2))
            return [(pa + pb, np.stack([ia, ib], 1), ones), (ma + mb + self.width, np.stack([ja, jb], 1), ones)]
        a = vals
        idx = np.stack([k, l], axis=1)
        plus = np.maximum(-a[k], -alpha) + np.maximum(-a[l], -beta)
        plus_coef = -np.stack([a[k] < alpha, a[l] < beta], axis=1).astype(np.float64)
        minus = np.maximum(-a[k], -beta) + np.maximum(-a[l], -alpha) + self.width
        minus_coef = -np.stack([a[k] < beta, a[l] < alpha], axis=1).astype(np.float64)
        return [(plus, idx, plus_coef), (minus, idx, minus_coef)]

    def penalty_pieces(self, vals):
        r"""Penalty (83) of [HHYL25], largest over pairs: :math:`\frac{1}{\beta - \alpha}\max_{k, k'}|c_k - c_{k'}|`,
        :math:`c = \min\{a, \beta\} - \min\{a, \alpha\}`, and its pieces."""
        a = self.rates(vals)
        c = np.minimum(a, self.beta) - np.minimum(a, self.alpha)
        scale = 1.0 / (self.beta - self.alpha)
        if self._pairs.shape[0] == 0:
            return 0.0, []
        d = c[self._pairs[:, 0]] - c[self._pairs[:, 1]]           # ordered pairs: max d = max |.|
        i = int(np.argmax(d))
        if not d[i] > 0.0:
            return 0.0, []
        pieces = []
        for j, sign in ((int(self._pairs[i, 0]), 1.0), (int(self._pairs[i, 1]), -1.0)):
            if not (self.alpha < a[j] <= self.beta):   # dc/da = 1{a > alpha} - 1{a > beta}
                continue
            if self.base_kind == _HINGE:
                pieces += [(2 * j, sign * scale), (2 * j + 1, -sign * scale)]
            else:
                pieces.append((j, sign * scale))
        return scale * float(d[i]), pieces

    def hard_values(self, z, theta):
        """The indicator version of every constraint (``sigma(u) = 1{u > 0}``), same order."""
        P = self._rates_at(z, np.array([self.threshold]))[:, 0]
        c = np.minimum(P, self.beta) - np.minimum(P, self.alpha)
        return c[self._pairs[:, 0]] - c[self._pairs[:, 1]] - self.width


def partial_dp_constraints(scores, groups, interval, kappa, *, n_levels=10, grid="safe", surrogate="ramp",
                           rho=None) -> PartialDPConstraints:
    r"""The constraint block of model (13) of He, Huang, Yao & Lin [HHYL25] (partial demographic parity).

    Parameters
    ----------
    scores : LinearScores
        Built with ``fit_intercept=False`` on `cross_term_features` (which carry the constant column).
    groups : array-like of int, shape (n,)
        Group ids ``0..G-1``, every group non-empty.
    interval : (float, float)
        :math:`\mathcal I = [\alpha, \beta)`, :math:`0 \le \alpha < \beta \le 1` (rank 0: the top score).
    kappa : float
        :math:`\kappa \ge 0`, the allowed partial DP.
    n_levels : int
        :math:`P \ge 1`, the size of the level grid.
    grid : {"safe", "paper"}
        ``"safe"``: :math:`p_j = \alpha + j\,(\beta - \kappa(\beta - \alpha) - \alpha)/P`, inside
        :math:`[\alpha, \beta - \kappa(\beta - \alpha))` where Lemma 5.1 makes the constraints
        equivalent to partial DP :math:`\le \kappa` (as :math:`P \to \infty`); needs
        :math:`\kappa < 1`. ``"paper"``: :math:`p_j = \alpha + j(\beta - \alpha)/P`, "ten equally
        spaced values in :math:`\mathcal I`" of the experiments: its top levels lie past
        :math:`\beta - \kappa(\beta - \alpha)` and ask more than partial DP :math:`\le \kappa`.
    surrogate : {"ramp", "logistic"}
        :math:`\sigma` (Example B.3 or B.4).
    rho : float, optional
        :math:`\rho \ge 0` added as :math:`\frac\rho2\|x\|^2` to both parts. Default 0 for the ramp
        (convex parts for a linear model), and :math:`\max|\sigma''|(\max_i\|\tilde x_i\|^2 + 1)`,
        :math:`\max|\sigma''| = 1/(6\sqrt3)`, for the logistic surrogate (the Hessian of
        :math:`\sigma(\tilde x^\top w - \theta)` in :math:`(w, \theta)` is at most that).

    Returns
    -------
    PartialDPConstraints
    """
    return PartialDPConstraints(scores, groups, interval, kappa, n_levels=n_levels, grid=grid, surrogate=surrogate,
                                rho=rho)


def weak_partial_dp_constraints(scores, groups, interval, kappa, *, threshold=0.0, surrogate="ramp",
                                rho=None) -> WeakPartialDPConstraints:
    r"""The constraint block of model (17) of He, Huang, Yao & Lin [HHYL25] (weak partial demographic parity).

    Parameters
    ----------
    scores, groups, interval, kappa
        As in `partial_dp_constraints`.
    threshold : float
        :math:`\hat\theta`, the decision threshold (0 in the paper).
    surrogate : {"ramp", "logistic"}
        Example B.5 or B.6.
    rho : float, optional
        Default 0 for the ramp, :math:`2\max|\sigma''|\max_i\|\tilde x_i\|^2` for the logistic
        surrogate (each part holds two weakly convex maxima).

    Returns
    -------
    WeakPartialDPConstraints
    """
    return WeakPartialDPConstraints(scores, groups, interval, kappa, threshold=threshold, surrogate=surrogate,
                                    rho=rho)


# --------------------------------------------------------------------------- problem
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
