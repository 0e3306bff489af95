"""MultiClassNeymanPearsonClassifier's default guarantee (issue 34): every bounded class's error on new rows;
and what each estimator's report says holds on new data.

With ``delta`` the bounded classes' common score shift is certified on held-out rows by a
fixed-sequence exact binomial test (`fastcon.estimators._umbrella.certified_class_shift`), so
P(some bounded class's population error > its bound) <= delta. Checked the way a user meets it:
over independent draws, the population errors measured on fresh rows of the same distribution.
"""
import warnings

import numpy as np
import pytest
from scipy.stats import binom

from test_estimators import make_groups_data

pytest.importorskip("sklearn")
from fastcon.estimators import FairClassifier, MultiClassNeymanPearsonClassifier, NeymanPearsonClassifier  # noqa: E402
from fastcon.estimators._input import check_random_state  # noqa: E402
from fastcon.estimators._umbrella import calibration_rows, certified_class_shift  # noqa: E402

CENTERS = 2.2 * np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])


def _draw(n, seed):
    """Three Gaussian classes in 2-d, 1 and 2 each overlapping 0 (unconstrained errors 0.27, 0.14, 0.15)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    return CENTERS[y] + rng.normal(size=(n, 2)), y


def _population_errors(clf, X, y):
    pred = clf.predict(X)
    return np.array([np.mean(pred[y == k] != k) for k in range(3)])


def test_bounded_errors_on_new_rows_exceed_the_bounds_in_at_most_delta_of_the_draws():
    delta, draws, bounds = 0.1, 100, {1: 0.1, 2: 0.1}
    X_pop, y_pop = _draw(200_000, 10_000)
    violations, training_violations, certified = 0, 0, 0
    for seed in range(draws):
        X, y = _draw(3000, seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf = MultiClassNeymanPearsonClassifier(bounds, delta=delta, random_state=seed).fit(X, y)
            plain = MultiClassNeymanPearsonClassifier(bounds, delta=None).fit(X, y)
        certified += clf.certification_["certified"]
        errors = _population_errors(clf, X_pop, y_pop)
        # 0.004: about two standard errors of a 200,000-row estimate of a rate near 0.1
        violations += bool(errors[1] > bounds[1] + 0.004 or errors[2] > bounds[2] + 0.004)
        plain_errors = _population_errors(plain, X_pop, y_pop)
        training_violations += bool(plain_errors[1] > bounds[1] + 0.004 or plain_errors[2] > bounds[2] + 0.004)
        assert clf.shift_[0] == 0.0 and clf.shift_[1] == clf.shift_[2]
    assert violations <= binom.ppf(0.999, draws, delta), violations
    assert certified >= 0.6 * draws, certified          # the guarantee is not bought by failing to certify
    # the training-row bounds (delta=None) are what the guarantee fixes: they fail far more often
    assert training_violations >= 0.3 * draws, training_violations


def test_the_fit_never_reads_the_held_out_rows_and_the_certificate_counts_predict_errors():
    X, y = _draw(3000, 1)
    bounds = {1: 0.1, 2: 0.1}
    clf = MultiClassNeymanPearsonClassifier(bounds, random_state=7).fit(X, y)
    # the same split as fit: one generator, the bounded classes in order
    rng = check_random_state(7)
    held = {k: calibration_rows(np.flatnonzero(y == k), 0.5, bounds[k], 0.05, rng) for k in (1, 2)}
    X2 = X.copy()
    for rows in held.values():
        X2[rows] = 50.0 * np.random.default_rng(0).normal(size=(rows.size, 2))   # garbage in held-out rows
    clf2 = MultiClassNeymanPearsonClassifier(bounds, random_state=7).fit(X2, y)
    np.testing.assert_array_equal(clf.coef_, clf2.coef_)         # the scores never saw those rows
    assert clf.certification_["calibration_rows"] == {k: rows.size for k, rows in held.items()}
    pred = clf.predict(X)
    for k, rows in held.items():   # the certificate's counts are predict's, bit for bit
        assert clf.certification_["calibration_errors"][k] == np.mean(pred[rows] != k)
    assert clf.certification_["certified"] and clf.certification_["p_value"] <= 0.05


def test_two_classes_are_the_umbrella_rule_on_a_grid():
    # one bounded class: the shift certified is the smallest candidate whose held-out error count
    # k has P(Bin(m, alpha) <= k) <= delta, the umbrella rule's order statistic restricted to the grid
    rng = np.random.default_rng(3)
    n = 4000
    y = rng.integers(0, 2, n)
    raw = np.column_stack([np.zeros(n), rng.normal(size=n) + 1.5 * y])
    fit = rng.random(n) < 0.5
    held = {1: np.flatnonzero(~fit & (y == 1))}
    out = certified_class_shift(raw, np.zeros(2), y, held, {1: 0.1}, fit, 0.05)
    assert out["certified"] and out["shift"][0] == 0.0
    scores = raw[held[1], 1]
    m = scores.size
    errors = int(np.sum(scores + out["shift"][1] <= 0.0))
    assert out["errors"][1] == errors / m
    assert binom.cdf(errors, m, 0.1) <= 0.05
    # the largest count the test certifies (the umbrella rule's order statistic): the grid's choice
    # sits within its spacing of it, not at the conservative end
    allowed = int(binom.ppf(0.05, m, 0.1))
    allowed -= binom.cdf(allowed, m, 0.1) > 0.05
    assert 0.75 * allowed <= errors <= allowed, (errors, allowed)


def test_confusions_between_bounded_classes_cannot_be_shifted_away():
    # classes 1 and 2 overlap each other heavily: no common shift separates them, nothing is certified
    rng = np.random.default_rng(5)
    y = rng.integers(0, 3, 3000)
    X = np.array([[0.0, 0.0], [3.0, 0.0], [3.2, 0.0]])[y] + rng.normal(size=(3000, 2))
    with pytest.warns(UserWarning, match=r"^bound: not certified at delta=0\.05: even the most "
                                         r"conservative shift leaves held-out errors"):
        clf = MultiClassNeymanPearsonClassifier({1: 0.05, 2: 0.05}, random_state=0).fit(X, y)
    assert not clf.certification_["certified"]
    assert clf.certification_["p_value"] > 0.05


def test_delta_none_and_unbounded_fits_have_no_certificate():
    X, y = _draw(600, 2)
    for clf in (MultiClassNeymanPearsonClassifier({1: 0.2, 2: 0.2}, delta=None).fit(X, y),
                MultiClassNeymanPearsonClassifier().fit(X, y),
                MultiClassNeymanPearsonClassifier({1: 1.0, 2: 1.0}, priority_class=0).fit(X, y)):
        assert clf.certification_ is None and np.array_equal(clf.shift_, np.zeros(3))


def test_the_report_says_what_holds_on_new_data():
    X, y, g = make_groups_data(4000, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reports = {
            "np": NeymanPearsonClassifier(random_state=0).fit(X, y).constraint_report(X, y),
            "np_none": NeymanPearsonClassifier(delta=None).fit(X, y).constraint_report(X, y),
            "mc": MultiClassNeymanPearsonClassifier({1: 0.1}, random_state=0).fit(X, y).constraint_report(X, y),
            "fair": FairClassifier("demographic_parity", 0.2, confidence=0.9, random_state=0).fit(
                X, y, sensitive_features=g).constraint_report(X, y, g),
            "fair_none": FairClassifier("demographic_parity", 0.2).fit(X, y, sensitive_features=g).constraint_report(
                X, y, g)}
    assert reports["np"].guarantee.startswith("certified: population type-I error <= 0.05 with probability >= 0.95")
    assert reports["mc"].guarantee.startswith("certified: every bounded class's population error <= its bound")
    assert reports["fair"].guarantee.startswith("certified: population demographic_parity gap <= 0.")
    for name in ("np_none", "fair_none"):
        assert reports[name].guarantee.startswith("no guarantee on new data: "), reports[name].guarantee
    assert "guarantee: no guarantee on new data" in str(reports["fair_none"])


def test_discrete_features_leave_no_row_on_the_boundary():
    # one-hot features: many rows share each margin; a shift equal to a margin would leave them on
    # the boundary, where the rounding of the product (whole matrix vs one row) decides the class
    rng = np.random.default_rng(0)
    n = 4000
    cats = rng.integers(0, 6, (n, 3))
    X = np.hstack([np.eye(6)[cats[:, j]] for j in range(3)])
    y = np.where(rng.random(n) < 0.8, cats[:, 0] % 3, rng.integers(0, 3, n))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = MultiClassNeymanPearsonClassifier({1: 0.2, 2: 0.2}, random_state=6).fit(X, y)
    scores = clf.decision_function(X)
    top2 = np.sort(scores, axis=1)[:, -2:]
    assert np.min(top2[:, 1] - top2[:, 0]) > 1e-9 * np.abs(scores).max()
    one_by_one = np.concatenate([clf.predict(X[i:i + 1]) for i in range(n)])
    np.testing.assert_array_equal(one_by_one, clf.predict(X))


def test_the_report_describes_the_fitted_model_not_later_parameters():
    X, y, g = make_groups_data(3000, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fair = FairClassifier("demographic_parity", 0.1, confidence=0.9, random_state=0).fit(
            X, y, sensitive_features=g)
        stated = fair.constraint_report(X, y, g).guarantee
        fair.set_params(confidence=None, bound=0.5)
        assert fair.constraint_report(X, y, g).guarantee == stated
        # a refit without confidence (here a partial constraint) drops the old certificate
        fair.set_params(constraint="partial_dp", interval=(0.2, 0.8), max_calibration=1).fit(
            X, y, sensitive_features=g)
    assert fair.certified_gap_ is None
    assert fair.constraint_report(X, y, g).guarantee.startswith("no guarantee on new data: the bound is ")
    mc = MultiClassNeymanPearsonClassifier({1: 1.0}, priority_class=0).fit(X, y)
    assert mc.constraint_report(X, y).guarantee == "no guarantee on new data: no class has a bound below 1"
