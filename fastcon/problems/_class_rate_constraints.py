r"""Group-rate constraints of a multi-class model: one-vs-rest rates of every class, on its margins.

A model with scores :math:`F_i \in \mathbb R^J` predicts :math:`\arg\max_j F_{ij}`; class :math:`j`'s
margin :math:`m_{ij} = F_{ij} - \max_{k \ne j} F_{ik}` is positive exactly when :math:`j` is the
prediction. A rate of class :math:`j` is the binary rate of `RateGapConstraints` on the margins
with the one-vs-rest labels :math:`[y_i = j]` (demographic parity, equal opportunity, false-positive
parity, equalized odds as fairlearn#1201 defines it), bounded between every ordered pair of groups;
the smoothed rate uses :math:`\sigma(m_{ij}/\tau)`. Design notes: docs/design.md, 'Module notes'.
"""
from __future__ import annotations

import numpy as np

from ._score_constraints import group_fairness_constraints

__all__ = ["ClassRateConstraints", "class_margins"]


def class_margins(F):
    r"""Every class's margin :math:`m_{ij} = F_{ij} - \max_{k \ne j}F_{ik}` and the index of that runner-up.

    Parameters
    ----------
    F : float64[n, J]
        Scores, J >= 2.

    Returns
    -------
    margins : float64[n, J]
    rival : int64[n, J]
        :math:`k^*`: the largest other score's class (the first of equal ones).
    """
    rows = np.arange(F.shape[0])
    best = np.argmax(F, axis=1)
    masked = F.copy()
    masked[rows, best] = -np.inf
    second = np.argmax(masked, axis=1)
    rival = np.repeat(best[:, None], F.shape[1], axis=1)
    rival[rows, best] = second
    return F - F[rows[:, None], rival], rival


class ClassRateConstraints:
    r"""Every class's one-vs-rest group-rate gaps of a multi-class model (module docstring).

    Parameters
    ----------
    labels : int64[n]
        Class ids 0..J-1.
    n_classes : int
        J >= 3.
    groups : int64[n]
        Group codes 0..G-1.
    constraint : str
        ``"demographic_parity"``, ``"equal_opportunity"``, ``"false_positive_parity"`` or
        ``"equalized_odds"``.
    bound : float
        :math:`\kappa`.
    smoothing : float
        :math:`\tau`.
    group_labels, class_labels : list, optional
        For the constraint names.

    Constraint values are ordered class-major: class 0's block (`RateGapConstraints` order), then
    class 1's, ...
    """

    def __init__(self, labels, n_classes, groups, constraint, bound, *, smoothing=1.0, group_labels=None,
                 class_labels=None):
        labels = np.asarray(labels, dtype=np.int64)
        self.n_classes = int(n_classes)
        names = list(class_labels) if class_labels is not None else list(range(self.n_classes))
        self.blocks = []
        for j in range(self.n_classes):
            try:
                self.blocks.append(group_fairness_constraints(None, (labels == j).astype(np.int64), groups, constraint,
                                                              bound, smoothing=smoothing, group_labels=group_labels))
            except ValueError as exc:   # "positive" / "negative" rows are class j's and the others'
                raise ValueError(f"{exc} (class {names[j]!r} against the rest)") from None
        self.names = [f"class {names[j]!r}: {name}" for j, b in enumerate(self.blocks) for name in b.names]
        self._sizes = [b.n_constraints for b in self.blocks]
        self._starts = np.concatenate([[0], np.cumsum(self._sizes)]).astype(np.int64)

    @property
    def n_constraints(self) -> int:
        return int(self._starts[-1])

    @property
    def smoothing(self):
        return self.blocks[0].smoothing

    def _check(self, F):
        F = np.asarray(F, dtype=np.float64)
        if F.ndim != 2 or F.shape[1] != self.n_classes:
            raise ValueError(f"scores: expected shape (n, {self.n_classes}), got {F.shape}")
        return F

    def hard_values_from_scores(self, F) -> np.ndarray:
        """The values with ``argmax`` predictions (margin > 0) in place of the smoothed ones."""
        margins, _ = class_margins(self._check(F))
        return np.concatenate([b.hard_values_from_scores(np.ascontiguousarray(margins[:, j]))
                               for j, b in enumerate(self.blocks)])

    def values_from_scores(self, F) -> np.ndarray:
        margins, _ = class_margins(self._check(F))
        return np.concatenate([b.values_from_scores(np.ascontiguousarray(margins[:, j]))
                               for j, b in enumerate(self.blocks)])

    def vjp_and_curvature_from_scores(self, F, weights, v, h):
        r"""``v += d(sum_k weights_k g_k)/dF`` and ``h +=`` a bound on its second derivative's diagonal.

        Through :math:`m_{ij} = F_{ij} - F_{ik^*}`: class :math:`j`'s block gradient :math:`d`
        (per row, on its margin) adds :math:`d` to :math:`v_{ij}` and :math:`-d` to
        :math:`v_{ik^*}`, and its curvature bound (`RateGapConstraints.vjp_and_curvature_from_scores`)
        to both :math:`h_{ij}` and :math:`h_{ik^*}`.
        """
        F = self._check(F)
        weights = np.asarray(weights, dtype=np.float64)
        margins, rival = class_margins(F)
        rows = np.arange(F.shape[0])
        d, c = np.empty(F.shape[0]), np.empty(F.shape[0])
        for j, b in enumerate(self.blocks):
            w = weights[self._starts[j]:self._starts[j + 1]]
            if not np.any(w):
                continue
            d[:], c[:] = 0.0, 0.0
            b.vjp_and_curvature_from_scores(np.ascontiguousarray(margins[:, j]), w, d, c)
            v[:, j] += d
            h[:, j] += c
            # one entry per row: plain fancy indexing adds without collisions
            v[rows, rival[:, j]] -= d
            h[rows, rival[:, j]] += c
