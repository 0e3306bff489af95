"""LIBSVM / svmlight text format: reading into CSR + labels, and writing back.

One sample per line, ``label [qid:N] index:value index:value ... [# comment]``, parsed by the Cython
parser ``_libsvm.parse``: strict decimal numbers (finite only), strictly increasing int32 feature
indices, ``qid`` ignored, comment and blank lines skipped. Every malformed input raises
``ValueError("<file> line <n>: <what>")``; nothing else escapes for any byte sequence.
Format choices in full: docs/design.md, 'Module notes'.
"""
from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import zlib

import numpy as np
import scipy.sparse as sp

from ._dataset import Dataset, check_sparse_structure
from ._groups import encode_groups
from ._libsvm import parse as _parse

__all__ = ["load_libsvm", "read_libsvm", "dump_libsvm"]

_MODES = {True: 0, False: 1, "auto": 2}  # zero_based -> parser mode (0 zero-, 1 one-based)

# Keyed by the parser's error codes (see _libsvm.pyx); {tok} is the offending token's text.
_MESSAGES = {
    1: "invalid label {tok!r}",
    2: "label {tok!r} is not finite (NaN and infinity are not accepted)",
    3: "missing label: the line starts with the feature {tok!r}",
    4: "invalid feature index in {tok!r}",
    5: "feature index in {tok!r} is negative",
    6: "feature index in {tok!r} is too large (the limit is 2147483646)",
    7: "missing ':' in {tok!r} (features are written index:value)",
    8: "invalid feature value in {tok!r}",
    9: "feature value in {tok!r} is not finite (NaN and infinity are not accepted)",
    10: "feature index {index} is not greater than the previous index {previous} "
        "(indices must be strictly increasing)",
    11: "feature index 0 in {tok!r} but the file is read as one-based (pass zero_based=True)",
    12: "feature index {index} is out of range for n_features={previous}",
    13: "invalid qid in {tok!r} (expected qid:<non-negative integer>)",
    14: "internal parser error (please report this file)",
}

_MAGIC = ((b"\x1f\x8b", "gzip", gzip.decompress), (b"BZh", "bzip2", bz2.decompress),
          (b"\xfd7zXZ\x00", "xz", lzma.decompress))


