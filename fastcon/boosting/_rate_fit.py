r"""Boosting under group-rate constraints: a proxy Lagrangian on stock XGBoost / LightGBM, one training run.

The problem is :math:`\min_F \sum_i \ell(F_i; y_i)` s.t. :math:`r_a(F) - r_b(F) \le \varepsilon` for
every ordered pair of groups, :math:`r_k` a *hard* rate (selection, true- or false-positive rate).
Method: the proxy Lagrangian of Cotter et al. (JMLR 20, 2019), as FairGBM (Cruz et al., ICLR 2023):
the trees descend a Lagrangian whose constraints are sigmoid-smoothed rates
(`fastcon.problems.RateGapConstraints`), while the multipliers ascend on the hard gaps between
rounds, :math:`\lambda_k \leftarrow \max\{0, \lambda_k + \eta(r_a - r_b - a\varepsilon)\}`.
Multi-class uses one-vs-rest rates on class margins. The output is the round of least loss whose
hard gap is within :math:`\varepsilon`, else the round of least gap (``"no_feasible_iterate"``).
Design notes: docs/design.md, 'Module notes'.
"""
from __future__ import annotations

import numpy as np

from .._kernels._boosting import logistic_grad_hess, logistic_losses, softmax_grad_hess, softmax_losses
from .._results import History, SolveResult
from ..estimators._certify import CERTIFY_AIM, CONFIDENCE_HOLDOUT, certified_gap, certified_rate_bounds
from ..estimators._split import check_all_groups_present, check_held_out_part, stratified_split
from ..problems._class_rate_constraints import ClassRateConstraints
from ..problems._score_constraints import group_fairness_constraints
from ._backends import backend as _backend
from ._models import BoostedEnsemble

__all__ = ["RATE_CONSTRAINTS", "AIM", "AUTO_DUAL_STEP", "RateLagrangian", "CheckRows", "rate_block", "fit_rate_constrained"]

#: Constraint names of the rate path (those of `fastcon.FairClassifier` with a hard rate gap).
RATE_CONSTRAINTS = ("demographic_parity", "equal_opportunity", "false_positive_parity", "equalized_odds")
#: The multipliers aim at this fraction of the bound (module docstring).
AIM = 0.9


#: The multiplier step of ``dual_step="auto"``. A multiplier's pull on a row of group :math:`k`
#: near the threshold is about :math:`\lambda\,\sigma'/(\pi_k\tau)` (:math:`\pi_k`: the group's
#: share of the rows) against the loss's at most 1, so the scale of :math:`\eta` does not depend
#: on the number of rows. Measured on Adult (docs/benchmarks.md, "Rate-constrained boosting"):
#: 2 keeps demographic parity within bound in 60-80 of 100 rounds and equalized odds in 10-20
#: on both libraries; 50 x the learning rate (15 for XGBoost's 0.3) made XGBoost's equalized-odds
#: gap oscillate above the bound in every round but the constant first.
AUTO_DUAL_STEP = 2.0


