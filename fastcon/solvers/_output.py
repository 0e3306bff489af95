r"""Output rules of the first-order solvers, all streaming (no trajectory is stored).

A solver *offers* candidate iterates :math:`x_t` as it runs; each rule keeps O(d) memory:

``"random"``  — `RandomIterate` (Huang & Lin [HL23] Algorithms 1–2 output)
    :math:`x_\tau` with :math:`P(\tau = t) = \eta_t / \sum_{s \in I} \eta_s` over the offered set
    :math:`I` (the nearly feasible :math:`t \ge S`). Weighted reservoir sampling of size 1: keep
    :math:`W \leftarrow W + \eta_t` and replace the kept iterate with probability
    :math:`\eta_t / W`; by induction the kept index has exactly the law above. One uniform draw per
    offered iterate from the rule's own seeded generator. When every offered weight is 0 (e.g. a
    zero step size) the law above is undefined and the rule draws uniformly over the offered
    iterates (the limit of equal weights): a zero weight is never chosen once a positive one has
    been offered, but the set :math:`I` is not treated as empty.
``"best"`` — `BestIterate`
    The offered iterate with the lowest objective value the solver passes along (first one on ties).
    Solvers offer only iterates whose objective they evaluate anyway; see each solver's docstring
    for which iterates those are.
``"average"`` — `WeightedAverage`
    The weighted ergodic average :math:`\bar x = \sum_t \gamma_t x_t / \sum_t \gamma_t`; the plain
    average of the offered iterates when every weight is 0 (as ``"random"``).
``"last"`` — no rule object: the solver returns its final iterate.
"""
from __future__ import annotations

import numpy as np

from .._kernels._vector import axpy

__all__ = ["RandomIterate", "BestIterate", "WeightedAverage"]


class RandomIterate:
    r"""Weighted reservoir of size 1: :math:`P(\tau = t) \propto w_t` over the offered iterates.

    Parameters
    ----------
    dim : int
    rng : numpy.random.Generator
        Drawn from once per offer with a positive weight.
    """

    def __init__(self, dim, rng):
        self.x = np.empty(dim)
        self.rng = rng
        self.total_weight = 0.0
        self.count = 0
        self.zero_count = 0
        self.index = -1

    def offer(self, t, x, weight):
        self.count += 1
        if weight > 0.0:
            self.total_weight += weight
            # The first positive weight gives probability 1 (replacing any zero-weight pick); later
            # ones weight / W.
            if self.rng.random() < weight / self.total_weight:
                np.copyto(self.x, x)
                self.index = t
        elif weight == 0.0 and self.total_weight == 0.0:
            # Only zero weights so far: a uniform reservoir over them, so that an all-zero run (a zero
            # step size) still returns one of its offered iterates. Draws happen only in this case, so
            # runs with positive weights keep their random stream.
            self.zero_count += 1
            if self.rng.random() * self.zero_count < 1.0:
                np.copyto(self.x, x)
                self.index = t

    @property
    def empty(self) -> bool:
        return self.index < 0


class BestIterate:
    """The offered iterate of lowest ``value`` (the first one among ties)."""

    def __init__(self, dim):
        self.x = np.empty(dim)
        self.value = np.inf
        self.count = 0
        self.index = -1

    def offer(self, t, x, value):
        self.count += 1
        if value < self.value or self.index < 0:
            self.value = float(value)
            np.copyto(self.x, x)
            self.index = t

    @property
    def empty(self) -> bool:
        return self.index < 0


class WeightedAverage:
    r"""Running :math:`\sum_t \gamma_t x_t / \sum_t \gamma_t` (allocation-free after construction)."""

    def __init__(self, dim):
        self._sum = np.zeros(dim)
        self._plain = None  # sum of the zero-weight iterates, kept only while no weight is positive
        self.total_weight = 0.0
        self.count = 0
        self.zero_count = 0
        self.index = -1  # last offered t (the average has no single index)

    def offer(self, t, x, weight):
        self.count += 1
        if weight > 0.0:
            # one pass, same rounding as sum += w * x
            axpy(float(weight), np.ascontiguousarray(x, dtype=np.float64), self._sum)
            self.total_weight += weight
            self.index = t
        elif weight == 0.0 and self.total_weight == 0.0:
            if self._plain is None:
                self._plain = np.zeros_like(self._sum)
            axpy(1.0, np.ascontiguousarray(x, dtype=np.float64), self._plain)
            self.zero_count += 1
            self.index = t

    @property
    def empty(self) -> bool:
        return self.total_weight <= 0.0 and self.zero_count == 0

    @property
    def x(self) -> np.ndarray:
        if self.total_weight > 0.0:
            return self._sum / self.total_weight
        return self._plain / self.zero_count  # every weight was 0: the plain average
