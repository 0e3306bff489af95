r"""Constrained problems on training scores, as ABPP and CBPR of Lin & Deng [LD23] see them.

A *score problem* states :math:`\min f` s.t. :math:`g_j \le 0` through the cross-entropy losses
:math:`\ell_i` of a score model's training scores (`fastcon.problems._score_models`), and writes
its Lagrangian as a weighted loss,
:math:`f(x) + \sum_j y_j g_j(x) = \sum_i W_i(y)\,\ell_i(F(x)) + c(y)\,D_W(x, x^t) + \text{const}`,
which a score model's ``prox_step`` minimises. The problems: `NeymanPearsonScores` (eq. (3.1)),
`GroupLossGap` (Section 4), exported from `fastcon.problems`, and `ProxSubproblem` (CBPR's
subproblem (4.2), internal to `fastcon.solvers.cbpr`); rows can be dropped
(the outlier heuristic of Appendix G). Protocol: docs/design.md, 'Module notes'.
"""
from __future__ import annotations

import copy
import math
import numbers

import numpy as np

from .._kernels._boosting import logistic_losses, segment_sums, softmax_losses

__all__ = ["NeymanPearsonScores", "GroupLossGap", "ProxSubproblem"]


def _check_labels(labels, n_classes, name="labels"):
    if isinstance(n_classes, (bool, np.bool_)) or not isinstance(n_classes, (numbers.Integral, np.integer)):
        raise TypeError(f"n_classes: expected an integer >= 2, got {n_classes!r}")
    if n_classes < 2:
        raise ValueError(f"n_classes: must be >= 2, got {n_classes}")
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.size == 0:
        raise ValueError(f"{name}: expected a non-empty 1-d array, got shape {labels.shape}")
    if not np.issubdtype(labels.dtype, np.integer) and not (
            np.issubdtype(labels.dtype, np.floating) and np.all(np.mod(labels, 1) == 0)):
        raise ValueError(f"{name}: expected integer class ids")
    labels = labels.astype(np.int64)
    bad = (labels < 0) | (labels >= n_classes)
    if bad.any():
        raise ValueError(f"{name}: class id {labels[bad][0]} out of range [0, {n_classes})")
    labels.setflags(write=False)
    return labels


def _model_losses(model, state, labels):
    """Per-sample cross-entropy at ``state`` (the model's own `losses` when it has one)."""
    if hasattr(model, "losses"):
        return model.losses(state)
    F = model.scores(state)
    out = np.empty(F.shape[0])
    (logistic_losses if F.ndim == 1 else softmax_losses)(F, labels, out)
    return out


def _predicted(F):
    return (F > 0).astype(np.int64) if F.ndim == 1 else np.argmax(F, axis=1)


