r"""Model (13) of He, Huang, Yao & Lin [HHYL25]: partial demographic parity as DC constraints on shared thresholds."""
from __future__ import annotations

import numpy as np

from ._dc_blocks import _HINGE, _LOGISTIC, GRIDS, LOGISTIC_MAX_CURVATURE, _DCBlock
from ._validation import check_choice

__all__ = ["PartialDPConstraints", "partial_dp_constraints"]


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

    Parameters
    ----------
    scores, groups, interval, bound, n_levels, grid, surrogate, rho
        As in `partial_dp_constraints`.

    Attributes
    ----------
    levels : float64[P]
        The grid :math:`\widehat{\mathcal I}` (see `partial_dp_constraints`).
    n_thresholds : int
        :math:`P`, the auxiliary variables :math:`\theta`.
    names : list of str
    rho : float
    """

    def __init__(self, scores, groups, interval, bound, *, n_levels=10, grid="safe", surrogate="ramp", rho=None):
        self._setup(scores, groups, interval, bound, surrogate, rho)
        if isinstance(n_levels, bool) or not isinstance(n_levels, (int, np.integer)) or n_levels < 1:
            raise ValueError(f"n_levels: expected an integer >= 1, got {n_levels!r}")
        self.grid = check_choice("grid", grid, GRIDS)
        P = int(n_levels)
        G = self.n_groups
        self._check_size("n_levels" if G <= P else "groups", 2 * G * P, 2 * G * P, P)
        start, end = self.band_start, self.band_end
        if grid == "safe":
            if self.bound >= 1.0:
                raise ValueError(f"bound: the 'safe' grid [start, end - bound (end - start)) is empty for "
                                 f"bound >= 1 (got {self.bound}); partial DP <= bound then holds for every model")
            top = end - self.width
        else:
            top = end
        self.levels = start + np.arange(P) * ((top - start) / P)
        if surrogate == "logistic" and self.levels[0] == 0.0 and self.width == 0.0:
            raise ValueError("bound: the logistic surrogate needs bound > 0 when the grid holds p = 0 (start = 0): "
                             "sigma(z - theta) < 0 + bound (end - start) has no finite theta")
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
        scale = 2.0 / (self.band_end - self.band_start)
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



def partial_dp_constraints(scores, groups, interval, bound, *, n_levels=10, grid="safe", surrogate="ramp",
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
    bound : float
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
    return PartialDPConstraints(scores, groups, interval, bound, n_levels=n_levels, grid=grid, surrogate=surrogate,
                                rho=rho)
