r"""`FairClassifier`: a linear classifier whose group-fairness gap is bounded, scikit-learn style."""
from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from .. import metrics
from ..metrics import choose_interval
from ..metrics._partial_fairness import check_interval
from ..problems._dask_design import is_dask_collection
from ..problems._linear_model import LinearLoss, LinearModelProblem, LinearScores
from ..problems._partial_dp import partial_dp_constraints
from ..problems._partial_fairness import PartialFairnessProblem
from ..problems._roc_fairness import check_n_thresholds, threshold_grid
from .._memory_limit import check_memory
from ..problems._score_constraints import (
    FAIRNESS_CONSTRAINTS, fairness_constraint_bytes, group_fairness_constraints,
)
from ..problems._weak_partial_dp import weak_partial_dp_constraints
from ..solvers._common import check_choice
from ..solvers._validation import check_count, check_real
from ..solvers.idca import idca
from ._certify import (
    CERTIFIED_CONSTRAINTS, CERTIFY_AIM, CONFIDENCE_HOLDOUT, certified_gap, guarantee_text, not_certified_message,
)
from ._split import check_all_groups_present, check_held_out_part, stratified_split
from ._input import (
    check_binary_target, check_fraction, check_random_state, check_sample_weight, drop_columns, encode_fit_groups,
    fit_dataset, labels_to_index, resolve_sensitive, ridge_for, split_sensitive,
)
from ._linear import LinearConstrainedClassifier, converged, warn_if_unconverged
from ._report import _RATE_OF as _RATE_OF_REPORT
from ._report import ConstraintReport, fairness_gap
from ._solve import PARTIAL_CONSTRAINTS, Calibration, calibrate_bound, choose_solver, solve_linear

__all__ = ["FairClassifier"]

#: IDCA settings of the partial constraints: outer iterations (``max_iter=None``), inner
#: switching-subgradient iterations, and the inexactness epsilon (He, Huang, Yao & Lin [HHYL25]
#: Appendix D.2.2: T in {150, 200}, epsilon in {5e-4, 1e-3, 2e-3, 5e-3}, K from 100).
IDCA_OUTER_ITER, IDCA_INNER_ITER, IDCA_TOLERANCE = 100, 200, 1e-3
#: Largest surrogate bound of the partial DP block: its theory-safe level grid
#: [alpha, beta - kappa (beta - alpha)) is empty at kappa = 1.
_MAX_PARTIAL_BOUND = 0.99
#: Constraints whose hard gap is a difference of two rates in [0, 1] (a ``bound`` above 1 is a mistake).
_RATE_GAP_CONSTRAINTS = ("demographic_parity", "equal_opportunity", "false_positive_parity", "equalized_odds", "roc")