class _ScoreProblem:
    """Labels, the kept-row mask, the objective and the outlier heuristic shared by the score problems."""

    def __init__(self, labels, n_classes):
        self.labels = _check_labels(labels, n_classes)
        self.n_classes = int(n_classes)
        self.n_samples = self.labels.shape[0]
        self.keep = np.ones(self.n_samples)          # 1 = row used, 0 = dropped as an outlier
        self._objective_weights = np.ones(self.n_samples)

    def check_model(self, model):
        """Raise ValueError naming ``model`` unless it holds the same rows and labels."""
        if model.n_samples != self.n_samples:
            raise ValueError(f"model: has {model.n_samples} training rows, the problem {self.n_samples}")
        expected = 1 if self.n_classes == 2 else self.n_classes
        if model.n_outputs != expected:
            raise ValueError(f"model: has {model.n_outputs} score columns, the problem's {self.n_classes} classes "
                             f"need {expected}")
        labels = getattr(model, "labels", None)
        if labels is not None and not np.array_equal(labels, self.labels):
            raise ValueError("model: its labels differ from the problem's")

    def losses(self, model, state):
        return _model_losses(model, state, self.labels)

    def objective_value(self, model, state) -> float:
        r""":math:`f = \sum_i w_i\ell_i + r(x)` over the kept rows (:math:`r`: the model's regulariser)."""
        # a plain sum, not a BLAS dot: a length-n `@` wakes OpenBLAS's thread pool (docs/measurements.md)
        value = float(np.sum(self._objective_weights * self.keep * self.losses(model, state)))
        regularization = getattr(model, "regularization", None)
        return value + (regularization(state) if regularization is not None else 0.0)

    def error_rates(self, model, state, codes, n_codes):
        """Training misclassification rate per code (class or group) over the kept rows."""
        wrong = (_predicted(model.scores(state)) != self.labels).astype(np.float64) * self.keep
        counts = segment_sums(self.keep, codes, n_codes)
        with np.errstate(invalid="ignore", divide="ignore"):
            return segment_sums(wrong, codes, n_codes) / counts

    def _segments_needed(self):
        """(codes, n_codes, name) of the segments that must keep rows: classes, and groups for fairness."""
        return [(self.labels, self.n_classes, "class")]

    def without_outliers(self, model, state, threshold=10.0, retries=4):
        r"""A copy that drops the outliers at ``state`` ([LD23] Appendix G, the authors' code).

        Among the kept rows, the :math:`\lceil n/10\rceil` of largest loss are dropped when their loss
        exceeds ``threshold`` times the mean loss :math:`\bar\ell_{0.9}` of the other 90%. When that
        would empty a class (or a group), the threshold is multiplied by 1.5 and the selection
        repeated, at most ``retries`` times.

        Raises
        ------
        ValueError
            ``outlier_threshold`` when every retry empties a class or group.
        """
        threshold = float(threshold)
        if not (threshold > 0 and math.isfinite(threshold)):
            raise ValueError(f"outlier_threshold: must be a finite number > 0, got {threshold!r}")
        kept = np.flatnonzero(self.keep > 0)
        losses = self.losses(model, state)[kept]
        k = math.ceil(kept.size / 10)
        if k == 0 or k >= kept.size:
            return copy.copy(self)
        top = np.argpartition(losses, kept.size - k)[kept.size - k:]
        rest = np.ones(kept.size, dtype=bool)
        rest[top] = False
        base = float(losses[rest].mean())
        for _ in range(retries + 1):
            drop = kept[top[losses[top] > threshold * base]]
            keep = self.keep.copy()
            keep[drop] = 0.0
            if all(np.all(segment_sums(keep, codes, n)[np.unique(codes[self.keep > 0])] > 0)
                   for codes, n, _ in self._segments_needed()):
                new = copy.copy(self)
                new.keep = keep
                new._rows_changed()
                return new
            threshold *= 1.5
        raise ValueError(f"outlier_threshold: dropping the outliers empties a class or group even at threshold "
                         f"{threshold / 1.5:.6g} (after {retries} retries with factor 1.5)")

    def _rows_changed(self):
        """Hook: recompute statistics that depend on the kept rows."""


