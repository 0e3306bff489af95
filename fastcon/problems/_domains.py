r"""Feasible domains :math:`\mathcal X` with their Euclidean projections.

Every domain has ``project(x)`` (returns the projection, ``x`` untouched), ``project_inplace(x)``,
``contains(x, tol)`` and ``diameter`` (the :math:`D` of the theory; ``inf`` when unbounded).
"""
from __future__ import annotations

import numpy as np

from .._kernels._projections import project_ball, project_balls, project_box, project_column_balls

__all__ = ["Whole", "Ball", "ProductOfBalls", "ColumnBalls", "Box", "Product"]

_MIN_NORMAL = np.finfo(np.float64).tiny


def _norm(v) -> float:
    r"""Euclidean norm of ``v`` without overflow or underflow: :math:`M\sqrt{\sum_j (v_j/M)^2}`,
    :math:`M = \max_j |v_j|`, when the plain sum of squares is not a finite normal number (so
    ``[1e200, 1e200]`` has norm 1.41e200, not inf). Infinite entries give inf, NaN gives NaN."""
    v = np.asarray(v, dtype=np.float64).ravel()
    with np.errstate(over="ignore", under="ignore"):  # detected below, and then avoided by scaling
        sq = float(v @ v)
    if _MIN_NORMAL <= sq < np.inf or v.size == 0:
        return float(np.sqrt(sq))
    top = float(np.max(np.abs(v)))
    if top == 0.0 or not np.isfinite(top):
        return top if not np.isnan(sq) else float("nan")
    return top * float(np.sqrt(np.sum((v / top) ** 2)))


class _Domain:
    def project(self, x):
        y = np.array(x, dtype=np.float64, copy=True)
        self.project_inplace(y)
        return y

    def contains(self, x, tol=1e-12) -> bool:
        x = np.asarray(x, dtype=np.float64)
        return bool(_norm(self.project(x) - x) <= tol * max(1.0, _norm(x)))


class Whole(_Domain):
    """:math:`\\mathbb R^d` (no constraint)."""

    diameter = np.inf

    def project_inplace(self, x):
        return x

    def __repr__(self):
        return "Whole()"


class Ball(_Domain):
    r"""Euclidean ball :math:`\{x : \|x - c\| \le r\}`; :math:`P(x) = c + (x - c)\min(1, r/\|x - c\|)`.

    The norm is scaled before squaring when :math:`\|x - c\|^2` over- or underflows (see
    `fastcon._kernels._projections`), so ``[1e200, 1e200]`` projects onto the unit ball as
    ``[0.707..., 0.707...]`` rather than the centre.

    Parameters
    ----------
    radius : float
        :math:`r \ge 0`.
    center : array-like, optional
        :math:`c`; default the origin.
    """

    def __init__(self, radius, center=None):
        radius = float(radius)
        if not (radius >= 0) or np.isnan(radius):
            raise ValueError(f"radius: must be non-negative, got {radius}")
        self.radius = radius
        self.center = None if center is None else np.ascontiguousarray(center, dtype=np.float64)
        self.diameter = 2.0 * radius

    def project_inplace(self, x):
        project_ball(x, self.radius, self.center)
        return x

    def __repr__(self):
        return f"Ball(radius={self.radius:.6g})"


class ProductOfBalls(_Domain):
    r"""Blocks :math:`x_{[o_k, o_{k+1})}` each in its own ball of radius :math:`r_k` (multi-class models).

    Parameters
    ----------
    offsets : array-like of int
        Block boundaries :math:`o_0 < o_1 < \dots` in ``x``.
    radii : array-like of float
        :math:`r_k`, one per block.
    """

    def __init__(self, offsets, radii):
        self.offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        self.radii = np.ascontiguousarray(radii, dtype=np.float64)
        if self.offsets.ndim != 1 or self.radii.shape != (self.offsets.size - 1,):
            raise ValueError("radii: need one radius per block (len(offsets) - 1)")
        if np.any(np.diff(self.offsets) < 0) or np.any(self.radii < 0):
            raise ValueError("offsets: must be non-decreasing and radii non-negative")
        self.diameter = 2.0 * _norm(self.radii)

    def project_inplace(self, x):
        project_balls(x, self.offsets, self.radii)
        return x

    def __repr__(self):
        return f"ProductOfBalls({self.radii.size} blocks)"


