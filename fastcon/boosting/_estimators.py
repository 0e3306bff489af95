r"""`NeymanPearsonGBMClassifier` and `FairGBMClassifier`: Lin & Deng's constrained boosting, scikit-learn style."""
from __future__ import annotations

import copy
import numbers
import warnings
from types import SimpleNamespace

import numpy as np
from scipy.special import expit, log_softmax, softmax
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .._kernels._boosting import logistic_losses, softmax_losses
from .._results import SolveResult
from ..estimators._input import (
    check_fraction, check_random_state, drop_columns, encode_fit_groups, labels_to_index, resolve_sensitive,
    split_sensitive,
)
from ..estimators._linear import ConstrainedClassifier
from ..estimators._certify import guarantee_text, not_certified_message
from ..estimators._report import ConstraintReport, _solve_summary, class_error_report
from ..estimators._solve import Calibration, calibrate_bound
from ..metrics import np_umbrella_threshold
from ..problems._dask_design import is_dask_collection
from ..estimators._umbrella import calibration_rows, strict_threshold
from ..problems._score_problems import GroupLossGap, NeymanPearsonScores
from ..solvers._common import check_choice
from ..solvers._validation import check_count, check_real
from ._backends import BACKENDS
from ._models import DEFAULT_ROUNDS, LightGBMScoreModel, XGBoostScoreModel
from ._rate_fit import RATE_CONSTRAINTS, fit_rate_constrained
from ._validate import check_threads

__all__ = ["NeymanPearsonGBMClassifier", "FairGBMClassifier"]

_MODELS = {"xgboost": XGBoostScoreModel, "lightgbm": LightGBMScoreModel}


def _python(label):
    return label.item() if isinstance(label, np.generic) else label


def _check_seed(value):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)) or value < 0:
        raise ValueError(f"random_state: expected an integer >= 0 (the fit is deterministic), got {value!r}")
    return int(value)


def _without_state(result):
    """The solve's result without the training-time objects of ``info`` (``state``: the ensemble is kept apart
    as ``ensemble_``; ``problem``, ``inner``: problem objects that hold the training rows)."""
    info = {k: v for k, v in result.info.items() if k not in ("state", "problem", "inner")}
    return SolveResult(result.x, result.status, result.message, n_iter=result.n_iter, objective=result.objective,
                       max_violation=result.max_violation, multipliers=result.multipliers, history=result.history,
                       counters=result.counters, info=info, solver=result.solver)


def _dual_step(value):
    """``dual_step`` as the solvers take it: ``"auto"`` or a float."""
    return value if isinstance(value, str) else float(value)


def _encode_classes(y):
    """Class ids and classes of checked labels (in-memory and dask fits alike).

    Parameters
    ----------
    y : ndarray of shape (n_samples,)
        The labels, already checked for shape (any type).

    Returns
    -------
    labels : ndarray of int64, shape (n_samples,)
        Each row's index into ``classes``.
    classes : ndarray
        The sorted distinct labels, at least two (else a ValueError).
    """
    check_classification_targets(y)
    classes, index = np.unique(y, return_inverse=True)
    if classes.size < 2:
        raise ValueError(f"y: needs at least two classes, got {classes.size} class")
    return index.astype(np.int64), classes


class _GBMClassifier(ConstrainedClassifier):
    """Shared parts: parameter checks, the score model, prediction from ``ensemble_``, save."""

    def _common_checks(self):
        check_choice("backend", self.backend, BACKENDS)
        check_count("rounds", self.rounds)
        check_count("max_iter", self.max_iter)
        check_real("primal_step", self.primal_step, positive=True)
        if isinstance(self.dual_step, str):
            check_choice("dual_step", self.dual_step, ("auto",))
        else:
            check_real("dual_step", self.dual_step, positive=True)
        check_threads(self.n_threads)
        _check_seed(self.random_state)
        if self.params is not None and not isinstance(self.params, dict):
            raise TypeError(f"params: expected a dict of {self.backend} parameters, got {type(self.params).__name__}")

    def _multi_class(self):
        """Whether the parameters fit more than two classes (the ``multi_class`` tag)."""
        raise NotImplementedError

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = self._multi_class()
        return tags

    def _score_model(self, X, labels, n_classes):
        return _MODELS[self.backend](X, labels, n_classes, rounds=self.rounds, params=self.params,
                                     seed=_check_seed(self.random_state), n_threads=self.n_threads)

    def _check_target(self, X, y):
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, y_numeric=False)
        return (X, *_encode_classes(y))

    def decision_function(self, X):
        """Raw scores of the boosted ensemble: shape (n,) for two classes (positive: ``classes_[1]``), else (n, J).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Or a `dask.array` with one column chunk: each block is scored on the worker that holds
            it, the scores returned as a numpy array (`fastcon.boosting._dask`).
        """
        check_is_fitted(self, "ensemble_")
        if is_dask_collection(X):                 # scored block by block on the workers (fastcon.boosting._dask)
            from ._dask import dask_features

            return self._ensemble_scores(dask_features(self, X))
        X = self._features_for_predict(X)
        return self._ensemble_scores(X)

    def _ensemble_scores(self, X):
        """``ensemble_``'s scores of checked rows; a dask X is scored on the workers that hold its blocks."""
        if is_dask_collection(X):
            from ._dask import dask_ensemble_scores

            return dask_ensemble_scores(self.ensemble_, X)
        return self.ensemble_.predict_scores(X)

    def predict(self, X):
        """Class labels: ``classes_[1]`` where the score is positive (two classes), else the largest score's class."""
        s = self.decision_function(X)
        index = (s > 0).astype(np.int64) if s.ndim == 1 else np.argmax(s, axis=1)
        return self.classes_[index]

    def predict_proba(self, X):
        """Probabilities of the logistic / softmax model of the scores, shape (n, J)."""
        s = self.decision_function(X)
        if s.ndim == 2:
            return softmax(s, axis=1)
        p = expit(s)
        p[(s > 0.0) & (p <= 0.5)] = np.nextafter(0.5, 1.0)   # keep argmax consistent with predict
        return np.column_stack([1.0 - p, p])

    def predict_log_proba(self, X):
        """Logarithm of `predict_proba`, computed without underflow."""
        s = self.decision_function(X)
        if s.ndim == 2:
            return log_softmax(s, axis=1)
        return np.column_stack([-np.logaddexp(0.0, s), -np.logaddexp(0.0, -s)])

    def save(self, path):
        """Write the fitted estimator to ``path`` without pickle (`fastcon.load_model` reads it back)."""
        from ._persist import save

        save(self, path)

    def _finish(self, model, result, stacklevel=3):
        """``ensemble_``, ``solve_result_``, ``n_iter_`` and ``n_rounds_`` from the kept solve, and the warnings of a
        solver that failed or of a degenerate model (``stacklevel``: of those warnings)."""
        # rebuilt from its text: the training booster holds the binned training rows
        self.ensemble_ = model.ensemble(result.state).standalone()
        self.solve_result_ = _without_state(result)
        self.n_iter_ = result.n_iter
        self.n_rounds_ = self.ensemble_.n_rounds
        if result.status not in ("converged", "max_iter"):
            warnings.warn(f"{type(self).__name__}: the solver ended with status {result.status!r}: {result.message}",
                          ConvergenceWarning, stacklevel=stacklevel)
        # degenerate models: ABPP / CBPR end with "max_iter" by design (no stopping test by default;
        # whether the bounds are met is warned by fit), but a model without trees or with non-finite
        # training scores is no fit at all
        # a Dask model's training scores are on the workers: it reduces the two checks there
        checks = getattr(model, "score_checks", None)
        if checks is not None:
            finite, constant = checks(result.state)
        else:
            finite = np.all(np.isfinite(result.x))
            constant = finite and np.all(np.ptp(result.x, axis=0) == 0.0)
        if not finite:
            warnings.warn(f"{type(self).__name__}: the kept solve's training scores are not finite (the solve "
                          "diverged); lower primal_step or dual_step", ConvergenceWarning, stacklevel=stacklevel)
        elif self.n_rounds_ == 0 or constant:
            warnings.warn(f"{type(self).__name__}: the model is constant (no tree split the training rows: "
                          f"{self.n_rounds_} rounds, every row has the same score), so predict returns one class; "
                          "check the features and params that forbid splits (min_gain_to_split / gamma, "
                          "min_data_in_leaf / min_child_weight)", ConvergenceWarning, stacklevel=stacklevel)


