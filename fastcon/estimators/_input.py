"""Input handling shared by the estimators: features, labels, sensitive features, sparse stays sparse."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils import assert_all_finite, check_array
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.validation import column_or_1d, validate_data

from ..datasets import Dataset, encode_groups
from ..datasets._storage import fast_storage
from ..problems._dask_design import is_dask_collection
from ..solvers._validation import check_real

__all__ = ["ridge_for", "check_fraction", "check_random_state", "check_sample_weight", "drop_columns",
           "labels_to_index", "resolve_sensitive", "split_sensitive", "check_features", "check_binary_target",
           "fit_dataset", "dask_linear_scores"]


def check_fraction(name, value):
    """A number in the open interval (0, 1) (`fastcon.solvers._validation.check_real`, then ``< 1``)."""
    value = check_real(name, value, positive=True)
    if not value < 1.0:
        raise ValueError(f"{name}: must be below 1, got {value!r}")
    return value


def _is_dataframe(X):
    return hasattr(X, "columns") and hasattr(X, "iloc")


def _is_position(key):
    return isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_))


def _n_rows(X):
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0])
    try:
        return len(X)
    except TypeError:
        return None


def _column_keys(sensitive_features, X=None):
    """Column names/positions if ``sensitive_features`` names columns of X, else None (it holds the values).

    The rule (`split_sensitive`): a single string or int names a column; a non-empty list or
    tuple of strings names columns only when every item is a column of a DataFrame ``X``. Any
    other list of strings (a plain list of one label per row, or any list with X not a DataFrame)
    holds the group labels. Without ``X`` (callers that only ask which columns were named) a
    list of strings counts as names, as before.
    """
    if isinstance(sensitive_features, (str, np.str_)) or _is_position(sensitive_features):
        return [sensitive_features]
    if isinstance(sensitive_features, (list, tuple)) and sensitive_features and all(
            isinstance(k, (str, np.str_)) for k in sensitive_features):
        keys = list(sensitive_features)
        if X is None:
            return keys
        if not _is_dataframe(X):
            return None                               # labels: X has no column names
        if all(k in X.columns for k in keys):
            return keys
        if len(keys) == _n_rows(X):
            return None                               # one label per row
        missing = [k for k in keys if k not in X.columns]
        raise ValueError(f"sensitive_features: column(s) {missing[:5]} not in X's columns (a list of strings "
                         f"names columns of a DataFrame X, or holds one group label per row: {_n_rows(X)} of them)")
    return None


def resolve_sensitive(X, sensitive_features, drop_sensitive):
    """``(X, sensitive values, dropped columns)``: `split_sensitive` and the columns it dropped.

    The dropped columns are what `drop_columns` removes from the X given to ``predict``: names for
    a DataFrame column given by name, non-negative positions for a column given by position.
    """
    keys = _column_keys(sensitive_features, X)
    if keys is None:
        if is_dask_collection(X):
            _in_memory("sensitive_features", sensitive_features)
        return X, sensitive_features, []
    if is_dask_collection(X):
        raise ValueError("sensitive_features: with a dask X pass the group of every row as an in-memory array, "
                         "not column names or positions of X")
    if _is_dataframe(X):
        if all(_is_position(k) for k in keys):
            n_cols = X.shape[1]
            _check_positions(keys, n_cols)
            values = X.iloc[:, keys]
            names = [X.columns[k] for k in keys]
            dropped = [int(k) % n_cols for k in keys]
        else:
            missing = [k for k in keys if k not in X.columns]
            if missing:
                raise ValueError(f"sensitive_features: column(s) {missing} not in X's columns")
            values, names = X[keys], keys
            dropped = list(keys)
        return (X.drop(columns=names) if drop_sensitive else X), values, (dropped if drop_sensitive else [])
    if all(_is_position(k) for k in keys):
        n_cols = X.shape[1] if hasattr(X, "shape") and len(X.shape) == 2 else None
        if n_cols is None:
            raise ValueError("sensitive_features: a column position needs a 2-D X")
        _check_positions(keys, n_cols)
        cols = X[:, keys]
        values = cols.toarray() if sp.issparse(cols) else np.asarray(cols)
        dropped = sorted({int(k) % n_cols for k in keys})
        if drop_sensitive:
            X = drop_columns(X, dropped)
        return X, values, (dropped if drop_sensitive else [])
    raise ValueError(f"sensitive_features: column names {keys} need X to be a pandas DataFrame")


def _check_positions(keys, n_cols):
    for k in keys:
        if not -n_cols <= k < n_cols:
            raise ValueError(f"sensitive_features: column {k} out of range for X with {n_cols} columns")


def drop_columns(X, columns):
    """X without the ``columns`` `resolve_sensitive` dropped in fit (names, or non-negative positions)."""
    if not columns:
        return X
    if all(_is_position(k) for k in columns):
        if _is_dataframe(X):
            return X.drop(columns=[X.columns[k] for k in columns])
        n_cols = X.shape[1] if hasattr(X, "shape") and len(X.shape) == 2 else None
        if n_cols is None or max(columns) >= n_cols:
            raise ValueError(f"X: the sensitive column(s) {list(columns)} dropped in fit are not in an X of "
                             f"{n_cols} columns (pass the X of fit's layout, sensitive columns included)")
        keep = np.setdiff1d(np.arange(n_cols), np.asarray(columns))
        return X[:, keep]
    if not _is_dataframe(X):
        raise ValueError(f"X: the sensitive column(s) {list(columns)} dropped in fit need X to be a DataFrame")
    return X.drop(columns=list(columns))


def split_sensitive(X, sensitive_features, drop_sensitive):
    """``(X, sensitive values)``: read named columns out of a DataFrame ``X`` when ``sensitive_features`` names them.

    A column name (or a list of names that are all columns of a DataFrame ``X``) selects columns
    of a DataFrame ``X``; an int selects a column of ``X`` by position. The columns stay among
    the features unless ``drop_sensitive``. Anything else (array, Series, DataFrame, a plain list
    of one label per row) is returned as is (`_column_keys` has the rule).
    """
    X, values, _ = resolve_sensitive(X, sensitive_features, drop_sensitive)
    return X, values


def check_features(estimator, X, reset):
    """X validated the scikit-learn way: float64, finite, CSR kept sparse (CSC/COO converted to CSR)."""
    return validate_data(estimator, X, accept_sparse="csr", dtype=np.float64, reset=reset)


def _check_dask_features(estimator, X, reset):
    """A dask X's layout checked (2-D, one column chunk, known row chunks, real dtype) and its width
    recorded (``reset``) or compared with ``n_features_in_``, as `validate_data` does for an in-memory X."""
    from ..problems._dask_design import check_dask_features

    X = check_dask_features(X)
    if reset:
        estimator.n_features_in_ = int(X.shape[1])
        if hasattr(estimator, "feature_names_in_"):
            del estimator.feature_names_in_
    elif X.shape[1] != estimator.n_features_in_:
        raise ValueError(f"X has {X.shape[1]} features, but {type(estimator).__name__} is expecting "
                         f"{estimator.n_features_in_} features as input.")
    return X


def _block_scores(block, coef, intercept):
    """On a worker: the scores of one block of a dask X, with the checks and the product of an in-memory predict."""
    block = check_array(block, accept_sparse="csr", dtype=np.float64)
    return np.asarray(safe_sparse_dot(block, coef.T, dense_output=True)) + intercept


def dask_linear_scores(estimator, X):
    r"""``X coef_^T + intercept_`` of a dask X as a numpy array of shape (n, n_rows of coef_).

    Each block is checked and scored on the worker (or thread) that holds it (`_block_scores`, one
    task per block, ``coef_`` shipped once as one graph key); only the scores come back. They are
    returned in memory, not as a dask array: a fit on a dask X keeps its scores on the client too,
    :math:`8n` bytes against X's :math:`\ge 12\,\mathrm{nnz}`, and every metric, ``predict`` and
    ``constraint_report`` then work on them unchanged. The sensitive columns a fit dropped are
    dropped lazily first (positions only).
    """
    import dask
    import dask.array as da

    columns = getattr(estimator, "sensitive_columns_", None)
    if columns:
        X = drop_columns(X, columns)
    X = _check_dask_features(estimator, X, reset=False)
    coef, intercept = np.asarray(estimator.coef_), np.asarray(estimator.intercept_)
    scores = da.map_blocks(_block_scores, X, dask.delayed(coef), dask.delayed(intercept), dtype=np.float64,
                           chunks=(X.chunks[0], (coef.shape[0],)), meta=np.empty((0, 0)))
    return np.asarray(dask.compute(scores)[0])


def _in_memory(name, values):
    """``values`` unless it is a dask collection: the labels and groups of a dask fit are given in memory."""
    if is_dask_collection(values):
        raise ValueError(f"{name}: a dask collection; with a dask X pass {name} in memory (a numpy array): the "
                         "client holds n labels and scores in any case, only X is kept on the workers")
    return values


def _dask_target(estimator, X, y):
    """`validate_data`'s checks of (X, y) for a dask X: X's layout only (its values are checked block by
    block on the workers, `fastcon.problems._dask_design.DaskDesign`), y in memory, 1-D, finite."""
    X = _check_dask_features(estimator, X, reset=True)
    y = column_or_1d(_in_memory("y", y), warn=True)
    if y.dtype.kind in "fc":
        assert_all_finite(y, input_name="y")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"Found input variables with inconsistent numbers of samples: [{X.shape[0]}, {y.shape[0]}]")
    return X, y


def check_binary_target(estimator, X, y):
    """``(X, y01, classes_)`` for a binary classifier: labels of any two values, 1 = ``classes_[1]``.

    A dask X (a `dask.array` with one column chunk; y in memory) is returned as a
    `fastcon.problems._dask_design.DaskDesign`: its blocks are validated and kept on the workers of
    the current `distributed.Client`, never gathered here.
    """
    dask_X = is_dask_collection(X)
    if dask_X:
        X, y = _dask_target(estimator, X, y)
    else:
        X, y = validate_data(estimator, X, y, accept_sparse="csr", dtype=np.float64, y_numeric=False)
    check_classification_targets(y)
    classes, y_index = np.unique(y, return_inverse=True)
    if classes.size != 2:
        kind = type_of_target(y)
        raise ValueError(f"y: Only binary classification is supported; {type(estimator).__name__} got "
                         f"{classes.size} class(es) (target type {kind!r})")
    if dask_X:
        from ..problems._dask_design import DaskDesign

        X = DaskDesign(X)          # the blocks validated and kept on the workers (after y's checks)
    return X, y_index.astype(np.int64), classes


def fit_dataset(X, y01, groups=None):
    """A `Dataset` over the validated X (labels ±1 from 0/1), copying nothing but a mostly-zero dense X,
    which is fitted as CSR (`fastcon.datasets._storage.fast_storage`). For the `DaskDesign` of a dask X:
    a `fastcon.problems._dask_design.DistributedDataset` (no groups: the callers keep them)."""
    if getattr(X, "is_distributed", False):
        return X.dataset(2 * y01 - 1)
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
    """Row weights scaled to mean 1, and the scale: ``(w / mean, mean)``.

    ``sample_weight`` must have shape (n,), be finite and non-negative, and not be all zero. Every
    use of the weights (the loss, the group rates, the hard metrics, the Neyman-Pearson quantile) is
    invariant to their scale, so they are divided by their mean: weights of 1e-320 (subnormal,
    three significant digits) or 1e300 (whose sum overflows) then give the model of unit weights.
    The mean is taken on ``w / max(w)``, so that neither an overflowing sum nor a subnormal weight
    spoils it. The scale is kept for the default ridge (`ridge_for`), which counts the total
    weight as scikit-learn does (a weight of 2 is a repeated row).
    """
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.shape != (n,):
        raise ValueError(f"sample_weight: expected shape ({n},), got {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0) or not np.any(w > 0):
        raise ValueError("sample_weight: must be finite, non-negative and not all zero")
    top = float(w.max())
    relative = w / top
    mean = float(relative.mean())
    return relative / mean, top * mean


def ridge_for(ridge, total_weight):
    """The L2 weight on the (weighted) mean loss: ``ridge``, or ``1/total_weight`` for None.

    None is scikit-learn's ``LogisticRegression(C=1.0)``: its penalty :math:`\\|w\\|^2/2` sits on the
    summed loss, so on the mean it is one over the number of rows, or over the total sample weight
    (a weight of 2 then means the same as a repeated row). A total weight whose reciprocal is not a
    finite float64 (below ``1 / np.finfo(np.float64).max``, about 5.6e-309) has no such ridge: a
    ValueError naming ``sample_weight`` and that limit.
    """
    if ridge is not None:
        return check_real("ridge", ridge)
    total = float(total_weight)
    limit = 1.0 / np.finfo(np.float64).max
    if not total >= limit:
        raise ValueError(f"sample_weight: the total weight {total:.3g} is below {limit:.3g} (one over float64's "
                         "largest number), so the default ridge 1/total weight overflows; scale the weights up "
                         "(a weight counts as that many rows) or pass ridge")
    return 1.0 / total


def check_random_state(random_state, draw=True):
    """``random_state`` as a `numpy.random.Generator`: None, an int in [0, 2**32), or a Generator/RandomState.

    `numpy.random.default_rng` and `sklearn.utils.check_random_state` reject a bad seed with a
    message that does not name the parameter; this one does. ``draw=False`` only validates
    (returns None): a RandomState gives its generator a seed drawn from it, which advances it, so
    parameter checks must not draw.
    """
    valid = (random_state is None or isinstance(random_state, (np.random.Generator, np.random.RandomState))
             or (_is_position(random_state) and 0 <= random_state < 2 ** 32))
    if not valid:
        raise ValueError(f"random_state: expected None, an integer in [0, 2**32) or a numpy Generator/RandomState, "
                         f"got {random_state!r}")
    if not draw:
        return None
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2 ** 32, dtype=np.uint64))
    return np.random.default_rng(random_state if random_state is None or isinstance(random_state, np.random.Generator)
                                 else int(random_state))
