r"""Output rules of the first-order solvers, all streaming (no trajectory is stored).

A solver *offers* candidate iterates :math:`x_t` as it runs; each rule keeps O(d) memory:
``"random"`` (`RandomIterate`, the output of Huang & Lin [HL23] Algorithms 1–2: :math:`x_\tau` with
:math:`P(\tau = t) = \eta_t / \sum_{s \in I} \eta_s`, by weighted reservoir sampling), ``"best_feasible"``
(`BestIterate`, the offered iterate of lowest objective), ``"average"`` (`WeightedAverage`, the
weighted ergodic average) and ``"last"`` (the final iterate).
Design notes: docs/design.md, 'Module notes'.
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