class NeymanPearsonGBMClassifier(_GBMClassifier):
    r"""Gradient-boosted Neyman–Pearson classifier: bounded error rates on chosen classes (Lin & Deng [LD23]).

    Solves the Neyman–Pearson problem (3.1) of Lin & Deng, "GBM-based Bregman Proximal Algorithms
    for Constrained Learning" (2023), on the training scores :math:`F` of a boosted ensemble,

    .. math::

        \min_F\ \sum_i w_i\,\ell_i(F_i)\quad\text{s.t.}\quad
        \sum_{i:\,b_i = j}\ell_i(F_i) \le \alpha_j = n_j\,e_j\log J\quad\text{for each bounded class } j,

    :math:`\ell_i` the cross-entropy (logistic for two classes, softmax for :math:`J \ge 3`),
    :math:`e_j` the requested error rate of class :math:`j` and :math:`\alpha_j` the bound of
    Lin & Deng §6 (at :math:`F = 0` every loss is :math:`\log J`, so every bound starts violated by
    the factor :math:`1/e_j`; with two classes a misclassified row has loss :math:`\ge \log 2`, so
    the surrogate bound implies a training error rate :math:`\le e_j`). Two classes follow the
    Credit experiment: the objective is the loss of the unbounded class (:math:`w = 0` on the
    bounded one, the type-II error); with every class bounded, or with :math:`J \ge 3` classes, it is
    the total loss (:math:`w = 1`). The solver is ABPP (`fastcon.solvers.abpp`, Algorithm 1): each
    iteration a dual step on the class multipliers :math:`\lambda` and a proximal step of ``rounds``
    Newton-boosting rounds on
    :math:`\sum_i (w_i + \lambda_{b_i})\ell_i + \frac1{2\tau}\|F - F^k\|^2` from the current scores
    (`XGBoostScoreModel` / `LightGBMScoreModel`, one booster grown step by step); the model is the
    sum of the trees of all ``max_iter`` steps.

    **Calibration.** The surrogate bounds of Lin & Deng are loose in the wrong direction for an
    error-rate target: a mean loss of :math:`e_j\log J` forces almost every row of the class far
    inside its region (synthetic data, 4,000 rows, :math:`e_0 = 0.1`: training type-I error 0.0,
    type-II error 0.49). Their remedy is a reset of :math:`\alpha_j` halfway through
    (`fastcon.solvers.abpp`'s ``bound_reset``). Here, as in `fastcon.estimators.NeymanPearsonClassifier`,
    the bounds are scaled by one factor :math:`\kappa` (:math:`\alpha_j = \kappa\, n_j e_j\log J`,
    :math:`\kappa = 1` first) searched by `fastcon.estimators._solve.calibrate_bound` until
    :math:`\max_j \mathrm{err}_j / e_j \in [0.8, 1]` on the training rows, at most ``max_calibration``
    ABPP runs (``calibration_`` has the trace); the run with the lowest objective among those meeting
    every bound is kept.

    **Threshold on held-out rows (two classes, float** ``bound`` **, default** ``delta=0.05`` **).** As
    in `fastcon.estimators.NeymanPearsonClassifier`: a random ``calibration_fraction`` of the
    constrained class is held out and never enters ABPP (the calibration above then only tunes the
    scores on the other rows); the threshold is the umbrella order statistic of Tong, Feng & Li on
    the held-out rows' ensemble scores (`fastcon.metrics.np_umbrella_threshold` at level
    :math:`\delta`), moved halfway to the next larger held-out score, and the other class is predicted
    iff the constrained class's score is above it. The held-out rows are independent of the
    ensemble, so :math:`P(\text{type-I error} > \alpha) \le \delta` over the draw of the data.
    With ``delta=None`` the training rows' sign of the scores decides, with no statement about new rows.

    Parameters
    ----------
    backend : {"lightgbm", "xgboost"}
    bound : float or dict
        A float bounds the error rate of ``constrained_class`` (two classes only); a dict maps class
        labels to error-rate bounds :math:`e_j \in (0, 1)` (any number of classes, at least one).
    delta : float or None, default 0.05
        Violation probability of the held-out guarantee, in (0, 1); it needs
        `fastcon.metrics._neyman_pearson.np_umbrella_min_samples` (bound, delta) held-out rows of the
        constrained class (59 at 0.05 and 0.05; fewer is a ValueError naming
        ``calibration_fraction`` and the count). Only with a float ``bound`` (two classes): with a
        dict it is a ValueError, set ``delta=None`` (error rates bounded on the training rows).
    constrained_class : label, optional
        With a float ``bound``: the bounded class, default ``classes_[0]``.
    rounds : int
        Boosting rounds per proximal step (default 10; `XGBoostScoreModel` says why).
    max_iter : int
        ABPP iterations (proximal steps of ``rounds`` rounds each).
    primal_step, dual_step : float
        :math:`\tau_0` and :math:`\sigma_0` of ABPP (Lin & Deng's code: 0.1 and 0.1).
        ``dual_step="auto"``: :math:`1/(\tau_0L_g^2)`, the largest value of ABPP's step condition
        (`fastcon.solvers.abpp.abpp_lipschitz_constant`).
    max_calibration : int
        Largest number of ABPP runs of the bound calibration (1: the paper's bounds, no calibration).
    calibration_fraction : float
        With ``delta``: the fraction of the constrained class held out for the threshold (default 0.5).
    params : dict, optional
        Tree parameters passed to the library (``max_depth``, ``learning_rate``, ``num_leaves``, ...);
        names the library does not know are a UserWarning. LightGBM's ``min_data_in_leaf`` defaults
        to ``min(20, max(1, n // 4))`` for n rows (`LightGBMScoreModel`).
    n_threads : int
        Library threads (default 1: same bits at every run), at most the CPUs this process may use
        (a ValueError names the limit).
    random_state : int
        The library's seed (default 0) and, with ``delta``, the seed of the held-out split (then in
        [0, 2**32), `fastcon.estimators._input.check_random_state`).
    verbose : bool

    Attributes
    ----------
    classes_ : ndarray
    calibration_ : dict
        The factors :math:`\kappa` tried (``bounds``), the training ``hard_values``
        :math:`\max_j \mathrm{err}_j/e_j`, objectives, statuses, the ``chosen`` run and ``met``.
    bound_ : dict
        Class label -> error-rate bound :math:`e_j`.
    surrogate_bounds_ : dict
        Class label -> :math:`\alpha_j`, the bound on the class's summed training loss.
    ensemble_ : fastcon.boosting.BoostedEnsemble
        One booster and the weights of its ranges of rounds.
    n_rounds_ : int
        Boosting rounds in the model (``max_iter * rounds`` unless LightGBM stopped a step early).
    solve_result_ : fastcon.SolveResult
        ABPP's result (``x``: training scores; multipliers; history).
    fit_errors_ : dict
        Class label -> error rate of `predict` on the rows ABPP was fitted on (with ``delta``: the
        threshold applied, the held-out rows excluded).
    threshold_ : float
        With ``delta``: the umbrella threshold on the constrained class's scores (the ensemble's
        score, negated when the constrained class is ``classes_[1]``); `decision_function` subtracts
        it. 0.0 with ``delta=None``.
    umbrella_ : dict or None
        With ``delta``: ``calibration_rows`` (held out), ``fit_rows``, ``delta`` and
        ``calibration_type_one_error`` (the held-out rows' type-I error at the threshold). None with
        ``delta=None``.
    guarantee_ : str
        What holds on new data, in words (`fastcon.estimators.ConstraintReport.guarantee`).
    """

    def __init__(self, backend="lightgbm", bound=0.05, delta=0.05, *, constrained_class=None, rounds=DEFAULT_ROUNDS,
                 max_iter=50, primal_step=0.1, dual_step=0.1, max_calibration=8, calibration_fraction=0.5, params=None,
                 n_threads=1, random_state=0, verbose=False):
        self.backend = backend
        self.bound = bound
        self.delta = delta
        self.constrained_class = constrained_class
        self.calibration_fraction = calibration_fraction
        self.rounds = rounds
        self.max_iter = max_iter
        self.primal_step = primal_step
        self.dual_step = dual_step
        self.max_calibration = max_calibration
        self.params = params
        self.n_threads = n_threads
        self.random_state = random_state
        self.verbose = verbose

    def _multi_class(self):
        # a float bound bounds one class of two; a dict bound takes any number of classes
        return isinstance(self.bound, dict)

    def _class_bounds(self):
        """Class index -> error-rate bound, from ``bound`` / ``constrained_class``."""
        J = self.classes_.size
        if isinstance(self.bound, dict):
            if not self.bound:
                raise ValueError("bound: the dict of class bounds is empty")
            if self.constrained_class is not None:
                raise ValueError("constrained_class: only with a float bound (a dict names its classes)")
            bounds = {}
            for label, e in self.bound.items():
                hits = np.flatnonzero(self.classes_ == label)
                if hits.size == 0:
                    raise ValueError(f"bound: {label!r} is not a class of y ({self.classes_.tolist()})")
                bounds[int(hits[0])] = check_fraction(f"bound[{label!r}]", e)
            return bounds
        bound = check_fraction("bound", self.bound)
        if J != 2:
            raise ValueError(f"bound: a single bound needs two classes; y has {J}. Only binary classification is "
                             "supported with a float bound: pass a dict class -> bound")
        if self.constrained_class is None:
            return {0: bound}
        hits = np.flatnonzero(self.classes_ == self.constrained_class)
        if hits.size == 0:
            raise ValueError(f"constrained_class: {self.constrained_class!r} is not a class of y "
                             f"({self.classes_.tolist()})")
        return {int(hits[0]): bound}

    def fit(self, X, y):
        """Fit the boosted ensemble by ABPP under the class bounds (class docstring).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            CSR stays sparse. Or a `dask.array` with one column chunk (numpy or CSR blocks) and a
            running `distributed.Client`: the boosting rounds run on the workers through
            ``xgboost.dask`` / ``lightgbm.dask`` with the same objective, X stays there
            (`fastcon.boosting._dask`; ``solve_result_.x`` then holds the prox steps' coefficients,
            not the training scores).
        y : array-like of shape (n_samples,)
            Labels of any type, two or more classes (in memory with a dask X).
        """
        self._common_checks()
        if self.delta is not None:
            check_fraction("delta", self.delta)
            if isinstance(self.bound, dict):
                raise ValueError("delta: the held-out (umbrella) guarantee is implemented for two classes with a "
                                 "float bound; with a dict bound set delta=None (error rates bounded on the "
                                 "training rows)")
            check_fraction("calibration_fraction", self.calibration_fraction)
            check_random_state(self.random_state, draw=False)
        if is_dask_collection(X):   # the same fit on the workers' rows (fastcon.boosting._dask)
            from ._dask import fit_neyman_pearson

            return fit_neyman_pearson(self, X, y)
        X, labels, self.classes_ = self._check_target(X, y)
        J = self.classes_.size
        bounds = self._class_bounds()
        X_held, X, labels = self._fit_rows(X, labels, bounds)   # held-out rows never reach ABPP
        base = NeymanPearsonScores.from_error_rates(labels, J, bounds,
                                                    objective_weights=self._objective_weights(bounds))
        model = self._score_model(X, labels, J)
        rounds = check_count("max_calibration", self.max_calibration)

        def errors(state, shift=0.0):
            F = model.scores(state)
            if shift:
                F = F - shift
            predicted = (F > 0).astype(np.int64) if F.ndim == 1 else np.argmax(F, axis=1)
            return np.array([np.mean(predicted[labels == j] != j) for j in range(J)])

        err, record, hard_value = self._solve_calibrated(model, base, bounds, errors, rounds, X_held, labels.size)
        self._finish_np(err, record, bounds, hard_value, stacklevel=3)
        return self

    def _fit_rows(self, X, labels, bounds):
        """The held-out rows of the threshold and the rows ABPP fits on (in-memory and dask fits alike).

        Parameters
        ----------
        X : {ndarray, CSR matrix, dask.array.Array} of shape (n, d)
            The checked features.
        labels : ndarray of int64, shape (n,)
            Class ids.
        bounds : dict
            Class index -> error-rate bound (`_class_bounds`); with ``delta`` the first is the
            constrained class.

        Returns
        -------
        X_held : same type as X, or None
            With ``delta``: the held-out rows of the constrained class (`_holdout`), which never
            reach ABPP; None with ``delta=None``.
        X, labels
            The other rows, in their order, and their class ids.
        """
        if self.delta is None:
            return None, X, labels
        constrained = next(iter(bounds))
        holdout = self._holdout(labels, constrained, bounds[constrained])
        keep = np.ones(labels.size, dtype=bool)
        keep[holdout] = False
        return X[holdout], X[np.flatnonzero(keep)], labels[keep]

    def _objective_weights(self, bounds):
        """The ``objective_weights`` of `NeymanPearsonScores.from_error_rates` for ``bounds`` (class index -> bound).

        With two classes and one bound the type-II error is the objective: no weight on the
        bounded class (Lin & Deng's Credit set-up). Otherwise None: the total loss.
        """
        if self.classes_.size == 2 and len(bounds) == 1:
            return {next(iter(bounds)): 0.0}
        return None

    def _solve_calibrated(self, model, base, bounds, errors, rounds, X_held, n_fit):
        r"""ABPP under the calibrated bounds, the fitted attributes, the threshold and the training error rates.

        The steps of `fit` that need the score model, the same for an in-memory and a Dask model:
        the bound calibration (`fastcon.estimators._solve.calibrate_bound`, at most ``rounds`` ABPP
        runs), then ``calibration_``, ``bound_``, ``surrogate_bounds_``, `_finish` and, with
        held-out rows, the umbrella threshold (``threshold_``, ``umbrella_``).

        Parameters
        ----------
        model : score model
            `XGBoostScoreModel` / `LightGBMScoreModel` or `fastcon.boosting._dask.DaskBoostingScoreModel`.
        base : NeymanPearsonScores
            The problem at the paper's bounds (calibration factor 1).
        bounds : dict
            Class index -> error-rate bound.
        errors : callable
            ``errors(state, shift=0.0)``: every class's training error rate of `predict` at
            ``state``, two classes predicted positive iff score - shift > 0.
        rounds : int
            ``max_calibration``, checked.
        X_held : rows or None
            The held-out rows of the constrained class (`_fit_rows`), None without ``delta``.
        n_fit : int
            The number of rows ABPP fits on.

        Returns
        -------
        err : ndarray of shape (J,)
            Every class's training error rate of `predict` (the threshold applied).
        record : Calibration
            The calibration's trace.
        hard_value : float or None
            :math:`\max_j \mathrm{err}_j / e_j` of the kept run when the bounds are not met, else None.
        """
        from ..solvers.abpp import abpp

        bounded = np.array(sorted(bounds))
        targets = np.array([bounds[j] for j in bounded])
        problems = {}

        def solve_at(factor, _smoothing):
            problem = copy.copy(base)
            problem.bounds = base.bounds * factor
            result = abpp(problem, model, max_iter=self.max_iter, primal_step=float(self.primal_step),
                          dual_step=_dual_step(self.dual_step), verbose=bool(self.verbose))
            problems[factor] = (problem, result)
            # ABPP's last multipliers can be 0 on an over-satisfied bound that still binds the
            # trade-off (the dual iterates oscillate): report no multipliers, so that a met bound is
            # always loosened towards the target rather than taken as inactive
            return result.state, SimpleNamespace(multipliers=None, objective=result.objective, status=result.status)

        def hard(state):
            return float(np.max(errors(state)[bounded] / targets))

        if rounds == 1:
            state, summary = solve_at(1.0, 1.0)
            h = hard(state)
            record = Calibration(bounds=[1.0], smoothings=[1.0], hard_values=[h], objectives=[summary.objective],
                                 statuses=[summary.status], chosen=0, met=h <= 1.0)
        else:
            state, _, record = calibrate_bound(solve_at, hard, 1.0, 1.0, max_rounds=rounds, adapt_smoothing=False)
        problem, result = problems[record.bounds[record.chosen]]
        self.calibration_ = record.as_dict("training rows")
        self.bound_ = {_python(self.classes_[j]): e for j, e in bounds.items()}
        self.surrogate_bounds_ = {_python(self.classes_[j]): float(a) for j, a in zip(problem.classes, problem.bounds)}
        self._finish(model, result, stacklevel=4)
        self.threshold_, self.umbrella_ = 0.0, None
        if X_held is None:
            err = errors(result.state)
        else:   # the threshold, then the fit rows' errors of predict (the threshold applied)
            constrained = next(iter(bounds))
            self._set_threshold(X_held, constrained, bounds[constrained], n_fit)
            err = errors(result.state, shift=self._sign() * self.threshold_)
        return err, record, None if record.met else hard(result.state)

    def _finish_np(self, err, record, bounds, hard_value, stacklevel):
        r"""``fit_errors_`` and ``guarantee_`` of a fit, and the warning when its bounds are not met.

        Parameters
        ----------
        err : ndarray of shape (J,)
            Every class's training error rate of `predict`.
        record : Calibration
            The calibration's trace (``met``: every bound met on the training rows).
        bounds : dict
            Class index -> error-rate bound.
        hard_value : float or None
            :math:`\max_j \mathrm{err}_j / e_j` of the kept run when not ``record.met``.
        stacklevel : int
            Of the ``ConvergenceWarning``, so that it names the line that called `fit`.
        """
        self.fit_errors_ = {_python(c): float(err[j]) for j, c in enumerate(self.classes_)}
        if self.umbrella_ is None:
            self.guarantee_ = (f"no guarantee on new data: errors {'within' if record.met else 'NOT within'} the "
                               "bounds on the training rows")
        else:
            self.guarantee_ = (f"certified: population type-I error <= {bounds[next(iter(bounds))]:g} with "
                               f"probability >= {1 - self.umbrella_['delta']:g} (umbrella rule on "
                               f"{self.umbrella_['calibration_rows']} held-out rows)")
        if not record.met:
            warnings.warn(f"bound: the training error rates reached {hard_value:.3g} x their bounds after "
                          f"{len(record.bounds)} ABPP runs (calibration_ has the trace); raise max_calibration or "
                          "max_iter", ConvergenceWarning, stacklevel=stacklevel)

    def _holdout(self, labels, constrained, bound):
        """The calibration rows: a random ``calibration_fraction`` of the constrained class (sorted row indices)."""
        rows0 = np.flatnonzero(labels == constrained)
        return calibration_rows(rows0, self.calibration_fraction, bound, float(self.delta),
                                check_random_state(self.random_state))

    def _sign(self):
        """+1 when the constrained class is ``classes_[0]`` (the ensemble's score is the other class's), else -1."""
        return 1.0 if self.constrained_class is None or self.classes_[0] == self.constrained_class else -1.0

    def _set_threshold(self, X_cal, constrained, bound, n_fit):
        """The umbrella threshold on the held-out rows' ensemble scores (``threshold_``, ``umbrella_``)."""
        delta = float(self.delta)
        sign = 1.0 if constrained == 0 else -1.0
        s0 = sign * self._ensemble_scores(X_cal)   # higher: the other class
        self.threshold_ = strict_threshold(s0, float(np_umbrella_threshold(s0, bound, delta)))
        self.umbrella_ = {"calibration_rows": int(s0.size), "fit_rows": int(n_fit), "delta": delta,
                          "calibration_type_one_error": float(np.mean(s0 > self.threshold_))}

    def decision_function(self, X):
        """Scores of the boosted ensemble less the threshold: shape (n,) for two classes (positive: ``classes_[1]``),
        else (n, J).

        With two classes the ensemble's score ``F`` becomes ``F - threshold_`` when the constrained
        class is ``classes_[0]`` and ``F + threshold_`` when it is ``classes_[1]`` (``threshold_`` is
        on the scale of the constrained class's scores, higher: the other class), so that `predict`,
        `predict_proba` and `constraint_report` apply it.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        """
        s = super().decision_function(X)
        threshold = getattr(self, "threshold_", 0.0)   # files saved before the threshold existed: none
        if s.ndim == 1 and threshold != 0.0:
            s = s - self._sign() * threshold
        return s

    def constraint_report(self, X, y):
        """Each bounded class's error rate on (X, y) against its bound, every class's error, the solver's status.

        Returns
        -------
        ConstraintReport
            ``constraint`` is ``"class_error_rates"``; ``value`` the largest excess
            :math:`\\max_j(\\text{error}_j - e_j)` over the bounded classes present in ``y`` (NaN
            when none is), ``bound`` 0, ``satisfied`` whether every bounded class present is within
            its bound; ``per_group`` maps each class to ``n``, ``error`` and ``bound`` (None when
            unbounded); ``fit_value`` is the largest excess on the training rows.
        """
        check_is_fitted(self, "ensemble_")
        y = np.asarray(y)
        labels_to_index(y, self.classes_)
        return class_error_report(self, y, self.predict(X))


