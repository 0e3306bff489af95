r"""Feasible domains :math:`\mathcal X` with their Euclidean projections and the other operations
solvers and certificates ask of them.

Every domain has ``project(x)`` (returns the projection, ``x`` untouched), ``project_inplace(x)``,
``contains(x, tol)`` and ``diameter`` (the :math:`D` of the theory; ``inf`` when unbounded). The
operations some solvers need, ``support(y)``, ``normal_cone_distance(x, v)``, ``bounds(dim)`` and
``box_and_balls(dim)``, are methods of the domain itself (declared on `Domain`), so a new domain is
one class in one file: it answers what it can and the base class raises a `NotImplementedError`
naming the class and the operation for the rest.
"""
from __future__ import annotations

import math

import numpy as np

from .._kernels._projections import project_ball, project_balls, project_box, project_column_balls

__all__ = ["Domain", "Whole", "Ball", "ProductOfBalls", "ColumnBalls", "Box", "Product"]

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


def _balls_support(blocks, radii):
    total = 0.0
    for block, r in zip(blocks, radii):
        norm = float(np.linalg.norm(block))
        if norm > 0.0:
            total += float(r) * norm  # inf radius with a non-zero block: +inf
    return total


def _ball_dist(c, radius, v):
    """Ball of the given radius centred at 0, point ``c`` (x minus the centre)."""
    nc = float(np.linalg.norm(c))
    if not nc >= radius * (1 - 1e-10) or nc == 0.0:
        return float(np.linalg.norm(v))          # interior (or infinite radius): N = {0}
    t = max(0.0, -float(v @ c) / (nc * nc))
    return float(np.linalg.norm(v + t * c))