def _read_source(source):
    """Return (bytes, name) for a path, a bytes-like object or a binary file object."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        raw, name = bytes(source), "<bytes>"
    elif isinstance(source, (str, os.PathLike)):
        name = os.fspath(source)
        with open(source, "rb") as fh:
            raw = fh.read()
    elif hasattr(source, "read"):
        name = str(getattr(source, "name", "<stream>"))
        raw = source.read()
        if isinstance(raw, str):
            raise TypeError(f"{name}: the stream must be opened in binary mode")
    else:
        raise TypeError(f"expected a path, bytes or a binary file object, got {type(source).__name__}")
    # Sniff compression from the bytes, not the extension, so renamed files still load.
    for magic, kind, decompress in _MAGIC:
        if raw.startswith(magic):
            try:
                raw = decompress(raw)
            except (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError) as exc:
                raise ValueError(f"{name}: corrupt {kind} data ({exc})") from None
            break
    return raw, name


def _error_message(buf, name, error):
    code, line, start, stop, index, previous = error
    tok = bytes(buf[start:min(stop, start + 60)]).decode("utf-8", "backslashreplace")
    if stop - start > 60:
        tok += "..."
    return f"{name} line {line}: " + _MESSAGES[code].format(tok=tok, index=index, previous=previous)


def _parse_or_raise(buf, name, mode, n_features):
    out = _parse(buf, mode, -1 if n_features is None else n_features)
    if out[0] is not None:
        raise ValueError(_error_message(buf, name, out[0]))
    return out


def _trim(arr, n):
    # Capacity comes from counting ':' and '\n'; copy only when a lot would be wasted.
    return arr[:n].copy() if n < 0.9 * arr.shape[0] else arr[:n]


def check_parse_options(zero_based, n_features):
    """``n_features`` as an int or None, after checking both parser options (a ValueError names the field)."""
    if not (isinstance(zero_based, (bool, np.bool_)) or (isinstance(zero_based, str) and zero_based == "auto")):
        raise ValueError(f"zero_based: expected True, False or 'auto', got {zero_based!r}")
    if n_features is not None:
        if isinstance(n_features, bool) or not isinstance(n_features, (int, np.integer)) or n_features < 0:
            raise ValueError(f"n_features: expected a non-negative integer, got {n_features!r}")
        n_features = int(n_features)
    return n_features


def read_libsvm(source, n_features=None, zero_based="auto", dtype=np.float64):
    """Parse a LIBSVM/svmlight file into raw arrays.

    Parameters
    ----------
    source : str, os.PathLike, bytes-like or binary file object
        Plain, gzip, bzip2 or xz data (detected from the leading bytes).
    n_features : int, optional
        Number of columns; an index beyond it raises. Default: the largest index seen.
    zero_based : bool or "auto"
        Whether indices start at 0. "auto" (as in scikit-learn): zero-based if the smallest index
        in the file is 0, else one-based.
    dtype : numpy dtype
        Dtype of ``X.data`` (parsed as float64, then cast).

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_rows, n_features)
        Sorted indices, int32 column indices, explicit zeros kept as written.
    y : ndarray of float64, shape (n_rows,)
        The labels exactly as written.

    Raises
    ------
    ValueError
        On malformed input, as ``"<file> line <n>: <what>"``.
    """
    n_features = check_parse_options(zero_based, n_features)
    buf, name = _read_source(source)
    mode = _MODES[zero_based if isinstance(zero_based, str) else bool(zero_based)]
    _, labels, indptr, indices, data, n_rows, nnz, min_index, max_index = _parse_or_raise(
        buf, name, mode, n_features)
    if mode == 2 and nnz:
        one_based = min_index > 0
        if n_features is not None and max_index - one_based >= n_features:
            # Locate the first offending line by re-parsing in the now-known mode.
            _parse_or_raise(buf, name, int(one_based), n_features)
        if one_based:
            indices[:nnz] -= 1
            max_index -= 1
    elif mode == 1:
        max_index -= 1
    n_cols = n_features if n_features is not None else (max_index + 1 if nnz else 0)
    indptr = indptr[: n_rows + 1]
    if nnz < 2**31 - 1:
        indptr = indptr.astype(np.int32)
    else:
        indices = indices.astype(np.int64)
    X = sp.csr_matrix((_trim(data, nnz).astype(dtype, copy=False), _trim(indices, nnz), indptr),
                      shape=(n_rows, n_cols), copy=False)
    return X, _trim(labels, n_rows)


def load_libsvm(path, n_features=None, zero_based="auto", dtype=np.float64, name=None, classes=None,
                group_feature=None, drop_group_feature=False):
    """Load a LIBSVM/svmlight file as a validated :class:`Dataset`.

    Parameters
    ----------
    path : str, os.PathLike, bytes-like or binary file object
        See :func:`read_libsvm`.
    n_features, zero_based
        See :func:`read_libsvm`. Pass ``n_features`` for test files whose last columns may be
        absent (a9a.t has no feature 123: ``n_features=123``).
    dtype : numpy dtype
        Must be float64: `Dataset` stores float64 (use :func:`read_libsvm` for other dtypes).
    name : str, optional
        Dataset name; default the file's base name.
    classes : sequence of float, optional
        Multi-class only: the original label values in class-id order (e.g. the training set's
        ``label_values``), so that a test file missing a class maps the same way.
    group_feature : int, optional
        Column of ``X`` (0-based, after the one-based file indices are shifted: file index ``j + 1``
        in a one-based file) whose values are the sensitive groups: each distinct value is a group
        (0 where the row does not store the column), numbered in increasing order of the value,
        with the values' text as ``group_names`` (``"0"``, ``"1"``, ``"2.5"``). The column stays a
        feature unless ``drop_group_feature``. Meant for indicator or small categorical columns
        (e.g. a9a's sex indicator); every distinct value of a continuous column would be a group.
    drop_group_feature : bool, default False
        Remove the group column from ``X`` (the columns after it shift left by one), so a model
        cannot use the sensitive attribute directly.

    Returns
    -------
    Dataset
        Labels that are all -1 or +1, or exactly the two labels 0 and 1, give a binary dataset (y
        float64 in {-1, +1}, 0 read as -1). Other integer labels give a multi-class dataset: kept as they are when they are exactly 0..C-1, else mapped to
        the position of the label in the sorted unique labels (or in ``classes``). The original
        value of each class id is in the attribute ``label_values`` (an array; for binary data
        ``[-1., 1.]`` or ``[0., 1.]``), so ``dataset.label_values[dataset.y]`` gives back a
        multi-class file's labels; ``subset``/``split`` carry it.

    Raises
    ------
    ValueError
        On malformed input (``"<file> line <n>: ..."``), non-integer labels (use
        :func:`read_libsvm` for regression targets), labels missing from ``classes``, or a
        ``group_feature`` that is not a column index of ``X``.
    """
    if np.dtype(dtype) != np.float64:
        raise ValueError(f"dtype: Dataset stores float64, got {np.dtype(dtype)}; use read_libsvm for other dtypes")
    X, y_raw = read_libsvm(path, n_features=n_features, zero_based=zero_based)
    if name is None:
        name = os.path.basename(os.fspath(path)) if isinstance(path, (str, os.PathLike)) else ""
    X, groups = _group_column(X, group_feature, drop_group_feature)
    task, label_values = label_encoding(np.unique(y_raw), name, classes)
    # Binary labels go to Dataset as written (it reads 0/1 as it reads any 0/1 labels).
    y = y_raw if task == "binary" else encode_labels(y_raw, task, label_values)
    ds = Dataset(X, y, name=name, task=task, copy=False, **groups)
    ds.label_values = label_values
    return ds


def label_encoding(values, name, classes=None):
    """``(task, label_values)`` of classification labels whose distinct values are ``values`` (sorted).

    All -1/+1, or exactly 0 and 1 (scikit-learn's encoding): binary, ``label_values`` ``[-1., 1.]``
    or ``[0., 1.]``. Other integer labels: multi-class, ``label_values`` the sorted values (or
    ``classes``), class id = position there. Shared by `load_libsvm` and the streaming converter
    (`fastcon.datasets._convert`), so a converted file holds the labels `load_libsvm` gives.

    Raises
    ------
    ValueError
        Non-integer labels (``"<name>: labels are not integers ..."``), repeated ``classes``, or a
        label missing from ``classes``.
    """
    values = np.asarray(values, dtype=np.float64)
    if classes is None and np.all(np.isin(values, (-1.0, 1.0))):
        return "binary", np.array([-1.0, 1.0])
    if classes is None and values.size == 2 and np.all(values == (0.0, 1.0)):
        return "binary", np.array([0.0, 1.0])
    if np.any(values != np.round(values)):
        raise ValueError(f"{name}: labels are not integers (e.g. {values[values != np.round(values)][0]!r}); "
                         "load_libsvm handles classification only, use read_libsvm for regression targets")
    if classes is not None:
        label_values = np.asarray(classes, dtype=np.float64)
        if np.unique(label_values).size != label_values.size:
            raise ValueError("classes: values must be distinct")
        missing = values[~np.isin(values, label_values)]
        if missing.size:
            raise ValueError(f"{name}: label {missing[0]!r} is not among classes {label_values.tolist()}")
        return "multiclass", label_values
    # Sorted unique labels: the identity when they already are 0..C-1.
    return "multiclass", values


def encode_labels(y_raw, task, label_values):
    """The labels as `Dataset` stores them: binary float64 -1/+1 (0 read as -1), multi-class int64 ids."""
    if task == "binary":
        return np.where(y_raw == 1.0, 1.0, -1.0)
    order = np.argsort(label_values, kind="stable")
    return order[np.searchsorted(label_values[order], y_raw)].astype(np.int64)


def _group_column(X, group_feature, drop):
    """``(X, {"groups": ids, "group_names": names})`` from column ``group_feature`` of the CSR ``X``.

    Without ``group_feature``: ``(X, {})``. With ``drop``, the column is cut out in one O(nnz) pass
    over the CSR arrays (indices stay sorted, so the result is still canonical).
    """
    if group_feature is None:
        if drop:
            raise ValueError("drop_group_feature: True needs a group_feature")
        return X, {}
    if isinstance(group_feature, (bool, np.bool_)) or not isinstance(group_feature, (int, np.integer)):
        raise TypeError(f"group_feature: expected a column index (int), got {type(group_feature).__name__}")
    j, d = int(group_feature), X.shape[1]
    if not 0 <= j < d:
        raise ValueError(f"group_feature: column {j} out of range [0, {d}) (0-based column of X)")
    column = np.asarray(X[:, [j]].todense()).ravel()  # absent entries read as 0
    if column.size:
        enc = encode_groups(column)
        codes, names = enc.codes, _format_numbers(np.asarray(enc.labels, dtype=np.float64))
    else:  # a file without rows: no groups, like its empty X
        codes, names = np.zeros(0, dtype=np.int64), []
    if drop:
        keep = X.indices != j
        kept_before = np.concatenate([[0], np.cumsum(keep, dtype=np.int64)])
        indices = X.indices[keep]
        indices[indices > j] -= 1
        indptr = kept_before[X.indptr].astype(X.indptr.dtype)
        X = sp.csr_matrix((X.data[keep], indices, indptr), shape=(X.shape[0], d - 1), copy=False)
    return X, {"groups": codes, "group_names": names}


def _format_numbers(values):
    """Shortest repr-exact text of each value; integral values without a decimal point."""
    values = np.asarray(values, dtype=np.float64)
    text = list(map(repr, values.tolist()))
    # Beyond 2**53 floats are all integral but repr is shorter; -0.0 keeps its sign via repr.
    integral = (values == np.trunc(values)) & (np.abs(values) < 2.0**53) & ~((values == 0) & np.signbit(values))
    for i, v in zip(np.flatnonzero(integral).tolist(), values[integral].astype(np.int64).tolist()):
        text[i] = str(v)
    return text


def dump_libsvm(dataset_or_X, path, y=None, *, zero_based=False, comment=None):
    """Write a LIBSVM/svmlight file that :func:`read_libsvm` reads back exactly.

    Parameters
    ----------
    dataset_or_X : Dataset, scipy.sparse matrix or 2-D array
        With a Dataset, its ``X`` and ``y`` are written and ``y`` must be None.
    path : str or os.PathLike
        Output file; compressed with gzip, bzip2 or xz when it ends in ``.gz``, ``.bz2``, ``.xz``.
    y : array-like, optional
        Labels, required with a matrix.
    zero_based : bool
        Write indices starting at 0 (default: one-based, as LIBSVM does).
    comment : str, optional
        Written first, each of its lines prefixed with ``# ``.

    Notes
    -----
    Stored entries are written as they are (explicit zeros of a sparse matrix included, zeros of
    a dense matrix omitted), in increasing column order. Values use Python's shortest repr that
    round-trips, integers without a decimal point. Non-finite values raise ValueError.
    """
    if isinstance(dataset_or_X, Dataset):
        if y is not None:
            raise ValueError("y: must be None when a Dataset is given (its labels are written)")
        X, y = dataset_or_X.X, dataset_or_X.y
    else:
        if y is None:
            raise ValueError("y: labels are required when writing a matrix")
        if isinstance(y, (str, os.PathLike)):
            raise TypeError("dump_libsvm(X, path, y): the path comes before the labels")
        X = dataset_or_X
        if sp.issparse(X):
            check_sparse_structure(X)  # before SciPy's conversions read through the index arrays
    X = sp.csr_matrix(X, dtype=np.float64)
    if not X.has_sorted_indices or not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    y = np.asarray(y, dtype=np.float64).ravel()
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"y: has {y.shape[0]} labels but X has {X.shape[0]} rows")
    if not (np.all(np.isfinite(X.data)) and np.all(np.isfinite(y))):
        raise ValueError("X, y: non-finite values cannot be written (the reader rejects them)")
    cols = (X.indices.astype(np.int64) + (0 if zero_based else 1)).tolist()
    vals = _format_numbers(X.data)
    labels = _format_numbers(y)
    tokens = [f"{c}:{v}" for c, v in zip(cols, vals)]
    indptr = X.indptr.tolist()
    out = io.StringIO()
    if comment:
        for line in str(comment).splitlines():
            out.write(f"# {line}\n")
    for i, label in enumerate(labels):
        a, b = indptr[i], indptr[i + 1]
        out.write(label + (" " + " ".join(tokens[a:b]) if b > a else "") + "\n")
    data = out.getvalue().encode("utf-8")
    path = os.fspath(path)
    opener = {".gz": lambda p: gzip.GzipFile(p, "wb", mtime=0), ".bz2": bz2.open, ".xz": lzma.open}
    ext = os.path.splitext(path)[1].lower()
    with (opener[ext](path) if ext in opener else open(path, "wb")) as fh:
        fh.write(data)