class FairClassifier(LinearConstrainedClassifier):
    r"""Linear classifier with a bound on a group-fairness gap.

    Solves

    .. math::

        \min_{w, b}\ \frac1n\sum_i \phi(y_i(w^\top x_i + b)) + \frac{\text{ridge}}{2}\|w\|^2
        \quad\text{s.t.}\quad \tilde r_a(w, b; -\mu\tau) - \tilde r_c(w, b; +\mu\tau) \le \kappa\ \
        \text{for all groups } a \ne c,

    where :math:`\tilde r_k(\cdot; \theta)` is a smoothed rate of group :math:`k` (the mean of
    :math:`\sigma((s_i - \theta)/\tau)` over the rows the rate counts, :math:`s_i = w^\top x_i + b`)
    and :math:`\mu` = ``straddle``: the larger rate is read a little below the decision threshold and
    the smaller a little above it, so that a model cannot shrink the smoothed gap by gathering
    scores just above 0 in one group while the hard gap stays (`fastcon.problems.RateGapConstraints`),
    then
    adjusts :math:`\kappa` until the **hard** gap a user measures (rates of ``predict``) is within
    ``bound`` on the training data (or on a held-out ``validation_fraction``).

    Every group is bounded against every other group: the constraint is on the largest rate minus
    the smallest, the gap of `fastcon.metrics` (and of fairlearn's ``*_difference`` metrics).

    **Partial constraints** (He, Huang, Yao & Lin [HHYL25], "Enforcing Fairness Where It Matters:
    An Approach Based on Difference-of-Convex Constraints"). ``"partial_dp"`` bounds the
    Kolmogorov–Smirnov distance between the groups' score distributions truncated to each group's
    rank band :math:`\mathcal I = [\alpha, \beta)` (`fastcon.metrics.partial_dp`), through
    model (13): with auxiliary thresholds :math:`\theta_p` on a grid of ``n_levels`` rank levels
    :math:`p \in [\alpha, \beta - \kappa(\beta - \alpha))`,

    .. math::

        p \le \frac{1}{n_k}\sum_{i \in k}\sigma(s_i - \theta_p) \le p + \kappa(\beta - \alpha)
        \quad\text{for every level } p \text{ and group } k;

    ``"weak_partial_dp"`` bounds the selection-rate gap inside the band at the threshold 0 of
    ``predict`` (`fastcon.metrics.weak_partial_dp`), through model (17), one constraint per
    ordered pair of groups. :math:`\sigma` is the ramp :math:`\max\{u/\tau + \frac12, 0\} -
    \max\{u/\tau - \frac12, 0\}` of width :math:`\tau` = ``smoothing`` in score units (the
    paper's ramp is :math:`\tau = 1`), each constraint a difference of convex functions, solved by
    IDCA (`fastcon.solvers.idca`, Algorithms 1–2 of [HHYL25]) from :math:`w = 0` with the feasible thresholds of
    `~fastcon.problems.PartialDPConstraints.initial_thresholds` (``"partial_dp"``), or from the
    constant model whose surrogate selection rate is the weighted base rate clipped to the band
    (``"weak_partial_dp"`` with ``fit_intercept``: at :math:`w = 0` every group's rate is
    :math:`\sigma(0) = \frac12`, above a band below :math:`\frac12`, and IDCA then keeps every
    group's rate near :math:`\beta`, predicting positive far beyond the base rate). The model is linear on
    :math:`[x, 1]` (the intercept is a weight on a column of ones; the ridge skips it). The paper's
    cross-term features :math:`(1, \xi, \gamma, \gamma\xi)` would need the group at prediction
    time, and ``predict`` takes no groups, so the estimator does not use them
    (`fastcon.problems.cross_term_features` and `fastcon.problems.PartialFairnessProblem` train
    that model directly). The surrogate bound :math:`\kappa` is calibrated against the hard metric
    as for the other constraints, :math:`\tau` included: both hard metrics are invariant to the
    scale of the scores while the surrogates are not, so a model can satisfy a tight :math:`\kappa`
    by shrinking its scores into the ramp's linear part without becoming fair in rank; sharpening
    the ramp is what lowers the hard metric then (synthetic data, 2,000 rows, ``partial_dp``
    bound 0.05: the hard value stayed at 0.09-0.10 as :math:`\kappa` shrank at :math:`\tau = 1`;
    on Adult it *rose* from 0.08 to 0.69). With ``n_levels`` :math:`= P` levels the hard partial DP
    of a solution of model (13) can exceed :math:`\kappa` by the level spacing,
    :math:`(1 - \kappa)/P` (the group CCDFs are only pinned at the levels), so a bound below
    about :math:`1/P` needs more levels.

    Parameters
    ----------
    constraint : str
        ``"demographic_parity"`` (selection rates), ``"equal_opportunity"`` (true-positive rates),
        ``"false_positive_parity"`` (false-positive rates), ``"equalized_odds"`` (both),
        ``"roc"`` (selection rates at every threshold of a grid: the threshold-sweep fairness of
        Huang & Lin, "Single-loop switching subgradient methods for non-smooth weakly convex
        optimization with non-smooth convex constraints"; hard gap: the largest difference of the
        groups' score CDFs over all thresholds), ``"wasserstein"`` (the Wasserstein-1 distance
        between the groups' score distributions, same paper; in score units),
        ``"partial_dp"`` and ``"weak_partial_dp"`` (partial demographic parity on a rank band, see
        above; no ``sample_weight``).
    bound : float
        Bound on the hard gap (a rate difference in [0, 1], so at most 1 for the rate constraints
        and ``"roc"``; a distance for ``"wasserstein"``; below 1 for the partial constraints,
        whose metrics never exceed 1).
    loss : {"logistic", "hinge"}
    ridge : float, optional
        :math:`\ge 0`, the L2 penalty on :math:`w` (not on the intercept). None (default):
        :math:`1/n`, the regularisation of scikit-learn's ``LogisticRegression(C=1.0)``.
    fit_intercept : bool
    solver : {"auto", "augmented_lagrangian", "switching_subgradient", "idca"}
        ``"auto"``: the augmented Lagrangian method with L-BFGS (`fastcon.solvers.augmented_lagrangian`)
        for the smooth logistic loss, one :math:`Xw` and one :math:`X^\top v` per evaluation, whatever
        the number of groups: the fastest here by far (a few hundred passes, where subgradient methods
        need thousands); the switching subgradient method for ``loss="hinge"``, whose kink L-BFGS
        does not handle; ``"idca"`` for the partial constraints, the only solver they accept
        (another explicit solver is a ValueError). IDCA runs ``max_iter`` outer iterations of 200
        inner switching-subgradient iterations with :math:`\epsilon = 10^{-3}` (the middle of the
        grid of [HHYL25] Appendix D.2.2) and returns the last outer iterate, as the paper does.
    max_iter : int, optional
        The solver's iteration budget (outer iterations of the augmented Lagrangian or of IDCA;
        iterations of the subgradient method). Default: the solver's own (100 for IDCA).
    tol : float
        Stationarity tolerance of the augmented Lagrangian (the gradient of the Lagrangian, as
        scikit-learn's ``LogisticRegression(tol=...)``).
    smoothing : float
        Starting :math:`\tau > 0` of the smoothed rates (in score units; for ``"wasserstein"``
        :math:`\tau/50` is the Huber width of the matched-quantile distances; for the partial
        constraints the width of the ramp). The calibration halves it (at most four times; not for
        ``"roc"``) when the smoothed rates track the hard ones too loosely to meet ``bound``
        (`fastcon.estimators._solve.calibrate_bound`; measurements in docs/design.md, "Estimators").
    straddle : float, optional
        :math:`\mu \ge 0`, in units of the smoothing (above): the rate constraints compare the
        larger rate at :math:`-\mu\tau` with the smaller at :math:`+\mu\tau` (0: both at the
        threshold). None (default): 0, and 1 from the solve where the calibration finds the
        smoothed gap tracking the hard one loosely (`fastcon.estimators._solve.calibrate_bound`),
        before any halving of the smoothing; ``calibration_["straddles"]`` has each solve's. Measured
        (docs/benchmarks.md, "Large data"): on a 50,000 x 1,000,000 sparse set (DP 0.02) straddle 0
        ran 12 solves whose hard training gaps stayed at 0.033-0.054 while the smoothed gap fell
        to :math:`2\cdot10^{-4}`; straddle 1 met 0.02 in 3 solves (held-out gap 0.014 against 0.042).
        A fixed straddle 1 can cost accuracy on small samples where straddle 0 meets the bound
        (equalized odds on 500 rows: 0.816 -> 0.584 on one of seven draws), hence 0 first. Not
        used by ``"wasserstein"`` and the partial constraints.
    n_thresholds : int
        Grid size of ``"roc"`` (the grid spans the unconstrained model's scores).
    interval : (float, float), optional
        The rank band :math:`(\alpha, \beta)`, :math:`0 \le \alpha < \beta \le 1`, of the partial
        constraints (rank 0 is the top score of a group). None (default): the rule of [HHYL25] §4,
        `fastcon.metrics.choose_interval` on the unconstrained model's training scores with
        :math:`p` the fraction of them above 0 (``interval_choice_`` keeps the candidates).
    n_levels : int
        :math:`P`, the number of rank levels of ``"partial_dp"`` (model (13)), on the grid
        :math:`p_j = \alpha + j(\beta - \kappa(\beta - \alpha) - \alpha)/P` where Lemma 5.1 of
        [HHYL25] makes the constraints equivalent to partial DP :math:`\le \kappa`. Each level
        adds a threshold variable and :math:`2G` constraints.
    validation_fraction : float, optional
        Hold out this fraction of the rows (stratified by group and label) to measure the hard gap
        during calibration; default None measures it on the training rows.
    confidence : float, optional
        :math:`1 - \delta` in (0, 1), for the rate constraints (demographic parity, equal
        opportunity, false-positive parity, equalized odds, any number of groups): certify that the
        gap on the *population* is at most ``bound`` with probability at least
        ``confidence``. The held-out part (``validation_fraction``, default 0.4 here) is split in
        two, stratified: the calibration steers by the bound on one half (widened by 1.28
        standard errors per rate, so that the other half, whose rates scatter around the first
        half's, certifies in most fits), and the kept model is certified once on the other half,
        which no choice has seen
        (`fastcon.estimators._certify`: one-sided Clopper–Pearson bounds on every group rate, a
        union bound over the :math:`2R` bounds). ``certified_gap_`` is that bound; when it exceeds
        ``bound`` a UserWarning says so and gives it, the smallest bound the model
        certifies. Not for ``"roc"``, ``"wasserstein"`` or the partial constraints (a ValueError),
        nor with ``sample_weight``.
    max_calibration : int, optional
        Largest number of solves in the bound calibration (each warm-started from the previous;
        for the partial constraints only when the previous solution is :math:`\epsilon`-feasible
        for the new bound, else from :math:`w = 0`). Default None: 12, and 6 for the partial
        constraints, whose solves cost an IDCA run each (Adult, ``"partial_dp"``, bound 0.05:
        about 30 s per solve on one core).
    drop_sensitive : bool
        With ``sensitive_features`` naming columns of X, drop them from the features.
    random_state : int, numpy Generator or RandomState, optional
        Seed of the validation split (the solvers are deterministic): None, an int in
        [0, 2**32) or a generator; anything else is a ValueError naming ``random_state``.
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
        The solve that produced the model (status, multipliers, KKT residuals in ``info``). For
        ``"partial_dp"`` and ``"weak_partial_dp"`` its ``x`` is IDCA's variable: the model's weights
        and intercept over the chosen ``calibration_["smoothings"]`` value :math:`\tau` (the model is
        :math:`\tau x`), then the level thresholds :math:`\theta` of model (13).
    calibration_ : dict
        One entry per solve: ``bounds``, ``smoothings`` and ``straddles`` tried (``straddles`` empty
        for the partial constraints and in files saved before it existed), ``hard_values`` reached,
        ``objectives``, ``statuses``; the ``chosen`` index (the round kept: the lowest objective
        among the solves at any smoothing that met the bound, converged ones first, else the
        smallest hard value), ``met`` (bound met), ``converged`` (the kept solve ended as its
        solver should; if not, ``fit`` warns) and where the hard gap was measured (``measured_on``).
    fit_gap_ : float
        The hard gap where calibration measured it; with ``confidence``, the certified bound on the
        tuning half (the quantity calibration steered by).
    interval_ : tuple of float or None
        The rank band of the partial constraints (given or chosen); None for the others.
    certified_gap_ : float or None
        With ``confidence``: an upper bound on the population gap that holds with probability at
        least ``confidence`` (over the draw of the rows); None without it.
    guarantee_ : str
        What holds on new data, in words (`ConstraintReport.guarantee`).
    interval_choice_ : fastcon.metrics.IntervalChoice or None
        The candidates and their partial DP when ``interval=None`` chose the band; None when the
        band was given (or the constraint is not partial).
    """

    def __init__(self, constraint="demographic_parity", bound=0.02, *, loss="logistic", ridge=None,
                 fit_intercept=True, solver="auto", max_iter=None, tol=1e-4, smoothing=0.5, straddle=None,
                 n_thresholds=50,
                 interval=None, n_levels=10, validation_fraction=None, confidence=None, max_calibration=None,
                 drop_sensitive=False, random_state=None, verbose=False):
        self.constraint = constraint
        self.bound = bound
        self.loss = loss
        self.ridge = ridge
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.smoothing = smoothing
        self.straddle = straddle
        self.n_thresholds = n_thresholds
        self.interval = interval
        self.n_levels = n_levels
        self.validation_fraction = validation_fraction
        self.confidence = confidence
        self.max_calibration = max_calibration
        self.drop_sensitive = drop_sensitive
        self.random_state = random_state
        self.verbose = verbose

    def _calibration_rounds(self) -> int:
        if self.max_calibration is not None:
            return int(self.max_calibration)
        return 6 if self.constraint in PARTIAL_CONSTRAINTS else 12

    def _check_params(self):
        check_choice("constraint", self.constraint, FAIRNESS_CONSTRAINTS + PARTIAL_CONSTRAINTS)
        check_choice("loss", self.loss, ("logistic", "hinge"))
        for name in ("bound", "smoothing", "tol"):
            check_real(name, getattr(self, name), positive=True)
        if self.straddle is not None:
            check_real("straddle", self.straddle)
            if self.constraint not in _RATE_GAP_CONSTRAINTS:
                raise ValueError(f"straddle: the rates of a pair straddle the threshold in the rate constraints "
                                 f"{_RATE_GAP_CONSTRAINTS}, not in {self.constraint!r}; use straddle=None")
        if self.constraint in PARTIAL_CONSTRAINTS and not self.bound < 1.0:
            raise ValueError(f"bound: must be below 1 for constraint={self.constraint!r} (the metric never "
                             f"exceeds 1, so every model meets {self.bound!r}), got {self.bound!r}")
        if self.constraint in _RATE_GAP_CONSTRAINTS and self.bound > 1.0:
            raise ValueError(f"bound: at most 1 for constraint={self.constraint!r} (a gap between two rates "
                             f"in [0, 1] is at most 1), got {self.bound!r}")
        check_random_state(self.random_state, draw=False)
        if self.interval is not None:
            check_interval(self.interval)
        check_count("n_levels", self.n_levels)
        if self.ridge is not None:
            check_real("ridge", self.ridge)
        if self.validation_fraction is not None:
            check_fraction("validation_fraction", self.validation_fraction)
        if self.confidence is not None:
            check_fraction("confidence", self.confidence)
            if self.constraint not in CERTIFIED_CONSTRAINTS:
                raise ValueError(f"confidence: certified for the rate constraints {tuple(CERTIFIED_CONSTRAINTS)}, not "
                                 f"{self.constraint!r} (a supremum over thresholds or a distribution distance has "
                                 "no per-rate binomial bound here); use confidence=None")
        if self.max_calibration is not None:
            check_count("max_calibration", self.max_calibration)
        check_count("n_thresholds", self.n_thresholds)
        check_n_thresholds(self.n_thresholds)
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
            int position) reads it from ``X``. A list of strings names columns only when ``X`` is
            a DataFrame and every string is one of its columns; otherwise it holds the labels (one
            per row; a list that is neither is a ValueError naming the missing columns). With
            ``drop_sensitive`` the columns read from ``X`` (by name or position) are dropped in
            ``fit`` and again from the X given to ``predict``, ``decision_function`` and
            ``constraint_report``, which take X with those columns. Without it all rows form one
            group, the constraint is void, and a warning says so.
        sample_weight : array-like of shape (n_samples,), optional
            Row weights of the loss and of the group rates (a weight of 2 counts as a repeated
            row, in the constraint and in the hard gap the calibration measures). They are
            divided by their mean (every use is invariant to their scale, so weights of 1e-320
            act as ones), except that the default ``ridge=None`` is one over their total, which
            must be at least ``1 / np.finfo(np.float64).max``. Not with
            ``"roc"``, ``"wasserstein"``, ``"partial_dp"`` or ``"weak_partial_dp"``, whose hard
            gaps compare unweighted distributions (the rank band is defined on them).
        """
        solver = self._check_params()
        if self.constraint in PARTIAL_CONSTRAINTS and is_dask_collection(X):
            raise ValueError(f"X: a dask X is not supported with constraint={self.constraint!r} (its [X, 1] design "
                             "and held-out part are built in memory); use a rate constraint or an in-memory X")
        X, sensitive, self.sensitive_columns_ = resolve_sensitive(X, sensitive_features, self.drop_sensitive)
        X, y01, self.classes_ = check_binary_target(self, X, y)
        n = X.shape[0]
        if sensitive is None:
            warnings.warn("sensitive_features: not given, so all rows form one group and the fairness "
                          "constraint is void (the fit is the unconstrained model)", UserWarning, stacklevel=2)
            sensitive = np.zeros(n, dtype=np.int64)
        groups = encode_fit_groups(sensitive, n)
        self.group_encoder_ = groups
        self.groups_ = list(groups.labels)
        if self.constraint in FAIRNESS_CONSTRAINTS:
            # everything the constraint block and a solve over it allocate, refused before any of it
            check_memory("n_thresholds" if self.constraint == "roc" else "sensitive_features",
                         f"the {self.constraint!r} constraints of {len(self.groups_):,} groups"
                         + (f" at {self.n_thresholds:,} thresholds" if self.constraint == "roc" else "")
                         + f" on {n:,} rows",
                         fairness_constraint_bytes(n, len(self.groups_), self.constraint, self.n_thresholds))
        weight, weight_scale = (np.ones(n), 1.0) if sample_weight is None else check_sample_weight(sample_weight, n)
        if sample_weight is not None and self.constraint in ("roc", "wasserstein", *PARTIAL_CONSTRAINTS):
            raise ValueError(f"sample_weight: not supported with constraint={self.constraint!r} (its hard gap "
                             "compares unweighted score distributions); use a rate constraint or no weights")

        if self.confidence is not None and sample_weight is not None:
            raise ValueError("sample_weight: not supported with confidence (the certificate counts rows: a "
                             "binomial bound on each group rate); fit without weights or with confidence=None")
        rng = check_random_state(self.random_state)
        fraction = self.validation_fraction
        if self.confidence is not None and fraction is None:
            fraction = CONFIDENCE_HOLDOUT
        fit_rows, check_rows = stratified_split(groups.codes, y01, fraction, rng)
        certify_rows = None
        if self.confidence is not None:
            # half the held-out rows steer the calibration, the other half certify the kept model once:
            # rows that chose among the solves cannot also certify the choice
            tune, certify = stratified_split(groups.codes[check_rows], y01[check_rows], 0.5, rng)
            check_rows, certify_rows = check_rows[tune], check_rows[certify]
        for part in (check_rows, certify_rows):
            if part is not None and len(self.groups_) >= 2:
                check_held_out_part(groups.codes, y01, part, len(self.groups_), self.constraint)
        if fit_rows is None:
            y_fit, g_fit, w_fit = y01, groups.codes, weight
        else:
            y_fit, g_fit, w_fit = y01[fit_rows], groups.codes[fit_rows], weight[fit_rows]
        self.interval_ = self.interval_choice_ = self.certified_gap_ = None
        if self.constraint in PARTIAL_CONSTRAINTS:
            X_fit = X if fit_rows is None else X[fit_rows]
            return self._fit_partial(X, y01, groups.codes, X_fit, y_fit, g_fit, w_fit, check_rows, solver)
        # the training and validation parts are row indices into X (the products read through
        # them): X is never copied
        dataset = fit_dataset(X, y01)
        scores = LinearScores(dataset, self.fit_intercept, rows=fit_rows)
        ridge = ridge_for(self.ridge, float(w_fit.sum()) * weight_scale)
        objective = LinearLoss(scores, 2.0 * y_fit - 1.0, w_fit, self.loss, ridge)

        n_groups = len(self.groups_)
        free = None
        if n_groups < 2 or self.constraint == "roc":
            # the unconstrained model: the answer with one group, and the score range of the "roc" grid
            free = solve_linear(LinearModelProblem(objective, []), solver, np.zeros(scores.n_features), None,
                                self.max_iter, self.verbose, self.tol)
        thresholds = None
        if self.constraint == "roc":
            thresholds = threshold_grid(scores.scores(free.x).copy(), self.n_thresholds)
        g_fit = check_all_groups_present(g_fit, n_groups)
        block = group_fairness_constraints(scores, y_fit, g_fit, self.constraint, float(self.bound),
                                           smoothing=float(self.smoothing), thresholds=thresholds,
                                           group_labels=self.groups_,
                                           sample_weight=None if sample_weight is None else w_fit)
        problem = LinearModelProblem(objective, [block], name=f"FairClassifier({self.constraint})")
        # the first constrained solve starts at x = 0, where every group has the same rates (and
        # scores): feasible for every constraint with straddle = 0, violated by 2 sigma(straddle) - 1 - kappa
        # otherwise, a violation spread evenly over the groups that moving scores off 0 removes.
        # From the unconstrained model the sigmoid rates
        # could saturate on the way (huge scores, vanishing gradients) at an infeasible stationary
        # point: equalized odds on a 500-row sample ended there with the penalty at 1e29.
        state = {"x": np.zeros(scores.n_features), "multipliers": None, "straddle": 0.0}
        # the rate blocks' pairs straddle the threshold; the transport block has no pairs of rates
        straddles = (((0.0, 1.0) if self.straddle is None else (float(self.straddle),))
                     if self.constraint in _RATE_GAP_CONSTRAINTS else (0.0,))

        def solve_at(bound, smoothing, straddle):
            if straddle != state["straddle"]:   # another surrogate: its multipliers are not a warm start
                block.straddle, state["straddle"], state["multipliers"] = straddle, straddle, None
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
            y_check, g_check = y01[check_rows], groups.codes[check_rows]
            w_check = weight[check_rows] if weighted else None
            s_check = np.empty(check_rows.size)

            def hard(x):
                s = scores.scores_on(x, check_rows, s_check)
                if self.confidence is not None:     # aim at a model whose certified gap meets the bound
                    return certified_gap(self.constraint, s > 0, y_check, g_check, n_groups, 1.0 - self.confidence,
                                         aim=CERTIFY_AIM)
                return fairness_gap(self.constraint, s, y_check, g_check, w_check)

        if n_groups < 2:   # no pair of groups: no constraint, the unconstrained model is the answer
            x, result, record = free.x, free, Calibration(met=True)
        else:
            x, result, record = calibrate_bound(solve_at, hard, float(self.bound), float(self.smoothing),
                                                max_rounds=self._calibration_rounds(),
                                                adapt_smoothing=self.constraint != "roc",
                                                converged=lambda r: converged(r, solver),
                                                straddles=straddles)
        self._set_fitted(x, X, result, record, check_rows, solver, ridge)
        if certify_rows is not None:
            s = scores.scores_on(x, certify_rows, np.empty(certify_rows.size))
            self.certified_gap_ = (0.0 if n_groups < 2 else
                                   certified_gap(self.constraint, s > 0, y01[certify_rows], groups.codes[certify_rows],
                                                 n_groups, 1.0 - self.confidence))
            self.guarantee_ = guarantee_text(self.constraint, self.certified_gap_, self.bound, self.confidence,
                                             certify_rows.size)
            if self.certified_gap_ > self.bound:
                warnings.warn(not_certified_message(self.constraint, self.certified_gap_, self.bound,
                                                    self.confidence, certify_rows.size), UserWarning, stacklevel=2)
        return self

    def _set_fitted(self, x, X, result, record, check_rows, solver, ridge):
        """Fitted attributes from the chosen solution ``x = (w, b, ...)``; warns when the bound was missed
        or the kept solve did not converge (`fastcon.estimators._linear.warn_if_unconverged`)."""
        n_features = X.shape[1]
        self.coef_ = x[:n_features].reshape(1, -1).copy()
        self.intercept_ = np.array([x[n_features] if self.fit_intercept else 0.0])
        self.solve_result_ = result
        self.calibration_ = record.as_dict("training rows" if check_rows is None else "validation rows")
        self.fit_gap_ = record.hard_values[record.chosen] if record.hard_values else 0.0
        self.guarantee_ = (f"no guarantee on new data: the bound is {'met' if record.met else 'NOT met'} on the "
                           f"{self.calibration_['measured_on']} (confidence=None)")
        self.n_iter_ = result.n_iter
        if not record.met and self.confidence is None:   # with confidence: the certificate's warning (fit)
            hint = ("raise max_calibration or max_iter" if self.constraint in PARTIAL_CONSTRAINTS else
                    "raise max_calibration or max_iter, or start from a smaller smoothing")
            warnings.warn(f"bound: the hard {self.constraint} gap reached {self.fit_gap_:.4g} > "
                          f"{self.bound} after {len(record.bounds)} solves (calibration_ has the trace); {hint}",
                          ConvergenceWarning, stacklevel=3)
        warn_if_unconverged(self, result, solver, X, ridge, stacklevel=4)
        return self

    def _fit_partial(self, X, y01, codes, X_fit, y_fit, g_fit, w_fit, check_rows, solver):
        r"""Fit with ``"partial_dp"`` or ``"weak_partial_dp"``: IDCA on [HHYL25] model (13) or (17), calibrated.

        The variable is :math:`x = (w, b, \theta)` (:math:`b` only with ``fit_intercept``,
        :math:`\theta` the ``n_levels`` thresholds of model (13) only): the blocks need
        ``LinearScores(fit_intercept=False)``, so the intercept is the weight of a ones column.
        """
        n_features = X.shape[1]
        n_groups = len(self.groups_)
        design = _with_ones(X_fit) if self.fit_intercept else X_fit
        dataset = fit_dataset(design, y_fit)
        scores = LinearScores(dataset, fit_intercept=False)
        ridge = ridge_for(self.ridge, w_fit.sum())   # no sample_weight here: w_fit is ones
        objective = _ScaledLoss(scores, dataset.y, w_fit, self.loss, ridge, n_penalised=n_features)
        n_w = scores.n_features
        free = None
        if self.interval is None or n_groups < 2:
            # the unconstrained model: its training scores choose the band ([HHYL25] §4), and with
            # one group (no pair to constrain) it is the answer
            objective.scale = 1.0
            free = solve_linear(LinearModelProblem(objective, []), choose_solver("auto", self.loss, "unconstrained"),
                                np.zeros(n_w), None, None, self.verbose, self.tol)
        if n_groups < 2:
            self.interval_ = None if self.interval is None else check_interval(self.interval)
            return self._set_fitted(free.x, X, free, Calibration(met=True), check_rows,
                                    choose_solver("auto", self.loss, "unconstrained"), ridge)
        g_fit = check_all_groups_present(g_fit, n_groups)
        if self.interval is None:
            choice = choose_interval(scores.scores(free.x).copy(), sensitive_features=g_fit, threshold=0.0)
            self.interval_, self.interval_choice_ = choice.interval, choice
        else:
            self.interval_ = check_interval(self.interval)
        interval = self.interval_
        outer = IDCA_OUTER_ITER if self.max_iter is None else check_count("max_iter", self.max_iter)
        name = f"FairClassifier({self.constraint})"

        def block_at(bound):
            # rebuilding costs a few group index arrays: no pass over the data
            if self.constraint == "partial_dp":
                return partial_dp_constraints(scores, g_fit, interval, bound, n_levels=int(self.n_levels))
            return weak_partial_dp_constraints(scores, g_fit, interval, bound, threshold=0.0)

        state = {"x": None, "scale": None}
        start = None
        if self.constraint == "weak_partial_dp" and self.fit_intercept:
            # Model (17)'s threshold is fixed at 0, so the start's intercept decides on which side of
            # the band the groups' surrogate rates begin. At w = 0 every rate is sigma(0) = 1/2: above
            # a band below 1/2, where each clipped rate is beta and IDCA stays on that branch, keeping
            # a rate >= (1 - kappa) beta in every group (bank, band [0, 0.25], base rate 0.12: accuracy
            # 0.77 against the constant classifier's 0.89). Any constant model is feasible (all groups
            # share its rate); this one's ramp rate is the weighted base rate clipped to the band.
            start, end = interval
            rate = min(max(float(np.dot(w_fit, y_fit) / w_fit.sum()), start), end)
            start = np.zeros(n_w)
            start[n_features] = rate - 0.5   # the solver's ramp is clip(s + 1/2, 0, 1)

        def solve_at(bound, smoothing):
            # the solver's scores are the model's over tau = smoothing: a ramp of width 1 on them is
            # tau wide on the model's (the model is tau times the solver's x)
            objective.scale = smoothing
            problem = PartialFairnessProblem(objective, block_at(bound), name=name)
            x0 = problem.x0 if start is None else start
            # IDCA needs an epsilon-feasible start (its inner solver keeps the best epsilon-feasible
            # iterate): the previous model (w and thresholds, rescaled to this tau) qualifies after
            # a looser bound, rarely after a tighter one
            if state["x"] is not None:
                previous = state["x"] * (state["scale"] / smoothing)
                if float(np.max(problem.constraint_values(previous))) <= IDCA_TOLERANCE:
                    x0 = previous
            result = idca(problem, x0, outer_iter=outer, inner_iter=IDCA_INNER_ITER, switching_level=IDCA_TOLERANCE,
                          verbose=self.verbose)
            state["x"], state["scale"] = result.x, smoothing
            return result.x, result

        metric = _PARTIAL_METRICS[self.constraint]
        if check_rows is None:
            def hard(x):   # the training scores at x are LinearScores' cache: no second product
                return metric(scores.scores(x[:n_w]), g_fit, interval)
        else:
            X_check, g_check = X[check_rows], codes[check_rows]

            def hard(x):
                s = np.asarray(X_check @ x[:n_features]).ravel() + (x[n_features] if self.fit_intercept else 0.0)
                return fairness_gap(self.constraint, s, None, g_check, interval=interval)

        x, result, record = calibrate_bound(solve_at, hard, float(self.bound), float(self.smoothing),
                                            max_rounds=self._calibration_rounds(),
                                            max_bound=_MAX_PARTIAL_BOUND if self.constraint == "partial_dp" else None,
                                            converged=lambda r: converged(r, solver))
        # the model is tau times the solver's variable (both metrics are invariant to that scale)
        return self._set_fitted(record.smoothings[record.chosen] * x, X, result, record, check_rows, solver, ridge)

    def _features_for_predict(self, X):
        if getattr(self, "sensitive_columns_", None):
            X = drop_columns(X, self.sensitive_columns_)
        return super()._features_for_predict(X)

    def constraint_report(self, X, y, sensitive_features, sample_weight=None):
        """The requested bound against the achieved gap on (X, y, groups): per-group rates and the solver's status.

        Parameters
        ----------
        X, y, sensitive_features
            As in `fit` (the groups must be among those seen in `fit`).
        sample_weight : array-like of shape (n_samples,), optional
            Row weights of the rates and the gap, as in `fit` (a weighted fit that met its bound
            reports it met on its own rows with its own weights). Rate constraints only: ``"roc"``,
            ``"wasserstein"`` and the partial constraints compare unweighted distributions.

        Returns
        -------
        ConstraintReport
            ``per_group`` holds the (weighted) rates; its ``n`` is the row count.
        """
        check_is_fitted(self, "coef_")
        # decision_function drops the sensitive columns itself (drop_sensitive): pass it the full X
        _, sensitive = split_sensitive(X, sensitive_features, False)
        codes = self.group_encoder_.transform(sensitive)
        y = np.asarray(y)
        scores = self.decision_function(X)
        for name, length in (("sensitive_features", codes.shape[0]), ("y", y.shape[0] if y.ndim else -1)):
            if length != scores.shape[0]:
                raise ValueError(f"{name}: has {length} entries but X has {scores.shape[0]} rows")
        y01 = labels_to_index(y, self.classes_)
        weight = None
        if sample_weight is not None:
            if self.constraint not in _RATE_OF_REPORT:
                raise ValueError(f"sample_weight: not supported with constraint={self.constraint!r} (its hard gap "
                                 "compares unweighted score distributions)")
            weight, _ = check_sample_weight(sample_weight, scores.shape[0])
        return ConstraintReport.for_fairness(self, scores, y01, codes, sample_weight=weight)


def _partial_dp(scores, codes, interval):
    return metrics.partial_dp(scores, sensitive_features=codes, interval=interval)


def _weak_partial_dp(scores, codes, interval):
    return metrics.weak_partial_dp(scores, sensitive_features=codes, interval=interval, threshold=0.0)


_PARTIAL_METRICS = {"partial_dp": _partial_dp, "weak_partial_dp": _weak_partial_dp}


def _with_ones(X):
    """:math:`[X, 1]`: CSR stays CSR (no densifying), dense stays dense."""
    ones = np.ones((X.shape[0], 1))
    if sp.issparse(X):
        return sp.hstack([X, ones], format="csr")
    return np.hstack([X, ones])


class _ScaledLoss(LinearLoss):
    r"""`LinearLoss` of the model :math:`\tau\,\tilde Xw` on :math:`\tilde X = [X, 1]`, ridge off the ones column.

    The partial fairness blocks see the scores :math:`z = \tilde Xw` through a ramp of width 1;
    the model's scores are :math:`\tau z` (``scale``), so that in the model's units the ramp is
    :math:`\tau` wide: the loss is :math:`\frac1n\sum_i\phi(y_i\tau z_i) +
    \frac{\lambda\tau^2}{2}\|w_{1:d}\|^2`, the loss and ridge of the model :math:`\tau w`. The
    intercept is the last weight (the blocks need scores without a separate intercept), and the
    ridge leaves it out as it does for the other constraints (and scikit-learn): only the first
    ``n_penalised`` weights are penalised.
    """

    def __init__(self, scores, y, weight, loss, ridge, *, n_penalised):
        super().__init__(scores, y, weight, loss, ridge)
        self.n_penalised = int(n_penalised)
        self.scale = 1.0

    def value_and_grad_scores(self, z, v) -> float:
        if self.scale == 1.0:
            return super().value_and_grad_scores(z, v)
        value = super().value_and_grad_scores(self.scale * z, v)
        v *= self.scale
        return value

    def _ridge(self, x):
        w = x[:self.n_penalised]
        return 0.5 * self.ridge * self.scale ** 2 * float(w @ w)

    def add_ridge_gradient(self, x, out):
        k = self.n_penalised
        out[:k] += (self.ridge * self.scale ** 2) * x[:k]

    def curvature_diagonal(self, n_penalised=None):
        """`LinearLoss.curvature_diagonal` of the model :math:`\\tau\\tilde Xw` (ridge off the ones column)."""
        h = super().curvature_diagonal(self.n_penalised)
        if h is not None:
            h *= self.scale ** 2
        return h
