r"""Building terms out of terms: constraint levels, proximal terms, blocks of x, user callables.

All wrappers keep the term oracle protocol (``value``, ``value_and_subgradient``,
``value_rows``, ``value_and_subgradient_rows``, ``n_samples``, ``n_features``, ``rows_read``) and
forward the row counter of the term they wrap, so data passes are counted once, at the source.
"""
from __future__ import annotations

import numpy as np

from .._kernels._vector import proximal_add, proximal_value

__all__ = ["less_equal", "ShiftedTerm", "ProximalTerm", "BlockTerm", "PenalizedTerm", "penalized", "custom_term",
           "CustomTerm"]


class _Wrapper:
    def __init__(self, term):
        self.term = term
        self.n_samples = term.n_samples

    @property
    def rows_read(self):
        return self.term.rows_read

    def reset_counters(self):
        self.term.reset_counters()

    def __getattr__(self, name):
        # A term's own minibatch scheme (e.g. B rows per group) survives wrapping; the quadratic
        # and shift wrappers read no rows of their own.
        if name == "sample_rows":
            return getattr(self.term, name)
        raise AttributeError(name)


class ShiftedTerm(_Wrapper):
    r"""``term(x) - bound``: the constraint function :math:`g(x) = h(x) - c` of :math:`h(x) \le c`.

    Parameters
    ----------
    term : term
        :math:`h`.
    bound : float
        :math:`c`.
    """

    def __init__(self, term, bound):
        super().__init__(term)
        bound = float(bound)
        if not np.isfinite(bound):
            raise ValueError(f"bound: must be finite, got {bound}")
        self.bound = bound
        self.n_features = term.n_features

    def value(self, x):
        return self.term.value(x) - self.bound

    def value_and_subgradient(self, x, out):
        return self.term.value_and_subgradient(x, out) - self.bound

    def value_rows(self, x, rows):
        return self.term.value_rows(x, rows) - self.bound

    def value_and_subgradient_rows(self, x, rows, out):
        return self.term.value_and_subgradient_rows(x, rows, out) - self.bound

    def __repr__(self):
        return f"({self.term!r} - {self.bound:.6g})"


def less_equal(term, bound) -> ShiftedTerm:
    r"""The constraint :math:`h(x) \le c` as the term :math:`g(x) = h(x) - c` (feasible iff ``g <= 0``).

    Parameters
    ----------
    term : term
        :math:`h`.
    bound : float
        :math:`c`.
    """
    return ShiftedTerm(term, bound)


class ProximalTerm(_Wrapper):
    r""":math:`h(x) + \frac{\hat\rho}{2}\|x - x_k\|^2`, the proximal-point subproblem term ([HL23] eq. 4).

    The quadratic reads no data, so ``rows_read`` is that of ``term``. ``center`` is copied.

    Parameters
    ----------
    term : term
        :math:`h`.
    rho_hat : float
        :math:`\hat\rho`.
    center : array-like
        :math:`x_k`.
    """

    def __init__(self, term, rho_hat, center):
        super().__init__(term)
        self.rho_hat = float(rho_hat)
        if not self.rho_hat >= 0:
            raise ValueError(f"rho_hat: must be non-negative, got {rho_hat}")
        self.center = np.array(center, dtype=np.float64)
        self.n_features = term.n_features
        if self.center.shape != (self.n_features,):
            raise ValueError(f"center: expected shape ({self.n_features},), got {self.center.shape}")

    def _quad(self, x):
        return proximal_value(np.ascontiguousarray(x, dtype=np.float64), self.center, self.rho_hat)

    def value(self, x):
        return self.term.value(x) + self._quad(x)

    def value_and_subgradient(self, x, out):
        v = self.term.value_and_subgradient(x, out)
        # One fused pass, no temporaries (fastcon._kernels._vector; docs/measurements.md).
        return v + proximal_add(np.ascontiguousarray(x, dtype=np.float64), self.center, self.rho_hat, out)

    def value_rows(self, x, rows):
        return self.term.value_rows(x, rows) + self._quad(x)

    def value_and_subgradient_rows(self, x, rows, out):
        v = self.term.value_and_subgradient_rows(x, rows, out)
        return v + proximal_add(np.ascontiguousarray(x, dtype=np.float64), self.center, self.rho_hat, out)


class BlockTerm(_Wrapper):
    """A term of ``x[start:start + term.n_features]`` seen as a function of the whole ``x``.

    E.g. the hinge constraint of the Wasserstein problem reads only the weights ``w`` of
    ``x = (vec P, w)``; its subgradient is zero on the other blocks.

    Parameters
    ----------
    term : term
        The term of the block.
    start : int
        First index of the block in ``x``.
    n_features : int
        Dimension of the whole ``x``.
    """

    def __init__(self, term, start, n_features):
        super().__init__(term)
        self.start, self.stop = int(start), int(start) + term.n_features
        self.n_features = int(n_features)
        if self.start < 0 or self.stop > self.n_features:
            raise ValueError(f"start: block [{self.start}, {self.stop}) does not fit in {self.n_features}")

    def _block(self, x):
        x = np.asarray(x)
        if x.shape != (self.n_features,):
            raise ValueError(f"x: expected shape ({self.n_features},), got {x.shape}")
        return x[self.start:self.stop]

    def value(self, x):
        return self.term.value(self._block(x))

    def value_and_subgradient(self, x, out):
        out[:] = 0.0
        return self.term.value_and_subgradient(self._block(x), out[self.start:self.stop])

    def value_rows(self, x, rows):
        return self.term.value_rows(self._block(x), rows)

    def value_and_subgradient_rows(self, x, rows, out):
        out[:] = 0.0
        return self.term.value_and_subgradient_rows(self._block(x), rows, out[self.start:self.stop])