class FairGBMClassifier(_GBMClassifier):
    r"""Gradient-boosted classifier with a bound on a group-fairness gap, on stock XGBoost or LightGBM.

    **Rate constraints** (``constraint`` one of ``"demographic_parity"``, ``"equal_opportunity"``,
    ``"false_positive_parity"``, ``"equalized_odds"``: the names and hard gaps of
    `fastcon.FairClassifier`, any number of groups; with J >= 3 classes every class's one-vs-rest
    rates, read on its margin :math:`F_j - \max_{k \ne j} F_k`): one boosting run of
    ``n_estimators`` rounds on the proxy Lagrangian of Cotter, Jiang, Gupta, Wang, Narayan, You &
    Sridharan, "Optimization with Non-Differentiable Constraints with Applications to Fairness,
    Recall, Churn, and Other Goals" (JMLR 2019) — the trees descend the loss plus multipliers times *smoothed* group rates, the
    multipliers ascend on the *hard* gaps between rounds — and the kept model is the round of least
    loss (on the rows the gap is measured on) whose gap is within ``bound``, round 0 (no tree)
    excepted (`fastcon.boosting._rate_fit` has the math):

    .. math::

        \min_F\ \sum_i \ell(F_i; y_i)\quad\text{s.t.}\quad r_a(F) - r_b(F) \le \text{bound}
        \quad\text{for all groups } a \ne b,

    :math:`r_k` the rate of ``predict``'s labels in group :math:`k`. Prediction is group-blind:
    the groups enter the fit only.

    **Mean-loss gap** (``constraint="mean_loss_gap"``): the fairness problem of Lin & Deng,
    "GBM-based Bregman Proximal Algorithms for Constrained Learning" (2023), Section 4 — every
    group's mean cross-entropy within ``bound`` (nats) of every other's, binary or multi-class —
    solved by CBPR (`fastcon.solvers.cbpr`, Algorithm 2) from the empty ensemble, each outer step
    a convexified subproblem (4.2) solved by ``inner_iter`` ABPP iterations of ``rounds`` boosting
    rounds each. It bounds a loss gap, not a rate gap: on Adult it lowers the loss gap from 0.174
    to 0.051 and leaves the error-rate gap where it was.

    Parameters
    ----------
    constraint : str
        ``"demographic_parity"`` (default), ``"equal_opportunity"``, ``"false_positive_parity"``,
        ``"equalized_odds"`` or ``"mean_loss_gap"``.
    bound : float
        The bound: on the hard rate gap (in (0, 1]), or on the mean-loss gap (nats, > 0).
    backend : {"lightgbm", "xgboost"}
    n_estimators : int
        Boosting rounds of a rate-constrained fit (default 100).
    smoothing : float
        :math:`\tau > 0` of the smoothed rates :math:`\sigma(F/\tau)`, in score (logit) units,
        fixed for the fit (the linear estimator's calibration may halve its ``smoothing``; here
        the multipliers follow the hard gaps, which do not depend on it).
    dual_step : float or "auto"
        The multipliers' step. Rate constraints: :math:`\eta` of the ascent on the hard gaps;
        ``"auto"``: 2 (`fastcon.boosting._rate_fit.AUTO_DUAL_STEP`).
        Mean-loss gap: :math:`\sigma_0` of the inner ABPP; ``"auto"``: :math:`1/(\tau_0L_g^2)`, the
        largest value of ABPP's step condition (`fastcon.solvers.abpp.abpp_lipschitz_constant`;
        Lin & Deng's fixed 0.1 breaks it by orders of magnitude on Adult, docs/design.md).
    validation_fraction : float, optional
        Rate constraints: hold out this fraction of every (group, label) cell; the trees are
        fitted on the rest, the multipliers step on the held-out hard gap and the kept round is
        chosen on it. None (default): the training rows, on which the gap is then met.
    confidence : float, optional
        Rate constraints, two classes: certify the gap on new data, as `fastcon.FairClassifier`
        does. The held-out part (``validation_fraction``, default 0.4 here) is split in half: one
        half steers (its Clopper-Pearson bound, widened by 1.28 standard errors, in place of the
        hard gap), the other bounds the population gap once, with probability at least
        ``confidence`` over the draw of the rows (``certified_gap_``, ``guarantee_``). A certified
        gap above ``bound`` warns (``UserWarning``).
    rounds, max_iter, inner_iter, primal_step, prox_weight, scale
        Mean-loss gap only: boosting rounds per proximal step, CBPR outer iterations, ABPP
        iterations per outer one, :math:`\tau_0`, CBPR's :math:`L` (default: the curvature bound of
        the concave parts) and the constraints' :math:`\beta` (default :math:`\min_a n_a`).
    params, n_threads, random_state, verbose
        As in `NeymanPearsonGBMClassifier`.
    drop_sensitive : bool
        With ``sensitive_features`` naming columns of X, drop them from the features.

    Attributes
    ----------
    classes_, groups_ : list of the group labels, ensemble_, n_rounds_, solve_result_
    fit_gap_ : float
        The hard gap (rate constraints; on the validation rows with ``validation_fraction``) or
        the mean-loss gap on the training rows; above ``bound``, `fit` warns
        (``ConvergenceWarning``).
    certified_gap_ : float or None
        With ``confidence``: the certified bound on the population gap; None otherwise.
    guarantee_ : str
        What holds on new data: ``"certified: ..."``, ``"not certified: ..."`` or ``"no guarantee
        on new data: ..."`` (the gap is met on the rows it was measured on).
    """

    def __init__(self, constraint="demographic_parity", bound=0.02, *, backend="lightgbm", n_estimators=100,
                 smoothing=0.5, dual_step="auto", validation_fraction=None, confidence=None, rounds=DEFAULT_ROUNDS,
                 max_iter=10,
                 inner_iter=10, primal_step=0.1, prox_weight=None, scale=None, params=None, n_threads=1, random_state=0,
                 drop_sensitive=False, verbose=False):
        self.constraint = constraint
        self.bound = bound
        self.backend = backend
        self.n_estimators = n_estimators
        self.smoothing = smoothing
        self.dual_step = dual_step
        self.validation_fraction = validation_fraction
        self.confidence = confidence
        self.rounds = rounds
        self.max_iter = max_iter
        self.inner_iter = inner_iter
        self.primal_step = primal_step
        self.prox_weight = prox_weight
        self.scale = scale
        self.params = params
        self.n_threads = n_threads
        self.random_state = random_state
        self.drop_sensitive = drop_sensitive
        self.verbose = verbose

    def _multi_class(self):
        # every constraint takes any number of classes (rates: every class's one-vs-rest rates);
        # confidence certifies binary rates only
        return self.confidence is None

    def fit(self, X, y, sensitive_features=None):
        """Fit the boosted ensemble under the fairness bound (class docstring).

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
            Or, with ``constraint="mean_loss_gap"``, a `dask.array`, as in
            `NeymanPearsonGBMClassifier.fit` (``sensitive_features`` then an in-memory array of
            the groups).
        y : array-like of shape (n_samples,)
            Labels of any type, two or more classes (two with ``confidence``).
        sensitive_features : array-like, column name(s) or position(s)
            The group of every row (any hashable labels; several columns form intersectional
            groups). A list of strings names columns only when X is a DataFrame holding every
            one of them; otherwise it is one group label per row. With ``drop_sensitive`` the
            columns read from X (by name or position) are dropped from the features, and again
            from the X given to ``predict``, ``decision_function`` and `constraint_report` (pass
            X in fit's layout). Not given: a UserWarning, and the rate constraints fit one group
            (no constraint: the unconstrained booster).
        """
        self._common_checks()
        check_choice("constraint", self.constraint, RATE_CONSTRAINTS + ("mean_loss_gap",))
        check_real("bound", self.bound, positive=True)
        if self.constraint == "mean_loss_gap":
            return self._fit_mean_loss_gap(X, y, sensitive_features)
        if self.bound > 1:
            raise ValueError(f"bound: a rate gap lies in [0, 1]; got {self.bound}")
        check_count("n_estimators", self.n_estimators)
        check_real("smoothing", self.smoothing, positive=True)
        if self.validation_fraction is not None:
            check_fraction("validation_fraction", self.validation_fraction)
        if self.confidence is not None:
            check_fraction("confidence", self.confidence)
        X, sensitive, self.sensitive_columns_ = resolve_sensitive(X, sensitive_features, self.drop_sensitive)
        if is_dask_collection(X):
            raise ValueError(f"X: a dask collection fits with constraint='mean_loss_gap' only; constraint="
                             f"{self.constraint!r} needs X in memory (its per-round rates are not reduced on the "
                             "workers)")
        X, labels, self.classes_ = self._check_target(X, y)
        if sensitive is None:
            warnings.warn("sensitive_features: not given, so all rows form one group and the constraint is void "
                          "(the unconstrained booster)", UserWarning, stacklevel=2)
            sensitive = np.zeros(X.shape[0], dtype=np.int64)
        if self.confidence is not None and self.classes_.size != 2:
            raise ValueError(f"y: confidence certifies rates of two classes, got {self.classes_.size}. Only binary "
                             "classification is supported with confidence; use confidence=None for every class's "
                             "one-vs-rest rates")
        groups = encode_fit_groups(sensitive, X.shape[0])
        self.group_encoder_, self.groups_ = groups, list(groups.labels)
        ensemble, result = fit_rate_constrained(
            X, labels, groups.codes, self.constraint, float(self.bound), backend=self.backend,
            n_estimators=int(self.n_estimators), params=self.params, seed=_check_seed(self.random_state),
            n_threads=self.n_threads, smoothing=float(self.smoothing), dual_step=_dual_step(self.dual_step),
            n_classes=self.classes_.size, validation_fraction=self.validation_fraction, confidence=self.confidence,
            group_labels=self.groups_, class_labels=[_python(c) for c in self.classes_], verbose=bool(self.verbose))
        self.ensemble_, self.solve_result_ = ensemble, result
        self.n_iter_ = self.n_rounds_ = result.n_iter
        self.fit_gap_ = result.info["gap"]
        where = result.info["measured_on"]
        self.certified_gap_ = result.info.get("certified_gap")
        if self.certified_gap_ is None:
            self.guarantee_ = ("no guarantee on new data: the bound is "
                               f"{'met' if self.fit_gap_ <= self.bound else 'NOT met'} on the {where}")
        else:
            n_certify = result.info["certify_rows"]
            self.guarantee_ = guarantee_text(self.constraint, self.certified_gap_, self.bound, self.confidence,
                                             n_certify)
            if self.certified_gap_ > self.bound:
                warnings.warn(not_certified_message(self.constraint, self.certified_gap_, self.bound,
                                                    self.confidence, n_certify), UserWarning, stacklevel=2)
        if result.status == "no_feasible_iterate":
            what = (f"hard {self.constraint} gap" if self.confidence is None else
                    f"{self.constraint} bound (Clopper-Pearson, widened)")
            warnings.warn(f"bound: the {what} on the {where} exceeded {self.bound} in every one of "
                          f"{result.info['rounds_trained']} rounds; kept round {result.n_iter}, of the least, "
                          f"{self.fit_gap_:.4g}; raise n_estimators or dual_step, or a larger bound",
                          ConvergenceWarning, stacklevel=2)
        return self

    def _fit_mean_loss_gap(self, X, y, sensitive_features):
        """The CBPR fit of ``constraint="mean_loss_gap"`` (class docstring)."""
        check_count("inner_iter", self.inner_iter)
        if self.prox_weight is not None:
            check_real("prox_weight", self.prox_weight, positive=True)
        if self.scale is not None:
            check_real("scale", self.scale, positive=True)
        if sensitive_features is None:
            raise ValueError("sensitive_features: required (the group of every row)")
        # the rule of the linear estimators (`fastcon.estimators._input`): a list of strings names
        # columns only of a DataFrame X holding them all, else it is one label per row; the columns
        # dropped (names, or non-negative positions) are dropped again from the X of predict
        X, sensitive, self.sensitive_columns_ = resolve_sensitive(X, sensitive_features, self.drop_sensitive)
        if is_dask_collection(X):   # the same fit on the workers' rows (fastcon.boosting._dask)
            from ._dask import fit_fair

            return fit_fair(self, X, y, sensitive)
        X, labels, self.classes_ = self._check_target(X, y)
        groups = self._fit_groups(sensitive, X.shape[0])
        problem = self._gap_problem(GroupLossGap, labels, groups)
        model = self._score_model(X, labels, self.classes_.size)
        n_iter, xi = self._solve_cbpr(problem, model)
        self._finish_gap(xi, n_iter, stacklevel=4)
        self.certified_gap_ = None
        self.guarantee_ = "no guarantee on new data: the mean-loss gap is bounded on the training rows"
        return self

    def _fit_groups(self, sensitive, n_rows):
        """The encoded groups of the training rows (``group_encoder_``, ``groups_`` set), at least two.

        Parameters
        ----------
        sensitive : array-like
            The resolved group labels of the rows (`fastcon.estimators._input.resolve_sensitive`).
        n_rows : int
            The number of training rows.

        Returns
        -------
        groups
            The `fastcon.estimators._input.encode_fit_groups` encoding (``codes``, ``labels``, ``n_groups``).
        """
        groups = encode_fit_groups(sensitive, n_rows)
        if groups.n_groups < 2:
            raise ValueError(f"sensitive_features: needs at least two groups, got {groups.n_groups}")
        self.group_encoder_ = groups
        self.groups_ = list(groups.labels)
        return groups

    def _gap_problem(self, problem_class, labels, groups):
        """The fairness problem of the training rows: ``problem_class`` (`GroupLossGap` or its Dask
        version) with ``bound`` and ``scale``.

        Parameters
        ----------
        problem_class : type
            `GroupLossGap` or a subclass.
        labels : ndarray of int64
            Class ids of the training rows.
        groups
            The encoded groups (`_fit_groups`).

        Returns
        -------
        GroupLossGap
        """
        return problem_class(labels, self.classes_.size, groups.codes, float(self.bound),
                             scale=None if self.scale is None else float(self.scale))

    def _solve_cbpr(self, problem, model):
        """CBPR on ``problem`` with ``model``, then `_finish`.

        Parameters
        ----------
        problem : GroupLossGap
            From `_gap_problem`.
        model : score model
            In memory or `fastcon.boosting._dask.DaskBoostingScoreModel`.

        Returns
        -------
        n_iter : int
            CBPR's outer iterations.
        xi : ndarray
            Every group's mean training loss at the kept state.
        """
        from ..solvers.cbpr import cbpr

        result = cbpr(problem, model, outer_iter=self.max_iter, inner_iter=self.inner_iter,
                      prox_weight=None if self.prox_weight is None else float(self.prox_weight), primal_step=float(self.primal_step),
                      dual_step=_dual_step(self.dual_step), verbose=bool(self.verbose))
        self._finish(model, result, stacklevel=5)
        return result.n_iter, problem.group_means(model, result.state)

    def _finish_gap(self, xi, n_iter, stacklevel):
        """``fit_gap_`` from the groups' mean losses ``xi``, and the warning when it is above ``bound``.

        Parameters
        ----------
        xi : ndarray
            Every group's mean training loss.
        n_iter : int
            CBPR's outer iterations (named by the warning).
        stacklevel : int
            Of the ``ConvergenceWarning``, so that it names the line that called `fit`.
        """
        self.fit_gap_ = float(xi.max() - xi.min())
        if self.fit_gap_ > self.bound:
            warnings.warn(f"bound: the training mean-loss gap reached {self.fit_gap_:.4g} > {self.bound} after "
                          f"{n_iter} CBPR iterations of {self.inner_iter} ABPP steps; raise max_iter or "
                          "inner_iter", ConvergenceWarning, stacklevel=stacklevel)

    def _features_for_predict(self, X):
        columns = list(getattr(self, "sensitive_columns_", None) or [])
        if columns:
            if any(isinstance(k, (int, np.integer)) and k < 0 for k in columns) and len(getattr(X, "shape", ())) == 2:
                # files saved before the dropped positions were stored non-negative kept them as given
                columns = sorted({int(k) % X.shape[1] for k in columns})
            X = drop_columns(X, columns)
        return super()._features_for_predict(X)

    def constraint_report(self, X, y, sensitive_features):
        """The gap on (X, y, groups) against ``bound``, with every group's rates (or mean loss and error rate).

        Returns
        -------
        ConstraintReport
            Rate constraints: as `fastcon.FairClassifier.constraint_report` (``per_group``: ``n``,
            selection, true-positive and false-positive rates). ``"mean_loss_gap"``: ``value`` the
            largest mean-loss difference between two groups present; ``per_group`` maps each group
            to ``n``, ``mean_loss`` and ``error_rate``. ``fit_value``: the gap where fit measured it.
        """
        check_is_fitted(self, "ensemble_")
        _, sensitive = split_sensitive(X, sensitive_features, False)
        codes = self.group_encoder_.transform(sensitive)
        y = np.asarray(y)
        labels = labels_to_index(y, self.classes_)
        F = self.decision_function(X)
        if F.shape[0] != labels.shape[0] or codes.shape[0] != labels.shape[0]:
            raise ValueError(f"y: has {labels.shape[0]} labels, X {F.shape[0]} rows, sensitive_features "
                             f"{codes.shape[0]} values")
        if self.constraint != "mean_loss_gap":
            if F.ndim == 2:
                return ConstraintReport.for_class_rates(self, F, labels, codes)
            return ConstraintReport.for_fairness(self, F, labels, codes)
        losses = np.empty(F.shape[0])
        (logistic_losses if F.ndim == 1 else softmax_losses)(np.ascontiguousarray(F), labels, losses)
        predicted = (F > 0).astype(np.int64) if F.ndim == 1 else np.argmax(F, axis=1)
        per_group, means = {}, []
        for k, label in enumerate(self.groups_):
            rows = codes == k
            if not np.any(rows):
                continue
            means.append(float(losses[rows].mean()))
            per_group[label] = {"n": int(rows.sum()), "mean_loss": means[-1],
                                "error_rate": float(np.mean(predicted[rows] != labels[rows]))}
        value = float(max(means) - min(means)) if means else float("nan")
        return ConstraintReport("mean_loss_gap", float(self.bound), value, bool(value <= self.bound),
                                per_group, *_solve_summary(self), fit_value=self.fit_gap_,
                                guarantee="no guarantee on new data: the mean-loss gap is bounded on the training rows")
