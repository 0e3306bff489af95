r"""Sensitive groups from raw sensitive features: labels of any hashable type to dense ids 0..K-1.

A *group* is a distinct value of the sensitive feature, or, with several sensitive columns, a
distinct row :math:`(a_1, \dots, a_m)` of them (intersectional groups: only the combinations that
occur are groups). :func:`encode_groups` numbers the groups and :meth:`GroupEncoding.transform`
maps new data (a test set) through the numbering fitted on the training data.

Numbering is deterministic: groups are numbered in the sorted order of their labels (tuples sort
column by column) whenever the labels are mutually comparable, and in order of first appearance
otherwise (e.g. a column mixing ints and strings). Labels are never compared through ``str``: the
string ``"1"`` and the integer ``1`` are different groups, while ``1``, ``1.0`` and ``True`` are one
group (they are equal and hash alike, as Python dictionaries and ``np.unique`` treat them).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["GroupEncoding", "encode_groups"]

_FIELD = "sensitive_features"


def _is_missing(value) -> bool:
    """None, NaN (float or NumPy), NaT, pandas' NA: the values that are not equal to themselves."""
    if value is None:
        return True
    try:
        return bool(value != value)
    except (TypeError, ValueError):
        # pandas.NA: `NA != NA` is NA, whose truth value raises TypeError. Arrays raise ValueError
        # (they are unhashable and rejected later anyway).
        return True


def _as_column(values, field):
    """One sensitive column as a 1-D ndarray (object dtype when the values are not all numbers or strings)."""
    if hasattr(values, "to_numpy"):  # pandas Series / Index, without importing pandas
        values = values.to_numpy()
    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise ValueError(f"{field}: expected a 1-D column, got shape {values.shape}")
        return values
    values = list(values)
    if any(isinstance(v, tuple) for v in values):
        # np.asarray would split tuple labels into columns: keep them whole.
        col = np.empty(len(values), dtype=object)
        for i, v in enumerate(values):
            col[i] = v
        return col
    col = np.asarray(values)
    # NumPy turns [1, "a"] into the strings ["1", "a"]: mixed labels stay objects, compared as given.
    if col.ndim != 1 or (col.dtype.kind in "US" and not all(isinstance(v, (str, bytes)) for v in values)):
        col = np.empty(len(values), dtype=object)
        for i, v in enumerate(values):
            col[i] = v
    return col


def _columns(sensitive_features):
    """``(fields, columns, n)``: each column a 1-D ndarray of length ``n``, named in messages by its field."""
    x = sensitive_features
    if x is None:
        raise ValueError(f"{_FIELD}: required, got None")
    if isinstance(x, (str, bytes)) or np.isscalar(x):
        raise ValueError(f"{_FIELD}: expected one label per sample (an array, a list, a pandas Series or "
                         f"DataFrame), got the scalar {x!r}")
    if hasattr(x, "columns") and hasattr(x, "iloc"):  # pandas DataFrame: one column per sensitive attribute
        fields = [f"{_FIELD}[{name!r}]" for name in x.columns]
        cols = [_as_column(x.iloc[:, j], fields[j]) for j in range(len(fields))]
    elif isinstance(x, np.ndarray) and x.ndim == 2:  # rows are samples
        fields = [f"{_FIELD}[:, {j}]" for j in range(x.shape[1])]
        cols = [x[:, j] for j in range(x.shape[1])]
    elif isinstance(x, np.ndarray):
        if x.ndim != 1:
            raise ValueError(f"{_FIELD}: expected a 1-D or 2-D array, got shape {x.shape}")
        fields, cols = [_FIELD], [x]
    elif isinstance(x, (list, tuple)) and len(x) and all(
            isinstance(c, (list, np.ndarray)) or hasattr(c, "to_numpy") for c in x):
        # A list of columns (lists, arrays, Series). A list of *tuples* is one column of tuple labels.
        fields = [f"{_FIELD}[{j}]" for j in range(len(x))]
        cols = [_as_column(c, fields[j]) for j, c in enumerate(x)]
    else:
        fields, cols = [_FIELD], [_as_column(x, _FIELD)]
    if not cols:
        raise ValueError(f"{_FIELD}: has no columns")
    n = cols[0].shape[0]
    for j, c in enumerate(cols):
        if c.shape[0] != n:
            raise ValueError(f"{fields[j]}: has {c.shape[0]} values but {fields[0]} has {n}")
    return fields, cols, n