class NeymanPearsonScores(_ScoreProblem):
    r"""Neyman–Pearson classification on scores, eq. (3.1) of [LD23].

    .. math::

        \min_x\ f(x) = \sum_i w_i\,\ell_i(x) + r(x)\quad\text{s.t.}\quad
        g_j(x) = \sum_{i:\,b_i = j}\ell_i(x) - \alpha_j \le 0,\quad j \in \mathcal C,

    for the constrained classes :math:`\mathcal C` (the keys of ``bounds``, in increasing order).
    The bounds are on class loss **sums**, not means. The Lagrangian is the weighted loss
    :math:`W_i = w_i + y_{b_i}` (the multipliers act as class weights), :math:`c = 0`. The binary NP
    problem of the Credit experiment is ``objective_weights`` 0 on class 0 and 1 on class 1 with a
    bound on class 0.

    Parameters
    ----------
    labels : array-like of int, shape (n,)
        Class ids in :math:`[0, J)` (binary: 0/1).
    n_classes : int
        :math:`J \ge 2`.
    bounds : dict
        Class id -> :math:`\alpha_j` (finite), at least one.
    objective_weights : array-like of shape (n,) or dict, optional
        :math:`w_i \ge 0` per row, or class id -> weight (classes not named get 1). Default 1.
    target_rates : dict, optional
        Class id -> target training error rate :math:`e_j \in (0, 1)` of the constrained classes,
        used by the heuristics (`from_error_rates`, `reestimate_bounds`, `targets_met`).
    """

    def __init__(self, labels, n_classes, bounds, objective_weights=None, target_rates=None):
        super().__init__(labels, n_classes)
        if not isinstance(bounds, dict) or not bounds:
            raise TypeError(f"bounds: expected a non-empty dict class id -> bound, got {bounds!r}")
        classes = []
        alphas = []
        for key in sorted(bounds):
            j = self._class_id(key, "bounds")
            value = bounds[key]
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.floating)) \
                    or not math.isfinite(value):
                raise ValueError(f"bounds: the bound of class {j} must be a finite number, got {value!r}")
            classes.append(j)
            alphas.append(float(value))
        self.classes = np.array(classes, dtype=np.int64)
        self.bounds = np.array(alphas)
        self.n_constraints = len(classes)
        self._objective_weights = self._weights(objective_weights)
        self.target_rates = None
        if target_rates is not None:
            if not isinstance(target_rates, dict) or set(map(int, target_rates)) != set(classes):
                raise ValueError(f"target_rates: expected a dict with the constrained classes {classes} as keys")
            rates = np.array([float(target_rates[k]) for k in sorted(target_rates)])
            if not np.all((rates > 0) & (rates < 1)):
                raise ValueError(f"target_rates: rates must lie in (0, 1), got {rates.tolist()}")
            self.target_rates = rates

    def _class_id(self, key, field):
        if isinstance(key, (bool, np.bool_)) or not isinstance(key, (numbers.Integral, np.integer)):
            raise TypeError(f"{field}: class ids must be integers, got {key!r}")
        if not 0 <= key < self.n_classes:
            raise ValueError(f"{field}: class {key} out of range [0, {self.n_classes})")
        return int(key)

    def _weights(self, weights):
        if weights is None:
            return np.ones(self.n_samples)
        if isinstance(weights, dict):
            per_class = np.ones(self.n_classes)
            for key, value in weights.items():
                per_class[self._class_id(key, "objective_weights")] = float(value)
            w = per_class[self.labels]
        else:
            w = np.asarray(weights, dtype=np.float64)
            if w.shape != (self.n_samples,):
                raise ValueError(f"objective_weights: expected shape ({self.n_samples},), got {w.shape}")
        if not (np.all(np.isfinite(w)) and np.all(w >= 0)):
            raise ValueError("objective_weights: must be finite and >= 0")
        return np.ascontiguousarray(w)

    @classmethod
    def from_error_rates(cls, labels, n_classes, rates, objective_weights=None):
        r"""The bounds of the heuristic of [LD23] Section 6: :math:`\alpha_j = n_j e_j \log J`.

        At zero scores every loss is :math:`\log J` (binary: :math:`\log 2`), so the class sum is
        :math:`n_j\log J` and the constraint value :math:`n_j\log J\,(1 - e_j) > 0`: the
        multiplier of every constrained class grows at the first dual step.

        Parameters
        ----------
        rates : dict
            Class id -> target error rate :math:`e_j \in (0, 1)`.
        """
        labels = _check_labels(labels, n_classes)
        if not isinstance(rates, dict) or not rates:
            raise TypeError(f"rates: expected a non-empty dict class id -> rate, got {rates!r}")
        counts = np.bincount(labels, minlength=n_classes)
        bounds = {k: float(counts[int(k)] * float(e) * math.log(n_classes)) for k, e in rates.items()}
        return cls(labels, n_classes, bounds, objective_weights=objective_weights, target_rates=dict(rates))

    def _require_rates(self, what):
        if self.target_rates is None:
            raise ValueError(f"target_rates: {what} needs the problem's target error rates "
                             "(NeymanPearsonScores(..., target_rates=...) or from_error_rates)")

    def reestimate_bounds(self, model, state):
        r"""A copy with :math:`\alpha_j = e_j\sum_{i:\,b_i = j}\ell_i(x)` (the reset of [LD23] Section 6,
        per class as in the authors' code), over the kept rows."""
        self._require_rates("reestimate_bounds")
        sums = segment_sums(self.losses(model, state) * self.keep, self.labels, self.n_classes)
        new = copy.copy(self)
        new.bounds = self.target_rates * sums[self.classes]
        return new

    def targets_met(self, model, state) -> bool:
        """Whether every constrained class's training error rate is below half its target (early stop)."""
        self._require_rates("targets_met")
        rates = self.error_rates(model, state, self.labels, self.n_classes)[self.classes]
        return bool(np.all(rates < self.target_rates / 2))

    def constraint_values(self, model, state) -> np.ndarray:
        r""":math:`g_j = \sum_{b_i = j}\ell_i - \alpha_j` for the constrained classes."""
        sums = segment_sums(self.losses(model, state) * self.keep, self.labels, self.n_classes)
        return sums[self.classes] - self.bounds

    def lagrangian(self, y):
        """``(W, 0.0, None)`` with :math:`W_i = w_i + y_{b_i}` (0 on dropped rows)."""
        y = np.asarray(y, dtype=np.float64)
        lam = np.zeros(self.n_classes)
        lam[self.classes] = y
        return (self._objective_weights + lam[self.labels]) * self.keep, 0.0, None


