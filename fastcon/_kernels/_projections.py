r"""Euclidean projections onto simple domains: a ball, a product of balls, a box.

All kernels project **in place** and are jitted so that compiled solver loops can call them:
ball :math:`P(x) = c + (x - c)\min(1, r / \|x - c\|)`, product of balls block-wise (``inf`` radius:
unconstrained block), box :math:`P(x)_j = \min(\max(x_j, l_j), u_j)`. Points already inside are
left bit-for-bit unchanged; a norm that overflows or underflows is recomputed in a second,
power-of-two-scaled pass (`_project_scaled`). Design notes: docs/design.md, 'Module notes'.
"""
import math

import numpy as np
from numba import types
from numba.extending import overload

from ._jit import njit
from ._linalg import JIT

__all__ = ["project_ball", "project_balls", "project_column_balls", "project_box"]


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


#: Smallest positive normal double: a sum of squares below it has lost digits to underflow.
_MIN_NORMAL = 2.2250738585072014e-308
_MAX_FINITE = 1.7976931348623157e308


@njit(**JIT)
def _project_scaled(x, lo, hi, step, center, radius):
    """Project ``x[lo:hi:step]`` onto its ball when the plain sum of squares over- or underflowed."""
    top = 0.0
    for j in range(lo, hi, step):
        a = abs(x[j])
        b = abs(_center_at(center, j))
        # NaN compares false and is skipped here; it reaches the sum below and makes every entry NaN.
        if a > top:
            top = a
        if b > top:
            top = b
    if top == 0.0:
        return  # x == c == 0
    if top == np.inf:
        for j in range(lo, hi, step):  # the plain formula: ratio r / inf = 0, inf * 0 = NaN
            c = _center_at(center, j)
            x[j] = c + (x[j] - c) * 0.0
        return
    scale = math.ldexp(1.0, min(max(-math.frexp(top)[1], -1022), 1022))
    sq = 0.0
    for j in range(lo, hi, step):
        u = x[j] * scale - _center_at(center, j) * scale
        sq += u * u
    norm = np.sqrt(sq)  # ||x - c|| * scale
    if norm <= radius * scale:  # radius * scale is exact, or overflows only when x is far inside
        return
    ratio = radius / norm
    for j in range(lo, hi, step):
        c = _center_at(center, j)
        x[j] = c + (x[j] * scale - c * scale) * ratio


@njit(**JIT)
def _project_block(x, lo, hi, center, radius):
    if radius == np.inf:
        return
    sq = 0.0
    for j in range(lo, hi):
        t = x[j] - _center_at(center, j)
        sq += t * t
    if not (_MIN_NORMAL <= sq <= _MAX_FINITE):  # overflow, underflow, x == c or NaN
        _project_scaled(x, lo, hi, 1, center, radius)
        return
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
def project_column_balls(x, radii, norms):
    r"""Project ``x`` in place onto a product of balls, one per column of ``x`` read as a row-major matrix.

    With :math:`m` = ``radii.shape[0]`` columns, ``x`` is the (len(x)/m, m) matrix :math:`M`
    stored row by row and column :math:`k` (``x[k::m]``) is projected onto the ball of radius
    :math:`r_k` around 0: :math:`M_{:k} \leftarrow M_{:k} \min(1, r_k/\|M_{:k}\|)`. This is
    :func:`project_balls` on the transpose: each column's squares are summed in row order and the
    same scale is applied, so the results are the same bits as projecting ``M.T`` block by block.

    Parameters
    ----------
    x : ndarray of float64, shape (n m,)
        Modified in place.
    radii : ndarray of float64, shape (m,)
        :math:`r_k \ge 0`; ``inf`` leaves column :math:`k` free.
    norms : ndarray of float64, shape (m,)
        Scratch (overwritten with the columns' squared norms, then their scales).
    """
    m = radii.shape[0]
    if m == 0 or x.shape[0] % m != 0 or norms.shape[0] != m:
        raise ValueError("radii: expected one radius per column, the columns dividing len(x)")
    for k in range(m):
        if not radii[k] >= 0.0:
            raise ValueError("radii: must be >= 0")
    n = x.shape[0] // m
    norms[:] = 0.0
    for i in range(n):  # row by row: the squares of every column in row order, as project_balls sums them
        for k in range(m):
            t = x[i * m + k]
            norms[k] += t * t
    scaled = False
    for k in range(m):
        sq = norms[k]
        norm = np.sqrt(sq)
        if radii[k] == np.inf:
            norms[k] = -1.0  # left alone (a scale is never negative)
        elif not (_MIN_NORMAL <= sq <= _MAX_FINITE):
            _project_scaled(x, k, n * m, m, None, radii[k])  # the same steps as project_balls' scaled pass
            norms[k] = -1.0
        elif norm <= radii[k]:
            norms[k] = -1.0
        else:
            norms[k] = radii[k] / norm
            scaled = True
    if scaled:
        for i in range(n):
            for k in range(m):
                if norms[k] >= 0.0:
                    # 0.0 + ...: the centre term of _project_block, which turns -0.0 into +0.0 as it does
                    x[i * m + k] = 0.0 + x[i * m + k] * norms[k]


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
