"""MultiClassNeymanPearsonClassifier: class bounds met on training data (``delta=None``), scikit-learn conformance,
sparse input. The held-out guarantee (default ``delta``): tests/test_multiclass_np_guarantee.py."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

pytest.importorskip("sklearn")
from sklearn.base import clone  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

from fastcon.estimators import MultiClassNeymanPearsonClassifier  # noqa: E402


def _blobs(n=800, C=4, d=5, spread=1.0, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(C, d)) * spread
    y = rng.integers(0, C, n)
    return centers[y] + rng.normal(size=(n, d)), y


def _errors(clf, X, y):
    pred = clf.predict(X)
    return {c: float(np.mean(pred[y == c] != c)) for c in np.unique(y)}


@parametrize_with_checks([MultiClassNeymanPearsonClassifier(),
                          MultiClassNeymanPearsonClassifier(loss="logistic")])
def test_sklearn_conformance(estimator, check):
    check(estimator)


@pytest.mark.parametrize("loss", ["sigmoid", "logistic"])
@pytest.mark.parametrize("C", [3, 4])
def test_bounds_met_on_training_where_violated_unconstrained(loss, C):
    X, y = _blobs(C=C)
    labels = np.array(["ant", "bee", "cat", "dog"])[y]
    free = MultiClassNeymanPearsonClassifier(loss=loss).fit(X, labels)
    free_errors = _errors(free, X, labels)
    # bound every class but "ant" below what the unconstrained model reaches
    bounds = {c: round(0.8 * free_errors[c], 3) for c in np.unique(labels) if c != "ant"}
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf = MultiClassNeymanPearsonClassifier(bounds, delta=None, loss=loss).fit(X, labels)
    assert clf.priority_class_ == "ant"
    errors = _errors(clf, X, labels)
    for c, bound in bounds.items():
        assert free_errors[c] > bound          # the unconstrained model violates it...
        assert errors[c] <= bound              # ...the fitted one does not
        assert clf.fit_errors_[c] == errors[c]
    assert clf.calibration_["met"]
    assert errors["ant"] > free_errors["ant"]  # the price is paid by the priority class
    report = clf.constraint_report(X, labels)
    assert report.satisfied and report.value <= 0.0
    assert report.per_group["ant"]["bound"] is None
    assert report.per_group["bee"]["error"] == errors["bee"]


def test_unreachable_bounds_warn_and_are_reported():
    X, y = _blobs(C=3, spread=0.2)   # heavily overlapping classes
    clf = MultiClassNeymanPearsonClassifier({1: 0.01, 2: 0.01}, delta=None, max_calibration=3)
    with pytest.warns(ConvergenceWarning, match="bound"):
        clf.fit(X, y)
    assert not clf.calibration_["met"]
    assert 1 <= len(clf.calibration_["errors"]) <= 3
    report = clf.constraint_report(X, y)
    assert not report.satisfied and report.value > 0.0


def _reachable_bounds(X, y, classes, factor=0.8):
    """Bounds at ``factor`` times the unconstrained model's training errors (reachable on these blobs)."""
    free = _errors(MultiClassNeymanPearsonClassifier().fit(X, y), X, y)
    return {c: round(factor * free[c], 3) for c in classes}