def _check_missing_numeric(col, field):
    if col.dtype.kind == "f" or col.dtype.kind == "c":
        bad = ~np.isfinite(col)
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            what = "missing value (NaN)" if np.isnan(col[i]) else f"non-finite value {col[i].item()!r}"
            raise ValueError(f"{field}: {what} at sample {i}; every sample needs a group")
    elif col.dtype.kind in "mM":
        bad = np.isnat(col)
        if np.any(bad):
            raise ValueError(f"{field}: missing value (NaT) at sample {int(np.flatnonzero(bad)[0])}; "
                             "every sample needs a group")


def _encode_column(col, field):
    """``(codes int64, labels list)`` of one column, labels sorted when comparable."""
    if col.dtype.kind != "O":
        _check_missing_numeric(col, field)
        if col.dtype.kind == "V":
            raise ValueError(f"{field}: structured arrays are not supported, pass a DataFrame or a 2-D array")
        labels, codes = np.unique(col, return_inverse=True)
        return codes.astype(np.int64, copy=False).reshape(-1), labels.tolist()
    # Object column: np.unique sorts, which fails on mixed types; a dict needs only hashing.
    index = {}
    try:
        codes = np.fromiter((index.setdefault(v, len(index)) for v in col), dtype=np.int64, count=col.shape[0])
    except TypeError:
        i, v = next((i, v) for i, v in enumerate(col) if not _hashable(v))
        raise ValueError(f"{field}: unhashable label {v!r} (type {type(v).__name__}) at sample {i}; "
                         "group labels must be hashable") from None
    keys = list(index)
    for k in keys:
        if _is_missing(k):
            i = next(i for i, v in enumerate(col) if v is k or _is_missing(v))
            raise ValueError(f"{field}: missing value ({k!r}) at sample {i}; every sample needs a group")
    try:
        order = sorted(range(len(keys)), key=keys.__getitem__)
    except TypeError:  # not mutually comparable: keep the order of first appearance
        return codes, keys
    rank = np.empty(len(keys), dtype=np.int64)
    rank[order] = np.arange(len(keys))
    return rank[codes], [keys[k] for k in order]


def _hashable(v) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


def _encode(sensitive_features):
    """``(codes, labels, n_columns)`` of any accepted input (labels tuples when several columns)."""
    fields, cols, n = _columns(sensitive_features)
    parts = [_encode_column(c, field) for field, c in zip(fields, cols)]
    if len(parts) == 1:
        codes, labels = parts[0]
        return codes, labels, 1
    # Intersectional groups: the distinct rows of per-column codes. Each column's codes follow its
    # sorted labels, so np.unique's lexicographic row order is the sorted order of the tuples.
    stacked = np.stack([p[0] for p in parts], axis=1) if n else np.empty((0, len(parts)), dtype=np.int64)
    rows, codes = np.unique(stacked, axis=0, return_inverse=True)
    labels = [tuple(parts[j][1][r[j]] for j in range(len(parts))) for r in rows.tolist()]
    return codes.astype(np.int64, copy=False).reshape(-1), labels, len(parts)


