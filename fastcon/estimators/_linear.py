"""What the constrained estimators share: tags, feature checks at prediction, saving; the binary linear classifier."""
from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from ..problems._dask_design import is_dask_collection
from ._input import check_features, dask_linear_scores

__all__ = ["ConstrainedClassifier", "LinearConstrainedClassifier", "converged", "warn_if_unconverged"]

#: Solvers that run a fixed budget and have no stopping rule: "max_iter" is their normal end.
FIXED_BUDGET_SOLVERS = ("switching_subgradient", "idca")


def converged(result, solver):
    """Whether a `SolveResult` ended as its solver ends when all went well.

    The augmented Lagrangian stops on its KKT certificate (status ``"converged"``); the switching
    subgradient method and IDCA run their budget (``"max_iter"`` is their normal end, with a
    feasible output). Every other status (``"no_feasible_iterate"``, ``"infeasible_stationary"``, the
    augmented Lagrangian's ``"max_iter"``, ...) did not converge.
    """
    ok = ("converged", "max_iter") if solver in FIXED_BUDGET_SOLVERS else ("converged",)
    return result.status in ok


def _largest_entry(X):
    if getattr(X, "is_distributed", False):          # a DaskDesign: found on the workers when it was built
        return X.largest_abs_entry
    data = X.data if sp.issparse(X) else np.asarray(X)
    # max(|max|, |min|): np.abs(data) would be a copy of X's entries
    return max(abs(float(data.max())), abs(float(data.min()))) if data.size else 0.0


def warn_if_unconverged(estimator, result, solver, X, ridge, *, stacklevel=3):
    """A `ConvergenceWarning` when the kept solve did not converge (`converged`), naming what to change.

    The model may then be degenerate (all weights 0 from an overflowing feature or ridge, or a
    start that never moved), which predicts without any other sign of trouble. The message gives
    the status, the largest feature magnitude and the ridge, and the parameters to change.
    """
    if converged(result, solver):
        return False
    coef = np.asarray(getattr(estimator, "coef_", np.zeros(1)))
    zero = " (every weight is 0)" if coef.size and not np.any(coef) else ""
    largest = _largest_entry(X)
    warnings.warn(f"{type(estimator).__name__}: the kept {solver} solve did not converge (status {result.status!r}: "
                  f"{result.message}){zero}; the model may be degenerate. Raise max_iter, or scale the features "
                  f"(largest |X| entry {largest:.3g}) or lower ridge ({ridge:.3g}) so that the problem is "
                  f"well-conditioned", ConvergenceWarning, stacklevel=stacklevel)
    return True


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
        if is_dask_collection(X):                 # scored block by block where the blocks are
            return dask_linear_scores(self, X)
        X = self._features_for_predict(X)
        return np.asarray(safe_sparse_dot(X, self.coef_.T, dense_output=True)) + self.intercept_

    def save(self, path):
        """Write the fitted estimator to ``path`` without pickle (`fastcon.load_model` reads it back)."""
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
            Dense, CSR (kept sparse) or a pandas DataFrame with the training columns; or a
            `dask.array` with one column chunk, scored on the workers, the scores returned as a
            numpy array (`fastcon.estimators._input.dask_linear_scores`).
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