def test_out_of_sample_report():
    X, y = _blobs(n=1600, C=3, seed=0)
    bounds = _reachable_bounds(X[:800], y[:800], [1, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf = MultiClassNeymanPearsonClassifier(bounds, delta=None).fit(X[:800], y[:800])
    assert clf.constraint_report(X[:800], y[:800]).satisfied
    report = clf.constraint_report(X[800:], y[800:])
    errors = _errors(clf, X[800:], y[800:])
    assert report.value == pytest.approx(max(errors[1] - bounds[1], errors[2] - bounds[2]))
    assert report.satisfied == (errors[1] <= bounds[1] and errors[2] <= bounds[2])
    assert report.per_group[0]["n"] == int(np.sum(y[800:] == 0))
    with pytest.raises(ValueError, match="^y: labels"):
        clf.constraint_report(X[:5], np.array([0, 1, 2, 7, 1]))


def test_deterministic():
    X, y = _blobs(C=3)
    bounds = _reachable_bounds(X, y, [1, 2])
    for delta in (None, 0.2):
        a = MultiClassNeymanPearsonClassifier(bounds, delta=delta, random_state=3).fit(X, y)
        b = MultiClassNeymanPearsonClassifier(bounds, delta=delta, random_state=3).fit(X, y)
        assert np.array_equal(a.coef_, b.coef_) and np.array_equal(a.intercept_, b.intercept_)
        assert np.array_equal(a.decision_function(X), a.decision_function(X))
        assert a.priority_class_ == 0 and a.calibration_["met"]
        assert a.certification_ == b.certification_


def test_sparse_input_stays_sparse_and_matches_dense():
    X, y = _blobs(C=3, seed=0)
    X[np.abs(X) < 0.3] = 0.0
    Xs = sp.csr_matrix(X)
    bounds = _reachable_bounds(X, y, [1, 2])
    clf_s = MultiClassNeymanPearsonClassifier(bounds, delta=None).fit(Xs, y)
    clf_d = MultiClassNeymanPearsonClassifier(bounds, delta=None).fit(X, y)
    assert clf_s.calibration_["met"]
    np.testing.assert_allclose(clf_s.coef_, clf_d.coef_, rtol=1e-4, atol=1e-6)

    class NoDense(sp.csr_matrix):   # any densification of the input fails
        def toarray(self, *args, **kwargs):
            raise AssertionError("densified")

        todense = toarray

    big = NoDense(Xs)
    assert clf_s.predict(big).shape == (X.shape[0],)
    assert clf_s.decision_function(big).shape == (X.shape[0], 3)


def test_predict_proba_only_for_logistic():
    X, y = _blobs(C=3)
    assert not hasattr(MultiClassNeymanPearsonClassifier().fit(X, y), "predict_proba")
    clf = MultiClassNeymanPearsonClassifier(loss="logistic").fit(X, y)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.array_equal(clf.classes_[np.argmax(proba, axis=1)], clf.predict(X))
    np.testing.assert_allclose(np.exp(clf.predict_log_proba(X)), proba)


def test_two_classes_follow_binary_convention():
    X, y = _blobs(C=2)
    clf = MultiClassNeymanPearsonClassifier({"yes": 0.05}, delta=None).fit(X, np.where(y == 1, "yes", "no"))
    s = clf.decision_function(X)
    assert s.shape == (X.shape[0],)
    assert np.array_equal(clf.predict(X), np.where(s > 0, "yes", "no"))
    assert clf.priority_class_ == "no" and clf.fit_errors_["yes"] <= 0.05


@pytest.mark.parametrize("params, message", [
    (dict(bound={5: 0.1}), "^bound: 5 is not a class"),
    (dict(bound={1: 0.0}), "^bound: the bound of class 1"),
    (dict(bound={1: 1.5}), "^bound: the bound of class 1"),
    (dict(bound={1: 0.1}), "^priority_class: required"),
    (dict(bound={0: 0.1, 1: 0.1, 2: 0.1}), "^priority_class: required"),
    (dict(bound={1: 0.1}, priority_class=0), "^bound: classes \\[2\\] have no bound"),
    (dict(bound={1: 0.1, 2: 0.1}, priority_class=1), "^priority_class: 1 also has a bound"),
    (dict(bound={1: 0.1, 2: 0.1}, priority_class=9), "^priority_class: 9 is not a class"),
    (dict(loss="hinge"), "^loss:"),
    (dict(ridge=-1.0), "^ridge:"),
    (dict(max_calibration=0), "^max_calibration:"),
    (dict(bound={1: 0.1, 2: 0.1}, delta=1.0), "^delta:"),
    (dict(bound={1: 0.1, 2: 0.1}, calibration_fraction=0.0), "^calibration_fraction:"),
    (dict(bound={1: 0.1, 2: 0.1}, random_state=-1), "^random_state:"),
    (dict(bound={1: 0.01, 2: 0.1}), "^calibration_fraction: 1[0-9] held-out rows of class 1, but the umbrella "
                                            "rule at bound=0.01, delta=0.05 needs at least 299"),
])
def test_invalid_parameters(params, message):
    X, y = _blobs(n=90, C=3)
    with pytest.raises(ValueError, match=message):
        MultiClassNeymanPearsonClassifier(**params).fit(X, y)


def test_bound_type_and_clone():
    X, y = _blobs(n=90, C=3)
    with pytest.raises(TypeError, match="^bound:"):
        MultiClassNeymanPearsonClassifier([0.1, 0.1]).fit(X, y)
    clf = MultiClassNeymanPearsonClassifier({1: 0.2, 2: 0.2}, ridge=1e-3)
    assert clone(clf).get_params() == clf.get_params()