@dataclass(frozen=True, eq=False)
class GroupEncoding:
    r"""Dense group ids of the samples and the label of each group.

    Attributes
    ----------
    codes : ndarray of int64, shape (n_samples,)
        Group id :math:`0 \le k < K` of each sample; every id occurs.
    labels : list
        ``labels[k]`` is the label of group ``k``: the value of the sensitive feature, or the tuple
        of values (one per column) for several sensitive columns. Python scalars for numeric and
        string input, the objects themselves for object input.
    n_groups : int
        :math:`K`.
    n_columns : int
        Number of sensitive columns the encoding was fitted on (1 for a 1-D input).
    """

    codes: np.ndarray
    labels: list
    n_groups: int
    n_columns: int

    @property
    def names(self) -> list:
        """``str`` of each label (tuple labels joined by ``", "``): the `Dataset.group_names` form."""
        return [", ".join(map(str, g)) if isinstance(g, tuple) else str(g) for g in self.labels]

    @property
    def counts(self) -> np.ndarray:
        """Number of samples of each group (int64, shape (n_groups,))."""
        return np.bincount(self.codes, minlength=self.n_groups)

    def transform(self, sensitive_features) -> np.ndarray:
        """Group ids of new data in this encoding's numbering.

        Parameters
        ----------
        sensitive_features : array-like, pandas Series or DataFrame, list of columns
            The same number of columns as at fit (or one column of label tuples, as in ``labels``);
            may be empty and may lack groups.

        Returns
        -------
        ndarray of int64
            ``codes[i]`` with ``labels[codes[i]]`` equal to sample i's label.

        Raises
        ------
        ValueError
            ``"sensitive_features: ..."`` for a group not seen at fit (naming it), a different
            number of columns, a missing value.
        """
        codes, labels, n_columns = _encode(sensitive_features)
        tuple_labels = n_columns == 1 and all(isinstance(g, tuple) and len(g) == self.n_columns for g in labels)
        if n_columns != self.n_columns and not tuple_labels:
            raise ValueError(f"{_FIELD}: has {n_columns} column(s) but the encoding was fitted on "
                             f"{self.n_columns}")
        known = {label: k for k, label in enumerate(self.labels)}
        mapping = np.empty(len(labels), dtype=np.int64)
        for j, label in enumerate(labels):
            k = known.get(label)
            if k is None:
                shown = ", ".join(map(repr, self.labels[:10])) + (", ..." if self.n_groups > 10 else "")
                raise ValueError(f"{_FIELD}: group {label!r} was not seen at fit (known groups: {shown})")
            mapping[j] = k
        return mapping[codes]


def encode_groups(sensitive_features) -> GroupEncoding:
    r"""Number the sensitive groups of the samples: any hashable labels to dense ids 0..K-1.

    Parameters
    ----------
    sensitive_features : array-like, pandas Series or DataFrame, or list of columns
        One label per sample: a 1-D array or list of any hashable values (ints, bools, floats,
        strings, tuples, mixed objects), a pandas Series, or several sensitive columns: a 2-D
        array (rows are samples), a pandas DataFrame, or a list of 1-D columns (lists, arrays or
        Series of equal length). Several columns give intersectional groups, one per distinct row
        tuple :math:`(a_1,\dots,a_m)` that occurs. A list whose items are tuples is one column of
        tuple labels, so ``encoding.transform(encoding.labels)`` gives ``0..K-1``.

    Returns
    -------
    GroupEncoding
        ``codes`` (int64 ids), ``labels`` (``labels[k]`` is group k's label; tuples for several
        columns), ``n_groups``; ``transform`` maps new data through the same numbering.

    Notes
    -----
    Group ids follow the sorted order of the labels when they can be compared with each other
    (tuples lexicographically, column by column), else the order of first appearance; the same
    data always gives the same numbering. Values equal in Python (``1``, ``1.0``, ``True``) are
    one group; no value is converted to ``str`` for comparison.

    Raises
    ------
    ValueError
        Messages start with ``sensitive_features``: no samples, a missing value (None, NaN, NaT,
        pandas' NA) with the first sample holding it, an unhashable label, columns of unequal
        lengths.

    Examples
    --------
    >>> enc = encode_groups(["b", "a", "b", "c"])
    >>> enc.codes.tolist(), enc.labels
    ([1, 0, 1, 2], ['a', 'b', 'c'])
    >>> encode_groups([[0, 0, 1], ["x", "y", "x"]]).labels
    [(0, 'x'), (0, 'y'), (1, 'x')]
    """
    codes, labels, n_columns = _encode(sensitive_features)
    if codes.shape[0] == 0:
        raise ValueError(f"{_FIELD}: no samples; at least one sample is needed to define the groups")
    return GroupEncoding(codes=codes, labels=labels, n_groups=len(labels), n_columns=n_columns)
