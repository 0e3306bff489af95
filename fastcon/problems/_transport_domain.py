r"""The transportation polytope as a domain block (Huang & Lin [HL23] eqs. 13–14).

.. math::

    \mathcal P = \{P \in \mathbb R^{m\times n} : P \ge 0,\ P\mathbf 1 = \tfrac1m\mathbf 1,\
    P^\top\mathbf 1 = \tfrac1n\mathbf 1\},

stored row-major as a flat block of :math:`x`. The projection is the semismooth-Newton dual method
of `fastcon._kernels._transport`, started by the **ray** rule after the first call (zero duals, then
an exact line search along the duals of the latest projection that moved :math:`P`); a start that
does not converge is retried cold. Design notes: docs/design.md, 'Module notes'.
"""
from __future__ import annotations

import numpy as np

from .._kernels._transport import marginal_residual, project_transport, transport_workspace
from ._domains import Ball, Domain, Product

__all__ = ["TransportPolytope", "transport_domain"]


class TransportPolytope(Domain):
    r"""Couplings of the uniform distributions on ``m`` and ``n`` points, flattened row-major.

    Parameters
    ----------
    m : int
        Rows (points of the first distribution).
    n : int, optional
        Columns (default ``m``).
    tol : float
        Projection stops when :math:`\|P1 - \alpha1\| + \|P^\top1 - \beta1\| \le`
        ``tol * max(row_marginal, column_marginal)``, :math:`\alpha = 1/m`, :math:`\beta = 1/n`.
    start : {"ray", "zero", "previous", "cold"}
        Dual start of every projection after the first (which is always ``"cold"``: one exact
        block-ascent sweep): zero duals plus the line search along the latest non-zero duals
        (default, see the module docstring), zero duals, the previous projection's duals, or a
        fresh cold start.

    Attributes
    ----------
    row_marginal, column_marginal : float
        The row and column sums :math:`\alpha = 1/m`, :math:`\beta = 1/n`.
    diameter : float
        :math:`\sqrt{2\min(\alpha, \beta)}` (0 if ``m`` or ``n`` is 1): for :math:`P, Q \in \mathcal P`,
        :math:`\|P - Q\|^2 \le \|P\|^2 + \|Q\|^2` (as :math:`\langle P, Q\rangle \ge 0`) and
        :math:`\|P\|^2 \le \max_{ij} P_{ij} \sum_{ij} P_{ij} \le \min(\alpha, \beta)`. Attained for
        :math:`m = n \ge 2` by two permutation matrices without common entries, divided by m.
    last : TransportProjection or None
        Result of the latest projection (iterations, residual, duals).
    """

    def __init__(self, m, n=None, tol=1e-10, start="ray"):
        m = int(m)
        n = m if n is None else int(n)
        if m < 1 or n < 1:
            raise ValueError(f"m, n: need at least one row and one column, got {m}, {n}")
        if not tol > 0:
            raise ValueError(f"tol: must be positive, got {tol}")
        self.m, self.n, self.size = m, n, m * n
        self.row_marginal, self.column_marginal = 1.0 / m, 1.0 / n
        self.tol = float(tol)
        if start not in ("ray", "zero", "previous", "cold"):
            raise ValueError(f"start: expected 'ray', 'zero', 'previous' or 'cold', got {start!r}")
        self.start = start
        self.diameter = 0.0 if min(m, n) == 1 else float(np.sqrt(2.0 * min(self.row_marginal, self.column_marginal)))
        self._workspace = None
        self._u = self._v = None
        self._ray = None      # duals of the latest projection that moved P (non-zero duals)
        self.last = None

    def _block(self, x):
        if not isinstance(x, np.ndarray) or x.shape != (self.size,):
            raise ValueError(f"x: expected a flat array of length m*n = {self.size}")
        return x.reshape(self.m, self.n)

    def project_inplace(self, x):
        """Replace ``x`` (flat, length m·n) by its projection; reuses buffers (and duals, see ``start``)."""
        P = self._block(x)
        if x.dtype != np.float64 or not x.flags.c_contiguous or not x.flags.writeable:
            raise ValueError("x: expected a writeable C-contiguous float64 array")
        if self._workspace is None:
            self._workspace = transport_workspace(self.m, self.n)
        duals = direction = None
        if self._u is not None and self.start == "previous":
            duals = (self._u, self._v)
        elif self._u is not None and self.start in ("zero", "ray"):
            duals = (np.zeros(self.m), np.zeros(self.n))
            if self.start == "ray" and self._ray is not None:
                direction = self._ray
        try:
            res = project_transport(P, (self.row_marginal, self.column_marginal), duals, tol=self.tol, out=P,
                                    workspace=self._workspace, direction=direction)
        except ValueError as exc:
            raise ValueError(f"x: the plan block cannot be projected ({exc})") from exc
        if not res.converged:
            raise RuntimeError(f"TransportPolytope: projection did not converge (residual "
                               f"{res.residual:.3g}); this is a bug, please report it")
        self._u, self._v, self.last = res.u, res.v, res
        if np.any(res.u) or np.any(res.v):
            self._ray = (res.u, res.v)
        return x

    def contains(self, x, tol=1e-9) -> bool:
        r"""``P >= -tol * row_marginal``, marginal residual ``<= tol * max(row_marginal, column_marginal)`` (no projection)."""
        P = self._block(np.asarray(x, dtype=np.float64))
        scale = max(self.row_marginal, self.column_marginal)
        residual = marginal_residual(P, self.row_marginal, self.column_marginal)
        return bool(P.min() >= -tol * scale and residual <= tol * scale)

    def uniform(self) -> np.ndarray:
        r"""The independent coupling :math:`\frac{1}{mn}\mathbf 1\mathbf 1^\top`, flattened."""
        return np.full(self.size, 1.0 / self.size)

    def __repr__(self):
        return f"TransportPolytope(m={self.m}, n={self.n})"


def transport_domain(m, radius, n_features) -> Product:
    r""":math:`\mathcal X = \mathcal P \times \{w : \|w\| \le r\}` for :math:`x = (\mathrm{vec}\,P, w)` (problem 14).

    Parameters
    ----------
    m : int
        Size of the transport plan :math:`P` (:math:`m \times m`).
    radius : float
        :math:`r`, the radius of the ball of ``w``.
    n_features : int
        Dimension of ``w``.
    """
    return Product([(int(m) * int(m), TransportPolytope(m)), (int(n_features), Ball(radius))])
