r"""`MultiClassNeymanPearsonClassifier`: bounds on chosen classes' error rates, the priority class's error minimised."""
from __future__ import annotations

import numbers
import warnings

import numpy as np
from scipy.special import log_softmax, softmax
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ..datasets import Dataset
from ..problems._domains import Whole
from ..problems._multiclass_np import ClassPairwiseRisk, multiclass_neyman_pearson
from ..problems._problem import ConstrainedProblem
from ..problems._validation import check_out, check_x
from ..solvers._common import check_choice
from ..solvers._validation import check_count, check_optional_count, check_real
from ..solvers.augmented_lagrangian import augmented_lagrangian
from ._input import check_fraction, check_random_state, check_sample_weight, ridge_for
from ._linear import ConstrainedClassifier, warn_if_unconverged
from ._report import ConstraintReport, _solve_summary, class_error_report
from ._umbrella import calibration_rows, certified_class_shift

__all__ = ["MultiClassNeymanPearsonClassifier"]

#: Losses the estimator accepts (the margin losses of `fastcon.problems.multiclass_neyman_pearson` that
#: are differentiable, as the augmented Lagrangian's L-BFGS needs).
LOSSES = ("sigmoid", "logistic")


class _PooledRidge:
    r"""Objective term :math:`\sum_k c_k L_k(x) + \frac{\lambda}2\|x_{\text{weights}}\|^2` (intercepts not penalised).

    One `ClassPairwiseRisk` :math:`L_k` per entry of ``terms`` with fixed weights :math:`c_k`; the
    estimator passes one term (the priority class) or every class weighted by its share of the
    rows (the unconstrained model). ``penalised`` masks the entries of :math:`x` the ridge reads.
    """

    def __init__(self, terms, weights, ridge, penalised):
        self.terms = list(terms)
        self.weights = np.asarray(weights, dtype=np.float64)
        self.ridge = float(ridge)
        self.penalised = penalised
        self.n_features = self.terms[0].n_features
        self.n_samples = int(sum(t.n_samples for t in self.terms))
        self._work = np.empty(self.n_features)

    @property
    def rows_read(self):
        return int(sum(t.rows_read for t in self.terms))

    def reset_counters(self):
        for t in self.terms:
            t.reset_counters()

    def _ridge_value(self, x):
        w = x[self.penalised]
        return 0.5 * self.ridge * float(w @ w)

    def value(self, x):
        x = check_x(x, self.n_features)
        return float(sum(c * t.value(x) for c, t in zip(self.weights, self.terms))) + self._ridge_value(x)

    def value_and_subgradient(self, x, out):
        x = check_x(x, self.n_features)
        out = check_out(out, self.n_features)
        value = self.weights[0] * self.terms[0].value_and_subgradient(x, out)
        out *= self.weights[0]
        for c, t in zip(self.weights[1:], self.terms[1:]):
            value += c * t.value_and_subgradient(x, self._work)
            out += c * self._work
        out[self.penalised] += self.ridge * x[self.penalised]
        return float(value) + self._ridge_value(x)


