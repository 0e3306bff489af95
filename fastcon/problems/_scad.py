r"""The SCAD-type penalty of Liu & Xu [LX25] (Problem 2, eq. 47; see docs/references.md) as a data-free term.

.. math::

    P(x) = \lambda\sum_{i=1}^d \varphi(x_i),\qquad
    \varphi(t) = \begin{cases} 2|t| & |t| \le 1\\ -t^2 + 4|t| - 1 & 1 < |t| \le 2\\ 3 & |t| > 2\end{cases}

The paper prints ``+1`` in the middle piece, which makes :math:`\varphi` jump at 1 and 2; ``-1`` is the
continuous, :math:`C^1` form, :math:`2\,\mathrm{SCAD}(t; \lambda_s = 1, a = 2)`, 2-weakly convex per
coordinate. Derivative: :math:`2\,\mathrm{sign}(t)` (0 at 0),
:math:`(4 - 2|t|)\mathrm{sign}(t)`, 0. It reads no data (``n_samples = 0``), so its minibatch
oracles are the exact ones and every stochastic method adds it in full.
"""
from __future__ import annotations

import numpy as np

from .._kernels._datafit import SCAD, penalty_value_grad
from ._validation import check_out, check_x

__all__ = ["ScadPenalty", "scad_penalty"]


class ScadPenalty:
    r""":math:`\lambda\sum_i\varphi(x_i)` (module docstring); weakly convex with :math:`\rho = 2\lambda`.

    Parameters
    ----------
    n_features : int
        Dimension of x.
    lam : float
        :math:`\lambda`, default 0.02.
    """

    code = SCAD
    n_samples = 0
    rows_read = 0
    formula = "lam * sum_i phi(x_i), phi = 2|t| | -t^2+4|t|-1 | 3"

    def __init__(self, n_features, lam=0.02):
        if isinstance(n_features, (bool, np.bool_)) or int(n_features) != n_features or n_features < 1:
            raise ValueError(f"n_features: expected a positive integer, got {n_features!r}")
        lam = float(lam)
        if not (np.isfinite(lam) and lam >= 0):
            raise ValueError(f"lam: expected a finite non-negative number, got {lam}")
        self.n_features, self.lam = int(n_features), lam
        self.weak_convexity = 2.0 * lam

    def __repr__(self):
        return f"ScadPenalty(n_features={self.n_features}, lam={self.lam:g})"

    def reset_counters(self):
        pass

    def value(self, x) -> float:
        x = check_x(x, self.n_features)
        return float(penalty_value_grad(SCAD, self.lam, x, False, np.empty(0)))

    def value_and_subgradient(self, x, out) -> float:
        x = check_x(x, self.n_features)
        out = check_out(out, self.n_features)
        out[:] = 0.0
        return float(penalty_value_grad(SCAD, self.lam, x, True, out))

    def value_rows(self, x, rows) -> float:
        return self.value(x)

    def value_and_subgradient_rows(self, x, rows, out) -> float:
        return self.value_and_subgradient(x, out)


def scad_penalty(n_features, lam=0.02) -> ScadPenalty:
    r"""[LX25]'s SCAD-type penalty :math:`\lambda\sum_i\varphi(x_i)` (corrected, continuous form).

    Parameters
    ----------
    n_features : int
        Dimension of x.
    lam : float
        :math:`\lambda`, default 0.02.
    """
    return ScadPenalty(n_features, lam)
