r"""`FairClassifier`: a linear classifier whose group-fairness gap is bounded, scikit-learn style."""
from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..problems._linear_model import LinearLoss, LinearModelProblem, LinearScores
from ..problems._roc_fairness import threshold_grid
from ..problems._score_constraints import FAIRNESS_CONSTRAINTS, group_fairness_constraints
from ..solvers._common import check_choice
from ..solvers._validation import check_count, check_real
from ._input import (
    check_binary_target, check_fraction, check_sample_weight, encode_fit_groups, fit_dataset, labels_to_index,
    ridge_for, sensitive_columns, split_sensitive,
)
from ._linear import LinearConstrainedClassifier
from ._report import ConstraintReport, fairness_gap
from ._solve import Calibration, calibrate_bound, choose_solver, solve_linear

__all__ = ["FairClassifier"]


class FairClassifier(LinearConstrainedClassifier):
    r"""Linear classifier with a bound on a group-fairness gap.

    Solves

    .. math::

        \min_{w, b}\ \frac1n\sum_i \phi(y_i(w^\top x_i + b)) + \frac{\text{ridge}}{2}\|w\|^2
        \quad\text{s.t.}\quad \tilde r_a(w, b) - \tilde r_c(w, b) \le \kappa\ \ \text{for all groups } a \ne c,

    where :math:`\tilde r_k` is a smoothed rate of group :math:`k` (the mean of
    :math:`\sigma(s_i/\tau)` over the rows the rate counts, :math:`s_i = w^\top x_i + b`), then
    adjusts :math:`\kappa` until the **hard** gap a user measures (rates of ``predict``) is within
    ``tolerance`` on the training data (or on a held-out ``validation_fraction``).

    Every group is bounded against every other group: the constraint is on the largest rate minus
    the smallest, the gap of `fastcon.metrics` (and of fairlearn's ``*_difference`` metrics).

    Parameters
    ----------
    constraint : str
        ``"demographic_parity"`` (selection rates), ``"equal_opportunity"`` (true-positive rates),
        ``"false_positive_parity"`` (false-positive rates), ``"equalized_odds"`` (both),
        ``"roc"`` (selection rates at every threshold of a grid: the threshold-sweep fairness of
        Huang & Lin, "Single-loop switching subgradient methods for non-smooth weakly convex
        optimization with non-smooth convex constraints"; hard gap: the largest difference of the
        groups' score CDFs over all thresholds), ``"wasserstein"`` (the Wasserstein-1 distance
        between the groups' score distributions, same paper; in score units).
    tolerance : float
        Bound on the hard gap (a rate difference in [0, 1], or a distance for ``"wasserstein"``).
    loss : {"logistic", "hinge"}
    ridge : float, optional
        :math:`\ge 0`, the L2 penalty on :math:`w` (not on the intercept). None (default):
        :math:`1/n`, the regularisation of scikit-learn's ``LogisticRegression(C=1.0)``.
    fit_intercept : bool
    solver : {"auto", "augmented_lagrangian", "switching_subgradient"}
        ``"auto"``: the augmented Lagrangian method with L-BFGS (`fastcon.solvers.augmented_lagrangian`)
        for the smooth logistic loss, one :math:`Xw` and one :math:`X^\top v` per evaluation, whatever
        the number of groups: the fastest here by far (a few hundred passes, where subgradient methods
        need thousands); the switching subgradient method for ``loss="hinge"``, whose kink L-BFGS
        does not handle.
    max_iter : int, optional
        The solver's iteration budget (outer iterations of the augmented Lagrangian; iterations of
        the subgradient method). Default: the solver's own.
    tol : float
        Stationarity tolerance of the augmented Lagrangian (the gradient of the Lagrangian, as
        scikit-learn's ``LogisticRegression(tol=...)``).
    smoothing : float
        Starting :math:`\tau > 0` of the smoothed rates (in score units; for ``"wasserstein"``
        :math:`\tau/50` is the Huber width of the matched-quantile distances). The calibration
        halves it (at most four times; not for ``"roc"``) when the smoothed rates track the hard
        ones too loosely to meet ``tolerance`` (`fastcon.estimators._solve.calibrate_bound`;
        measurements in docs/design.md, "Estimators").
    n_thresholds : int
        Grid size of ``"roc"`` (the grid spans the unconstrained model's scores).
    validation_fraction : float, optional
        Hold out this fraction of the rows (stratified by group and label) to measure the hard gap
        during calibration; default None measures it on the training rows.
    max_calibration : int
        Largest number of solves in the bound calibration (each warm-started from the previous).
    drop_sensitive : bool
        With ``sensitive_features`` naming columns of X, drop them from the features.
    random_state : int, optional
        Seed of the validation split (the solvers are deterministic).
    verbose : bool
        Progress of each solve on stderr.

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features)
    intercept_ : ndarray of shape (1,)
    classes_ : ndarray of shape (2,)
    groups_ : list
        The group labels seen in ``fit`` (tuples for several sensitive columns).
    solve_result_ : fastcon.SolveResult
        The solve that produced the model (status, multipliers, KKT residuals in ``info``).
    calibration_ : dict
        One entry per solve: ``bounds`` and ``smoothings`` tried, ``hard_values`` reached,
        ``objectives``, ``statuses``; the ``chosen`` index, ``met`` (tolerance met) and where the
        hard gap was measured (``measured_on``).
    fit_gap_ : float
        The hard gap where calibration measured it.
    """

    def __init__(self, constraint="demographic_parity", tolerance=0.02, *, loss="logistic", ridge=None,
                 fit_intercept=True, solver="auto", max_iter=None, tol=1e-4, smoothing=0.5, n_thresholds=50,
                 validation_fraction=None, max_calibration=12, drop_sensitive=False, random_state=None,
                 verbose=False):
        self.constraint = constraint
        self.tolerance = tolerance
        self.loss = loss
        self.ridge = ridge
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.smoothing = smoothing
        self.n_thresholds = n_thresholds
        self.validation_fraction = validation_fraction
        self.max_calibration = max_calibration
        self.drop_sensitive = drop_sensitive
        self.random_state = random_state
        self.verbose = verbose

    def _check_params(self):
        check_choice("constraint", self.constraint, FAIRNESS_CONSTRAINTS)
        check_choice("loss", self.loss, ("logistic", "hinge"))
        for name in ("tolerance", "smoothing", "tol"):
            check_real(name, getattr(self, name), positive=True)
        if self.ridge is not None:
            check_real("ridge", self.ridge)
        if self.validation_fraction is not None:
            check_fraction("validation_fraction", self.validation_fraction)
        check_count("max_calibration", self.max_calibration)
        check_count("n_thresholds", self.n_thresholds)
        return choose_solver(self.solver, self.loss, self.constraint)

    def fit(self, X, y, sensitive_features=None, sample_weight=None):
        """Fit the constrained model.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
            CSR input stays sparse (CSC/COO are converted to CSR).
        y : array-like of shape (n_samples,)
            Two classes of any type; ``classes_[1]`` is the positive class of the rates.
        sensitive_features : array-like, Series, DataFrame, column name(s) or position(s), optional
            The group of every row: labels of any hashable type; several columns form
            intersectional groups; a column name of a DataFrame ``X`` (or a list of names, or an
            int position) reads it from ``X``. Without it all rows form one group, the constraint
            is void, and a warning says so.
        sample_weight : array-like of shape (n_samples,), optional
            Row weights of the loss and of the group rates (a weight of 2 counts as a repeated
            row, in the constraint and in the hard gap the calibration measures). Not with
            ``"roc"`` or ``"wasserstein"``, whose hard gaps compare unweighted distributions.
        """
        solver = self._check_params()
        X, sensitive = split_sensitive(X, sensitive_features, self.drop_sensitive)
        self.sensitive_columns_ = sensitive_columns(sensitive_features) if self.drop_sensitive else []
        X, y01, self.classes_ = check_binary_target(self, X, y)
        n = X.shape[0]
        if sensitive is None:
            warnings.warn("sensitive_features: not given, so all rows form one group and the fairness "
                          "constraint is void (the fit is the unconstrained model)", UserWarning, stacklevel=2)
            sensitive = np.zeros(n, dtype=np.int64)
        groups = encode_fit_groups(sensitive, n)
        self.group_encoder_ = groups
        self.groups_ = list(groups.labels)
        weight = np.ones(n) if sample_weight is None else check_sample_weight(sample_weight, n)
        if sample_weight is not None and self.constraint in ("roc", "wasserstein"):
            raise ValueError(f"sample_weight: not supported with constraint={self.constraint!r} (its hard gap "
                             "compares unweighted score distributions); use a rate constraint or no weights")

        fit_rows, check_rows = _validation_split(groups.codes, y01, self.validation_fraction, self.random_state)
        if fit_rows is None:
            X_fit, y_fit, g_fit, w_fit = X, y01, groups.codes, weight
        else:
            X_fit, y_fit, g_fit, w_fit = X[fit_rows], y01[fit_rows], groups.codes[fit_rows], weight[fit_rows]
        dataset = fit_dataset(X_fit, y_fit)
        scores = LinearScores(dataset, self.fit_intercept)
        objective = LinearLoss(scores, dataset.y, w_fit, self.loss, ridge_for(self.ridge, w_fit.sum()))

        n_groups = len(self.groups_)
        free = None
        if n_groups < 2 or self.constraint == "roc":
            # the unconstrained model: the answer with one group, and the score range of the "roc" grid
            free = solve_linear(LinearModelProblem(objective, []), solver, np.zeros(scores.n_features), None,
                                self.max_iter, self.verbose, self.tol)
        thresholds = None
        if self.constraint == "roc":
            thresholds = threshold_grid(scores.scores(free.x).copy(), self.n_thresholds)
        g_fit = _check_all_groups_present(g_fit, n_groups)
        block = group_fairness_constraints(scores, y_fit, g_fit, self.constraint, float(self.tolerance),
                                           smoothing=float(self.smoothing), thresholds=thresholds,
                                           group_labels=self.groups_,
                                           sample_weight=None if sample_weight is None else w_fit)
        problem = LinearModelProblem(objective, [block], name=f"FairClassifier({self.constraint})")
        # the first constrained solve starts at x = 0, where every group has the same rates (and
        # scores): feasible for every constraint here. From the unconstrained model the sigmoid rates
        # could saturate on the way (huge scores, vanishing gradients) at an infeasible stationary
        # point: equalized odds on a 500-row sample ended there with the penalty at 1e29.
        state = {"x": np.zeros(scores.n_features), "multipliers": None}

        def solve_at(bound, smoothing):
            block.bound, block.smoothing = bound, smoothing
            result = solve_linear(problem, solver, state["x"], state["multipliers"], self.max_iter, self.verbose,
                                  self.tol)
            state["x"] = result.x
            if result.multipliers is not None and result.multipliers.shape == (problem.n_constraints,):
                state["multipliers"] = result.multipliers
            return result.x, result

        weighted = sample_weight is not None
        if check_rows is None:
            w_check = w_fit if weighted else None

            def hard(x):   # the training scores at x are LinearScores' cache: no second product
                return fairness_gap(self.constraint, scores.scores(x), y_fit, g_fit, w_check)
        else:
            X_check, y_check, g_check = X[check_rows], y01[check_rows], groups.codes[check_rows]
            w_check = weight[check_rows] if weighted else None

            def hard(x):
                s = np.asarray(X_check @ x[:X.shape[1]]).ravel() + (x[-1] if self.fit_intercept else 0.0)
                return fairness_gap(self.constraint, s, y_check, g_check, w_check)

        if n_groups < 2:   # no pair of groups: no constraint, the unconstrained model is the answer
            x, result, record = free.x, free, Calibration(met=True)
        else:
            x, result, record = calibrate_bound(solve_at, hard, float(self.tolerance), float(self.smoothing),
                                                max_rounds=int(self.max_calibration),
                                                adapt_smoothing=self.constraint != "roc")
        self.coef_ = x[:X.shape[1]].reshape(1, -1).copy()
        self.intercept_ = np.array([x[-1] if self.fit_intercept else 0.0])
        self.solve_result_ = result
        self.calibration_ = record.as_dict("training rows" if check_rows is None else "validation rows")
        self.fit_gap_ = record.hard_values[record.chosen] if record.hard_values else 0.0
        self.n_iter_ = result.n_iter
        if not record.met:
            warnings.warn(f"tolerance: the hard {self.constraint} gap reached {self.fit_gap_:.4g} > "
                          f"{self.tolerance} after {len(record.bounds)} solves (calibration_ has the trace); "
                          "raise max_calibration or max_iter, or start from a smaller smoothing", ConvergenceWarning,
                          stacklevel=2)
        return self

    def _features_for_predict(self, X):
        if getattr(self, "sensitive_columns_", None):
            X, _ = split_sensitive(X, self.sensitive_columns_, True)
        return super()._features_for_predict(X)

    def constraint_report(self, X, y, sensitive_features):
        """The requested bound against the achieved gap on (X, y, groups): per-group rates and the solver's status.

        Parameters
        ----------
        X, y, sensitive_features
            As in `fit` (the groups must be among those seen in `fit`).

        Returns
        -------
        ConstraintReport
        """
        # decision_function drops the sensitive columns itself (drop_sensitive): pass it the full X
        _, sensitive = split_sensitive(X, sensitive_features, False)
        codes = self.group_encoder_.transform(sensitive)
        y = np.asarray(y)
        y01 = labels_to_index(y, self.classes_)
        scores = self.decision_function(X)
        return ConstraintReport.for_fairness(self, scores, y01, codes)


def _check_all_groups_present(codes, n_groups):
    """``codes`` of the training rows, checked to hold every group (a validation split can take all
    rows of a small group, whose rates could then not be constrained)."""
    present = np.unique(codes)
    if present.size == n_groups:
        return codes
    raise ValueError(f"validation_fraction: the training part lost group(s) "
                     f"{sorted(set(range(n_groups)) - set(present.tolist()))}; use a smaller fraction")


def _validation_split(codes, y01, fraction, random_state):
    """``(fit rows, validation rows)`` stratified by (group, label), or ``(None, None)`` without a fraction."""
    if fraction is None:
        return None, None
    rng = np.random.default_rng(random_state)
    cell = codes * 2 + y01
    fit_rows, check_rows = [], []
    for c in np.unique(cell):
        rows = np.flatnonzero(cell == c)
        rng.shuffle(rows)
        k = int(round(fraction * rows.size))
        k = min(k, rows.size - 1)
        check_rows.append(rows[:k])
        fit_rows.append(rows[k:])
    return np.sort(np.concatenate(fit_rows)), np.sort(np.concatenate(check_rows))
