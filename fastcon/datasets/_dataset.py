"""The `Dataset` container: features, labels, sensitive groups, validated once.

Solvers and problems never see raw user input: everything passes through `Dataset`, which
normalises layouts (CSR float64 with sorted indices, or C-contiguous dense float64) and rejects
bad input with a message that names the offending field.
"""
from __future__ import annotations

from functools import cached_property

import numpy as np
import scipy.sparse as sp

__all__ = ["Dataset", "check_sparse_structure"]


#: Values per block of the scans over X's entries (1M float64: an 8 MB slice, a 1 MB mask), so that
#: checking an X never allocates a temporary the size of X.
SCAN_BLOCK = 1 << 20


def first_nonfinite(values) -> int:
    """Position of the first NaN or infinity in the 1-D float array ``values``, else -1.

    All finite (the common case) costs one summation and no temporary: the sum of finite values is
    finite unless it overflows, and any NaN or infinity makes it NaN or infinite. Otherwise the
    values are searched in blocks of `SCAN_BLOCK`, so the largest temporary is one block's mask,
    never a mask the size of X (``np.isfinite(X.data)`` is one byte per stored entry).
    """
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(np.sum(values)):
            return -1
    for start in range(0, values.shape[0], SCAN_BLOCK):
        bad = np.flatnonzero(~np.isfinite(values[start:start + SCAN_BLOCK]))
        if bad.size:
            return start + int(bad[0])
    return -1


# Axis names of the compressed layouts: (major, minor), the major axis being the one indptr runs over.
_AXES = {"csr": ("row", "column"), "csc": ("column", "row"), "bsr": ("block row", "block column")}


def _index_array(a, field, dtype_kinds="iu"):
    """``a`` as a 1-D ndarray of an integer dtype, else ValueError naming ``field``."""
    if not isinstance(a, np.ndarray) or a.ndim != 1:
        raise ValueError(f"{field}: expected a 1-D integer array, got {type(a).__name__} "
                         f"of shape {getattr(a, 'shape', '?')}")
    if a.dtype.kind not in dtype_kinds:
        raise ValueError(f"{field}: index dtype must be integer, got {a.dtype}")
    # The kernel compiles once per dtype; rarer widths share the int64 version.
    return a if a.dtype in (np.int32, np.int64) else a.astype(np.int64)


def _check_values(data, field, ndim=1):
    if not isinstance(data, np.ndarray) or data.ndim != ndim:
        raise ValueError(f"{field}: expected a {ndim}-D array of values, got {type(data).__name__} "
                         f"of shape {getattr(data, 'shape', '?')}")
    if data.dtype.kind not in "biuf":
        raise ValueError(f"{field}: values must be real numbers, got dtype {data.dtype}")


