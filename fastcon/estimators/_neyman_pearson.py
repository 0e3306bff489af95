r"""`NeymanPearsonClassifier`: bound the error on one class, minimise it on the other, scikit-learn style."""
from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ..metrics import np_umbrella_threshold, type_one_error
from ..metrics._neyman_pearson import np_umbrella_min_samples
from ..problems._linear_model import LinearLoss, LinearModelProblem, LinearScores
from ..problems._score_constraints import rate_bound_constraint
from ..solvers._common import check_choice
from ..solvers._validation import check_real
from ._input import (
    check_binary_target, check_fraction, check_random_state, check_sample_weight, fit_dataset, labels_to_index,
    ridge_for,
)
from ._linear import LinearConstrainedClassifier, warn_if_unconverged
from ._report import ConstraintReport
from ._solve import choose_solver, solve_linear
from ._umbrella import calibration_rows, strict_threshold

__all__ = ["NeymanPearsonClassifier"]

#: Candidate ridges of the umbrella fit, in units of the default 1/n (scikit-learn's C = 1), strongest
#: first: a path warm started from the most regularised model.
_RIDGE_FACTORS = (100.0, 10.0, 1.0, 0.1)


class NeymanPearsonClassifier(LinearConstrainedClassifier):
    r"""Neyman–Pearson linear classifier: type-I error at most ``bound`` (with probability 1 - ``delta``).

    The *constrained* class (``constrained_class``, default ``classes_[0]``, the class 0 of
    Tong, Feng & Li, "Neyman-Pearson classification algorithms and NP receiver operating
    characteristics", Science Advances 2018) is the one whose misclassification, the type-I error,
    must stay below ``bound``. By default (``delta=0.05``, nproc's default) the bound holds on new
    data: :math:`P(\text{type-I error} > \alpha) \le \delta` over the draw of the training rows.

    **With** ``delta`` **(default).** A ``calibration_fraction`` of the constrained class is held out.

    1. *Scores.* Ridge-regularised regression (``loss``) on the other rows, the ridge chosen among
       :math:`K = 4` candidates (100, 10, 1 and 0.1 times :math:`1/n`, scikit-learn's ``C = 1``;
       fewer when the held-out part is too small for the union bound below) by the type-II error
       at each candidate's calibrated threshold on a held-out part of the other class; the chosen
       one is refitted on every row but the calibration part. A threshold on the rows a model was
       fitted on says nothing about new rows when the model can memorise them (rare sparse
       features: type-I 0.05 on the training rows, 0.45-0.68 on new ones), and the smoothed
       type-I constraint of step 1 below is then no guarantee either, so it is not used here.
    2. *Threshold.* The umbrella order-statistic rule of Tong, Feng & Li on the calibration part at
       level :math:`\delta/K` (`fastcon.metrics.np_umbrella_threshold`). The calibration rows never
       enter a fit, so each candidate's refit is a fixed function of the other rows and the union
       bound gives :math:`P(\text{type-I} > \alpha) \le K\,\delta/K = \delta` whichever is chosen.
       Refitting on all rows after the threshold is set would void this; it is not offered.

    **With** ``delta=None``: the training rows' type-I error, no statement about new rows.

    1. *Scores.* The Neyman–Pearson problem of Lin & Deng and of Liu & Xu (see
       docs/references.md: [LD23], [LX25]) with a smooth surrogate,

       .. math::

           \min_{w, b}\ \frac1{n_1}\sum_{y_i \ne c_0}\phi(s_i) + \frac{\text{ridge}}2\|w\|^2
           \quad\text{s.t.}\quad \frac1{n_0}\sum_{y_i = c_0}\sigma(s_i/\tau) \le \alpha,

       :math:`s_i = w^\top x_i + b` (the smoothed type-I error bounded, the surrogate type-II error
       minimised), solved by the augmented Lagrangian method (hinge loss: switching subgradient).
    2. *Threshold.* The intercept is shifted to the :math:`\lceil(1-\alpha)n_0\rceil`-th smallest
       training score of the constrained class: at most :math:`\alpha n_0` of them are above it.

    Parameters
    ----------
    bound : float
        Bound :math:`\alpha` on the type-I error, in (0, 1).
    delta : float or None, default 0.05
        Violation probability of the umbrella guarantee, in (0, 1). It needs
        :math:`\lceil\log\delta/\log(1-\alpha)\rceil` held-out rows of the constrained class (59 at
        the defaults; a ValueError names the count). None thresholds on the training rows: the
        training type-I error is at most ``bound``, with no statement about new rows.
    constrained_class : label, optional
        The class whose error is bounded; default ``classes_[0]``.
    loss : {"logistic", "hinge"}
    ridge : float, optional
        :math:`\ge 0`, the L2 penalty on :math:`w` (not on the intercept). None (default): with
        ``delta``, chosen by held-out type-II error (above); with ``delta=None``, :math:`1/n`, the
        regularisation of scikit-learn's ``LogisticRegression(C=1.0)``.
    fit_intercept : bool
        The threshold step shifts the intercept; without an intercept the threshold is stored in
        ``threshold_`` and ``intercept_`` holds its negative.
    solver : {"auto", "augmented_lagrangian", "switching_subgradient"}
        As in `FairClassifier`.
    max_iter : int, optional
    tol : float
        Stationarity tolerance of the augmented Lagrangian (the gradient of the Lagrangian, as
        scikit-learn's ``LogisticRegression(tol=...)``).
    smoothing : float
        :math:`\tau` of the smoothed type-I error (``delta=None``).
    calibration_fraction : float
        With ``delta``: the fraction of the constrained class held out for the threshold, and of
        the other class held out to choose the ridge (then refitted on).
    random_state : int, numpy Generator or RandomState, optional
        Seed of the calibration split: None, an int in [0, 2**32) or a generator; anything else
        is a ValueError naming ``random_state``. A fit whose kept solve did not converge warns
        (``ConvergenceWarning``), the model may be degenerate.
    verbose : bool

    Attributes
    ----------
    coef_, intercept_, classes_
        As in scikit-learn's linear classifiers (``predict`` gives ``classes_[1]`` where the score is
        positive; the constrained class's scores are the negated ones when it is ``classes_[1]``).
    threshold_ : float
        The shift applied to the fitted scores.
    ridge_ : float
        The ridge of the kept model.
    selection_ : dict or None
        With ``delta``: the candidate ``ridges``, their ``validation_type_two_error``, the
        ``chosen_ridge``, the ``umbrella_level`` :math:`\delta/K` and the sizes of the
        calibration and validation parts. None with ``delta=None``.
    solve_result_ : fastcon.SolveResult
    fit_type_one_error_ : float
        Type-I error on the rows the threshold was set on.
    guarantee_ : str
        What holds on new data, in words (`ConstraintReport.guarantee`).
    """

    def __init__(self, bound=0.05, delta=0.05, *, constrained_class=None, loss="logistic", ridge=None,
                 fit_intercept=True, solver="auto", max_iter=None, tol=1e-4, smoothing=0.1, calibration_fraction=0.5,
                 random_state=None, verbose=False):
        self.bound = bound
        self.delta = delta
        self.constrained_class = constrained_class
        self.loss = loss
        self.ridge = ridge
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.smoothing = smoothing
        self.calibration_fraction = calibration_fraction
        self.random_state = random_state
        self.verbose = verbose

    def _check_params(self):
        check_fraction("bound", self.bound)
        if self.delta is not None:
            check_fraction("delta", self.delta)
        check_fraction("calibration_fraction", self.calibration_fraction)
        check_choice("loss", self.loss, ("logistic", "hinge"))
        check_real("smoothing", self.smoothing, positive=True)
        check_real("tol", self.tol, positive=True)
        if self.ridge is not None:
            check_real("ridge", self.ridge)
        check_random_state(self.random_state, draw=False)
        return choose_solver(self.solver, self.loss, "neyman_pearson")

    def fit(self, X, y, sample_weight=None):
        """Fit the scores, then set the threshold (class docstring: with ``delta`` or with ``delta=None``).

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
            Or a `dask.array` with one column chunk (numpy or scipy CSR chunks) and a running
            `distributed.Client`: its blocks are validated and kept on the workers, every pass runs
            there (`fastcon.problems._dask_design.DaskDesign`); y stays in memory.
        y : array-like of shape (n_samples,)
            Two classes of any type.
        sample_weight : array-like of shape (n_samples,), optional
            Row weights of the type-II loss, the smoothed type-I error and, with ``delta=None``,
            the threshold (a weight of 2 counts as a repeated row). They are divided by their
            mean (weights of 1e-320 act as ones), except that the default ``ridge=None`` is one
            over their total, which must be at least ``1 / np.finfo(np.float64).max``. With ``delta`` the held-out
            rows are counted unweighted: the umbrella guarantee is over draws of rows.
        """
        solver = self._check_params()
        X, y_index, self.classes_ = check_binary_target(self, X, y)
        n = X.shape[0]
        weight, weight_scale = (np.ones(n), 1.0) if sample_weight is None else check_sample_weight(sample_weight, n)
        if self.constrained_class is None:
            constrained = 0
        else:
            hits = np.flatnonzero(self.classes_ == self.constrained_class)
            if hits.size == 0:
                raise ValueError(f"constrained_class: {self.constrained_class!r} is not a class of y "
                                 f"({self.classes_.tolist()})")
            constrained = int(hits[0])
        # internally the constrained class is "0" and a positive score predicts the other class
        sign = 1.0 if constrained == 0 else -1.0
        y01 = (y_index != constrained).astype(np.int64)
        for label in (0, 1):
            if not weight[y01 == label].sum() > 0:
                name = self.classes_[constrained if label == 0 else 1 - constrained]
                raise ValueError(f"sample_weight: class {name!r} has zero total weight; Neyman-Pearson "
                                 "classification needs rows of both classes")
        dataset = fit_dataset(X, y01)
        if self.delta is None:
            x, result, ridge, s0, w0, threshold = self._fit_training_threshold(dataset, y01, weight, weight_scale,
                                                                               sample_weight is not None, solver)
        else:
            x, result, ridge, s0, w0, threshold = self._fit_umbrella(dataset, y01, weight, weight_scale, solver)
        d = X.shape[1]
        w, b = x[:d], (x[d] if self.fit_intercept else 0.0)
        threshold = strict_threshold(s0, threshold)
        self.threshold_ = threshold
        self.coef_ = (sign * w).reshape(1, -1)
        self.intercept_ = np.array([sign * (b - threshold)])
        self.ridge_ = ridge
        self.solve_result_ = result
        self.n_iter_ = result.n_iter
        self.fit_type_one_error_ = float(w0[s0 > threshold].sum() / w0.sum())
        if self.delta is None:
            self.guarantee_ = (f"no guarantee on new data: type-I error {self.fit_type_one_error_:.4g} <= "
                               f"{self.bound:g} on the training rows (delta=None)")
        else:
            self.guarantee_ = (f"certified: population type-I error <= {self.bound:g} with probability >= "
                               f"{1 - self.delta:g} (umbrella rule on {s0.size} held-out rows)")
        warn_if_unconverged(self, result, solver if self.delta is None else "augmented_lagrangian", X, ridge)
        return self

    def _fit_training_threshold(self, dataset, y01, weight, weight_scale, weighted, solver):
        """``delta=None``: the smoothed type-I bound in the fit and the threshold on the same rows."""
        scores = LinearScores(dataset, self.fit_intercept)
        ridge = ridge_for(self.ridge, float(weight.sum()) * weight_scale)
        objective = LinearLoss(scores, 2.0 * y01 - 1.0, weight * (y01 == 1), self.loss, ridge)
        block = rate_bound_constraint(scores, np.flatnonzero(y01 == 0), float(self.bound),
                                      smoothing=float(self.smoothing), name="smoothed type-I error",
                                      sample_weight=weight if weighted else None)
        problem = LinearModelProblem(objective, [block], name="NeymanPearsonClassifier")
        result = solve_linear(problem, solver, np.zeros(scores.n_features), None, self.max_iter, self.verbose,
                              self.tol)
        self.selection_ = None
        s0 = scores.scores(result.x)[y01 == 0]       # the training scores (cached at the solution)
        w0 = weight[y01 == 0]
        s0, w0 = s0[w0 > 0], w0[w0 > 0]     # a row of weight 0 is a row left out
        return result.x, result, ridge, s0, w0, _weighted_upper_quantile(s0, w0, float(self.bound))

    def _fit_umbrella(self, dataset, y01, weight, weight_scale, solver):
        r"""``delta``: scores by ridge-selected regression, the threshold by the umbrella rule (class docstring).

        The constrained class is split into a calibration part (``calibration_fraction``) and the
        rest, the other class into a validation part of the same fraction and the rest. Each
        candidate ridge :math:`\lambda_1 > \dots > \lambda_K` is fitted on the rests (warm started
        down the path), thresholded by the umbrella rule at level :math:`\delta/K` on the
        calibration part, and scored by its type-II error on the validation part; the winner is
        refitted on every row but the calibration part and thresholded again at :math:`\delta/K`.
        The calibration rows never enter a fit, so each candidate's refit is a fixed function of the
        other rows, and :math:`P(\text{type-I} > \alpha) \le \sum_k \delta/K = \delta` whichever is chosen.
        """
        bound, delta = float(self.bound), float(self.delta)
        rng = check_random_state(self.random_state)
        rows0, rows1 = np.flatnonzero(y01 == 0), np.flatnonzero(y01 == 1)
        calibration = calibration_rows(rows0, self.calibration_fraction, bound, delta, rng)
        k0 = calibration.size
        total = float(weight.sum()) * weight_scale
        if self.ridge is None:
            grid = [factor * ridge_for(None, total) for factor in _RIDGE_FACTORS]
            # fewer candidates when the calibration part is too small for the union bound over all
            while len(grid) > 1 and k0 < np_umbrella_min_samples(bound, delta / len(grid)):
                grid = grid[1:-1] if len(grid) > 2 else grid[-1:]
        else:
            grid = [ridge_for(self.ridge, total)]
        rest = np.ones(y01.size, dtype=bool)
        rest[calibration] = False
        validation = None
        if len(grid) > 1:
            validation = np.sort(rng.permutation(rows1)[:int(round(self.calibration_fraction * rows1.size))])
            select = rest.copy()
            select[validation] = False
            if not (np.any(y01[select] == 1) and validation.size):
                validation, grid = None, [ridge_for(None, total)]   # too few rows to compare candidates
        level = delta / len(grid)
        cal_scores = np.empty(calibration.size)

        def problem_on(rows):   # one problem per row set; the candidates change only its ridge
            objective = LinearLoss(LinearScores(dataset, self.fit_intercept, rows=rows), 2.0 * y01[rows] - 1.0,
                                   weight[rows], self.loss, grid[0])
            return LinearModelProblem(objective, [], name="NeymanPearsonClassifier scores")

        def fit(problem, ridge, x0):
            problem.objective.ridge = float(ridge)
            return solve_linear(problem, solver, x0, None, self.max_iter, self.verbose, self.tol)

        def calibrate(problem, x):
            s0 = problem.linear_scores.scores_on(x, calibration, cal_scores)
            return s0, float(np_umbrella_threshold(s0, bound, level))

        x0 = np.zeros(dataset.n_features + int(self.fit_intercept))
        path = []
        if validation is not None:
            candidates = problem_on(np.flatnonzero(select))
            val_scores = np.empty(validation.size)
            w_val = weight[validation]
            for ridge in grid:
                result = fit(candidates, ridge, x0)
                x0 = result.x
                _, threshold = calibrate(candidates, result.x)
                sv = candidates.linear_scores.scores_on(result.x, validation, val_scores)
                type_two = float(w_val[sv <= threshold].sum() / w_val.sum())
                path.append({"ridge": ridge, "validation_type_two_error": type_two, "x": result.x})
            best = min(range(len(path)), key=lambda k: (path[k]["validation_type_two_error"], k))
            ridge, x0 = path[best]["ridge"], path[best]["x"]
        else:
            ridge = grid[0]
        final = problem_on(np.flatnonzero(rest))
        result = fit(final, ridge, x0)
        s0, threshold = calibrate(final, result.x)
        self.selection_ = {"ridges": [p["ridge"] for p in path] or [ridge], "chosen_ridge": ridge,
                           "validation_type_two_error": [p["validation_type_two_error"] for p in path],
                           "umbrella_level": level, "calibration_rows": int(calibration.size),
                           "validation_rows": 0 if validation is None else int(validation.size)}
        return result.x, result, ridge, s0.copy(), np.ones(s0.size), threshold

    def constraint_report(self, X, y, sample_weight=None):
        """Type-I error on (X, y) against ``bound``, both class errors, and the solver's status.

        Parameters
        ----------
        X, y
            As in `fit`.
        sample_weight : array-like of shape (n_samples,), optional
            Row weights of the error rates, as in `fit` (with ``delta=None`` a weighted fit meets
            ``bound`` on its own rows with its own weights).

        Returns
        -------
        ConstraintReport
            ``per_group`` holds each class's (weighted) error rate; its ``n`` is the row count.
        """
        check_is_fitted(self, "coef_")
        y = np.asarray(y)
        labels_to_index(y, self.classes_)
        y_pred = self.predict(X)
        if y.shape[0] != y_pred.shape[0]:
            raise ValueError(f"y: has {y.shape[0]} labels but X has {y_pred.shape[0]} rows")
        constrained = self.classes_[0] if self.constrained_class is None else self.constrained_class
        if sample_weight is None:
            weight = np.ones(y.shape[0])
            value = type_one_error(y == constrained, y_pred == constrained, constrained_class=True)
        else:
            weight, _ = check_sample_weight(sample_weight, y.shape[0])
            value = _weighted_error(y_pred, y, constrained, weight)
        per_class = {c: {"n": int(np.sum(y == c)), "error": _weighted_error(y_pred, y, c, weight)}
                     for c in self.classes_.tolist()}
        result = self.solve_result_
        certificate = {k: result.info[k] for k in ("kkt_stationarity", "complementarity") if k in result.info}
        return ConstraintReport("type_one_error", float(self.bound), float(value), bool(value <= self.bound),
                                per_class, result.status, result.message, certificate,
                                fit_value=self.fit_type_one_error_, guarantee=getattr(self, "guarantee_", ""))


def _weighted_error(y_pred, y, label, weight):
    """The weighted share of the rows of class ``label`` predicted otherwise (NaN without weight there)."""
    rows = y == label
    total = float(weight[rows].sum())
    return float(weight[rows] @ (y_pred[rows] != label)) / total if total > 0 else float("nan")


def _weighted_upper_quantile(scores, weight, bound):
    r"""The smallest score :math:`t` with :math:`\sum_{s_i > t} c_i \le \alpha\sum_i c_i`.

    With unit weights this is the :math:`\lceil(1-\alpha)n\rceil`-th smallest score: at most
    :math:`\alpha n` scores lie above it (ties stay below, so "above" never exceeds the budget).
    """
    values, inverse = np.unique(scores, return_inverse=True)
    at_or_below = np.cumsum(np.bincount(inverse, weights=weight, minlength=values.size))
    above = at_or_below[-1] - at_or_below
    # the budget with a relative slack for the rounding of the cumulative sums
    k = int(np.argmax(above <= bound * at_or_below[-1] * (1.0 + 1e-12)))
    return float(values[k])