class PenalizedTerm(_Wrapper):
    r""":math:`h(x) + P(x)`: a data term plus a data-free penalty (e.g. `scad_penalty`), as in [LX25]
    Problem 2 (hinge risk + SCAD). Minibatch oracles pass the rows to :math:`h` and add :math:`P` in
    full; ``rows_read`` is that of :math:`h`.

    Parameters
    ----------
    term : term
        The data term :math:`h`.
    penalty : term
        The data-free penalty :math:`P`.
    """

    def __init__(self, term, penalty):
        super().__init__(term)
        if getattr(penalty, "n_samples", None) != 0:
            raise ValueError("penalty: must be a data-free term (n_samples == 0), e.g. scad_penalty(...)")
        if penalty.n_features != term.n_features:
            raise ValueError(f"penalty: has {penalty.n_features} features, the term has {term.n_features}")
        self.penalty = penalty
        self.n_features = term.n_features
        self._buf = np.empty(term.n_features)

    def value(self, x):
        return self.term.value(x) + self.penalty.value(x)

    def value_and_subgradient(self, x, out):
        v = self.term.value_and_subgradient(x, out)
        v += self.penalty.value_and_subgradient(x, self._buf)
        out += self._buf
        return v

    def value_rows(self, x, rows):
        return self.term.value_rows(x, rows) + self.penalty.value(x)

    def value_and_subgradient_rows(self, x, rows, out):
        v = self.term.value_and_subgradient_rows(x, rows, out)
        v += self.penalty.value_and_subgradient(x, self._buf)
        out += self._buf
        return v

    def __repr__(self):
        return f"({self.term!r} + {self.penalty!r})"


def penalized(term, penalty) -> PenalizedTerm:
    r"""The term :math:`h(x) + P(x)` (``penalty`` reads no data).

    Parameters
    ----------
    term : term
        The data term :math:`h`.
    penalty : term
        The data-free penalty :math:`P`.
    """
    return PenalizedTerm(term, penalty)


class CustomTerm:
    """A term from Python callables (the slow path: every call goes through the interpreter).

    Parameters
    ----------
    value : callable ``x -> float``
    value_and_subgradient : callable ``(x, out) -> float``
        Writes a subgradient into ``out`` and returns the value.
    n_features : int
        Dimension of x.
    n_samples : int, optional
        Rows one call reads, for data-pass accounting (default 1: one "pass" per call).
    value_rows, value_and_subgradient_rows : callables, optional
        Minibatch oracles ``(x, rows)`` and ``(x, rows, out)``; without them the full oracles are
        used (a deterministic term).
    """

    def __init__(self, value, value_and_subgradient, n_features, n_samples=None, value_rows=None,
                 value_and_subgradient_rows=None):
        if not callable(value) or not callable(value_and_subgradient):
            raise ValueError("value: value and value_and_subgradient must be callables")
        self._value, self._vs = value, value_and_subgradient
        self._value_rows, self._vs_rows = value_rows, value_and_subgradient_rows
        self.n_features = int(n_features)
        self.n_samples = int(n_samples) if n_samples is not None else 1
        self.rows_read = 0

    def reset_counters(self):
        self.rows_read = 0

    def _checked(self, v):
        v = float(v)
        if np.isnan(v):
            raise ValueError("value: the user's callable returned NaN")
        return v

    def value(self, x):
        self.rows_read += self.n_samples
        return self._checked(self._value(x))

    def value_and_subgradient(self, x, out):
        self.rows_read += self.n_samples
        return self._checked(self._vs(x, out))

    def value_rows(self, x, rows):
        if self._value_rows is None:
            return self.value(x)
        self.rows_read += len(rows)
        return self._checked(self._value_rows(x, rows))

    def value_and_subgradient_rows(self, x, rows, out):
        if self._vs_rows is None:
            return self.value_and_subgradient(x, out)
        self.rows_read += len(rows)
        return self._checked(self._vs_rows(x, rows, out))


def custom_term(value, value_and_subgradient, n_features, n_samples=None, **minibatch) -> CustomTerm:
    """Wrap Python callables into a term every solver accepts; see `CustomTerm`.

    Parameters
    ----------
    value : callable ``x -> float``
        The term's value.
    value_and_subgradient : callable ``(x, out) -> float``
        Writes a subgradient into ``out`` and returns the value.
    n_features : int
        Dimension of x.
    n_samples : int, optional
        Rows one call reads, for data-pass accounting (default 1).
    **minibatch : callables, optional
        ``value_rows`` and ``value_and_subgradient_rows``, the minibatch oracles of `CustomTerm`.
    """
    return CustomTerm(value, value_and_subgradient, n_features, n_samples, **minibatch)