def check_sparse_structure(X, field="X"):
    r"""Check the arrays of a SciPy sparse matrix before anything reads through them.

    SciPy does not bounds-check ``csr_matrix((data, indices, indptr), shape)`` (nor arrays assigned
    to the attributes later), and its own routines then read and write out of bounds. This check
    runs first, as one compiled O(nnz) scan (`fastcon._kernels._csr_checks`).

    * CSR, CSC, BSR: ``shape`` two non-negative integers (BSR: multiples of the block size),
      ``indptr`` and ``indices`` 1-D integer arrays, ``len(indptr)`` = major dimension + 1,
      ``indptr[0] == 0``, ``indptr`` non-decreasing, ``indptr[-1] <= len(indices)`` and
      ``<= len(data)``, every index of ``indices[:indptr[-1]]`` in :math:`[0, n_{minor})`.
      Entries past ``indptr[-1]`` are not part of the matrix (SciPy's ``prune`` drops them);
      they are allowed and ignored.
    * COO: ``row``, ``col``, ``data`` 1-D of one length, indices within the shape.
    * Other formats (DIA, LIL, DOK) are built through SciPy's checked API; they are checked after
      conversion to CSR by :func:`_as_csr`.

    Parameters
    ----------
    X : scipy sparse matrix or array
    field : str
        Name used in messages (``"X.indices: column index -1 at row 3 is out of range [0, 5)"``).

    Returns
    -------
    nnz : int or None
        Number of stored entries that belong to the matrix (``indptr[-1]`` or ``len(data)``),
        None for the formats checked after conversion.

    Raises
    ------
    ValueError
        On the first fault, naming the array (``X.indptr``, ``X.indices``, ``X.data``, ``X.row``,
        ``X.col``, ``X.shape``), the row (or column, block row, entry) and the value.
    """
    from .._kernels._csr_checks import (
        INDEX_OUT_OF_RANGE, INDPTR_DECREASES, INDPTR_PAST_END, INDPTR_START, compressed_structure_error,
        first_out_of_range,
    )

    shape = X.shape
    if len(shape) != 2 or not all(isinstance(s, (int, np.integer)) and s >= 0 for s in shape):
        raise ValueError(f"{field}.shape: expected two non-negative integers, got {shape}")
    n_rows, n_cols = int(shape[0]), int(shape[1])
    fmt = X.format
    if fmt in _AXES:
        major, minor = _AXES[fmt]
        indptr = _index_array(X.indptr, f"{field}.indptr")
        indices = _index_array(X.indices, f"{field}.indices")
        if fmt == "bsr":
            _check_values(X.data, f"{field}.data", ndim=3)
            R, C = X.data.shape[1:]
            if R < 1 or C < 1 or n_rows % R or n_cols % C:
                raise ValueError(f"{field}.data: blocks of {R} x {C} do not tile the shape {shape}")
            n_major, n_minor = n_rows // R, n_cols // C
        else:
            _check_values(X.data, f"{field}.data")
            n_major, n_minor = (n_rows, n_cols) if fmt == "csr" else (n_cols, n_rows)
        if indptr.shape[0] != n_major + 1:
            raise ValueError(f"{field}.indptr: has {indptr.shape[0]} entries, expected n_{major.replace(' ', '_')}s"
                             f" + 1 = {n_major + 1}")
        code, at, pos = compressed_structure_error(indptr, indices, n_minor)
        if code == INDPTR_START:
            raise ValueError(f"{field}.indptr: must start at 0, got {X.indptr[0]}")
        if code == INDPTR_DECREASES:
            raise ValueError(f"{field}.indptr: decreases at {major} {at} ({X.indptr[at]} > {X.indptr[at + 1]})")
        if code == INDPTR_PAST_END:
            raise ValueError(f"{field}.indptr: ends at {X.indptr[-1]}, past the {indices.shape[0]} entries of "
                             f"{field}.indices")
        if code == INDEX_OUT_OF_RANGE:
            raise ValueError(f"{field}.indices: {minor} index {X.indices[pos]} at {major} {at} is out of range "
                             f"[0, {n_minor})")
        nnz = int(indptr[-1])
        if X.data.shape[0] < nnz:
            raise ValueError(f"{field}.data: has {X.data.shape[0]} entries but {field}.indptr ends at {nnz}")
        return nnz
    if fmt == "coo":
        row = _index_array(X.row, f"{field}.row")
        col = _index_array(X.col, f"{field}.col")
        _check_values(X.data, f"{field}.data")
        nnz = X.data.shape[0]
        for name, idx in (("row", row), ("col", col)):
            if idx.shape[0] != nnz:
                raise ValueError(f"{field}.{name}: has {idx.shape[0]} entries but {field}.data has {nnz}")
        for name, axis, idx, bound in (("row", "row", row, n_rows), ("col", "column", col, n_cols)):
            p = first_out_of_range(idx, 0, nnz, bound)
            if p >= 0:
                value = getattr(X, name)[p]
                raise ValueError(f"{field}.{name}: {axis} index {value} at entry {p} is out of range [0, {bound})")
        return nnz
    return None


def _shares_memory(a, sources):
    return any(isinstance(s, np.ndarray) and np.may_share_memory(a, s) for s in sources)


