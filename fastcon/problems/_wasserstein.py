r"""Wasserstein fairness: the transport cost between the score distributions of two groups.

Huang & Lin [HL23] eqs. (13)–(14) (see docs/references.md). For protected rows :math:`a^p_i` and
unprotected rows :math:`a^u_j` (both groups of size :math:`m` after downsampling) and
:math:`x = (\mathrm{vec}\,P, w)`,

.. math::

    H(P, w) = \sum_{i=1}^m \sum_{j=1}^m P_{ij}\, |w^\top a^p_i - w^\top a^u_j|,

minimized jointly over the plan :math:`P \in \mathcal P` (couplings of the two uniform empirical
measures) and :math:`w`; :math:`\min_P H(P, w) = W_1(w)`, the 1-Wasserstein distance between the
empirical score distributions.
"""
from __future__ import annotations

import numpy as np

from .._kernels._transport import transport_cost_block
from ._design import DesignMatrix
from ._transport_domain import transport_domain
from ._validation import check_out, check_x

__all__ = ["WassersteinFairness", "wasserstein_fairness"]


class WassersteinFairness:
    r"""Transport cost :math:`H(P, w) = \sum_{ij} P_{ij}|w^\top a^p_i - w^\top a^u_j|` on :math:`x = (\mathrm{vec}\,P, w)`.

    ``x[:m*m]`` is :math:`P` row-major (rows: protected group, columns: unprotected group) and
    ``x[m*m:]`` is :math:`w`. With :math:`s^p = A_p w`, :math:`s^u = A_u w`, :math:`D_{ij} = s^p_i - s^u_j`,
    the subgradient is

    .. math::

        \partial_{P_{ij}} H = |D_{ij}|,\qquad
        \partial_w H = A_p^\top\rho_r - A_u^\top\rho_c,\quad
        \rho_r = (P\odot\mathrm{sign}\,D)\mathbf 1,\ \rho_c = (P\odot\mathrm{sign}\,D)^\top\mathbf 1,

    with :math:`\mathrm{sign}(0) = 0`; a full pass costs :math:`O(m^2 + \mathrm{nnz}(A))`.

    **Samples and minibatches.** The term's samples are the :math:`2m` kept rows, protected first:
    row ``k < m`` is protected row ``k``, row ``m + l`` unprotected row ``l``; a full pass reads
    ``n_samples = 2m`` rows. A row subset with protected part :math:`I` and unprotected part
    :math:`J` touches the :math:`|I|\times|J|` pairs only ([HL23] §6.2): the estimate is
    :math:`c\sum_{i\in I, j\in J} P_{ij}|D_{ij}|`, the :math:`P`-subgradient is :math:`c|D_{ij}|` on
    that block and zero elsewhere, and the :math:`w`-subgradient keeps the block's summands. The
    paper does not say whether the block sum is rescaled: ``unbiased_scale``
    False (default) uses :math:`c = 1`, the literal description, to which the paper's step-size
    grids most likely correspond; True uses :math:`c = (m/|I|)(m/|J|)`, which makes value and
    subgradient unbiased when :math:`I` and :math:`J` are drawn uniformly, each pair then being in
    the block with probability :math:`(|I|/m)(|J|/m)`.

    Parameters
    ----------
    group_p, group_u : fastcon.Dataset
        Protected and unprotected rows (e.g. from ``Dataset.by_group()``), same features.
    downsample_seed : int
        The larger group is downsampled to :math:`m = \min(n_p, n_u)` rows, uniformly without
        replacement, with this seed (the Birkhoff projection of the paper needs :math:`n_p = n_u`).
    unbiased_scale : bool
        Default rescaling of minibatch estimates (see above).
    batch_size : int, optional
        Default :math:`B` of :meth:`stochastic_subgradient`; :math:`\lfloor m/10\rfloor` (at least 1)
        as in the paper.

    Attributes
    ----------
    m, d : int
        Group size after downsampling, number of features.
    n_features : int
        :math:`m^2 + d`, the dimension of x.
    n_samples : int
        :math:`2m`.
    kept_p, kept_u : int64 arrays
        Rows of ``group_p`` and ``group_u`` that were kept (sorted).
    rows_read : int
    """

    def __init__(self, group_p, group_u, downsample_seed=0, unbiased_scale=False, batch_size=None):
        for field, g in (("group_p", group_p), ("group_u", group_u)):
            if not hasattr(g, "X") or not hasattr(g, "shape"):
                raise ValueError(f"{field}: expected a fastcon Dataset")
            if g.shape[0] == 0:
                raise ValueError(f"{field}: has no rows")
        if group_p.shape[1] != group_u.shape[1]:
            raise ValueError(f"group_u: has {group_u.shape[1]} features, group_p {group_p.shape[1]}")
        n_p, n_u = int(group_p.shape[0]), int(group_u.shape[0])
        m = min(n_p, n_u)
        rng = np.random.default_rng(downsample_seed)
        self.kept_p = np.sort(rng.choice(n_p, m, replace=False)) if n_p > m else np.arange(m)
        self.kept_u = np.sort(rng.choice(n_u, m, replace=False)) if n_u > m else np.arange(m)
        self.group_p = group_p if n_p == m else group_p.subset(self.kept_p)
        self.group_u = group_u if n_u == m else group_u.subset(self.kept_u)
        self._Ap, self._Au = DesignMatrix(self.group_p), DesignMatrix(self.group_u)
        self.m, self.d = m, int(group_p.shape[1])
        self.n_features = m * m + self.d
        self.n_samples = 2 * m
        self.unbiased_scale = bool(unbiased_scale)
        if batch_size is None:
            batch_size = max(1, m // 10)
        if not 1 <= int(batch_size) <= m:
            raise ValueError(f"batch_size: must be in [1, {m}], got {batch_size}")
        self.batch_size = int(batch_size)
        self._all = np.arange(m, dtype=np.uint64)
        self._sp, self._su = np.empty(m), np.empty(m)
        self._rho_r, self._rho_c = np.empty(m), np.empty(m)
        self.rows_read = 0

    def __repr__(self):
        return f"WassersteinFairness(m={self.m}, d={self.d})"

    def reset_counters(self):
        """Set ``rows_read`` back to 0."""
        self.rows_read = 0

    # ------------------------------------------------------------------ parts of x and helpers
    def split(self, x):
        """Views ``(P (m, m), w (d,))`` of ``x``."""
        m = self.m
        return x[:m * m].reshape(m, m), x[m * m:]

    def uniform_plan(self) -> np.ndarray:
        r"""The independent coupling :math:`\frac{1}{m^2}\mathbf 1\mathbf 1^\top` (the start; [HL23] states none)."""
        return np.full((self.m, self.m), 1.0 / self.m ** 2)

    def initial_point(self, w) -> np.ndarray:
        """``x = (vec of the uniform plan, w)``."""
        w = self._check_w(w)
        return np.concatenate([self.uniform_plan().ravel(), w])

    def domain(self, radius):
        r""":math:`\mathcal P \times \{\|w\| \le r\}` (problem 14), see `transport_domain`."""
        return transport_domain(self.m, radius, self.d)

    def scores(self, w):
        """``(A_p w, A_u w)`` on the kept rows (reads no counter)."""
        w = self._check_w(w)
        sp, su = np.empty(self.m), np.empty(self.m)
        self._Ap.matvec(w, sp)
        self._Au.matvec(w, su)
        return sp, su

    def w1_lower_bound(self, w) -> float:
        r""":math:`W_1(w) = \frac1m\sum_k |s^p_{(k)} - s^u_{(k)}| = \min_{P\in\mathcal P} H(P, w)` (sorted matching)."""
        sp, su = self.scores(w)
        return float(np.abs(np.sort(sp) - np.sort(su)).mean())

    def sorted_plan(self, w) -> np.ndarray:
        """An optimal plan for fixed ``w``: the monotone (sorted) matching, :math:`1/m` per matched pair."""
        sp, su = self.scores(w)
        P = np.zeros((self.m, self.m))
        P[np.argsort(sp, kind="stable"), np.argsort(su, kind="stable")] = 1.0 / self.m
        return P

    def rho_weak_convexity(self) -> float:
        r"""Bound :math:`\rho_H \le \sqrt{n_u}\|A_p\|_F + \sqrt{n_p}\|A_u\|_F` (derived), on the kept rows (:math:`n_p = n_u = m`)."""
        fp, fu = self._frobenius()
        return float(np.sqrt(self.m) * (fp + fu))

    def rho_ipp_heuristic(self) -> float:
        r"""The paper's IPP choice :math:`\rho = \|A_p\|_F + \|A_u\|_F` (on the kept rows)."""
        return float(sum(self._frobenius()))

    def _frobenius(self):
        return (float(np.linalg.norm(self._Ap.row_norms())), float(np.linalg.norm(self._Au.row_norms())))

    # ------------------------------------------------------------------ validation
    def _check_w(self, w):
        w = np.ascontiguousarray(w, dtype=np.float64)
        if w.shape != (self.d,):
            raise ValueError(f"w: expected shape ({self.d},), got {w.shape}")
        if not np.all(np.isfinite(w)):
            raise ValueError("w: contains NaN or inf")
        return w

    def _check_x(self, x):
        return check_x(x, self.n_features, finite_from=self.m * self.m)

    def _check_out(self, out):
        return check_out(out, self.n_features)

    def _split_rows(self, rows):
        rows = np.asarray(rows)
        if rows.ndim != 1 or (rows.dtype.kind not in "iu" and rows.size):
            raise ValueError("rows: expected a 1-D array of integer row indices")
        if rows.size and (rows.min() < 0 or rows.max() >= 2 * self.m):
            raise ValueError(f"rows: indices must lie in [0, 2m) = [0, {2 * self.m})")
        rows = rows.astype(np.uint64)
        I, J = rows[rows < self.m], rows[rows >= self.m] - np.uint64(self.m)
        if I.size == 0 or J.size == 0:
            raise ValueError("rows: need at least one protected (< m) and one unprotected (>= m) row")
        return I, J

    def _scale(self, I, J, unbiased_scale):
        unbiased = self.unbiased_scale if unbiased_scale is None else bool(unbiased_scale)
        return (self.m / I.size) * (self.m / J.size) if unbiased else 1.0

    # ------------------------------------------------------------------ oracles
    def _eval(self, x, I, J, scale, out):
        """Shared pass; ``I is None`` means all rows (full-matrix fast path of the design)."""
        m = self.m
        P, w = x[:m * m].reshape(m, m), x[m * m:]
        rows_p = self._all if I is None else I
        rows_u = self._all if J is None else J
        bp, bu = rows_p.size, rows_u.size
        sp, su = self._sp[:bp], self._su[:bu]
        if bp > m or bu > m:  # repeated indices in a big subset: per-call buffers
            sp, su = np.empty(bp), np.empty(bu)
        self._Ap.matvec(w, sp, rows=I)
        self._Au.matvec(w, su, rows=J)
        rho_r, rho_c = (self._rho_r[:bp], self._rho_c[:bu]) if bp <= m and bu <= m else (np.empty(bp), np.empty(bu))
        if out is not None:
            out[:] = 0.0
            gP, gw = out[:m * m].reshape(m, m), out[m * m:]
        else:
            gP = gw = None
        value = scale * transport_cost_block(P, rows_p, rows_u, sp, su, scale, out is not None,
                                             gP if gP is not None else P, rho_r, rho_c)
        if not np.isfinite(value):
            raise ValueError("x: contains NaN or inf")
        if out is not None:
            self._Ap.rmatvec(scale * rho_r, gw, rows=I)
            self._Au.rmatvec(-scale * rho_c, gw, rows=J)
        self.rows_read += bp + bu
        return float(value)

    def value(self, x) -> float:
        """:math:`H(P, w)` over all pairs."""
        return self._eval(self._check_x(x), None, None, 1.0, None)

    def value_and_subgradient(self, x, out) -> float:
        """:math:`H(P, w)`; writes :math:`(|D|, A_p^\\top\\rho_r - A_u^\\top\\rho_c)` into ``out``."""
        x = self._check_x(x)
        return self._eval(x, None, None, 1.0, self._check_out(out))

    def value_rows(self, x, rows, unbiased_scale=None) -> float:
        """Block estimate on the pairs of ``rows`` (protected ``< m``, unprotected ``>= m``)."""
        x = self._check_x(x)
        I, J = self._split_rows(rows)
        return self._eval(x, I, J, self._scale(I, J, unbiased_scale), None)

    def value_and_subgradient_rows(self, x, rows, out, unbiased_scale=None) -> float:
        """Block estimate and its subgradient (zero off the block in P); see the class docstring."""
        x = self._check_x(x)
        out = self._check_out(out)
        I, J = self._split_rows(rows)
        return self._eval(x, I, J, self._scale(I, J, unbiased_scale), out)

    def sample_rows(self, rng, batch=None) -> np.ndarray:
        """``B`` protected and ``B`` unprotected rows, uniformly without replacement ([HL23] §6.2)."""
        B = self.batch_size if batch is None else int(batch)
        if not 1 <= B <= self.m:
            raise ValueError(f"batch: must be in [1, {self.m}], got {batch}")
        I = rng.choice(self.m, B, replace=False)
        J = rng.choice(self.m, B, replace=False)
        return np.concatenate([I, J + self.m])

    def stochastic_subgradient(self, x, rng, out, batch=None, unbiased_scale=None) -> float:
        r"""[HL23] §6.2's stochastic oracle: sample :math:`B` rows per group, return the block estimate.

        Writes the block subgradient into ``out`` (zero outside the :math:`B\times B` block of P).
        """
        return self.value_and_subgradient_rows(x, self.sample_rows(rng, batch), out, unbiased_scale)


def wasserstein_fairness(group_p, group_u, downsample_seed=0, unbiased_scale=False,
                         batch_size=None) -> WassersteinFairness:
    r"""Transport-cost fairness term :math:`H(P, w) = \sum_{ij} P_{ij}|w^\top a^p_i - w^\top a^u_j|` ([HL23] eqs. 13–14).

    Returns a term on :math:`x = (\mathrm{vec}\,P, w)` of dimension :math:`m^2 + d`,
    :math:`m = \min(n_p, n_u)`; pair it with ``term.domain(radius)`` (:math:`\mathcal P\times` ball)
    and start from ``term.initial_point(w0)``. See `WassersteinFairness`.

    Parameters
    ----------
    group_p, group_u : fastcon.Dataset
        Protected and unprotected rows, same features.
    downsample_seed : int
        Seed of the downsampling of the larger group to :math:`m` rows.
    unbiased_scale : bool
        Rescale minibatch estimates to be unbiased (see `WassersteinFairness`).
    batch_size : int, optional
        Default minibatch size; :math:`\lfloor m/10\rfloor` (at least 1).
    """
    return WassersteinFairness(group_p, group_u, downsample_seed, unbiased_scale, batch_size)