class Domain:
    r"""Base class of the feasible domains :math:`\mathcal X \subseteq \mathbb R^d`: subclass it for a new one.

    A subclass must define ``project_inplace(x)`` (overwrite ``x`` by :math:`P_{\mathcal X}(x)`, the
    Euclidean projection, and return it) and the attribute ``diameter`` (``inf`` when unbounded). The
    other operations are optional: where a subclass does not define one, the base class answers
    from the projection (`normal_cone_distance`, `contains`), from another operation
    (`box_and_balls` from `bounds`) or raises a `NotImplementedError` naming the class and the
    operation, so a solver that needs it stops before its first iteration.
    """

    def _cannot(self, operation, why):
        return NotImplementedError(f"{type(self).__name__}.{operation}: {why}")

    def project_inplace(self, x):
        """Overwrite ``x`` by its Euclidean projection onto the domain.

        Parameters
        ----------
        x : ndarray of float64
            The point, overwritten.

        Returns
        -------
        ndarray
            ``x``.
        """
        raise self._cannot("project_inplace", "every domain must define its projection")

    def project(self, x):
        r"""The Euclidean projection of ``x`` (``x`` itself is left untouched).

        Parameters
        ----------
        x : array-like
            The point.

        Returns
        -------
        ndarray
            :math:`P_{\mathcal X}(x)`, a new float64 array.
        """
        y = np.array(x, dtype=np.float64, copy=True)
        self.project_inplace(y)
        return y

    def contains(self, x, tol=1e-12) -> bool:
        r"""Whether :math:`\|P_{\mathcal X}(x) - x\| \le \mathrm{tol}\,\max(1, \|x\|)`.

        Parameters
        ----------
        x : array-like
            The point.
        tol : float
            Relative tolerance.

        Returns
        -------
        bool
        """
        x = np.asarray(x, dtype=np.float64)
        return bool(_norm(self.project(x) - x) <= tol * max(1.0, _norm(x)))

    def support(self, y) -> float:
        r"""The support function :math:`\sigma_{\mathcal X}(y) = \sup_{z \in \mathcal X}\langle y, z\rangle`.

        ``inf`` where :math:`\mathcal X` is unbounded along :math:`y`. Used by
        `fastcon.solvers.check_feasibility` for its lower bounds
        :math:`\min_{\mathcal X}(a + \langle s, z\rangle) = a - \sigma_{\mathcal X}(-s)`.

        Parameters
        ----------
        y : ndarray
            The direction, of the domain's dimension.

        Returns
        -------
        float

        Raises
        ------
        NotImplementedError
            When the domain does not define it (the base class).
        """
        raise self._cannot("support", "no support function is defined for this domain")

    def normal_cone_distance(self, x, v) -> float:
        r""":math:`\operatorname{Dist}(v, -\mathcal N_{\mathcal X}(x))`, the stationarity residual of
        :math:`v` (a gradient of the Lagrangian) at :math:`x \in \mathcal X`.

        The base class returns the projected-gradient residual :math:`\|x - P_{\mathcal X}(x - v)\|`,
        which is 0 exactly when the distance is 0 (and is never larger than it); domains with a
        closed-form normal cone override it with the distance itself.

        Parameters
        ----------
        x : ndarray
            A point of the domain.
        v : ndarray
            The vector measured, same shape as ``x``.

        Returns
        -------
        float
        """
        y = np.array(x - v)
        self.project_inplace(y)
        return float(np.linalg.norm(x - y))

    def bounds(self, dim):
        r"""The domain as coordinate bounds :math:`\{x : l \le x \le u\}` (for L-BFGS-B and LPs).

        Parameters
        ----------
        dim : int
            Dimension :math:`d` of the variable.

        Returns
        -------
        (lower, upper) : tuple of ndarray of shape (dim,), or None
            :math:`l` and :math:`u` (entries may be infinite); None for the whole space.

        Raises
        ------
        NotImplementedError
            When the domain is not a box.
        """
        raise self._cannot("bounds", "the domain is not given by coordinate bounds")

    def box_and_balls(self, dim):
        r"""The domain as the intersection of a box and Euclidean balls,
        :math:`\{x : l \le x \le u,\ \|x_{I_j} - c_j\| \le r_j\ \forall j\}`.

        A solver that keeps the box in its subproblems and penalises the balls
        (`fastcon.solvers.exact_penalty_trust_region`) reads the domain through this. The base class
        answers from `bounds` (no ball).

        Parameters
        ----------
        dim : int
            Dimension :math:`d` of the variable.

        Returns
        -------
        lower, upper : ndarray of shape (dim,)
            :math:`l` and :math:`u` (``-inf`` / ``inf`` where a coordinate is free), new arrays.
        balls : list of (slice, ndarray or None, float)
            :math:`(I_j, c_j, r_j)`: the coordinates of the ball as a slice of ``x``, its centre
            (None: the origin) and its radius.

        Raises
        ------
        NotImplementedError
            When the domain is neither (e.g. a polytope other than a box).
        """
        try:
            box = self.bounds(dim)
        except NotImplementedError:
            raise self._cannot("box_and_balls", "the domain is not an intersection of a box and balls") from None
        lower, upper = np.full(dim, -np.inf), np.full(dim, np.inf)
        if box is not None:
            lower[:], upper[:] = box
        return lower, upper, []


class Whole(Domain):
    """:math:`\\mathbb R^d` (no constraint)."""

    diameter = np.inf

    def project_inplace(self, x):
        return x

    def support(self, y) -> float:
        r""":math:`\sigma(y) = 0` at :math:`y = 0`, else :math:`+\infty` (see `Domain.support`)."""
        y = np.asarray(y, dtype=np.float64)
        return 0.0 if not np.any(y) else math.inf

    def normal_cone_distance(self, x, v) -> float:
        r""":math:`\|v\|`: the normal cone is :math:`\{0\}` (see `Domain.normal_cone_distance`)."""
        return float(np.linalg.norm(v))

    def bounds(self, dim):
        """None: no coordinate is bounded (see `Domain.bounds`)."""
        return None

    def __repr__(self):
        return "Whole()"