def _as_csr(X, copy=True, field="X"):
    """Canonical CSR float64 (sorted, no duplicates, finite) from any SciPy sparse input, checked first.

    With ``copy`` the result shares no memory with ``X``; without, arrays already in the right
    dtype and order are reused.
    """
    nnz = check_sparse_structure(X, field)
    fmt = X.format
    sources = [getattr(X, name, None) for name in ("data", "indices", "indptr")]
    if fmt == "csr":
        # Rebuilt from the checked arrays: drops the unused tails and any canonical-format flag cached
        # on X before its arrays were changed (SciPy would trust it).
        M = sp.csr_matrix((X.data[:nnz], X.indices[:nnz], X.indptr), shape=X.shape, copy=False)
    elif fmt == "csc":
        M = sp.csc_matrix((X.data[:nnz], X.indices[:nnz], X.indptr), shape=X.shape, copy=False).tocsr()
    elif fmt == "bsr":
        M = sp.bsr_matrix((X.data[:nnz], X.indices[:nnz], X.indptr), shape=X.shape, copy=False).tocsr()
    else:  # COO (checked above); DIA, LIL, DOK through SciPy's own conversion, checked after it
        M = sp.csr_matrix(X)
        if fmt != "coo":
            check_sparse_structure(M, field)
    if M.data.dtype != np.float64:
        M.data = M.data.astype(np.float64)
    if not M.has_canonical_format:
        M = M.copy()  # sum_duplicates sorts in place: never reorder arrays the caller still holds
        M.sum_duplicates()
    if copy:
        for name in ("data", "indices", "indptr"):
            if _shares_memory(getattr(M, name), sources):
                setattr(M, name, getattr(M, name).copy())
    bad = first_nonfinite(M.data)
    if bad >= 0:
        row = int(np.searchsorted(M.indptr, bad, side="right") - 1)
        raise ValueError(f"{field}: non-finite value (NaN or inf) in row {row}")
    return M


def _as_design(X, copy=True):
    """Return X as canonical CSR float64 (sorted, no explicit duplicates) or dense C float64."""
    if sp.issparse(X):
        return _as_csr(X, copy)
    if np.iscomplexobj(X):  # a cast would silently drop the imaginary parts
        raise ValueError(f"X: values must be real numbers, got dtype {np.asarray(X).dtype}")
    try:
        X = np.array(X, dtype=np.float64, order="C", copy=True if copy else None)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"X: cannot be read as a float64 matrix ({exc})") from None
    if X.ndim != 2:
        raise ValueError(f"X: expected a 2-D matrix, got an array with {X.ndim} dimension(s)")
    bad = first_nonfinite(X.reshape(-1))   # C-contiguous: a view
    if bad >= 0:
        raise ValueError(f"X: non-finite value (NaN or inf) in row {bad // X.shape[1]}")
    return X


def _as_labels(y, n, task, copy=True):
    """(labels, task, label_values): binary labels as float64 -1/+1, multi-class ids as int64."""
    try:
        y = np.asarray(y)
    except Exception as exc:  # pragma: no cover - numpy accepts nearly everything
        raise ValueError(f"y: cannot be read as an array ({exc})") from None
    if y.ndim != 1:
        raise ValueError(f"y: expected a 1-D array of labels, got shape {y.shape}")
    if y.shape[0] != n:
        raise ValueError(f"y: has {y.shape[0]} labels but X has {n} rows")
    if y.dtype.kind not in "biuf":
        raise ValueError(f"y: labels must be numeric, got dtype {y.dtype}")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError(f"y: non-finite label at row {int(np.flatnonzero(~np.isfinite(y))[0])}")
    values = np.unique(y)
    signs = y.dtype.kind != "b" and bool(np.all(np.isin(values, (-1, 1))))
    # {0, 1} and bool are scikit-learn's binary encodings; {1} alone stays the {-1, +1} reading.
    bits = not signs and (y.dtype.kind == "b" or bool(np.all(np.isin(values, (0, 1)))))
    if task is None:
        task = "binary" if signs or bits else "multiclass"
    if task == "binary":
        if signs:
            label_values = np.array([-1, 1], dtype=np.result_type(y.dtype, np.int8))
            return np.array(y, dtype=np.float64, copy=True if copy else None), task, label_values
        if bits:
            label_values = np.array([0, 1], dtype=y.dtype)
            return np.where(y.astype(bool), 1.0, -1.0), task, label_values
        bad = values[~np.isin(values, (-1, 1))][:5].tolist()
        raise ValueError(f"y: binary labels must be -1/+1, 0/1 or bool, found {bad}")
    if task == "multiclass":
        if np.any(values != np.round(values)) or (values.size and values.min() < 0):
            raise ValueError(
                "y: multi-class labels must be non-negative integer class ids 0..C-1, "
                f"found {values[:5].tolist()}"
            )
        return np.array(y, dtype=np.int64, copy=True if copy else None), task, None
    raise ValueError(f"task: expected 'binary', 'multiclass' or None, got {task!r}")