class RateLagrangian:
    r"""The per-round custom objective of `fit_rate_constrained` (module docstring).

    Called by the library once per round with the current training scores, it records the
    round (loss and hard gap on the check rows), steps the multipliers on the hard gaps and
    returns the Lagrangian's gradient and Hessian bound.

    Parameters
    ----------
    labels : int64[n]
        Class ids of the training rows (0/1 for two classes).
    block : RateGapConstraints or ClassRateConstraints
        The smoothed rates of the training rows (on scores of shape (n,) or (n, J)).
    check : CheckRows
        Where the hard gap and the loss are measured (the training rows or held-out ones).
    bound : float
        :math:`\varepsilon`.
    dual_step : float
        :math:`\eta`.
    history : History
        Receives one row per round: ``loss`` (mean cross-entropy of the check rows), ``gap``
        (their largest hard gap), ``max_multiplier``.
    tree_count : callable, optional
        The booster's rounds so far. A round is the model of that many rounds: a LightGBM update
        that adds no tree (no split meets its requirements) calls the objective again on the
        same model, which then re-measures the same round instead of counting a new one. None:
        every call is a new round.
    """

    def __init__(self, labels, block, check, bound, dual_step, history, tree_count=None):
        self.labels = labels
        self.tree_count = tree_count
        self.block = block
        self.check = check
        self.bound = float(bound)
        self.dual_step = float(dual_step)
        self.history = history
        self.n_classes = getattr(block, "n_classes", 2)
        shape = labels.shape if self.n_classes == 2 else (labels.shape[0], self.n_classes)
        self.multipliers = np.zeros(block.n_constraints)
        self.ones = np.ones(labels.shape[0])
        self.grad, self.hess = np.empty(shape), np.empty(shape)
        self.round = 0
        #: round -> (mean loss, largest hard gap) on the check rows
        self.trace = {}

    def observe(self, F, rounds=None):
        """Record the model of ``rounds`` rounds (default: the booster's count) whose training scores are ``F``;
        return the check rows' hard values (gaps minus bound)."""
        if rounds is None:
            rounds = self.tree_count() if self.tree_count is not None else self.round
        self.round = rounds
        loss, hard = self.check.measure(F, rounds)
        gap = float(hard.max()) + self.bound if hard.size else 0.0
        self.trace[rounds] = (loss, gap)
        self.history.record(rounds, force=True, loss=loss, gap=gap,
                            max_multiplier=float(self.multipliers.max()) if self.multipliers.size else 0.0)
        return hard

    def __call__(self, preds, data=None):
        F = np.ascontiguousarray(preds, dtype=np.float64).reshape(self.grad.shape)
        hard = self.observe(F)
        # the hard gap minus aim * bound: hard + (1 - aim) * bound
        self.multipliers += self.dual_step * (hard + (1.0 - AIM) * self.bound)
        np.maximum(self.multipliers, 0.0, out=self.multipliers)
        loss_grad_hess = logistic_grad_hess if self.n_classes == 2 else softmax_grad_hess
        loss_grad_hess(F, self.labels, self.ones, None, 0.0, None, 0.0, self.grad, self.hess)
        if np.any(self.multipliers):
            self.block.vjp_and_curvature_from_scores(F, F.shape[0] * self.multipliers, self.grad, self.hess)
        if self.tree_count is None:
            self.round += 1
        return self.grad, self.hess


class CheckRows:
    r"""The rows whose hard gap steers the multipliers and picks the kept round, and their loss.

    Parameters
    ----------
    labels : int64[m]
        Class ids of the check rows.
    block : RateGapConstraints or ClassRateConstraints
        Their rates (``bound``: the estimator's ``bound``).
    X : {ndarray, CSR matrix}, optional
        Held-out rows' features; None: the check rows are the training rows, whose scores the
        library hands over.
    predict : callable, optional
        ``predict(X, start, stop)``: the scores of rounds ``[start, stop)`` (with ``X``); the
        held-out scores are kept up to date one round at a time.
    certify : tuple, optional
        ``(constraint, codes, n_groups, delta)``: measure every pair's gap as its Clopper-Pearson
        bound :math:`U_a - L_b`, each one-sided bound widened by `CERTIFY_AIM` standard errors
        (`fastcon.estimators._certify.certified_rate_bounds`), instead of the hard gap, so that the
        multipliers steer toward a model whose certified gap on fresh rows meets the bound (two classes).
    """

    def __init__(self, labels, block, X=None, predict=None, certify=None):
        self.labels, self.block, self.X, self.predict, self.certify = labels, block, X, predict, certify
        n_classes = getattr(block, "n_classes", 2)
        self.scores = None if X is None else np.zeros((X.shape[0],) if n_classes == 2 else (X.shape[0], n_classes))
        self.rounds = 0
        self.losses = np.empty(labels.shape[0])

    def measure(self, F, rounds):
        """``(mean loss, hard values)`` of the model of ``rounds`` rounds whose training scores are ``F``."""
        if self.X is not None:
            if rounds > self.rounds:
                self.scores += self.predict(self.X, self.rounds, rounds).reshape(self.scores.shape)
                self.rounds = rounds
            F = self.scores
        (logistic_losses if F.ndim == 1 else softmax_losses)(F, self.labels, self.losses)
        if self.certify is not None and self.block.n_constraints:
            # every pair (a, b) at its own widened bound U_a - L_b: a shift common to all pairs
            # would move (a, b) and (b, a) together, and their multipliers' pulls would cancel
            constraint, codes, n_groups, delta = self.certify
            lower, upper = certified_rate_bounds(constraint, F > 0, self.labels, codes, n_groups, delta,
                                                 aim=CERTIFY_AIM)
            pairs = self.block.pairs
            return float(self.losses.mean()), upper[pairs[:, 0]] - lower[pairs[:, 1]] - self.block.bound
        return float(self.losses.mean()), self.block.hard_values_from_scores(F)


