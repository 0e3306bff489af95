r"""The smoothed exact penalty of Liu & Xu [LX25] (problem (PP)): :math:`h^\nu`, its derivative, the KKT multiplier.

.. math::

    h^\nu(z) = \max_{0\le y\le 1}\{yz - \tfrac\nu2 y^2\} =
    \begin{cases} 0 & z < 0\\ z^2/(2\nu) & 0 \le z \le \nu\\ z - \nu/2 & z > \nu\end{cases},
    \qquad (h^\nu)'(z) = \mathrm{clip}(z/\nu, 0, 1),

a :math:`C^1`, :math:`1/\nu`-smooth under-approximation of :math:`[z]_+` with
:math:`0 \le [z]_+ - h^\nu(z) \le \nu/2`. 3S-Econ minimizes :math:`F^\nu = f + \beta h^\nu(g)`; at its
output the multiplier estimate of Theorem 2.8 is :math:`\lambda = \beta\,\mathrm{clip}(g/\nu, 0, 1)`.
"""
from __future__ import annotations

import numpy as np

__all__ = ["smoothed_plus", "smoothed_plus_derivative", "kkt_multiplier"]


def _check_nu(nu):
    nu = float(nu)
    if not (np.isfinite(nu) and nu > 0):
        raise ValueError(f"nu: expected a positive finite smoothing level, got {nu}")
    return nu


def smoothed_plus(z, nu):
    r""":math:`h^\nu(z)` (elementwise; module docstring).

    Parameters
    ----------
    z : float or ndarray
        The argument.
    nu : float
        Smoothing parameter :math:`\nu > 0`.
    """
    nu = _check_nu(nu)
    z = np.asarray(z, dtype=np.float64)
    out = np.where(z > nu, z - 0.5 * nu, np.where(z >= 0.0, z * z / (2.0 * nu), 0.0))
    return out if out.ndim else float(out)


def smoothed_plus_derivative(z, nu):
    r""":math:`(h^\nu)'(z) = \mathrm{clip}(z/\nu, 0, 1)` (elementwise).

    Parameters
    ----------
    z : float or ndarray
        The argument.
    nu : float
        Smoothing parameter :math:`\nu > 0`.
    """
    nu = _check_nu(nu)
    out = np.clip(np.asarray(z, dtype=np.float64) / nu, 0.0, 1.0)
    return out if out.ndim else float(out)


def kkt_multiplier(g, beta, nu):
    r"""Multiplier estimate :math:`\lambda = \beta\,\mathrm{clip}(g/\nu, 0, 1)` ([LX25] Theorem 2.8).

    Parameters
    ----------
    g : float or ndarray
        Constraint value(s).
    beta : float
        Penalty parameter :math:`\beta`.
    nu : float
        Smoothing parameter :math:`\nu > 0`.
    """
    beta = float(beta)
    if not (np.isfinite(beta) and beta > 0):
        raise ValueError(f"beta: expected a positive penalty parameter, got {beta}")
    return beta * smoothed_plus_derivative(g, nu)
