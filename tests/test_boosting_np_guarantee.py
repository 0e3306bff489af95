"""NeymanPearsonGBMClassifier's held-out guarantee: P(type-I error > alpha) <= delta over the draw of the data."""
import inspect
import warnings

import numpy as np
import pytest
from scipy.stats import binom

from fastcon import load_model
from fastcon.boosting import NeymanPearsonGBMClassifier

ALPHA = 0.1
DELTA = 0.05
DRAWS = 40
N_TEST = 20_000
PARAMS = {"xgboost": {"max_depth": 3}, "lightgbm": {"num_leaves": 7}}
def _backends():
    out = []
    for name in ("lightgbm", "xgboost"):
        try:
            __import__(name)
            installed = True
        except ImportError:
            installed = False
        out.append(pytest.param(name, marks=pytest.mark.skipif(not installed, reason=f"{name} is not installed")))
    return out


BACKENDS = _backends()


def _data(n, rng):
    X = rng.normal(size=(n, 5))
    logit = 1.5 * X[:, 0] + X[:, 1] - 0.5 * X[:, 2]
    return X, (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(np.int64)


def _class0(n, rng):
    """``n`` rows of class 0 drawn from the same distribution (rejection on the label)."""
    X, y = _data(3 * n, rng)
    return X[y == 0][:n]


def _fit(name, X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # one ABPP run (max_calibration=1) may miss the training-row target
        return NeymanPearsonGBMClassifier(name, ALPHA, rounds=3, max_iter=5, max_calibration=1,
                                          params=PARAMS[name], **kw).fit(X, y)


def test_the_default_is_the_held_out_guarantee():
    defaults = {k: p.default for k, p in inspect.signature(NeymanPearsonGBMClassifier).parameters.items()}
    assert defaults["delta"] == 0.05 and defaults["calibration_fraction"] == 0.5
    assert NeymanPearsonGBMClassifier().get_params()["delta"] == 0.05


@pytest.mark.parametrize("name", BACKENDS)
def test_type_one_error_exceeds_alpha_in_at_most_delta_of_the_draws(name):
    X_test = _class0(N_TEST, np.random.default_rng(12345))
    # a test error above alpha + margin is a violation beyond the test sample's own noise (p = 0.001)
    margin = binom.ppf(0.999, N_TEST, ALPHA) / N_TEST - ALPHA
    errors = []
    for draw in range(DRAWS):
        X, y = _data(600, np.random.default_rng(draw))
        clf = _fit(name, X, y, random_state=draw)
        assert clf.umbrella_["calibration_rows"] >= 59 and clf.umbrella_["delta"] == DELTA
        errors.append(float(np.mean(clf.predict(X_test) != 0)))
    errors = np.array(errors)
    violations = int(np.sum(errors > ALPHA + margin))
    print(f"{name}: {violations} of {DRAWS} draws above alpha + {margin:.4f}; mean type-I {errors.mean():.4f}")
    assert violations <= binom.ppf(0.999, DRAWS, DELTA)
    # not vacuous: the threshold uses the budget (the training-row threshold of one ABPP run gives ~0.001)
    assert errors.mean() > ALPHA / 4


@pytest.mark.parametrize("name", BACKENDS)
@pytest.mark.parametrize("constrained", [None, "b"])
def test_threshold_applies_everywhere_and_survives_save_load(name, constrained, tmp_path):
    X, y = _data(800, np.random.default_rng(1))
    labels = np.where(y == 1, "b", "a")
    clf = _fit(name, X, labels, constrained_class=constrained, random_state=3)
    X_new, y_new = _data(3000, np.random.default_rng(2))
    y_new = np.where(y_new == 1, "b", "a")
    raw = clf.ensemble_.predict_scores(X_new)
    sign = 1.0 if constrained is None else -1.0
    np.testing.assert_array_equal(clf.decision_function(X_new), raw - sign * clf.threshold_)
    # "other class iff (the constrained class's) score > threshold"
    kept = "a" if constrained is None else "b"
    other = "b" if kept == "a" else "a"
    np.testing.assert_array_equal(clf.predict(X_new) == other, sign * raw > clf.threshold_)
    proba = clf.predict_proba(X_new)
    np.testing.assert_array_equal(clf.classes_[np.argmax(proba, axis=1)], clf.predict(X_new))
    report = clf.constraint_report(X_new, y_new)
    assert report.per_group[kept]["error"] == pytest.approx(np.mean(clf.predict(X_new)[y_new == kept] != kept))
    assert 0.0 <= clf.umbrella_["calibration_type_one_error"] <= ALPHA
    clf.save(tmp_path / "m.zip")
    back = load_model(tmp_path / "m.zip")
    assert back.threshold_ == clf.threshold_ and back.get_params() == clf.get_params()
    np.testing.assert_array_equal(back.decision_function(X_new), clf.decision_function(X_new))
    np.testing.assert_array_equal(back.predict(X_new), clf.predict(X_new))
    np.testing.assert_array_equal(back.predict_proba(X_new), clf.predict_proba(X_new))
    assert str(back.constraint_report(X_new, y_new)) == str(report)


def test_the_split_is_seeded():
    X, y = _data(600, np.random.default_rng(4))
    a, b = (_fit("lightgbm", X, y, random_state=7) for _ in range(2))
    c = _fit("lightgbm", X, y, random_state=8)
    assert a.threshold_ == b.threshold_
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    assert not np.array_equal(a.decision_function(X), c.decision_function(X))


def test_delta_none_keeps_the_training_row_threshold():
    X, y = _data(600, np.random.default_rng(5))
    clf = _fit("lightgbm", X, y, delta=None)
    assert clf.threshold_ == 0.0 and clf.umbrella_ is None
    np.testing.assert_array_equal(clf.decision_function(X), clf.ensemble_.predict_scores(X))


def test_errors_name_the_parameter():
    X, y = _data(600, np.random.default_rng(6))
    y3 = np.where(X[:, 3] > 1.0, 2, y)
    with pytest.raises(ValueError, match=r"^delta: the held-out \(umbrella\) guarantee is implemented for two "
                                         r"classes.*delta=None"):
        NeymanPearsonGBMClassifier(bound={0: 0.1, 2: 0.2}).fit(X, y3)
    with pytest.raises(ValueError, match=r"^delta: .*set delta=None"):
        NeymanPearsonGBMClassifier(bound={0: 0.1}).fit(X, y)
    k0 = int(round(0.5 * np.sum(y[:40] == 0)))
    with pytest.raises(ValueError, match=rf"^calibration_fraction: {k0} held-out rows of the constrained class, "
                                         r"but the umbrella rule at bound=0.1, delta=0.05 needs at least 29"):
        NeymanPearsonGBMClassifier(bound=0.1).fit(X[:40], y[:40])
    with pytest.raises(ValueError, match=r"^delta: must be below 1"):
        NeymanPearsonGBMClassifier(delta=1.0).fit(X, y)
    with pytest.raises(ValueError, match=r"^calibration_fraction: must be positive"):
        NeymanPearsonGBMClassifier(calibration_fraction=0.0).fit(X, y)
    with pytest.raises(ValueError, match=r"^random_state: expected None, an integer in \[0, 2\*\*32\)"):
        NeymanPearsonGBMClassifier(random_state=2 ** 40).fit(X, y)
