"""Rate-constrained boosting (issue 36): `FairGBMClassifier` with ``demographic_parity``, ``equal_opportunity``,
``false_positive_parity``, ``equalized_odds`` (`fastcon.boosting._rate_fit`), checked against the plain NumPy
references of tests/reference/rate_lagrangian.py and tests/reference/group_rates.py."""
import json
import warnings
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from sklearn.exceptions import ConvergenceWarning

from fastcon import load_model
from fastcon._results import History
from fastcon.boosting import FairGBMClassifier
from fastcon.boosting._rate_fit import AIM, CheckRows, RateLagrangian
from fastcon.estimators._split import stratified_split as stratified_holdout
from fastcon.estimators._report import fairness_gap
from fastcon.problems._score_constraints import group_fairness_constraints
from reference import rate_lagrangian as ref
from reference.group_rates import hard_gap, rates

RATE = ["demographic_parity", "equal_opportunity", "false_positive_parity", "equalized_odds"]
BACKENDS = ["lightgbm", "xgboost"]
PARAMS = {"xgboost": {"max_depth": 3, "eta": 0.3}, "lightgbm": {"num_leaves": 7, "learning_rate": 0.3}}
#: Row bagging, under which a fit depends on ``random_state``.
BAGGING = {"xgboost": {"subsample": 0.6}, "lightgbm": {"bagging_fraction": 0.6, "bagging_freq": 1}}
ROUNDS = 40
TOL = 0.03
#: Two differences of floating-point rates computed in different orders.
GAP_TOL = 1e-12


def _library(name):
    return pytest.importorskip(name)


