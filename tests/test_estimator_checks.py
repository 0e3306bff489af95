"""scikit-learn conformance of the estimators: check_estimator, parameters, clone, Pipeline, GridSearchCV."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from fastcon.estimators import FairClassifier, NeymanPearsonClassifier

# FairClassifier without sensitive_features warns and fits one group (the constraint is void), so
# every check applies to it; no check is declared an expected failure for either estimator.
# NeymanPearsonClassifier runs the checks with delta=None (threshold on the training rows): its
# default umbrella guarantee needs at least 59 held-out rows of the constrained class at
# alpha = delta = 0.05, more than scikit-learn's check data hold (a ValueError naming the count);
# the default is tested on data of that size in tests/test_np_default_guarantee.py.
@parametrize_with_checks([FairClassifier(), NeymanPearsonClassifier(delta=None)], xfail_strict=True)
def test_sklearn_compatible_estimator(estimator, check):
    # the UserWarning of FairClassifier.fit without groups is by design (above)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="sensitive_features: not given", category=UserWarning)
        check(estimator)


@pytest.mark.parametrize("constraint", ["demographic_parity", "equalized_odds"])
def test_fair_sample_weight_is_a_repeated_row_with_groups(constraint):
    # scikit-learn's weight-equivalence check runs without groups; with them the weights also enter
    # the group rates and the hard gap of the calibration
    rng = np.random.default_rng(3)
    X, y, g = _data(300, 3)
    sw = rng.integers(0, 4, size=y.size)
    repeated = FairClassifier(constraint, 0.05).fit(X.repeat(sw, axis=0), y.repeat(sw),
                                                    sensitive_features=g.repeat(sw))
    weighted = FairClassifier(constraint, 0.05).fit(X, y, sensitive_features=g, sample_weight=sw)
    assert weighted.calibration_["bounds"] == pytest.approx(repeated.calibration_["bounds"], rel=1e-6)
    np.testing.assert_allclose(weighted.decision_function(X), repeated.decision_function(X), rtol=1e-6, atol=1e-8)


def test_fair_sample_weight_is_refused_where_the_hard_gap_is_unweighted():
    X, y, g = _data(100, 1)
    for constraint in ("roc", "wasserstein"):
        with pytest.raises(ValueError, match="^sample_weight: not supported"):
            FairClassifier(constraint).fit(X, y, sensitive_features=g, sample_weight=np.ones(y.size))


def test_fit_without_groups_warns_and_is_the_unconstrained_model():
    X, y, g = _data(200, 1)
    with pytest.warns(UserWarning, match="^sensitive_features: not given"):
        alone = FairClassifier(bound=0.01).fit(X, y)
    assert alone.groups_ == [0]
    one_group = FairClassifier(bound=0.01).fit(X, y, sensitive_features=np.zeros(len(y)))
    np.testing.assert_array_equal(alone.coef_, one_group.coef_)
    np.testing.assert_array_equal(alone.intercept_, one_group.intercept_)


# ----------------------------------------------------------------------------- helpers
def _data(n, seed):
    """Two groups with different base rates; features shifted by group (DP violated unconstrained)."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 2, n)
    y = (rng.random(n) < np.where(g == 1, 0.75, 0.25)).astype(np.int64)
    X = np.column_stack([1.5 * (2 * y - 1) + 0.8 * g + rng.normal(0, 1, n),
                         rng.normal(0, 1, n) + 0.5 * g, 3.0 * g + rng.normal(0, 0.1, n)])
    return X, y, g


def _rate_gap(pred, g):
    return abs(pred[g == 1].mean() - pred[g == 0].mean())


# ----------------------------------------------------------------------------- parameters, clone
@pytest.mark.parametrize("estimator", [FairClassifier(), NeymanPearsonClassifier()], ids=lambda e: type(e).__name__)
def test_get_set_params_and_clone(estimator):
    params = estimator.get_params()
    assert params == type(estimator)().get_params()          # the defaults, nothing else
    new = {"FairClassifier": {"bound": 0.07, "constraint": "equal_opportunity", "max_iter": 5},
           "NeymanPearsonClassifier": {"bound": 0.2, "delta": 0.1, "max_iter": 5}}[type(estimator).__name__]
    assert estimator.set_params(**new) is estimator
    copy = clone(estimator)
    assert copy is not estimator and copy.get_params() == estimator.get_params()
    assert all(copy.get_params()[k] == v for k, v in new.items())
    with pytest.raises(ValueError, match="Invalid parameter 'nope'"):
        estimator.set_params(nope=1)
    X, y, g = _data(300, 2)
    fitted = estimator.fit(X, y, **({"sensitive_features": g} if isinstance(estimator, FairClassifier) else {}))
    unfitted = clone(fitted)
    assert not hasattr(unfitted, "coef_")                    # clone drops fitted state
    assert unfitted.get_params() == fitted.get_params()


# ----------------------------------------------------------------------------- Pipeline
@pytest.mark.parametrize("sparse", [False, True])
def test_pipeline_routes_sensitive_features_to_the_classifier(sparse):
    X, y, g = _data(400, 3)
    if sparse:
        X = sp.csr_matrix(X)
    pipe = Pipeline([("scale", StandardScaler(with_mean=False)), ("clf", FairClassifier(bound=0.05))])
    pipe.fit(X, y, clf__sensitive_features=g)
    # the same as scaling by hand and fitting the classifier
    scaler = StandardScaler(with_mean=False).fit(X)
    by_hand = FairClassifier(bound=0.05).fit(scaler.transform(X), y, sensitive_features=g)
    np.testing.assert_array_equal(pipe.named_steps["clf"].coef_, by_hand.coef_)
    np.testing.assert_array_equal(pipe.predict(X), by_hand.predict(scaler.transform(X)))
    assert _rate_gap(pipe.predict(X), g) <= 0.05
    assert _rate_gap(FairClassifier(bound=1.0).fit(X, y, sensitive_features=g).predict(X), g) > 0.2
    proba = pipe.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


# ----------------------------------------------------------------------------- GridSearchCV
def test_grid_search_slices_sensitive_features_per_fold():
    X, y, g = _data(450, 4)
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    search = GridSearchCV(FairClassifier(), {"bound": [0.05, 0.1, 1.0]}, cv=cv)
    # an unsliced array of 450 groups would fail fit on 300 rows ("expected 300 values")
    search.fit(X, y, sensitive_features=g)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    scores = search.cv_results_["mean_test_score"]
    # a looser fairness bound costs no accuracy: the unconstrained end of the grid scores best
    assert scores[2] >= scores[0]
    assert search.best_params_["bound"] == 1.0
    best = search.best_estimator_
    assert best.coef_.shape == (1, 3)
    # each fold's model is the one fitted on that fold's rows and groups
    train, test = next(cv.split(X, y))
    fold = FairClassifier(bound=0.05).fit(X[train], y[train], sensitive_features=g[train])
    assert search.cv_results_["split0_test_score"][0] == pytest.approx(fold.score(X[test], y[test]), abs=0)
