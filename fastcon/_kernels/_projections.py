r"""Euclidean projections onto simple domains: a ball, a product of balls, a box.

All kernels project **in place** (the solver owns the iterate and its buffer) and are jitted so that
compiled solver loops can call them. Each returns nothing; ``x`` afterwards holds :math:`P_X(x)`.

* Ball :math:`\{x : \|x - c\|_2 \le r\}`: :math:`P(x) = c + (x - c)\min(1, r / \|x - c\|)`.
* Product of balls, blocks :math:`x_{[o_k, o_{k+1})}` each in its own ball of radius :math:`r_k`
  (``inf`` = unconstrained block): the projection is block-wise.
* Box :math:`\{x : l \le x \le u\}`: :math:`P(x)_j = \min(\max(x_j, l_j), u_j)`.

Points already inside are left bit-for-bit unchanged (the ball tests ``norm <= radius`` before
scaling), so projecting twice gives the same array as projecting once.
"""
import numpy as np
from numba import njit, types
from numba.extending import overload

from ._linalg import JIT

__all__ = ["project_ball", "project_balls", "project_box"]


def _bound_at(bound, j):  # pragma: no cover - replaced by the overload inside jitted code
    return bound if np.ndim(bound) == 0 else bound[j]


@overload(_bound_at, inline="always")
def _bound_at_overload(bound, j):
    """Per-coordinate bound: ``bound[j]`` for an array, ``bound`` itself for a scalar."""
    if isinstance(bound, types.Array):
        return lambda bound, j: bound[j]
    return lambda bound, j: float(bound)


def _center_at(center, j):  # pragma: no cover
    return 0.0 if center is None else center[j]


@overload(_center_at, inline="always")
def _center_at_overload(center, j):
    if isinstance(center, types.NoneType):
        return lambda center, j: 0.0
    return lambda center, j: center[j]


@njit(**JIT)
def _project_block(x, lo, hi, center, radius):
    if radius == np.inf:
        return
    sq = 0.0
    for j in range(lo, hi):
        t = x[j] - _center_at(center, j)
        sq += t * t
    norm = np.sqrt(sq)
    if norm <= radius:
        return
    ratio = radius / norm
    for j in range(lo, hi):
        c = _center_at(center, j)
        x[j] = c + (x[j] - c) * ratio


@njit(**JIT)
def project_ball(x, radius, center=None):
    r"""Project ``x`` in place onto :math:`\{v : \|v - c\|_2 \le r\}`.

    Parameters
    ----------
    x : ndarray of float64, shape (d,)
        Modified in place.
    radius : float
        :math:`r \ge 0`; ``inf`` leaves ``x`` unchanged.
    center : ndarray of float64, shape (d,), or None
        :math:`c`; None is the origin.
    """
    if not radius >= 0.0:
        raise ValueError("radius: must be >= 0")
    _project_block(x, 0, x.shape[0], center, radius)


@njit(**JIT)
def project_balls(x, offsets, radii, center=None):
    r"""Project ``x`` in place onto a product of balls, block :math:`k` being ``x[offsets[k]:offsets[k+1]]``.

    Parameters
    ----------
    x : ndarray of float64, shape (d,)
        Modified in place.
    offsets : ndarray of int64, shape (m + 1,)
        Non-decreasing, ``offsets[0] == 0`` and ``offsets[-1] == d``.
    radii : ndarray of float64, shape (m,)
        :math:`r_k \ge 0`; ``inf`` leaves block :math:`k` free.
    center : ndarray of float64, shape (d,), or None
        Centers of all blocks laid out like ``x``; None is the origin.
    """
    m = radii.shape[0]
    if offsets.shape[0] != m + 1 or offsets[0] != 0 or offsets[m] != x.shape[0]:
        raise ValueError("offsets: expected m + 1 offsets from 0 to len(x)")
    for k in range(m):
        if offsets[k + 1] < offsets[k]:
            raise ValueError("offsets: must be non-decreasing")
        if not radii[k] >= 0.0:
            raise ValueError("radii: must be >= 0")
    for k in range(m):
        _project_block(x, offsets[k], offsets[k + 1], center, radii[k])


@njit(**JIT)
def project_box(x, lo, hi):
    r"""Project ``x`` in place onto the box :math:`\{v : l \le v \le u\}`.

    Parameters
    ----------
    x : ndarray of float64, shape (d,)
        Modified in place.
    lo, hi : float or ndarray of float64, shape (d,)
        Bounds with :math:`l \le u` (``-inf``/``inf`` allowed).
    """
    d = x.shape[0]
    for j in range(d):
        if not _bound_at(lo, j) <= _bound_at(hi, j):
            raise ValueError("lo, hi: need lo <= hi in every coordinate")
    for j in range(d):
        v = x[j]
        l = _bound_at(lo, j)
        u = _bound_at(hi, j)
        if v < l:
            x[j] = l
        elif v > u:
            x[j] = u