def _data(n=800, seed=1, G=2):
    """Group k: first feature shifted down by k/2 and its noise widened (1 + k), base rate falling from 0.55
    to 0.3: unconstrained, the selection, true- and false-positive rates all differ between groups."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, G, n)
    y = (rng.random(n) < np.linspace(0.55, 0.3, G)[g]).astype(np.int64)
    X = np.column_stack([(2 * y - 1) - 0.5 * g + rng.normal(0, 1, n) * (1 + g), rng.normal(0, 1, n),
                         rng.normal(0, 1, n)])
    return X, y, g


def _intersectional(n=800, seed=2):
    """Two sensitive attributes (sex, age band), four intersectional groups with different base rates and shifts."""
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 2, n), rng.integers(0, 2, n)
    y = (rng.random(n) < 0.55 - 0.15 * a - 0.1 * b).astype(np.int64)
    X = np.column_stack([(2 * y - 1) - 0.5 * a - 0.3 * b + rng.normal(0, 1, n) * (1 + a), rng.normal(0, 1, n),
                         rng.normal(0, 1, n)])
    sensitive = np.column_stack([np.where(a == 1, "F", "M"), np.where(b == 1, "old", "young")])
    return X, y, sensitive, 2 * (1 - a) + (1 - b)          # codes in the sorted order of the label pairs


def _fit(constraint, backend, X, y, g, *, tol=TOL, quiet=False, **kw):
    _library(backend)
    kw = {"n_estimators": ROUNDS, "params": PARAMS[backend], **kw}
    clf = FairGBMClassifier(constraint, tol, backend=backend, **kw)
    if not quiet:
        return clf.fit(X, y, sensitive_features=g)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return clf.fit(X, y, sensitive_features=g)


# ---------------------------------------------------------------------------- hard values against NumPy
@st.composite
def rate_problems(draw):
    """Scores with exact zeros (and -0.0, subnormals), 1-4 groups, labels, weights (zeros included); every
    (group, label) cell holds a row of weight 1, so every rate is defined."""
    G = draw(st.integers(1, 4))
    m = draw(st.integers(0, 30))
    score = st.one_of(st.just(0.0), st.just(-0.0), st.sampled_from([5e-324, -5e-324, 1e-12, -1e-12]),
                      st.floats(-4.0, 4.0, allow_nan=False))
    scores = draw(st.lists(score, min_size=m + 2 * G, max_size=m + 2 * G))
    codes = draw(st.lists(st.integers(0, G - 1), min_size=m, max_size=m)) + [k for k in range(G) for _ in (0, 1)]
    y01 = draw(st.lists(st.integers(0, 1), min_size=m, max_size=m)) + [t for _ in range(G) for t in (0, 1)]
    weights = draw(st.lists(st.one_of(st.just(0.0), st.floats(0.0, 5.0)), min_size=m, max_size=m)) + [1.0] * (2 * G)
    return (np.array(scores), np.array(y01, dtype=np.int64), np.array(codes, dtype=np.int64), np.array(weights),
            draw(st.sampled_from(RATE)), draw(st.floats(0.0, 1.0)))


@settings(max_examples=150, deadline=None)
@given(rate_problems())
def test_hard_values_match_numpy_and_fairness_gap(problem):
    scores, y01, codes, weights, constraint, bound = problem
    G = int(codes.max()) + 1
    for w in (None, weights):
        block = group_fairness_constraints(None, y01, codes, constraint, bound, smoothing=0.5, sample_weight=w)
        got = block.hard_values_from_scores(scores)
        want = ref.hard_pair_values(constraint, scores, y01, codes, w, bound)
        assert got.shape == want.shape == ((2 if constraint == "equalized_odds" else 1) * G * (G - 1),)
        np.testing.assert_allclose(got, want, rtol=0, atol=GAP_TOL)
        if G >= 2:
            # the largest pair value plus the bound is the hard gap a user measures on predict's labels
            assert got.max() + bound == pytest.approx(fairness_gap(constraint, scores, y01, codes, w), abs=GAP_TOL)
            if w is None:
                assert got.max() + bound == pytest.approx(hard_gap(constraint, scores, y01, codes), abs=GAP_TOL)


def test_hard_values_count_a_zero_score_as_not_above():
    y01, codes = np.array([0, 1, 0, 1]), np.array([0, 0, 1, 1])
    block = group_fairness_constraints(None, y01, codes, "demographic_parity", 0.0)
    # group 0 scored exactly at the threshold, group 1 just above it
    np.testing.assert_array_equal(block.hard_values_from_scores(np.array([0.0, -0.0, 1e-300, 1e-300])), [-1.0, 1.0])


# ---------------------------------------------------------------------------- the per-round objective
def _objective(constraint, *, tolerance, dual_step, n=18, G=3, seed=0, tau=0.5):
    rng = np.random.default_rng(seed)
    codes = np.r_[np.arange(G).repeat(2), rng.integers(0, G, n - 2 * G)]
    y01 = np.r_[np.tile([0, 1], G), rng.integers(0, 2, n - 2 * G)]
    block = group_fairness_constraints(None, y01, codes, constraint, tolerance, smoothing=tau)
    history = History()
    obj = RateLagrangian(y01, block, CheckRows(y01, block), tolerance, dual_step, history)
    F = rng.normal(0, 1.5, n)
    F[:2] = 0.0                                   # rows at the threshold
    return obj, F, y01, codes, history


@pytest.mark.parametrize("constraint", RATE)
@pytest.mark.parametrize("zero", [False, True], ids=["multipliers", "no_multipliers"])
def test_objective_is_the_lagrangian_gradient_and_a_curvature_bound(constraint, zero):
    tau, tol = 0.5, 0.05
    # dual_step 0: the multipliers keep the values set here, so every call differentiates the same Lagrangian
    obj, F, y01, codes, _ = _objective(constraint, tolerance=tol, dual_step=0.0, tau=tau)
    lam = np.zeros(obj.multipliers.size) if zero else np.random.default_rng(5).uniform(0, 2, obj.multipliers.size)
    lam[::3] = 0.0
    obj.multipliers[:] = lam
    grad, hess = (a.copy() for a in obj(F))
    np.testing.assert_array_equal(obj.multipliers, lam)
    h = 1e-6
    L = lambda Z: ref.lagrangian(Z, y01, codes, constraint, lam, tau, tol)  # noqa: E731
    p = 1.0 / (1.0 + np.exp(-F))
    for i in range(F.size):
        e = np.zeros(F.size)
        e[i] = h
        assert grad[i] == pytest.approx((L(F + e) - L(F - e)) / (2 * h), rel=1e-6, abs=1e-6)
        # curvature of the constraint part: the objective's own gradient differenced, minus the loss's p(1 - p)
        g_plus, g_minus = obj(F + e)[0][i], obj(F - e)[0][i]
        constraint_curvature = (g_plus - g_minus) / (2 * h) - p[i] * (1 - p[i])
        assert hess[i] >= p[i] * (1 - p[i]) + abs(constraint_curvature) - 1e-5
    if zero:
        np.testing.assert_allclose(hess, p * (1 - p), rtol=1e-12)
    else:
        assert np.any(hess > p * (1 - p) + 1e-3)     # the bound is not the loss's alone


@pytest.mark.parametrize("constraint", RATE)
def test_multiplier_step_is_projected_ascent_on_the_hard_gaps(constraint):
    tol, eta = 0.05, 0.7
    obj, F, y01, codes, history = _objective(constraint, tolerance=tol, dual_step=eta)
    gaps = ref.hard_pair_values(constraint, F, y01, codes)
    assert gaps.max() > AIM * tol and gaps.min() < AIM * tol     # some multipliers move, some stay at 0
    obj(F)
    first = ref.multiplier_step(np.zeros(gaps.size), gaps, tol, eta, AIM)
    np.testing.assert_allclose(obj.multipliers, first, rtol=1e-12, atol=1e-15)
    # a second round accumulates from the first's multipliers
    F2 = np.roll(F, 3) - 0.4
    obj(F2)
    second = ref.multiplier_step(first, ref.hard_pair_values(constraint, F2, y01, codes), tol, eta, AIM)
    np.testing.assert_allclose(obj.multipliers, second, rtol=1e-12, atol=1e-15)
    # each round recorded: the mean loss and the largest hard gap of the scores it was handed
    rows = history.as_arrays()
    np.testing.assert_array_equal(rows["iteration"], [0, 1])
    np.testing.assert_allclose(rows["loss"], [ref.logistic_losses(Z, y01).mean() for Z in (F, F2)], rtol=1e-12)
    np.testing.assert_allclose(rows["gap"], [gaps.max(), ref.hard_pair_values(constraint, F2, y01, codes).max()],
                               atol=GAP_TOL)


# ---------------------------------------------------------------------------- the estimator
def _check_fit(clf, constraint, X, y, codes, tol=TOL):
    """The fit meets the tolerance on the training rows, reports it truthfully and keeps a non-constant model."""
    F = clf.decision_function(X)
    result = clf.solve_result_
    assert result.status == "converged"
    assert result.info["measured_on"] == "training rows"
    assert clf.fit_gap_ <= tol
    assert clf.fit_gap_ == pytest.approx(fairness_gap(constraint, F, y, codes), abs=GAP_TOL)
    assert clf.fit_gap_ == pytest.approx(hard_gap(constraint, F, y, codes), abs=GAP_TOL)
    assert 0 < clf.n_iter_ <= result.info["rounds_trained"]
    assert np.mean((F > 0) == y) > max(y.mean(), 1 - y.mean())      # better than the constant model
    # the result's scores are the kept model's on the training rows (XGBoost's cached margin is float32)
    np.testing.assert_allclose(result.x, F, rtol=0, atol=1e-5 * (1 + np.abs(F).max()))
    return F


def _check_report(clf, constraint, X, y, sensitive, codes, F, tol=TOL):
    report = clf.constraint_report(X, y, sensitive)
    assert report.constraint == constraint and report.bound == tol and report.satisfied
    assert report.value == pytest.approx(clf.fit_gap_, abs=GAP_TOL) and report.fit_value == clf.fit_gap_
    assert report.solver_status == "converged"
    want = rates(F, y, codes)
    assert len(report.per_group) == len(want) == len(clf.groups_)
    for k, label in enumerate(clf.groups_):
        n, sel, tpr, fpr = want[k]
        got = report.per_group[label]
        assert got["n"] == n
        assert (got["selection_rate"], got["true_positive_rate"], got["false_positive_rate"]) == pytest.approx(
            (sel, tpr, fpr), abs=GAP_TOL)


def _unconstrained_gap(constraint, backend, X, y, codes):
    with pytest.warns(UserWarning, match="^sensitive_features: not given"):
        free = FairGBMClassifier(constraint, backend=backend, n_estimators=ROUNDS,
                                 params=PARAMS[backend]).fit(X, y)
    assert free.groups_ == [0] and free.n_iter_ == ROUNDS
    return fairness_gap(constraint, free.decision_function(X), y, codes)


@pytest.mark.parametrize("G", [2, 3])
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("constraint", RATE)
def test_fit_meets_the_rate_tolerance_on_the_training_rows(constraint, backend, G):
    X, y, g = _data(G=G)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf = _fit(constraint, backend, X, y, g)
    assert clf.groups_ == list(range(G))
    F = _check_fit(clf, constraint, X, y, g)
    _check_report(clf, constraint, X, y, g, g, F)
    # the same booster without groups violates the bound clearly
    assert _unconstrained_gap(constraint, backend, X, y, g) > 2 * TOL


@pytest.mark.parametrize("backend", BACKENDS)
def test_fit_meets_demographic_parity_for_intersectional_groups(backend):
    X, y, sensitive, codes = _intersectional()
    tol = 0.05
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf = _fit("demographic_parity", backend, X, y, sensitive, tol=tol)
    assert clf.groups_ == [("F", "old"), ("F", "young"), ("M", "old"), ("M", "young")]
    assert len(clf.solve_result_.multipliers) == 4 * 3
    F = _check_fit(clf, "demographic_parity", X, y, codes, tol)
    _check_report(clf, "demographic_parity", X, y, sensitive, codes, F, tol)
    assert _unconstrained_gap("demographic_parity", backend, X, y, codes) > 2 * tol


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("constraint", ["demographic_parity", "equalized_odds"])
def test_validation_fraction_measures_the_gap_on_the_held_out_rows(constraint, backend):
    X, y, g = _data(G=3)
    tol = 0.05                                      # a gap on about 80 rows per group
    clf = _fit(constraint, backend, X, y, g, tol=tol, validation_fraction=0.3, random_state=4)
    result = clf.solve_result_
    assert result.info["measured_on"] == "validation rows" and result.status == "converged"
    fit_rows, held = stratified_holdout(g, y, 0.3, 4)
    assert held.size == pytest.approx(0.3 * y.size, abs=6) and np.intersect1d(fit_rows, held).size == 0
    F = clf.decision_function(X)
    assert clf.fit_gap_ <= tol
    assert clf.fit_gap_ == pytest.approx(fairness_gap(constraint, F[held], y[held], g[held]), abs=GAP_TOL)
    assert clf.n_iter_ > 0
    # fit_value reports where fit measured, value the rows given
    assert clf.constraint_report(X[held], y[held], g[held]).value == pytest.approx(clf.fit_gap_, abs=GAP_TOL)


@pytest.mark.parametrize("backend", BACKENDS)
def test_same_seed_same_bits_and_group_blind_prediction(backend):
    X, y, g = _data()
    params = {**PARAMS[backend], **BAGGING[backend]}
    a, b, c = (_fit("equalized_odds", backend, X, y, g, params=params, random_state=s, quiet=True) for s in (3, 3, 4))
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    assert not np.array_equal(a.decision_function(X), c.decision_function(X))    # the seed reaches the library
    # prediction reads X alone
    np.testing.assert_array_equal(a.predict(X), a.classes_[(a.decision_function(X) > 0).astype(int)])
    # the sensitive column given by position and dropped: the model never sees it
    Xg = np.column_stack([X[:, :1], g, X[:, 1:]]).astype(np.float64)
    dropped = _fit("equalized_odds", backend, Xg, y, 1, drop_sensitive=True, params=params, random_state=3,
                   quiet=True)
    assert dropped.sensitive_columns_ == [1] and len(dropped.groups_) == 2 and dropped.n_features_in_ == X.shape[1]
    np.testing.assert_array_equal(dropped.decision_function(Xg), a.decision_function(X))
    flipped = Xg.copy()
    flipped[:, 1] = 1 - flipped[:, 1]
    np.testing.assert_array_equal(dropped.predict(flipped), a.predict(X))


def test_errors_name_the_argument():
    X, y, g = _data(200)
    with pytest.raises(ValueError, match="^y:"):
        FairGBMClassifier("equal_opportunity").fit(X, np.zeros(200, dtype=np.int64), sensitive_features=g)
    with pytest.raises(ValueError, match="^bound:"):
        FairGBMClassifier("demographic_parity", 1.5).fit(X, y, sensitive_features=g)
    with pytest.raises(ValueError, match="^constraint:"):
        FairGBMClassifier("dp").fit(X, y, sensitive_features=g)
    with pytest.raises(ValueError, match="^smoothing:"):
        FairGBMClassifier(smoothing=-0.5).fit(X, y, sensitive_features=g)
    with pytest.raises(ValueError, match="^validation_fraction:"):
        FairGBMClassifier(validation_fraction=1.5).fit(X, y, sensitive_features=g)


def test_dask_x_is_refused_for_rate_constraints():
    da = pytest.importorskip("dask.array")
    X, y, g = _data(200)
    with pytest.raises(ValueError, match="^X: a dask collection"):
        FairGBMClassifier("equalized_odds").fit(da.from_array(X, chunks=(100, X.shape[1])), y, sensitive_features=g)


# ---------------------------------------------------------------------------- persistence
def _rewrite_header(src, dst, edit):
    with zipfile.ZipFile(src) as archive:
        entries = {n: archive.read(n) for n in archive.namelist()}
    header = json.loads(entries["header.json"])
    edit(header)
    entries["header.json"] = json.dumps(header).encode()
    with zipfile.ZipFile(dst, "w") as archive:
        for n, raw in entries.items():
            archive.writestr(n, raw)
    return dst


@pytest.mark.parametrize("backend", BACKENDS)
def test_save_load_keeps_the_constraint_and_the_bits(backend, tmp_path):
    X, y, g = _data()
    clf = _fit("false_positive_parity", backend, X, y, g)
    clf.save(tmp_path / "rate.zip")
    again = load_model(tmp_path / "rate.zip")
    assert again.constraint == "false_positive_parity" and again.get_params() == clf.get_params()
    np.testing.assert_array_equal(again.decision_function(X), clf.decision_function(X))
    assert again.fit_gap_ == clf.fit_gap_ and again.n_iter_ == clf.n_iter_
    assert str(again.constraint_report(X, y, g)) == str(clf.constraint_report(X, y, g))


@pytest.mark.parametrize("backend", BACKENDS)
def test_load_reads_a_model_saved_before_the_rate_constraints(backend, tmp_path):
    _library(backend)
    X, y, g = _data(300)
    clf = FairGBMClassifier("mean_loss_gap", 0.05, backend=backend, rounds=3, max_iter=2, inner_iter=3,
                            params=PARAMS[backend]).fit(X, y, sensitive_features=g)
    clf.save(tmp_path / "new.zip")

    def older(header):
        # the parameters the rate constraints added
        del header["params"]["constraint"]
        for key in ("n_estimators", "smoothing", "validation_fraction", "confidence"):
            header["params"].pop(key, None)

    again = load_model(_rewrite_header(tmp_path / "new.zip", tmp_path / "old.zip", older))
    assert again.constraint == "mean_loss_gap"
    np.testing.assert_array_equal(again.decision_function(X), clf.decision_function(X))
    assert again.constraint_report(X, y, g).constraint == "mean_loss_gap"


# ---------------------------------------------------------------------------- the kept round
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("constraint, validation", [("demographic_parity", None), ("equalized_odds", None),
                                                    ("demographic_parity", 0.3)])
def test_kept_round_is_the_least_loss_feasible_round(constraint, validation, backend):
    X, y, g = _data(G=3 if validation is None else 2)
    tol = TOL if validation is None else 0.05
    clf = _fit(constraint, backend, X, y, g, tol=tol, validation_fraction=validation, random_state=4)
    result = clf.solve_result_
    h = result.history
    rounds = result.info["rounds_trained"]
    # one row per model: round t is the first t trees, round 0 the constant model (gap 0, loss log 2)
    np.testing.assert_array_equal(h["iteration"], np.arange(rounds + 1))
    assert h["gap"][0] == 0.0 and h["loss"][0] == pytest.approx(np.log(2.0), rel=1e-12)
    feasible = np.flatnonzero(h["gap"] <= tol)
    assert 0 < feasible.size < rounds + 1          # the choice is not trivial
    kept = feasible[np.argmin(h["loss"][feasible])]
    assert clf.n_iter_ == result.n_iter == kept
    assert result.objective == h["loss"][kept] and clf.fit_gap_ == h["gap"][kept]
    # the history's loss of the kept round is the kept model's mean logistic loss on the rows it was measured on
    rows = np.arange(y.size) if validation is None else stratified_holdout(g, y, validation, 4)[1]
    F = clf.decision_function(X)[rows]
    assert h["loss"][kept] == pytest.approx(ref.logistic_losses(F, y[rows]).mean(), rel=1e-6)
    if validation is not None:
        # the held-out loss rose in later feasible rounds: the kept round is not merely the last feasible one
        assert kept < feasible[-1] and h["loss"][feasible[-1]] > h["loss"][kept]


def test_kept_model_is_the_measured_one_when_lightgbm_stops_splitting():
    """LightGBM adds no tree in a round where no split gains ``min_gain_to_split`` (``Booster.update``
    returns True; here, with LightGBM 4.7, two of the 40 rounds); later rounds, under moved multipliers,
    split again. The kept round must still be the model whose gap was measured: its hard training gap is
    ``fit_gap_`` and within the tolerance."""
    X, y, g = _data(seed=1)
    clf = _fit("equalized_odds", "lightgbm", X, y, g, tol=0.1, quiet=True,
               params={**PARAMS["lightgbm"], "min_gain_to_split": 1.0})
    result = clf.solve_result_
    rounds = result.info["rounds_trained"]
    gap = fairness_gap("equalized_odds", clf.decision_function(X), y, g)
    assert clf.fit_gap_ == pytest.approx(gap, abs=GAP_TOL)
    assert result.status != "converged" or gap <= 0.1
    # one history row per model (round t: the first t trees)
    assert clf.n_iter_ <= rounds
    np.testing.assert_array_equal(result.history["iteration"], np.arange(rounds + 1))
