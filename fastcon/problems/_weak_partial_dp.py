r"""Model (17) of He, Huang, Yao & Lin [HHYL25]: weak partial demographic parity as DC constraints on group pairs."""
from __future__ import annotations

import numpy as np

from ._dc_blocks import _HINGE, _LOGISTIC, LOGISTIC_MAX_CURVATURE, _DCBlock

__all__ = ["WeakPartialDPConstraints", "weak_partial_dp_constraints"]


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

    Parameters
    ----------
    scores, groups, interval, bound, threshold, surrogate, rho
        As in `weak_partial_dp_constraints`.
    """

    def __init__(self, scores, groups, interval, bound, *, threshold=0.0, surrogate="ramp", rho=None):
        self._setup(scores, groups, interval, bound, surrogate, rho)
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.integer, np.floating)):
            raise TypeError(f"threshold: expected a real number, got {type(threshold).__name__}")
        self.threshold = float(threshold)
        if not np.isfinite(self.threshold):
            raise ValueError(f"threshold: must be finite, got {self.threshold}")
        G = self.n_groups
        self._check_size("groups", G * (G - 1), 2 * G, 0)
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
        start, end = self.band_start, self.band_end
        if self.base_kind == _HINGE:
            table = vals.reshape(self.n_groups, 2)
            A, B = table[:, 0], table[:, 1]

            def phi(j, c):     # value and active base of max{B_j + c, A_j} (B when B_j + c > A_j)
                return np.maximum(B[j] + c, A[j]), np.where(B[j] + c > A[j], 2 * j + 1, 2 * j)

            (pa, ia), (pb, ib) = phi(k, start), phi(l, end)
            (ma, ja), (mb, jb) = phi(k, end), phi(l, start)
            ones = np.ones((k.shape[0], 2))
            return [(pa + pb, np.stack([ia, ib], 1), ones), (ma + mb + self.width, np.stack([ja, jb], 1), ones)]
        a = vals
        idx = np.stack([k, l], axis=1)
        plus = np.maximum(-a[k], -start) + np.maximum(-a[l], -end)
        plus_coef = -np.stack([a[k] < start, a[l] < end], axis=1).astype(np.float64)
        minus = np.maximum(-a[k], -end) + np.maximum(-a[l], -start) + self.width
        minus_coef = -np.stack([a[k] < end, a[l] < start], axis=1).astype(np.float64)
        return [(plus, idx, plus_coef), (minus, idx, minus_coef)]

    def penalty_pieces(self, vals):
        r"""Penalty (83) of [HHYL25], largest over pairs: :math:`\frac{1}{\beta - \alpha}\max_{k, k'}|c_k - c_{k'}|`,
        :math:`c = \min\{a, \beta\} - \min\{a, \alpha\}`, and its pieces."""
        a = self.rates(vals)
        c = np.minimum(a, self.band_end) - np.minimum(a, self.band_start)
        scale = 1.0 / (self.band_end - self.band_start)
        if self._pairs.shape[0] == 0:
            return 0.0, []
        d = c[self._pairs[:, 0]] - c[self._pairs[:, 1]]           # ordered pairs: max d = max |.|
        i = int(np.argmax(d))
        if not d[i] > 0.0:
            return 0.0, []
        pieces = []
        for j, sign in ((int(self._pairs[i, 0]), 1.0), (int(self._pairs[i, 1]), -1.0)):
            if not (self.band_start < a[j] <= self.band_end):   # dc/da = 1{a > alpha} - 1{a > beta}
                continue
            if self.base_kind == _HINGE:
                pieces += [(2 * j, sign * scale), (2 * j + 1, -sign * scale)]
            else:
                pieces.append((j, sign * scale))
        return scale * float(d[i]), pieces

    def hard_values(self, z, theta):
        """The indicator version of every constraint (``sigma(u) = 1{u > 0}``), same order."""
        P = self._rates_at(z, np.array([self.threshold]))[:, 0]
        c = np.minimum(P, self.band_end) - np.minimum(P, self.band_start)
        return c[self._pairs[:, 0]] - c[self._pairs[:, 1]] - self.width



def weak_partial_dp_constraints(scores, groups, interval, bound, *, threshold=0.0, surrogate="ramp",
                                rho=None) -> WeakPartialDPConstraints:
    r"""The constraint block of model (17) of He, Huang, Yao & Lin [HHYL25] (weak partial demographic parity).

    Parameters
    ----------
    scores, groups, interval, bound
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
    return WeakPartialDPConstraints(scores, groups, interval, bound, threshold=threshold, surrogate=surrogate,
                                    rho=rho)