class MultiClassNeymanPearsonClassifier(ConstrainedClassifier):
    r"""Multi-class Neyman–Pearson linear classifier: a bound on the error rate of chosen classes.

    With classes :math:`c = 0..C-1`, scores :math:`s_c(x) = w_c^\top x + b_c` and the prediction
    :math:`\hat y(x) = \arg\max_c s_c(x)`, the user bounds the **hard** error rate
    :math:`P(\hat y \ne k \mid y = k) \le \alpha_k` of every class :math:`k` in ``bound``
    and the fit minimises the error of the priority class :math:`p`. The fit has two levels:

    1. **Surrogate problem.** The multi-class Neyman–Pearson problem of Ma, Lin & Yang, "Quadratically
       regularized subgradient methods for weakly convex optimization with weakly convex
       constraints" (ICML 2020), eq. (11) (`fastcon.problems.multiclass_neyman_pearson`),

       .. math::

           \min_{W, b}\ L_p(W, b) + \frac{\text{ridge}}2\|W\|_F^2
           \quad\text{s.t.}\quad L_k(W, b) \le r_k,\ k \ne p,\qquad
           L_k = \frac1{n_k}\sum_{y_i = k}\sum_{l \ne k}\phi(s_k(x_i) - s_l(x_i)),

       with the sigmoid loss :math:`\phi(z) = 1/(1 + e^{z})` of the paper (``loss="sigmoid"``):
       :math:`\phi(s_k - s_l)` is a smoothed indicator that class :math:`l` outscores :math:`k`, so
       :math:`L_k` smooths the expected number of classes ranked above the true one, which is at
       least the error indicator. The paper's ball :math:`\|w_c\| \le \lambda` is replaced by the
       ridge (its Lagrangian form), so the augmented Lagrangian method with L-BFGS
       (`fastcon.solvers.augmented_lagrangian`) applies; the intercepts are an implicit column of
       ones (the terms' ``intercept``: X is not copied to append it), not penalised.
    2. **Calibration of the levels.** The unconstrained model (below) is solved first; with its
       surrogate values :math:`L_k^0` and hard training errors :math:`h_k^0`, round 0 solves at
       :math:`r_k = L_k^0\,\text{clip}(\alpha_k/h_k^0, 1/4, 4)`, which puts each level in the
       loss's own units (a logistic :math:`L_k` is never near an error rate). After each solve
       (warm-started from the previous point and multipliers) the hard training error
       :math:`h_k` of every bounded class is measured; a class with :math:`h_k > \alpha_k` gets
       :math:`r_k \leftarrow r_k\cdot\text{clip}(0.95\,\alpha_k/h_k, 1/4, 4)` (tightened), and a
       class whose constraint is active (positive multiplier) with :math:`h_k < 0.8\,\alpha_k`
       is loosened by the same rule (a looser level lowers the priority error; an inactive one
       would change nothing). The loop stops when no class needs either, when two solves in a
       row found no feasible point and the same hard errors (tighter levels are out of reach),
       or after ``max_calibration`` solves. Among the solves meeting every bound the one with the
       smallest priority error is kept; if none meets them, the one with the smallest
       :math:`\max_k h_k/\alpha_k`, and a `ConvergenceWarning` says so (``calibration_["met"]``
       is False).

    3. **Certification on held-out rows** (``delta``, default 0.05). Levels 1 and 2 bound the
       errors on the rows they were fitted on, which says little about new rows. So a
       ``calibration_fraction`` of every class with a bound :math:`\alpha_k < 1` is held out of
       levels 1-2, and all such classes' scores are then raised by one shift :math:`t`: on a
       path of shifts fixed by the fitting rows' margins, tested in order by exact binomial
       tests on the held-out rows, the last one accepted before the first failure
       (`fastcon.estimators._umbrella.certified_class_shift`). The statement, over the draw of
       the rows: :math:`P(\text{certified and } \exists k: e_k > \alpha_k) \le \delta`, that
       is, a certified fit meets **every** bound on new rows at once except with probability
       :math:`\delta`; a fit that is not certified carries no guarantee. With two classes this is
       the umbrella rule of Tong, Feng & Li (Science Advances, 2018). The shift moves errors between the bounded classes and the others, not between two
       bounded classes: when those confusions alone exceed a bound, or the held-out rows are too
       few to tell, no shift is certified; the most conservative one is kept and a UserWarning
       says so (``certification_["certified"]`` is False). Refitting on all rows after the shift
       is set would void the guarantee; it is not offered. ``delta=None`` skips this level:
       the bounds then hold on the training rows only.

    Without ``bound`` the fit is the unconstrained model: the objective is
    :math:`\sum_k (n_k/n) L_k`, the mean pairwise loss over all rows.

    Parameters
    ----------
    bound : dict, optional
        Class label -> bound :math:`\alpha_k \in (0, 1]` on that class's hard error rate. Every
        class except the priority class needs a bound (a class with neither a bound nor the
        objective would be learnt from nothing); 1.0 bounds nothing. None: no bound (the
        unconstrained model).
    priority_class : label, optional
        The class :math:`p` whose error is minimised; default: the one class of ``y`` not in
        ``bound`` (required when ``bound`` bounds every class); unused without
        ``bound`` (it must still be a class of ``y``).
    delta : float or None, default 0.05
        Probability, over the draw of the rows, that some bounded class's error on new data
        exceeds its bound (level 3 above), in (0, 1). Each class with a bound :math:`\alpha_k < 1`
        needs :math:`\lceil\log\delta/\log(1-\alpha_k)\rceil` held-out rows (59 at 0.05 and
        0.05; a ValueError names the count). None: bounds on the training rows only.
    loss : {"sigmoid", "logistic"}
        :math:`\phi`. ``"logistic"``, :math:`\log(1 + e^{-z})`, is convex and makes the scores
        log-odds between pairs of classes, :math:`\sigma(s_k - s_l) = p_k / (p_k + p_l)` under the
        softmax model, so ``predict_proba`` (the softmax of the scores) exists for it only.
    ridge : float, optional
        :math:`\ge 0`, the L2 penalty on :math:`W` (not on the intercepts). None (default):
        :math:`1/n`, the regularisation of scikit-learn's ``LogisticRegression(C=1.0)``, with
        :math:`n` the (weighted) rows the scores are fitted on (with ``delta``, those not held out).
    fit_intercept : bool
    max_iter : int, optional
        Outer iterations of each augmented Lagrangian solve; default the solver's own.
    max_calibration : int
        Largest number of solves in the level calibration.
    calibration_fraction : float
        With ``delta``: the fraction of each bounded class's rows held out to certify the shift.
    random_state : int, numpy Generator or RandomState, optional
        Seed of the held-out split (as in `NeymanPearsonClassifier`).
    verbose : bool
        Progress of each solve on stderr.

    Attributes
    ----------
    coef_ : ndarray of shape (n_classes, n_features)
    intercept_ : ndarray of shape (n_classes,)
        The fitted intercepts plus ``shift_`` (so nonzero with ``delta`` even when
        ``fit_intercept=False``).
    classes_ : ndarray of shape (n_classes,)
    priority_class_ : label or None
        :math:`p` (None without bounds).
    bound_ : dict
        Class label -> :math:`\alpha_k`, in the order of ``classes_``.
    levels_ : dict
        Class label -> the surrogate level :math:`r_k` of the kept solve.
    fit_errors_ : dict
        Class label -> hard error rate on the rows the scores were fitted on (weighted by
        ``sample_weight``; with ``delta``, the rows not held out, after the shift).
    shift_ : ndarray of shape (n_classes,)
        :math:`t`, added to the intercept of each class with a bound below 1 (0 for the other
        classes; zeros with ``delta=None`` or without bounds).
    certification_ : dict or None
        With ``delta`` and bounds: ``delta``, ``certified``, ``p_value`` (the largest class's
        exact binomial p-value at ``shift_``), ``candidates_tested``, and per bounded class
        the held-out ``calibration_rows`` and ``calibration_errors``. None otherwise.
    guarantee_ : str
        What holds on new data, in words (`ConstraintReport.guarantee`).
    calibration_ : dict
        ``levels`` (one list of :math:`r_k` per solve, in ``bound_`` order), ``errors``
        (the :math:`h_k` reached), ``priority_errors``, ``statuses``, ``chosen``, ``met``.
    solve_result_ : fastcon.SolveResult
        The kept solve (status, multipliers, KKT residuals in ``info``).
    n_iter_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        With a DataFrame ``X``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, 3000)
    >>> X = 3.0 * np.eye(3)[y] + rng.normal(size=(3000, 3))
    >>> clf = MultiClassNeymanPearsonClassifier({1: 0.05, 2: 0.05}, random_state=0).fit(X, y)
    >>> clf.certification_["certified"], clf.priority_class_
    (True, 0)
    >>> all(clf.certification_["calibration_errors"][k] <= 0.05 for k in (1, 2))
    True
    """

    def __init__(self, bound=None, *, delta=0.05, priority_class=None, loss="sigmoid", ridge=None,
                 fit_intercept=True, max_iter=None, max_calibration=8, calibration_fraction=0.5, random_state=None,
                 verbose=False):
        self.bound = bound
        self.delta = delta
        self.priority_class = priority_class
        self.loss = loss
        self.ridge = ridge
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.max_calibration = max_calibration
        self.calibration_fraction = calibration_fraction
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ parameters
    def _check_params(self):
        check_choice("loss", self.loss, LOSSES)
        if self.ridge is not None:
            check_real("ridge", self.ridge)
        check_count("max_calibration", self.max_calibration)
        check_optional_count("max_iter", self.max_iter)
        if self.delta is not None:
            check_fraction("delta", self.delta)
        check_fraction("calibration_fraction", self.calibration_fraction)
        check_random_state(self.random_state, draw=False)
        if self.bound is not None and not isinstance(self.bound, dict):
            raise TypeError(f"bound: expected a dict of class label -> error bound, got "
                            f"{type(self.bound).__name__}")

    def _resolve_classes(self, classes):
        """``(priority index or None, {class index: bound})`` from the parameters and ``classes_``."""
        position = {label: k for k, label in enumerate(classes.tolist())}

        def index_of(label, field):
            key = label.item() if isinstance(label, np.generic) else label
            try:
                return position[key]
            except (KeyError, TypeError):
                raise ValueError(f"{field}: {label!r} is not a class of y ({classes.tolist()})") from None

        bounds = {}
        for label, bound in (self.bound or {}).items():
            k = index_of(label, "bound")
            if isinstance(bound, bool) or not isinstance(bound, numbers.Real) or not 0.0 < bound <= 1.0:
                raise ValueError(f"bound: the bound of class {label!r} must be a number in (0, 1], "
                                 f"got {bound!r}")
            bounds[k] = float(bound)
        if not bounds:
            if self.priority_class is not None:
                index_of(self.priority_class, "priority_class")
            return None, {}
        free = [k for k in range(classes.size) if k not in bounds]
        if self.priority_class is None:
            if len(free) != 1:
                raise ValueError(f"priority_class: required, since bound leaves "
                                 f"{'no class' if not free else f'{len(free)} classes'} without a bound "
                                 f"(classes {classes.tolist()})")
            p = free[0]
        else:
            p = index_of(self.priority_class, "priority_class")
            if p in bounds:
                raise ValueError(f"priority_class: {self.priority_class!r} also has a bound (an entry of bound); "
                                 "the priority class's error is minimised, not bounded")
            if len(free) > 1:
                others = [_python(classes[k]) for k in free if k != p]
                raise ValueError(f"bound: classes {others} have no bound; every class except "
                                 "priority_class needs one (1.0 leaves a class's error free)")
        return p, dict(sorted(bounds.items()))

    # ------------------------------------------------------------------ fit
    def fit(self, X, y, sample_weight=None):
        """Fit the scores under the class bounds, calibrating the surrogate levels (class docstring).

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
            CSR input stays sparse; the intercepts are an implicit column of ones (no copy of X).
        y : array-like of shape (n_samples,)
            At least two classes, labels of any type.
        sample_weight : array-like of shape (n_samples,), optional
            Row weights of every class's loss and hard error (each class needs a positive total
            among the fitted rows). With ``delta`` the held-out rows are counted unweighted (a row
            of weight 0 counts too): the guarantee is over draws of rows.
        """
        self._check_params()
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, y_numeric=False)
        check_classification_targets(y)
        classes, y_index = np.unique(y, return_inverse=True)
        if classes.size < 2:
            raise ValueError(f"y: needs at least 2 classes; got {classes.size} class")
        self.classes_ = classes
        C = classes.size
        n, d = X.shape
        p, bounds = self._resolve_classes(classes)
        weight, weight_scale = (np.ones(n), 1.0) if sample_weight is None else check_sample_weight(sample_weight, n)
        # With delta, a calibration part of every class with a bound below 1 is held out of the fit
        # (class docstring); the fit reads the other rows, through the terms' ``rows``.
        calibration = {}
        if self.delta is not None and any(bound < 1.0 for bound in bounds.values()):
            rng = check_random_state(self.random_state)
            for k, bound in bounds.items():
                if bound < 1.0:
                    calibration[k] = calibration_rows(np.flatnonzero(y_index == k), self.calibration_fraction, bound,
                                                      float(self.delta), rng, name=f"class {_python(classes[k])!r}")
        fitted = np.ones(n, dtype=bool)
        for rows in calibration.values():
            fitted[rows] = False
        fit_rows = np.flatnonzero(fitted) if calibration else None
        class_weight = np.bincount(y_index[fitted], weights=weight[fitted], minlength=C)
        if np.any(class_weight <= 0):
            raise ValueError(f"sample_weight: class(es) {classes[class_weight <= 0].tolist()} have zero total weight"
                             + (" among the rows not held out for calibration" if calibration else ""))

        # The intercepts are the terms' implicit column of ones (index d of every row of W): X itself
        # goes to the terms, not a stacked copy (issue 33).
        intercept = bool(self.fit_intercept)
        dataset = Dataset(X, y_index.astype(np.int64), sample_weight=None if sample_weight is None else weight,
                          copy=False, task="multiclass")
        # "features" (vec of W^T) is the CSR kernels' native layout; dense data costs the same in both
        layout = "features" if dataset.is_sparse else "classes"
        bounded = list(bounds)
        bound_values = np.array([bounds[k] for k in bounded])
        if bounded:
            levels = np.ones(C - 1)   # [MLY20] order: every class but p, increasing; all are bounded here
            levels[:] = [bounds[k] for k in range(C) if k != p]
            base = multiclass_neyman_pearson(dataset, p, levels, radius=np.inf, loss=self.loss, layout=layout,
                                             intercept=intercept, rows=fit_rows)
            terms, term_weights, constraints = [base.objective], [1.0], base.constraints
        else:
            terms = [ClassPairwiseRisk(dataset, k, C, self.loss, layout=layout, intercept=intercept, rows=fit_rows)
                     for k in range(C)]
            term_weights, constraints = class_weight / class_weight.sum(), []
        d_full = d + intercept
        # entries of x holding intercepts: read through the term's own layout map
        slots = terms[0].weights(np.arange(C * d_full, dtype=np.float64)).astype(np.int64)
        penalised = np.ones(C * d_full, dtype=bool)
        if self.fit_intercept:
            penalised[slots[:, -1]] = False
        ridge = ridge_for(self.ridge, float(weight[fitted].sum()) * weight_scale)
        objective = _PooledRidge(terms, term_weights, ridge, penalised)
        problem = ConstrainedProblem(objective, constraints, Whole(), x0=np.zeros(C * d_full),
                                     name="MultiClassNeymanPearsonClassifier")
        constraint_of = {k: i for i, k in enumerate(k for k in range(C) if k != p)} if bounded else {}
        kwargs = {} if self.max_iter is None else {"max_iter": int(self.max_iter)}

        def weights_of(x):
            W = terms[0].weights(x)
            return W[:, :d], (W[:, d] if self.fit_intercept else np.zeros(C))

        def raw_scores(W):   # X W^T as `predict` computes it (a contiguous W, as coef_ is stored)
            return np.asarray(safe_sparse_dot(X, np.ascontiguousarray(W).T, dense_output=True))

        def errors_of(raw, intercepts):
            """Each class's (weighted) error on the fitted rows, from ``X W^T`` and the intercepts."""
            wrong = np.argmax(raw + intercepts, axis=1) != y_index
            return np.bincount(y_index[fitted], weights=(weight * wrong)[fitted], minlength=C) / class_weight

        def hard_errors(x):
            W, b = weights_of(x)
            return errors_of(raw_scores(W), b)

        x, multipliers = np.zeros(C * d_full), None
        r = bound_values.copy()
        if bounded:
            # Start from the unconstrained model (pooled loss, same ridge): its surrogate values
            # L_k and hard errors h_k scale the first levels, r_k = L_k clip(alpha_k / h_k, 1/4, 4),
            # which puts each level in the loss's own units (a logistic L_k is never near alpha_k).
            free = ConstrainedProblem(_PooledRidge([ClassPairwiseRisk(dataset, k, C, self.loss, layout=layout,
                                                                      intercept=intercept, rows=fit_rows)
                                                    for k in range(C)], class_weight / class_weight.sum(),
                                                   ridge, penalised), [], Whole(),
                                      x0=np.zeros(C * d_full))
            x = augmented_lagrangian(free, x, verbose=self.verbose, **kwargs).x
            h_free = hard_errors(x)[bounded]
            surrogate = np.array([constraints[constraint_of[k]].term.value(x) for k in bounded])
            r = surrogate * np.clip(bound_values / np.maximum(h_free, 1e-300), 0.25, 4.0)
        record = {"levels": [], "errors": [], "priority_errors": [], "statuses": [], "chosen": 0, "met": True}
        solutions = []
        for _ in range(int(self.max_calibration) if bounded else 1):
            for k, level in zip(bounded, r):
                constraints[constraint_of[k]].bound = float(level)
            result = augmented_lagrangian(problem, x, multipliers0=multipliers, verbose=self.verbose, **kwargs)
            x, multipliers = result.x, result.multipliers
            h_all = hard_errors(x)
            h = h_all[bounded]
            priority_error = float(h_all[p]) if p is not None else float(
                class_weight @ h_all / class_weight.sum())
            record["levels"].append(r.tolist())
            record["errors"].append(h.tolist())
            record["priority_errors"].append(priority_error)
            record["statuses"].append(result.status)
            solutions.append((x, result, h_all, r.copy()))
            if not bounded:
                break
            lam = np.array([multipliers[constraint_of[k]] for k in bounded])
            tighten = h > bound_values
            loosen = (h < 0.8 * bound_values) & (lam > 0)
            if not np.any(tighten | loosen):
                break
            if (len(solutions) > 1 and np.array_equal(h_all, solutions[-2][2])
                    and result.status == solutions[-2][1].status == "no_feasible_iterate"):
                break   # the surrogate levels are out of reach and tighter ones moved no prediction
            move = tighten | loosen
            ratio = np.where(h > 0, 0.95 * bound_values / np.maximum(h, 1e-300), 4.0)
            r = np.where(move, r * np.clip(ratio, 0.25, 4.0), r)

        met = [j for j, e in enumerate(record["errors"]) if np.all(np.asarray(e) <= bound_values)]
        if met:
            chosen = min(met, key=lambda j: (record["priority_errors"][j], j))
        else:
            chosen = int(np.argmin([np.max(np.asarray(e) / bound_values) for e in record["errors"]]))
        record["chosen"], record["met"] = chosen, bool(met)
        x, result, h_all, r = solutions[chosen]
        h_solve = h_all    # the kept solve's training errors, before any shift
        W, b = weights_of(x)
        self.coef_ = np.ascontiguousarray(W)
        b = np.array(b, dtype=np.float64)
        self.shift_, self.certification_ = np.zeros(C), None
        if calibration:
            raw = raw_scores(W)
            certificate = certified_class_shift(raw, b, y_index, calibration, bounds, fitted, float(self.delta))
            self.shift_ = certificate["shift"]
            b = b + self.shift_
            h_all = errors_of(raw, b)
            self.certification_ = {
                "delta": float(self.delta), "certified": certificate["certified"],
                "p_value": certificate["p_value"], "candidates_tested": certificate["tested"],
                "calibration_rows": {_python(classes[k]): m for k, m in certificate["rows"].items()},
                "calibration_errors": {_python(classes[k]): e for k, e in certificate["errors"].items()}}
        self.intercept_ = b
        self.priority_class_ = None if p is None else _python(classes[p])
        self.bound_ = {_python(classes[k]): bounds[k] for k in bounded}
        self.levels_ = {_python(classes[k]): float(level) for k, level in zip(bounded, r)}
        self.fit_errors_ = {_python(c): float(e) for c, e in zip(classes, h_all)}
        self.calibration_ = record
        self.solve_result_ = result
        self.n_iter_ = result.n_iter
        if not record["met"]:
            excess = {_python(classes[k]): round(float(h_solve[k]), 4) for k in bounded if h_solve[k] > bounds[k]}
            warnings.warn(f"bound: the training error of class(es) {excess} exceeds its bound after "
                          f"{len(record['errors'])} solves (calibration_ has the trace); the bounds may be "
                          "unreachable by a linear model, or raise max_calibration / max_iter", ConvergenceWarning,
                          stacklevel=2)
        if not calibration:
            self.guarantee_ = ("no guarantee on new data: " + ("no class has a bound below 1" if not any(
                bound < 1.0 for bound in bounds.values()) else (f"errors {'within' if record['met'] else 'NOT within'} "
                                                                "the bounds on the training rows (delta=None)")))
        elif self.certification_["certified"]:
            self.guarantee_ = (f"certified: every bounded class's population error <= its bound with probability >= "
                               f"{1 - self.delta:g} (exact binomial tests on held-out rows, largest p-value "
                               f"{self.certification_['p_value']:.3g})")
        else:
            self.guarantee_ = (f"not certified: the held-out rows could not show every bound at delta={self.delta:g} "
                               f"(largest p-value {self.certification_['p_value']:.3g}); no guarantee on new data")
        if calibration and not self.certification_["certified"]:
            warnings.warn(f"bound: not certified at delta={self.delta:g}: even the most conservative shift "
                          f"leaves held-out errors {self.certification_['calibration_errors']} (binomial p-value "
                          f"{self.certification_['p_value']:.3g} > delta); use more rows, larger bounds or delta, "
                          "or delta=None for training-row bounds", UserWarning, stacklevel=2)
        warn_if_unconverged(self, result, "augmented_lagrangian", X, ridge)
        return self

    # ------------------------------------------------------------------ prediction
    def decision_function(self, X):
        """Scores :math:`s_c(x) = w_c^\\top x + b_c`, shape (n, n_classes); two classes: :math:`s_1 - s_0`, (n,).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Dense, CSR (kept sparse) or a pandas DataFrame with the training columns.
        """
        scores = self._linear_scores(X)
        if self.classes_.size == 2:   # scikit-learn's binary convention: positive means classes_[1]
            return scores[:, 1] - scores[:, 0]
        return scores

    def predict(self, X):
        """The class of the largest score (the first of tied classes); deterministic."""
        s = self.decision_function(X)
        if s.ndim == 1:
            return self.classes_[(s > 0).astype(np.int64)]
        return self.classes_[np.argmax(s, axis=1)]   # the first of tied classes

    def _has_proba(self):
        if self.loss != "logistic":
            raise AttributeError(f"predict_proba: available for loss='logistic' only, not {self.loss!r} "
                                 "(sigmoid-loss scores are not log-odds)")
        return True

    @available_if(_has_proba)
    def predict_proba(self, X):
        """Softmax of the scores, shape (n, n_classes) (``loss="logistic"`` only; class docstring)."""
        s = self.decision_function(X)
        if s.ndim == 1:   # softmax of (s_0, s_1) = (1 - sigma(s_1 - s_0), sigma(s_1 - s_0))
            return softmax(np.column_stack([np.zeros_like(s), s]), axis=1)
        return softmax(s, axis=1)

    @available_if(_has_proba)
    def predict_log_proba(self, X):
        """Logarithm of `predict_proba`, computed without underflow."""
        s = self.decision_function(X)
        if s.ndim == 1:
            return log_softmax(np.column_stack([np.zeros_like(s), s]), axis=1)
        return log_softmax(s, axis=1)

    def constraint_report(self, X, y, sample_weight=None):
        """Each bounded class's error on (X, y) against its bound, every class's error, the solver's status.

        ``sample_weight`` (optional, shape (n_samples,)) weighs the error rates as in `fit`, so a
        weighted fit that met its bounds reports them met on its own rows with its own weights.

        Returns
        -------
        ConstraintReport
            ``constraint`` is ``"class_error_rates"``; ``value`` the largest excess
            :math:`\\max_k(\\text{error}_k - \\alpha_k)` over the bounded classes present in ``y``
            (NaN when none is), ``bound`` 0, ``satisfied`` whether every bounded class present is
            within its bound; ``per_group`` maps each class to ``n``, ``error`` (NaN without
            rows) and ``bound`` (None for an unbounded class); ``fit_value`` is the largest excess
            on the training rows.
        """
        check_is_fitted(self, "coef_")
        y = np.asarray(y)
        unknown = np.setdiff1d(np.unique(y), self.classes_) if y.size else np.empty(0)
        if unknown.size:
            raise ValueError(f"y: labels {unknown[:5].tolist()} were not seen in fit "
                             f"(classes_ = {self.classes_.tolist()})")
        y_pred = self.predict(X)
        weight = None
        if sample_weight is not None:
            weight, _ = check_sample_weight(sample_weight, y_pred.shape[0])
        return class_error_report(self, y, y_pred, weight)


def _python(label):
    """A class label as a Python scalar (dict keys that JSON and users compare by value)."""
    return label.item() if isinstance(label, np.generic) else label