class Ball(Domain):
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

    def support(self, y) -> float:
        r""":math:`\sigma(y) = \langle y, c\rangle + r\|y\|` (see `Domain.support`)."""
        y = np.asarray(y, dtype=np.float64)
        value = _balls_support([y], [self.radius])  # an infinite radius: +inf unless y = 0
        return value + (float(y @ self.center) if self.center is not None else 0.0)

    def normal_cone_distance(self, x, v) -> float:
        r"""On the sphere :math:`-\mathcal N(x) = \{-t(x - c) : t \ge 0\}`, so the distance is
        :math:`\|v + t^*(x - c)\|`, :math:`t^* = \max(0, -v^\top(x - c)/\|x - c\|^2)`; inside,
        :math:`\|v\|` (see `Domain.normal_cone_distance`).
        """
        return _ball_dist(x if self.center is None else x - self.center, self.radius, v)

    def box_and_balls(self, dim):
        """No bound and the ball itself on every coordinate (see `Domain.box_and_balls`)."""
        return np.full(dim, -np.inf), np.full(dim, np.inf), [(slice(0, dim), self.center, self.radius)]

    def __repr__(self):
        return f"Ball(radius={self.radius:.6g})"


class ProductOfBalls(Domain):
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

    def support(self, y) -> float:
        r""":math:`\sigma(y) = \sum_k r_k \|y_{[o_k, o_{k+1})}\|` (an infinite radius gives
        :math:`+\infty` unless its block of :math:`y` is 0; see `Domain.support`).
        """
        y = np.asarray(y, dtype=np.float64)
        return _balls_support([y[self.offsets[k]:self.offsets[k + 1]] for k in range(self.radii.size)], self.radii)

    def normal_cone_distance(self, x, v) -> float:
        r""":math:`\big(\sum_k \operatorname{Dist}_k^2\big)^{1/2}` over the blocks, each that of `Ball`
        (see `Domain.normal_cone_distance`).
        """
        sq = 0.0
        for k in range(self.radii.size):
            s = slice(self.offsets[k], self.offsets[k + 1])
            sq += _ball_dist(x[s], self.radii[k], v[s]) ** 2
        return float(np.sqrt(sq))

    def box_and_balls(self, dim):
        """No bound and one ball around 0 per block (see `Domain.box_and_balls`)."""
        balls = [(slice(int(self.offsets[k]), int(self.offsets[k + 1])), None, float(r))
                 for k, r in enumerate(self.radii)]
        return np.full(dim, -np.inf), np.full(dim, np.inf), balls

    def __repr__(self):
        return f"ProductOfBalls({self.radii.size} blocks)"


class ColumnBalls(Domain):
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

    def support(self, y) -> float:
        r""":math:`\sigma(y) = \sum_k r_k \|y_{k::m}\|` (see `ProductOfBalls.support`)."""
        y = np.asarray(y, dtype=np.float64)
        return _balls_support([y[s] for s in self.columns(y.size)], self.radii)

    def normal_cone_distance(self, x, v) -> float:
        r"""The distance of `ProductOfBalls` on the interleaved blocks ``x[k::m]``
        (see `Domain.normal_cone_distance`).
        """
        sq = 0.0
        for k, s in enumerate(self.columns(x.shape[0])):
            sq += _ball_dist(x[s], self.radii[k], v[s]) ** 2
        return float(np.sqrt(sq))

    def box_and_balls(self, dim):
        """No bound and one ball around 0 per column, every m-th coordinate (see `Domain.box_and_balls`)."""
        balls = [(slice(k, dim, self.n_columns), None, float(r)) for k, r in enumerate(self.radii)]
        return np.full(dim, -np.inf), np.full(dim, np.inf), balls

    def __repr__(self):
        return f"ColumnBalls({self.n_columns} columns)"