class Dataset:
    r"""A labelled design matrix with optional sensitive groups and sample weights.

    Parameters
    ----------
    X : scipy.sparse matrix or array-like of shape (n_samples, n_features)
        Stored as CSR float64 with sorted indices, or as C-contiguous dense float64. CSC, COO, BSR,
        DIA, LIL and DOK inputs are converted. The arrays of a sparse input are checked before
        SciPy reads through them (see :func:`check_sparse_structure`): a negative or too large
        index, an ``indptr`` that does not start at 0, decreases or runs past ``indices`` raises.
    y : array-like of shape (n_samples,)
        Binary labels, stored float64 in {-1, +1}: given as -1/+1, or as 0/1 or bool (the
        scikit-learn encodings), 0/False mapping to -1 and 1/True to +1. Or multi-class ids
        0..C-1 (stored int64).
    groups : array-like of int, optional
        Sensitive-group id of each row, 0..G-1; every group must be non-empty.
    group_names : sequence of str, optional
        Name of each group (length G).
    sample_weight : array-like of float, optional
        Non-negative finite weights.
    name : str
        Dataset name, used in reports.
    feature_names : sequence of str, optional
        Column names (length n_features).
    task : {"binary", "multiclass", None}
        Label convention; inferred when None: labels within {-1, +1}, within {0, 1}, or of dtype
        bool are binary, anything else multi-class (pass ``task="multiclass"`` for two classes
        numbered 0 and 1).
    copy : bool, default True
        Copy every array the Dataset keeps (X's arrays, y, groups, sample_weight), so that later
        writes to the caller's arrays cannot change results (a NaN written into ``X`` afterwards
        would otherwise be read by every oracle without the NaN check ever seeing it). With False
        the caller hands the arrays over: those already in the stored dtype and layout are kept
        without a copy, and must not be modified afterwards. Conversions copy in either case.

    Attributes
    ----------
    label_values : ndarray or None
        Binary: the original values standing for -1 and +1, in that order (``[-1, 1]``,
        ``[0, 1]`` or ``[False, True]`` in y's input dtype), so
        ``label_values[(y > 0).astype(int)]`` gives back the labels as given. Multi-class: None
        unless a loader sets the original value of each class id (`fastcon.datasets.load_libsvm`).

    Raises
    ------
    ValueError
        When any field is malformed; the message starts with the field's name.
    """

    def __init__(self, X, y, groups=None, group_names=None, sample_weight=None, name="",
                 feature_names=None, task=None, copy=True):
        self.X = _as_design(X, copy)
        n, d = self.X.shape
        self.y, self.task, self.label_values = _as_labels(y, n, task, copy)
        self.name = str(name)
        self.groups, self.group_names = self._validate_groups(groups, group_names, n, copy)
        self.sample_weight = self._validate_weights(sample_weight, n, copy)
        if feature_names is not None:
            feature_names = [str(f) for f in feature_names]
            if len(feature_names) != d:
                raise ValueError(f"feature_names: has {len(feature_names)} names but X has {d} columns")
        self.feature_names = feature_names

    @staticmethod
    def _validate_groups(groups, group_names, n, copy=True):
        if groups is None:
            if group_names is not None:
                raise ValueError("group_names: given without groups")
            return None, None
        groups = np.asarray(groups)
        if groups.shape != (n,):
            raise ValueError(f"groups: expected shape ({n},), got {groups.shape}")
        if groups.dtype.kind not in "biu" and not (
            groups.dtype.kind == "f" and np.all(np.isfinite(groups)) and np.all(groups == np.round(groups))
        ):
            raise ValueError(f"groups: group ids must be integers 0..G-1, got dtype {groups.dtype}")
        groups = np.array(groups, dtype=np.int64, copy=True if copy else None)
        if n and groups.min() < 0:
            raise ValueError(f"groups: negative group id {int(groups.min())}")
        n_groups = len(group_names) if group_names is not None else (int(groups.max()) + 1 if n else 0)
        if n and groups.max() >= n_groups:
            raise ValueError(f"groups: id {int(groups.max())} but only {n_groups} group_names")
        if n_groups > n:   # more ids than rows leave one empty: found without a count per id (a file's ids can be huge)
            present = np.unique(groups)
            gaps = np.flatnonzero(present != np.arange(present.size))
            empty = int(gaps[0]) if gaps.size else int(present.size)
        else:
            counts = np.bincount(groups, minlength=n_groups)
            empty = int(np.flatnonzero(counts == 0)[0]) if np.any(counts == 0) else None
        if empty is not None:
            label = group_names[empty] if group_names is not None else empty
            raise ValueError(f"groups: group {label!r} is empty")
        names = [str(g) for g in group_names] if group_names is not None else [str(g) for g in range(n_groups)]
        return groups, names

    @staticmethod
    def _validate_weights(w, n, copy=True):
        if w is None:
            return None
        w = np.array(w, dtype=np.float64, copy=True if copy else None)
        if w.shape != (n,):
            raise ValueError(f"sample_weight: expected shape ({n},), got {w.shape}")
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError("sample_weight: weights must be finite and non-negative")
        return w

    # ----------------------------------------------------------------- shape and layout
    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def shape(self):
        return self.X.shape

    @property
    def is_sparse(self) -> bool:
        return sp.issparse(self.X)

    @property
    def n_groups(self) -> int:
        return 0 if self.groups is None else len(self.group_names)

    @property
    def classes(self) -> np.ndarray:
        return np.unique(self.y)

    @cached_property
    def is_binary_features(self) -> bool:
        """True when X is CSR and every stored value is exactly 1 (kernels skip ``data``).

        Scanned in blocks of `SCAN_BLOCK` values that stop at the first other value: no temporary
        the size of X (a memory-mapped X may not fit in memory).
        """
        if not self.is_sparse:
            return False
        data = self.X.data
        return all(np.all(data[a:a + SCAN_BLOCK] == 1.0) for a in range(0, data.shape[0], SCAN_BLOCK))

    @cached_property
    def csr_arrays(self):
        """(indptr uint64, indices uint32 or uint64, data float64): the unsigned-index layout the kernels use.

        Unsigned indices spare numba the negative-index wraparound test on every access. The
        indices (checked non-negative at construction) are reinterpreted, never copied: uint32
        when scipy stores them in 32 bits (below 2**31 entries and columns), uint64 otherwise (the
        kernels are generic in the index type; converting them to 32 bits would allocate 4 bytes
        per entry, gigabytes for a memory-mapped X of that size). ``indptr`` (``n_samples + 1``
        entries, 8 bytes per row like one score vector) is converted unless it is already 64-bit.
        """
        if not self.is_sparse:
            raise ValueError("csr_arrays: X is dense")
        X = self.X
        indices = X.indices.view(np.uint32 if X.indices.dtype == np.int32 else np.uint64)
        indptr = X.indptr.view(np.uint64) if X.indptr.dtype == np.int64 else X.indptr.astype(np.uint64)
        return (indptr, indices, X.data)

    def __len__(self):
        return self.n_samples

    def __repr__(self):
        kind = f"CSR nnz={self.X.nnz}" if self.is_sparse else "dense"
        grp = f", groups={dict(zip(self.group_names, np.bincount(self.groups).tolist()))}" if self.groups is not None else ""
        return f"Dataset({self.name!r}, {self.n_samples} x {self.n_features} {kind}, task={self.task}{grp})"

    # ----------------------------------------------------------------- derived datasets
    def subset(self, rows, name=None) -> "Dataset":
        """The dataset restricted to ``rows`` (integer indices or a boolean mask), in that order."""
        rows = np.asarray(rows)
        if rows.dtype == bool:
            if rows.shape != (self.n_samples,):
                raise ValueError(f"rows: boolean mask of shape {rows.shape}, expected ({self.n_samples},)")
            rows = np.flatnonzero(rows)
        if rows.ndim != 1 or (rows.size and rows.dtype.kind not in "iu"):
            raise ValueError("rows: expected a 1-D array of integer row indices or a boolean mask")
        if rows.size and (rows.min() < -self.n_samples or rows.max() >= self.n_samples):
            raise ValueError(f"rows: index out of range for {self.n_samples} rows")
        groups = None if self.groups is None else self.groups[rows]
        group_names = self.group_names
        if groups is not None and rows.size:
            present = np.unique(groups)
            if present.size != self.n_groups:
                # Keep ids dense 0..G'-1 so every group stays non-empty.
                remap = np.full(self.n_groups, -1, dtype=np.int64)
                remap[present] = np.arange(present.size)
                groups = remap[groups]
                group_names = [self.group_names[g] for g in present]
        elif groups is not None:
            groups, group_names = None, None
        # Fancy indexing already made new arrays: no second copy.
        out = Dataset(
            self.X[rows], self.y[rows], groups=groups, group_names=group_names,
            sample_weight=None if self.sample_weight is None else self.sample_weight[rows],
            name=self.name if name is None else name, feature_names=self.feature_names, task=self.task,
            copy=False,
        )
        out.label_values = self.label_values
        return out

    def split(self, fractions=(2 / 3, 1 / 3), seed=0, stratify=False):
        """Random disjoint split into len(fractions) datasets.

        Parameters
        ----------
        fractions : sequence of float
            Positive fractions summing to 1; part sizes are ``floor(f * n)`` with the remainder
            going to the first part (so 2:1 on 6,172 rows gives 4,115 / 2,057).
        seed : int
            Seed of the permutation; the same seed gives the same split.
        stratify : bool
            Keep label proportions in every part (by label, within each label class).
        """
        fractions = np.asarray(fractions, dtype=np.float64)
        if fractions.ndim != 1 or fractions.size < 2 or np.any(fractions <= 0) or abs(fractions.sum() - 1) > 1e-9:
            raise ValueError(f"fractions: expected >= 2 positive fractions summing to 1, got {fractions.tolist()}")
        rng = np.random.default_rng(seed)
        if stratify:
            parts = [[] for _ in fractions]
            for label in np.unique(self.y):
                idx = rng.permutation(np.flatnonzero(self.y == label))
                for k, chunk in enumerate(_cut(idx, fractions)):
                    parts[k].append(chunk)
            parts = [np.sort(np.concatenate(p)) for p in parts]
        else:
            parts = [np.sort(c) for c in _cut(rng.permutation(self.n_samples), fractions)]
        return tuple(self.subset(p) for p in parts)

    def by_group(self) -> dict:
        """``{group_name: Dataset}`` with the rows of each group (raises if there are no groups)."""
        if self.groups is None:
            raise ValueError("groups: this dataset has no sensitive groups")
        parts = {}
        for g, name in enumerate(self.group_names):
            rows = self.groups == g
            parts[name] = Dataset(self.X[rows], self.y[rows],
                                  sample_weight=None if self.sample_weight is None else self.sample_weight[rows],
                                  name=f"{self.name}[{name}]", feature_names=self.feature_names, task=self.task,
                                  copy=False)
            parts[name].label_values = self.label_values
        return parts


def _cut(idx, fractions):
    sizes = np.floor(fractions * idx.size).astype(np.int64)
    sizes[0] += idx.size - sizes.sum()
    return np.split(idx, np.cumsum(sizes)[:-1])
