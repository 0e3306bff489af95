"""What the constrained estimators share: tags, feature checks at prediction, saving; the binary linear classifier."""
from __future__ import annotations

import numpy as np
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from ._input import check_features

__all__ = ["ConstrainedClassifier", "LinearConstrainedClassifier"]


class ConstrainedClassifier(ClassifierMixin, BaseEstimator):
    """Base of every fastcon estimator: sparse input accepted, features checked at prediction, `save`."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _features_for_predict(self, X):
        return check_features(self, X, reset=False)

    def _linear_scores(self, X):
        """``X coef_^T + intercept_``, shape (n, n_rows of coef_), after the prediction-time checks."""
        check_is_fitted(self, "coef_")
        X = self._features_for_predict(X)
        return np.asarray(safe_sparse_dot(X, self.coef_.T, dense_output=True)) + self.intercept_

    def save(self, path):
        """Write the fitted estimator to ``path`` without pickle (`fastcon.estimators.load` reads it back)."""
        from ._persist import save

        save(self, path)


class LinearConstrainedClassifier(ConstrainedClassifier):
    """Prediction side of the binary estimators: :math:`s(x) = w^\\top x + b`, class ``classes_[1]`` iff :math:`s > 0`.

    Subclasses set ``coef_`` (shape (1, n_features)), ``intercept_`` (shape (1,)) and
    ``classes_`` in ``fit``.
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    def decision_function(self, X):
        """Scores :math:`w^\\top x + b` of shape (n,); positive means ``classes_[1]``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Dense, CSR (kept sparse) or a pandas DataFrame with the training columns.
        """
        return self._linear_scores(X)[:, 0]

    def predict(self, X):
        """Class labels (``classes_[1]`` where the score is positive); deterministic."""
        scores = self.decision_function(X)
        return self.classes_[(scores > 0).astype(np.int64)]

    def _has_proba(self):
        if getattr(self, "loss", "logistic") != "logistic":
            raise AttributeError(f"predict_proba: available for loss='logistic' only, not {self.loss!r} "
                                 "(a hinge score is not a log-odds)")
        return True

    @available_if(_has_proba)
    def predict_proba(self, X):
        """Class probabilities :math:`(1 - \\sigma(s), \\sigma(s))` of the logistic model, shape (n, 2).

        Available for ``loss="logistic"`` only (``hasattr`` says so).
        """
        s = self.decision_function(X)
        p = expit(s)
        # predict says classes_[1] for every s > 0, but expit rounds a tiny s to exactly 1/2 (a tie
        # that argmax breaks towards classes_[0]): one ulp above 1/2 keeps the two consistent
        p[(s > 0.0) & (p <= 0.5)] = np.nextafter(0.5, 1.0)
        return np.column_stack([1.0 - p, p])

    @available_if(_has_proba)
    def predict_log_proba(self, X):
        """Logarithm of `predict_proba`, computed without underflow."""
        s = self.decision_function(X)
        return np.column_stack([-np.logaddexp(0.0, s), -np.logaddexp(0.0, -s)])