class GroupLossGap(_ScoreProblem):
    r"""Total loss s.t. bounded gaps between group mean losses (Section 4 of [LD23]).

    .. math::

        \min_x\ \sum_i \ell_i(x) + r(x)\quad\text{s.t.}\quad
        g_{ab}(x) = \beta\,(\xi_a(x) - \xi_b(x) - \alpha_{ab}) \le 0\quad\text{for every ordered pair } a \ne b,

    :math:`\xi_a = \frac1{n_a}\sum_{s_i = a}\ell_i` the mean loss of group :math:`a`. Each constraint
    is a difference of convex functions, :math:`\beta\xi_a - \beta\xi_b`; CBPR solves it. The
    constraints are ordered row-major over :math:`(a, b)`, diagonal skipped (`pairs`); the
    multiplier matrix :math:`\Lambda` has zero diagonal. The Lagrangian weight of a row of group
    :math:`a` is :math:`\omega_a = 1 + \beta(\sum_l\Lambda_{al} - \sum_j\Lambda_{ja})/n_a` (it can
    be negative). At zero scores every loss is :math:`\log J`, so every :math:`g_{ab} = -\beta\alpha_{ab}`:
    strictly feasible for positive bounds (CBPR's feasible start).

    Parameters
    ----------
    labels : array-like of int, shape (n,)
    n_classes : int
    groups : array-like of int, shape (n,)
        Group ids :math:`0..G-1`, :math:`G \ge 2`, every group non-empty.
    bound : float or array-like of shape (G, G)
        :math:`\alpha \ge 0` for every pair, or :math:`\alpha_{ab}` per ordered pair (diagonal ignored).
    scale : float, optional
        :math:`\beta > 0`; default :math:`\min_a n_a` (the authors' code: it balances the summed
        objective against the mean-type constraints).
    """

    def __init__(self, labels, n_classes, groups, bound, scale=None):
        super().__init__(labels, n_classes)
        groups = np.asarray(groups)
        if groups.shape != (self.n_samples,):
            raise ValueError(f"groups: expected shape ({self.n_samples},) to match labels, got {groups.shape}")
        if not np.issubdtype(groups.dtype, np.integer):
            raise ValueError("groups: expected integer group ids")
        groups = groups.astype(np.int64)
        if groups.min() < 0:
            raise ValueError(f"groups: group id {groups.min()} is negative")
        G = int(groups.max()) + 1
        counts = np.bincount(groups, minlength=G)
        if G < 2:
            raise ValueError("groups: need at least two groups")
        if np.any(counts == 0):
            raise ValueError(f"groups: group {int(np.flatnonzero(counts == 0)[0])} has no rows (ids must be 0..G-1)")
        groups.setflags(write=False)
        self.groups = groups
        self.n_groups = G
        self.pairs = [(a, b) for a in range(G) for b in range(G) if a != b]
        self.n_constraints = len(self.pairs)
        self._pa = np.array([a for a, _ in self.pairs])
        self._pb = np.array([b for _, b in self.pairs])
        self.bound = self._check_bound(bound)
        if scale is None:
            self.scale = float(counts.min())
        else:
            if isinstance(scale, (bool, np.bool_)) or not isinstance(scale, (numbers.Real, np.floating)) \
                    or not (scale > 0 and math.isfinite(scale)):
                raise ValueError(f"scale: must be a finite number > 0, got {scale!r}")
            self.scale = float(scale)
        self._rows_changed()

    def _check_bound(self, bound):
        if np.ndim(bound) == 0:
            if isinstance(bound, (bool, np.bool_)) or not isinstance(bound, (numbers.Real, np.floating)):
                raise TypeError(f"bound: expected a number or a (G, G) array, got {bound!r}")
            matrix = np.full((self.n_groups, self.n_groups), float(bound))
        else:
            matrix = np.array(bound, dtype=np.float64)
            if matrix.shape != (self.n_groups, self.n_groups):
                raise ValueError(f"bound: expected shape ({self.n_groups}, {self.n_groups}), got {matrix.shape}")
        values = matrix[self._pa, self._pb]
        if not (np.all(np.isfinite(values)) and np.all(values >= 0)):
            raise ValueError("bound: every off-diagonal bound must be finite and >= 0")
        return values

    def _rows_changed(self):
        self.group_sizes = segment_sums(self.keep, self.groups, self.n_groups)

    def _segments_needed(self):
        return [(self.labels, self.n_classes, "class"), (self.groups, self.n_groups, "group")]

    def with_bound(self, bound):
        """A copy with other bounds (the fairness schedule of `fastcon.solvers.cbpr`)."""
        new = copy.copy(self)
        new.bound = self._check_bound(bound)
        return new

    def group_means(self, model, state) -> np.ndarray:
        r""":math:`\xi_a` over the kept rows."""
        return segment_sums(self.losses(model, state) * self.keep, self.groups, self.n_groups) / self.group_sizes

    def constraint_values(self, model, state) -> np.ndarray:
        r""":math:`\beta(\xi_a - \xi_b - \alpha_{ab})` for every ordered pair (`pairs` order)."""
        xi = self.group_means(model, state)
        return self.scale * (xi[self._pa] - xi[self._pb] - self.bound)

    def multiplier_matrix(self, y) -> np.ndarray:
        r"""The (G, G) matrix :math:`\Lambda` of the pair multipliers ``y`` (zero diagonal)."""
        L = np.zeros((self.n_groups, self.n_groups))
        L[self._pa, self._pb] = y
        return L

    def group_weights(self, y) -> np.ndarray:
        r""":math:`\omega_a = 1 + \beta(\sum_l\Lambda_{al} - \sum_j\Lambda_{ja})/n_a`."""
        L = self.multiplier_matrix(y)
        return 1.0 + self.scale * (L.sum(axis=1) - L.sum(axis=0)) / self.group_sizes

    def lagrangian(self, y):
        """``(W, 0.0, None)`` with :math:`W_i = \\omega_{s_i}` (0 on dropped rows)."""
        return self.group_weights(np.asarray(y, dtype=np.float64))[self.groups] * self.keep, 0.0, None

    def concave_parts(self):
        r"""The concave parts :math:`-\beta\xi_b`: ``(rows of group b, β/n_b)`` per group (for
        `LinearScoreModel.curvature_bound`)."""
        keep = self.keep > 0
        return [(np.flatnonzero((self.groups == b) & keep), self.scale / self.group_sizes[b])
                for b in range(self.n_groups)]

    def targets_met(self, model, state, threshold) -> bool:
        """Whether every group's training error rate is below ``threshold`` (CBPR's early stop)."""
        return bool(np.all(self.error_rates(model, state, self.groups, self.n_groups) < threshold))