def rate_block(labels, n_classes, codes, constraint, bound, smoothing, group_labels=None, class_labels=None):
    """The smoothed-rate block of some rows: `RateGapConstraints` on the scores (two classes) or
    `ClassRateConstraints` on every class's margins (J >= 3); its ``bound`` is the estimator's."""
    if n_classes == 2:
        return group_fairness_constraints(None, labels, codes, constraint, float(bound), smoothing=float(smoothing),
                                          group_labels=group_labels)
    return ClassRateConstraints(labels, n_classes, codes, constraint, float(bound), smoothing=float(smoothing),
                                group_labels=group_labels, class_labels=class_labels)


def fit_rate_constrained(X, labels, codes, constraint, bound, *, backend, n_estimators, params, seed, n_threads,
                         smoothing, dual_step, n_classes=2, validation_fraction=None, confidence=None,
                         group_labels=None, class_labels=None, verbose=False):
    r"""Train one booster under a rate constraint (module docstring) and keep its best feasible round.

    Parameters
    ----------
    X : {ndarray, CSR matrix} of shape (n, d)
        Checked features.
    labels : int64[n]
        Class ids 0..J-1.
    codes : int64[n]
        Group codes 0..G-1.
    constraint : str
        One of `RATE_CONSTRAINTS` (for J >= 3: every class's one-vs-rest rates,
        `fastcon.problems._class_rate_constraints`).
    bound : float
        :math:`\varepsilon`.
    backend : {"lightgbm", "xgboost"}
    n_estimators : int
        Boosting rounds.
    params : dict or None
        The library's tree parameters.
    seed, n_threads : int
    smoothing : float
        :math:`\tau` of the smoothed rates, in score units.
    dual_step : float or "auto"
        :math:`\eta`; ``"auto"``: `AUTO_DUAL_STEP`.
    n_classes : int
        J: scores of shape (n,) for 2, (n, J) for more.
    validation_fraction : float, optional
        Hold out this fraction of every (group, label) cell
        (`fastcon.estimators._split.stratified_split`, seeded by ``seed``): the trees are fitted on the rest, the multipliers step on the held-out rows'
        hard gap and the kept round is chosen by their gap and loss. None: the training rows.
    confidence : float, optional
        Two classes: hold out ``validation_fraction`` (default `CONFIDENCE_HOLDOUT`), steer by
        one half of it (`CheckRows`' ``certify``) and bound the population gap on the other half
        with probability ``confidence`` (``info["certified_gap"]``).
    group_labels, class_labels : list, optional
        For the constraint names.
    verbose : bool
        Print a line every 10 rounds.

    Returns
    -------
    ensemble : BoostedEnsemble
        The kept rounds, standalone (no reference to the training rows).
    result : SolveResult
        ``x``: the kept model's scores on every row of X; ``n_iter``: the kept round; ``multipliers``: the
        multipliers after the last round; ``history``: one row per round; ``info``: ``gap`` (the
        kept round's gap on the check rows: hard, or with ``confidence`` the widened bound),
        ``measured_on``, ``rounds_trained``, ``constraint_names``, ``dual_step``; with
        ``confidence`` also ``certified_gap`` and ``certify_rows``.
    """
    lib = _backend(backend)
    if confidence is not None and validation_fraction is None:
        validation_fraction = CONFIDENCE_HOLDOUT
    certify_rows = None
    n_groups = int(codes.max()) + 1
    fit_rows, held = stratified_split(codes, labels, validation_fraction, seed)
    if held is not None and confidence is not None:
        # rows that chose the round cannot also certify the choice
        tune, certify = stratified_split(codes[held], labels[held], 0.5, seed)
        held, certify_rows = held[tune], held[certify]
    if n_groups > 1:
        if fit_rows is not None:
            check_all_groups_present(codes[fit_rows], n_groups)
        for part in (held, certify_rows):
            if part is not None:
                for y01 in ([labels] if n_classes == 2 else [(labels == j).astype(np.int64) for j in range(n_classes)]):
                    check_held_out_part(codes, y01, part, n_groups, constraint)
    X_fit = X if fit_rows is None else X[fit_rows]
    y_fit = labels if fit_rows is None else labels[fit_rows]
    g_fit = codes if fit_rows is None else codes[fit_rows]
    n_outputs = 1 if n_classes == 2 else int(n_classes)
    full = lib.params(params, n_outputs, seed, n_threads, n_rows=X_fit.shape[0])
    if dual_step == "auto":
        dual_step = AUTO_DUAL_STEP
    block = rate_block(y_fit, n_classes, g_fit, constraint, bound, smoothing, group_labels, class_labels)
    data = lib.dataset(X_fit, full)
    booster = lib.booster(full, data)
    if held is None:
        check = CheckRows(y_fit, block)
    else:
        check = CheckRows(labels[held], rate_block(labels[held], n_classes, codes[held], constraint, bound,
                                                   smoothing, group_labels, class_labels),
                          X[held], lambda rows, start, stop: lib.predict(booster, rows, start, stop, n_threads),
                          certify=None if confidence is None else (constraint, codes[held], n_groups, 1.0 - confidence))
    history = History()
    objective = RateLagrangian(y_fit, block, check, bound, dual_step, history,
                               tree_count=lambda: lib.n_rounds(booster))
    for start in range(0, int(n_estimators), 10):
        lib.boost(booster, data, objective, min(10, int(n_estimators) - start))
        if verbose:
            loss, gap = objective.trace[objective.round]
            largest = objective.multipliers.max() if objective.multipliers.size else 0.0
            print(f"round {objective.round:5d}  loss {loss:.5f}  gap {gap:.4f}  max multiplier {largest:.4g}")
    rounds = lib.n_rounds(booster)
    final = lib.training_scores(booster, data).reshape(objective.grad.shape)
    objective.observe(final, rounds)
    losses, gaps = np.array([objective.trace[r] for r in range(rounds + 1)]).T
    # round 0 (no tree: every score 0, every rate 0) meets any bound and predicts one class; it is
    # kept only when the booster grew no tree at all
    first = 1 if rounds >= 1 else 0
    feasible = first + np.flatnonzero(gaps[first:] <= bound)
    if feasible.size:
        kept = int(feasible[np.argmin(losses[feasible])])
        status, message = "converged", (f"round {kept} of {rounds}: the least loss among the {feasible.size} "
                                        f"rounds whose gap is within {bound:g}")
    else:
        kept = first + int(np.argmin(gaps[first:]))
        status, message = "no_feasible_iterate", (f"no round's gap is within {bound:g}; kept round {kept}, of "
                                                  f"the least gap {gaps[kept]:.4g}")
    ensemble = BoostedEnsemble(backend, [booster], [(0, 0, kept, 1.0)], n_outputs, n_threads).standalone()
    scores = final if kept == rounds and fit_rows is None else ensemble.predict_scores(X)
    info = {"gap": float(gaps[kept]), "rounds_trained": rounds,
            "measured_on": "training rows" if held is None else "validation rows",
            "constraint_names": list(block.names), "dual_step": float(dual_step)}
    if certify_rows is not None:
        info["certified_gap"] = certified_gap(constraint, ensemble.predict_scores(X[certify_rows]) > 0,
                                              labels[certify_rows], codes[certify_rows], int(codes.max()) + 1,
                                              1.0 - confidence)
        info["certify_rows"] = int(certify_rows.size)
    result = SolveResult(scores, status, message, n_iter=kept, objective=float(losses[kept]),
                         max_violation=max(0.0, float(gaps[kept] - bound)), multipliers=objective.multipliers.copy(),
                         history=history.as_arrays(), info=info, solver="proxy_lagrangian")
    return ensemble, result
