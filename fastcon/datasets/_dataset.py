"""The `Dataset` container: features, labels, sensitive groups, validated once.

Solvers and problems never see raw user input: everything passes through `Dataset`, which
normalises layouts (CSR float64 with sorted indices, or C-contiguous dense float64) and rejects
bad input with a message that names the offending field.
"""
from __future__ import annotations

from functools import cached_property

import numpy as np
import scipy.sparse as sp

__all__ = ["Dataset"]


def _as_design(X):
    """Return X as canonical CSR float64 (sorted, no explicit duplicates) or dense C float64."""
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
        if X.indptr[-1] and not np.all(np.isfinite(X.data)):
            bad = int(np.flatnonzero(~np.isfinite(X.data))[0])
            row = int(np.searchsorted(X.indptr, bad, side="right") - 1)
            raise ValueError(f"X: non-finite value (NaN or inf) in row {row}")
        return X
    try:
        X = np.ascontiguousarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"X: cannot be read as a float64 matrix ({exc})") from None
    if X.ndim != 2:
        raise ValueError(f"X: expected a 2-D matrix, got an array with {X.ndim} dimension(s)")
    if not np.all(np.isfinite(X)):
        row = int(np.flatnonzero(~np.all(np.isfinite(X), axis=1))[0])
        raise ValueError(f"X: non-finite value (NaN or inf) in row {row}")
    return X


def _as_labels(y, n, task):
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
    if task is None:
        task = "binary" if np.all(np.isin(values, (-1, 1))) else "multiclass"
    if task == "binary":
        if not np.all(np.isin(values, (-1, 1))):
            raise ValueError(
                f"y: binary labels must be -1 or +1, found {values[~np.isin(values, (-1, 1))][:5].tolist()}"
            )
        return np.ascontiguousarray(y, dtype=np.float64), task
    if task == "multiclass":
        if np.any(values != np.round(values)) or (values.size and values.min() < 0):
            raise ValueError(
                "y: multi-class labels must be non-negative integer class ids 0..C-1, "
                f"found {values[:5].tolist()}"
            )
        return np.ascontiguousarray(y, dtype=np.int64), task
    raise ValueError(f"task: expected 'binary', 'multiclass' or None, got {task!r}")


class Dataset:
    r"""A labelled design matrix with optional sensitive groups and sample weights.

    Parameters
    ----------
    X : scipy.sparse matrix or array-like of shape (n_samples, n_features)
        Stored as CSR float64 with sorted indices, or as C-contiguous dense float64.
    y : array-like of shape (n_samples,)
        Binary labels in {-1, +1} (stored float64) or multi-class ids 0..C-1 (stored int64).
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
        Label convention; inferred when None ({-1, +1} means binary).

    Raises
    ------
    ValueError
        When any field is malformed; the message starts with the field's name.
    """

    def __init__(self, X, y, groups=None, group_names=None, sample_weight=None, name="",
                 feature_names=None, task=None):
        self.X = _as_design(X)
        n, d = self.X.shape
        self.y, self.task = _as_labels(y, n, task)
        self.name = str(name)
        self.groups, self.group_names = self._validate_groups(groups, group_names, n)
        self.sample_weight = self._validate_weights(sample_weight, n)
        if feature_names is not None:
            feature_names = [str(f) for f in feature_names]
            if len(feature_names) != d:
                raise ValueError(f"feature_names: has {len(feature_names)} names but X has {d} columns")
        self.feature_names = feature_names

    @staticmethod
    def _validate_groups(groups, group_names, n):
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
        groups = np.ascontiguousarray(groups, dtype=np.int64)
        if n and groups.min() < 0:
            raise ValueError(f"groups: negative group id {int(groups.min())}")
        n_groups = len(group_names) if group_names is not None else (int(groups.max()) + 1 if n else 0)
        if n and groups.max() >= n_groups:
            raise ValueError(f"groups: id {int(groups.max())} but only {n_groups} group_names")
        counts = np.bincount(groups, minlength=n_groups)
        if np.any(counts == 0):
            empty = int(np.flatnonzero(counts == 0)[0])
            label = group_names[empty] if group_names is not None else empty
            raise ValueError(f"groups: group {label!r} is empty")
        names = [str(g) for g in group_names] if group_names is not None else [str(g) for g in range(n_groups)]
        return groups, names

    @staticmethod
    def _validate_weights(w, n):
        if w is None:
            return None
        w = np.ascontiguousarray(w, dtype=np.float64)
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
        """True when X is CSR and every stored value is exactly 1 (kernels skip ``data``)."""
        return self.is_sparse and bool(np.all(self.X.data == 1.0))

    @cached_property
    def csr_arrays(self):
        """(indptr uint64, indices uint32, data float64): the unsigned-index layout the kernels use.

        Unsigned indices spare numba the negative-index wraparound test on every access
        (ARCHITECTURE.md §6); the conversion is paid once per dataset, not per call.
        """
        if not self.is_sparse:
            raise ValueError("csr_arrays: X is dense")
        X = self.X
        return (X.indptr.astype(np.uint64), X.indices.astype(np.uint32), X.data)

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
        return Dataset(
            self.X[rows], self.y[rows], groups=groups, group_names=group_names,
            sample_weight=None if self.sample_weight is None else self.sample_weight[rows],
            name=self.name if name is None else name, feature_names=self.feature_names, task=self.task,
        )

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
        return {
            name: Dataset(self.X[self.groups == g], self.y[self.groups == g],
                          sample_weight=None if self.sample_weight is None else self.sample_weight[self.groups == g],
                          name=f"{self.name}[{name}]", feature_names=self.feature_names, task=self.task)
            for g, name in enumerate(self.group_names)
        }


def _cut(idx, fractions):
    sizes = np.floor(fractions * idx.size).astype(np.int64)
    sizes[0] += idx.size - sizes.sum()
    return np.split(idx, np.cumsum(sizes)[:-1])
