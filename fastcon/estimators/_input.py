"""Input handling shared by the estimators: features, labels, sensitive features, sparse stays sparse."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import validate_data

from ..datasets import Dataset, encode_groups
from ..datasets._storage import fast_storage
from ..solvers._validation import check_real

__all__ = ["ridge_for", "check_fraction", "check_sample_weight", "labels_to_index", "split_sensitive",
           "check_features", "check_binary_target", "fit_dataset"]


def ridge_for(ridge, total_weight):
    """The L2 weight on the (weighted) mean loss: ``ridge``, or ``1/total_weight`` for None.

    None is scikit-learn's ``LogisticRegression(C=1.0)``: its penalty :math:`\\|w\\|^2/2` sits on the
    summed loss, so on the mean it is one over the number of rows, or over the total sample weight
    (a weight of 2 then means the same as a repeated row).
    """
    return 1.0 / float(total_weight) if ridge is None else check_real("ridge", ridge)


def check_fraction(name, value):
    """A number in the open interval (0, 1) (`fastcon.solvers._validation.check_real`, then ``< 1``)."""
    value = check_real(name, value, positive=True)
    if not value < 1.0:
        raise ValueError(f"{name}: must be below 1, got {value!r}")
    return value


def _is_dataframe(X):
    return hasattr(X, "columns") and hasattr(X, "iloc")


def _column_keys(sensitive_features):
    """Column names/positions if ``sensitive_features`` names columns of X, else None."""
    if isinstance(sensitive_features, (str, int, np.integer)) and not isinstance(sensitive_features, bool):
        return [sensitive_features]
    if isinstance(sensitive_features, (list, tuple)) and sensitive_features and all(
            isinstance(k, (str, np.str_)) for k in sensitive_features):
        return list(sensitive_features)
    return None


def sensitive_columns(sensitive_features):
    """The column names/positions ``sensitive_features`` refers to, or [] when it holds the values."""
    return _column_keys(sensitive_features) or []


def split_sensitive(X, sensitive_features, drop_sensitive):
    """``(X, sensitive values)``: read named columns out of a DataFrame ``X`` when ``sensitive_features`` names them.

    A column name (or list of names) selects columns of a DataFrame ``X``; an int selects a
    column of ``X`` by position. The columns stay among the features unless ``drop_sensitive``.
    Any other ``sensitive_features`` (array, Series, DataFrame, list of columns) is returned as is.
    """
    keys = _column_keys(sensitive_features)
    if keys is None:
        return X, sensitive_features
    if _is_dataframe(X):
        if all(isinstance(k, (int, np.integer)) for k in keys):
            values = X.iloc[:, keys]
            names = [X.columns[k] for k in keys]
        else:
            missing = [k for k in keys if k not in X.columns]
            if missing:
                raise ValueError(f"sensitive_features: column(s) {missing} not in X's columns")
            values, names = X[keys], keys
        return (X.drop(columns=names) if drop_sensitive else X), values
    if all(isinstance(k, (int, np.integer)) for k in keys):
        n_cols = X.shape[1] if hasattr(X, "shape") and len(X.shape) == 2 else None
        if n_cols is None:
            raise ValueError("sensitive_features: a column position needs a 2-D X")
        for k in keys:
            if not -n_cols <= k < n_cols:
                raise ValueError(f"sensitive_features: column {k} out of range for X with {n_cols} columns")
        cols = X[:, keys]
        values = cols.toarray() if sp.issparse(cols) else np.asarray(cols)
        if drop_sensitive:
            keep = np.setdiff1d(np.arange(n_cols), np.asarray(keys) % n_cols)
            X = X[:, keep]
        return X, values
    raise ValueError(f"sensitive_features: column names {keys} need X to be a pandas DataFrame")


def check_features(estimator, X, reset):
    """X validated the scikit-learn way: float64, finite, CSR kept sparse (CSC/COO converted to CSR)."""
    return validate_data(estimator, X, accept_sparse="csr", dtype=np.float64, reset=reset)


def check_binary_target(estimator, X, y):
    """``(X, y01, classes_)`` for a binary classifier: labels of any two values, 1 = ``classes_[1]``."""
    X, y = validate_data(estimator, X, y, accept_sparse="csr", dtype=np.float64, y_numeric=False)
    check_classification_targets(y)
    classes, y_index = np.unique(y, return_inverse=True)
    if classes.size != 2:
        kind = type_of_target(y)
        raise ValueError(f"y: Only binary classification is supported; {type(estimator).__name__} got "
                         f"{classes.size} class(es) (target type {kind!r})")
    return X, y_index.astype(np.int64), classes


def fit_dataset(X, y01, groups=None):
    """A `Dataset` over the validated X (labels ±1 from 0/1), copying nothing but a mostly-zero dense X,
    which is fitted as CSR (`fastcon.datasets._storage.fast_storage`)."""
    return Dataset(fast_storage(X), 2 * y01 - 1, groups=groups, copy=False, task="binary")


def encode_fit_groups(sensitive_features, n_samples):
    """Group codes of the training rows and the encoder (`fastcon.datasets.encode_groups`)."""
    groups = encode_groups(sensitive_features)
    if groups.codes.shape != (n_samples,):
        raise ValueError(f"sensitive_features: expected {n_samples} values (one per row of X), "
                         f"got {groups.codes.shape[0]}")
    return groups


def labels_to_index(y, classes):
    """Positions of the labels ``y`` in ``classes_`` (a label not seen in fit is a ValueError naming it)."""
    index = np.searchsorted(classes, y)
    index = np.clip(index, 0, len(classes) - 1)
    if not np.all(classes[index] == y):
        unknown = np.setdiff1d(np.unique(y), classes)
        raise ValueError(f"y: labels {unknown[:5].tolist()} were not seen in fit (classes_ = {classes.tolist()})")
    return index.astype(np.int64)


def check_sample_weight(sample_weight, n):
    """Row weights: shape (n,), finite, non-negative, not all zero."""
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.shape != (n,):
        raise ValueError(f"sample_weight: expected shape ({n},), got {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0) or not w.sum() > 0:
        raise ValueError("sample_weight: must be finite, non-negative and not all zero")
    return w