class ColumnBalls(_Domain):
    r"""One ball around 0 per column of :math:`x` read as a row-major matrix (interleaved blocks).

    With :math:`m` radii, :math:`x` is the :math:`(n/m) \times m` matrix stored row by row and
    its column :math:`k`, ``x[k::m]``, must lie in the ball of radius :math:`r_k`. This is
    `ProductOfBalls` for a variable stored transposed: the multi-class model
    :math:`W \in \mathbb R^{C \times d}` kept as :math:`\operatorname{vec}(W^\top)` (the
    ``"features"`` layout of `fastcon.problems.multiclass_neyman_pearson`), where the weights of
    class :math:`k` are every C-th entry. Projections equal those of `ProductOfBalls` on the
    transposed vector bit for bit.

    Parameters
    ----------
    radii : array-like of shape (m,)
        :math:`r_k \ge 0` (``inf``: column k free).
    """

    def __init__(self, radii):
        self.radii = np.ascontiguousarray(radii, dtype=np.float64)
        if self.radii.ndim != 1 or self.radii.size == 0:
            raise ValueError("radii: need a non-empty 1-D array, one radius per column")
        if not np.all(self.radii >= 0):
            raise ValueError("radii: must be non-negative")
        self.n_columns = int(self.radii.size)
        self.diameter = 2.0 * _norm(self.radii)

    def columns(self, dim):
        """The index slice of every column in a vector of length ``dim``: ``[slice(k, dim, m) ...]``."""
        if dim % self.n_columns:
            raise ValueError(f"x: length {dim} is not a multiple of the {self.n_columns} columns")
        return [slice(k, dim, self.n_columns) for k in range(self.n_columns)]

    def project_inplace(self, x):
        project_column_balls(x, self.radii, np.empty(self.n_columns))  # per call: domains hold no mutable state
        return x

    def __repr__(self):
        return f"ColumnBalls({self.n_columns} columns)"


class Box(_Domain):
    r"""Box :math:`\{x : l \le x \le u\}` (scalars or arrays).

    Parameters
    ----------
    lo, hi : float or array-like
        The bounds :math:`l` and :math:`u`.
    """

    def __init__(self, lo, hi):
        self.lo = lo if np.ndim(lo) == 0 else np.ascontiguousarray(lo, dtype=np.float64)
        self.hi = hi if np.ndim(hi) == 0 else np.ascontiguousarray(hi, dtype=np.float64)
        if np.any(np.asarray(self.lo) > np.asarray(self.hi)):
            raise ValueError("lo: must not exceed hi")
        self.diameter = _norm(np.asarray(self.hi) - np.asarray(self.lo)) if np.ndim(lo) else np.inf

    def project_inplace(self, x):
        project_box(x, float(self.lo) if np.ndim(self.lo) == 0 else self.lo,
                    float(self.hi) if np.ndim(self.hi) == 0 else self.hi)
        return x

    def __repr__(self):
        return "Box()"


class Product(_Domain):
    """Cartesian product of domains on consecutive blocks of x, e.g. (transport plan P, weights w).

    Parameters
    ----------
    blocks : sequence of (size, domain)
    """

    def __init__(self, blocks):
        self.blocks = [(int(size), domain) for size, domain in blocks]
        self.offsets = np.concatenate([[0], np.cumsum([s for s, _ in self.blocks])]).astype(np.int64)
        self.diameter = _norm([d.diameter for _, d in self.blocks])

    def project_inplace(self, x):
        for k, (_, domain) in enumerate(self.blocks):
            domain.project_inplace(x[self.offsets[k]:self.offsets[k + 1]])
        return x

    def __repr__(self):
        return "Product(" + ", ".join(repr(d) for _, d in self.blocks) + ")"
