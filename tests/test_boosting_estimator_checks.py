"""scikit-learn conformance of the boosted estimators: `parametrize_with_checks` on both backends (issue 36)."""
import warnings

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from fastcon.boosting import FairGBMClassifier, NeymanPearsonGBMClassifier

# Small models so that the checks run fast (scikit-learn fits each estimator a few hundred times):
# shallow trees and few rounds. What the checks test (input validation, fitted attributes,
# determinism, pickling, sparse input, ...) does not depend on the model's size.
_TREES = {"lightgbm": {"num_leaves": 4}, "xgboost": {"max_depth": 2}}


def _estimators():
    out = []
    for backend in ("lightgbm", "xgboost"):
        # NeymanPearsonGBMClassifier with delta=None (threshold on the training rows): its default
        # umbrella guarantee needs at least 59 held-out rows of the constrained class at
        # alpha = delta = 0.05, more than scikit-learn's check data hold (a ValueError naming the
        # count); the default is tested on data of that size in tests/test_boosting_np_guarantee.py.
        out.append(NeymanPearsonGBMClassifier(backend, delta=None, rounds=2, max_iter=3, max_calibration=2,
                                              params=dict(_TREES[backend])))
        # FairGBMClassifier without sensitive_features warns and fits one group (the constraint is
        # void: the unconstrained booster), so every check applies to it.
        out.append(FairGBMClassifier(backend=backend, n_estimators=10, params=dict(_TREES[backend])))
    return out


# Both estimators are binary with their default alpha / constraint (tag multi_class=False:
# scikit-learn checks that three classes are refused with "Only binary classification is
# supported"). No check is declared an expected failure (xfail_strict: one that passed would fail).
@parametrize_with_checks(_estimators(), xfail_strict=True)
def test_sklearn_compatible_boosted_estimator(estimator, check):
    pytest.importorskip(estimator.backend)
    # the UserWarning of FairGBMClassifier.fit without groups is by design (above); the
    # ConvergenceWarnings of the small budgets on scikit-learn's tiny data are expected
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="sensitive_features: not given", category=UserWarning)
        check(estimator)


@pytest.mark.parametrize("backend", ["lightgbm", "xgboost"])
def test_multi_class_tag_follows_the_parameters(backend):
    # a dict alpha fits any number of classes, a float alpha two; every FairGBMClassifier constraint
    # takes any number of classes (rates: each class's one-vs-rest rates) except with confidence
    def tags(estimator):
        return estimator.__sklearn_tags__().classifier_tags.multi_class

    assert not tags(NeymanPearsonGBMClassifier(backend))
    assert tags(NeymanPearsonGBMClassifier(backend, bound={0: 0.1}, delta=None))
    assert tags(FairGBMClassifier(backend=backend))
    assert tags(FairGBMClassifier("mean_loss_gap", 0.05, backend=backend))
    assert not tags(FairGBMClassifier(backend=backend, confidence=0.9))