class ProxSubproblem:
    r"""CBPR's convex subproblem (4.2) of [LD23] at the anchor :math:`x^t`.

    .. math::

        \min_x\ f(x) + L\,D_W(x, x^t)\quad\text{s.t.}\quad g_j(x) + L\,D_W(x, x^t) \le 0,

    with :math:`L \ge \rho` the curvature of the concave parts of the :math:`g_j`, so every
    constraint is convex. The Lagrangian keeps the base problem's weights and collects the Bregman
    terms: :math:`c = L(1 + \sum_j y_j)` toward :math:`x^t`, since Algorithm 2 adds :math:`L D_W`
    to the objective *and to every constraint*. For `GroupLossGap` the constraints are the
    β-scaled :math:`\beta(\xi_a - \xi_b - \alpha)`, whose concave parts :math:`-\beta\xi_b` have
    curvature at most :math:`\rho` (`GroupLossGap.concave_parts`), so :math:`L D_W` is what
    convexity needs. The authors' manual adds :math:`\beta L D_W` to each scaled constraint
    (:math:`c = L(1 + \beta\sum\Lambda)` with :math:`L = 1/4`), a β times larger prox in the
    constraints than convexity needs.

    Parameters
    ----------
    problem : score problem
        With :math:`c = 0` in its `lagrangian`.
    model : score model
    anchor : state
        :math:`x^t`.
    prox_weight : float
        :math:`L > 0`.

    Notes
    -----
    `fastcon.solvers.cbpr` builds one per outer step; it is not exported from `fastcon.problems`
    (a user states the base problem, never the subproblem).
    """

    def __init__(self, problem, model, anchor, prox_weight):
        self.problem = problem
        self.model = model
        self.anchor = anchor
        self.prox_weight = float(prox_weight)
        self.n_constraints = problem.n_constraints
        self.labels = problem.labels
        self.n_classes = problem.n_classes

    def check_model(self, model):
        self.problem.check_model(model)

    def constraint_values(self, model, state) -> np.ndarray:
        return self.problem.constraint_values(model, state) + self.prox_weight * model.divergence(state, self.anchor)

    def objective_value(self, model, state) -> float:
        return self.problem.objective_value(model, state) + self.prox_weight * model.divergence(state, self.anchor)

    def lagrangian(self, y):
        W, c, _ = self.problem.lagrangian(y)
        if c != 0.0:
            raise ValueError("problem: CBPR needs a problem whose Lagrangian has no Bregman term of its own (c = 0)")
        return W, self.prox_weight * (1.0 + float(np.sum(y))), self.anchor