class Box(Domain):
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

    def support(self, y) -> float:
        r""":math:`\sigma(y) = \sum_i \max(y_i u_i, y_i l_i)`, a zero :math:`y_i` contributing 0 even
        for infinite bounds (see `Domain.support`).
        """
        y = np.asarray(y, dtype=np.float64)
        lo = np.broadcast_to(np.asarray(self.lo, dtype=np.float64), y.shape)
        hi = np.broadcast_to(np.asarray(self.hi, dtype=np.float64), y.shape)
        with np.errstate(invalid="ignore"):  # 0 * inf on the masked-out side of np.where
            terms = np.where(y > 0, y * hi, 0.0) + np.where(y < 0, y * lo, 0.0)
        return float(terms.sum())

    def normal_cone_distance(self, x, v) -> float:
        r"""Coordinate-wise: a coordinate at its lower bound may keep :math:`v_j > 0`, at its upper
        bound :math:`v_j < 0`, a free one none (bounds met within :math:`10^{-10}\max(1, |x_j|)`;
        see `Domain.normal_cone_distance`).
        """
        lo, hi = np.broadcast_to(self.lo, x.shape), np.broadcast_to(self.hi, x.shape)
        scale = 1e-10 * np.maximum(1.0, np.abs(x))
        r = v.copy()
        at_lo, at_hi = x <= lo + scale, x >= hi - scale
        r[at_lo] = np.minimum(r[at_lo], 0.0)
        r[at_hi] = np.maximum(r[at_hi], 0.0)
        r[at_lo & at_hi] = 0.0
        return float(np.linalg.norm(r))

    def bounds(self, dim):
        """``lo`` and ``hi`` broadcast to ``(dim,)`` (see `Domain.bounds`)."""
        return (np.broadcast_to(np.asarray(self.lo, dtype=np.float64), (dim,)),
                np.broadcast_to(np.asarray(self.hi, dtype=np.float64), (dim,)))

    def __repr__(self):
        return "Box()"


class Product(Domain):
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

    def _slices(self):
        return [slice(int(self.offsets[k]), int(self.offsets[k + 1])) for k in range(len(self.blocks))]

    def support(self, y) -> float:
        r""":math:`\sigma(y) = \sum_k \sigma_{\mathcal X_k}(y_k)` over the blocks (see `Domain.support`)."""
        y = np.asarray(y, dtype=np.float64)
        return float(sum(block.support(y[self.offsets[k]:self.offsets[k + 1]])
                         for k, (_, block) in enumerate(self.blocks)))

    def normal_cone_distance(self, x, v) -> float:
        r""":math:`\big(\sum_k \operatorname{Dist}_k^2\big)^{1/2}`, each block's own distance
        (see `Domain.normal_cone_distance`).
        """
        sq = 0.0
        for k, (_, sub) in enumerate(self.blocks):
            s = slice(self.offsets[k], self.offsets[k + 1])
            sq += sub.normal_cone_distance(x[s], v[s]) ** 2
        return float(np.sqrt(sq))

    def bounds(self, dim):
        """The blocks' bounds side by side; None when no block bounds a coordinate (see `Domain.bounds`)."""
        pieces = [block.bounds(size) for size, block in self.blocks]
        if all(piece is None for piece in pieces):
            return None
        lower, upper = np.full(dim, -np.inf), np.full(dim, np.inf)
        for s, piece in zip(self._slices(), pieces):
            if piece is not None:
                lower[s], upper[s] = piece
        return lower, upper

    def box_and_balls(self, dim):
        """The blocks' boxes side by side and their balls moved to the blocks' coordinates
        (see `Domain.box_and_balls`).
        """
        lower, upper, balls = np.full(dim, -np.inf), np.full(dim, np.inf), []
        for s, (size, block) in zip(self._slices(), self.blocks):
            block_lower, block_upper, block_balls = block.box_and_balls(s.stop - s.start)
            lower[s], upper[s] = block_lower, block_upper
            balls.extend((slice(s.start + b.start, s.start + b.stop, b.step), centre, r)
                         for b, centre, r in block_balls)
        return lower, upper, balls

    def __repr__(self):
        return "Product(" + ", ".join(repr(d) for _, d in self.blocks) + ")"
