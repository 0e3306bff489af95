"""Recipes: raw dataset files -> `Dataset`, and the table the registry looks them up in.

A recipe is ``recipe(files, subset) -> Dataset`` where ``files`` maps a role (``"train"``,
``"test"``) to the local path of that file (plain or gzip, either works) and ``subset`` is
``"train"``, ``"test"`` or ``"all"``. The registry fetches exactly the roles the subset needs.
This module holds the LIBSVM and multi-class recipes; the fairness tables live in `_tabular`.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._dataset import Dataset
from ._tabular import load_adult, load_bank, load_compas, load_german, load_law_school, open_text

__all__ = ["RECIPES", "SEGMENT_CLASSES", "DRYBEAN_CLASSES"]


def _roles(subset):
    return {"train": ("train",), "test": ("test",), "all": ("train", "test")}[subset]


def load_a9a(files, subset):
    """LIBSVM ``a9a`` / ``a9a.t`` as-is -> CSR, d = 123 binary features.

    Labels ±1 as in the file. The test file never uses feature 123, so both files are read with
    ``n_features=123``; ``subset="all"`` stacks train then test (48,842 rows). Groups: sex from
    the one-hot feature 72 (1-based; 71 0-based), which is 1 for Female: 0 = "male" (feature 73),
    1 = "female" (train 10,771 / 21,790 male). The sex features stay in X.
    """
    # Lazy: _libsvm_io is a sibling module that may need a compiled parser.
    from ._libsvm_io import load_libsvm

    parts = [load_libsvm(files[r], n_features=123, zero_based=False) for r in _roles(subset)]
    X = sp.vstack([p.X for p in parts], format="csr")
    y = np.concatenate([p.y for p in parts])
    groups = X[:, 71].toarray().ravel().astype(np.int64)
    names = [f"f{j}" for j in range(1, 124)]
    return Dataset(X, y, groups=groups, group_names=["male", "female"], name=f"a9a[{subset}]",
                   feature_names=names, task="binary", copy=False)


def load_pendigits(files, subset):
    """UCI ``pendigits.tra`` / ``.tes`` -> dense, d = 16 in [0, 1].

    The 16 integer pen coordinates (0..100) are divided by 100 (LIBSVM's ``pendigits.scale``
    uses the same map). Feature names x1, y1, ..., x8, y8. Label: the digit 0..9 (class id =
    digit). No groups. Note: the IQRC paper appears to use the *unscaled* LIBSVM ``pendigits``;
    multiply X by 100 to reproduce that.
    """
    blocks = [np.loadtxt(open_text(files[r]), delimiter=",", ndmin=2) for r in _roles(subset)]
    data = np.vstack(blocks)
    names = [f"{a}{k}" for k in range(1, 9) for a in ("x", "y")]
    return Dataset(data[:, :16] / 100.0, data[:, 16].astype(np.int64), name=f"pendigits[{subset}]",
                   feature_names=names, task="multiclass")


SEGMENT_FEATURES = ["region-centroid-col", "region-centroid-row", "region-pixel-count",
                    "short-line-density-5", "short-line-density-2", "vedge-mean", "vedge-sd",
                    "hedge-mean", "hedge-sd", "intensity-mean", "rawred-mean", "rawblue-mean",
                    "rawgreen-mean", "exred-mean", "exblue-mean", "exgreen-mean", "value-mean",
                    "saturation-mean", "hue-mean"]
SEGMENT_CLASSES = ["brickface", "sky", "foliage", "cement", "window", "path", "grass"]


def load_segment(files, subset):
    """UCI Statlog ``segment.dat`` -> 2,310 rows x d = 19 dense features in [-1, 1].

    Each column is min-max scaled to [-1, 1] over all rows, like LIBSVM's ``segment.scale``
    (``svm-scale`` default); the constant column 3 (region-pixel-count = 9) becomes 0. Label:
    class 1..7 -> id 0..6 = brickface, sky, foliage, cement, window, path, grass (330 each).
    """
    data = np.loadtxt(open_text(files["train"]), ndmin=2)
    X = data[:, :19]
    lo, hi = X.min(axis=0), X.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    X = np.where(hi > lo, 2.0 * (X - lo) / span - 1.0, 0.0)
    return Dataset(X, data[:, 19].astype(np.int64) - 1, name="segment", feature_names=SEGMENT_FEATURES,
                   task="multiclass")


def load_usps(files, subset):
    """ESL ``zip.train.gz`` / ``zip.test.gz`` -> dense, d = 256 grey levels in [-1, 1], kept as is.

    Each row is the digit then the 16x16 image row by row; feature ``p{r}_{c}`` is pixel (r, c),
    0-based. Label: the digit 0..9 (LIBSVM's ``usps`` relabels them 1..10 and rescales values;
    this is the original encoding).
    """
    data = np.vstack([np.loadtxt(open_text(files[r]), ndmin=2) for r in _roles(subset)])
    names = [f"p{r}_{c}" for r in range(16) for c in range(16)]
    return Dataset(data[:, 1:], data[:, 0].astype(np.int64), name=f"usps[{subset}]", feature_names=names,
                   task="multiclass")


DRYBEAN_CLASSES = ["BARBUNYA", "BOMBAY", "CALI", "DERMASON", "HOROZ", "SEKER", "SIRA"]


def _read_drybean(path):
    """Attribute names and rows of the ARFF (or of a CSV with a header row, made from it)."""
    with open_text(path) as fh:
        lines = [ln.strip() for ln in fh]
    lines = [ln for ln in lines if ln and not ln.startswith("%")]
    if lines[0].startswith("@"):
        names = [ln.split()[1] for ln in lines if ln.upper().startswith("@ATTRIBUTE")]
        start = next(i for i, ln in enumerate(lines) if ln.upper().startswith("@DATA")) + 1
    else:
        names, start = lines[0].split(","), 1
    return names, [ln.split(",") for ln in lines[start:]]


def load_drybean(files, subset):
    """UCI Dry Bean (``Dry_Bean_Dataset.arff``) -> 13,611 rows x d = 16 standardized features.

    All 16 shape features (Area ... ShapeFactor4) are standardized over all rows (mean 0,
    population std 1), as the GBM-Bregman paper's code does with StandardScaler; that code keeps
    only the first 15 (an off-by-one that drops ShapeFactor4): use ``X[:, :15]`` to match it.
    Label: class id by sorted class name, the paper's label encoding: 0 BARBUNYA, 1 BOMBAY,
    2 CALI, 3 DERMASON, 4 HOROZ, 5 SEKER, 6 SIRA (`DRYBEAN_CLASSES`). The 68 duplicate rows of
    the original are kept.
    """
    names, rows = _read_drybean(files["train"])
    X = np.array([r[:16] for r in rows], dtype=np.float64)
    index = {c: k for k, c in enumerate(DRYBEAN_CLASSES)}
    y = np.array([index[r[16]] for r in rows], dtype=np.int64)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return Dataset(X, y, name="drybean", feature_names=names[:16], task="multiclass")


RECIPES = {
    "a9a": load_a9a, "adult": load_adult, "compas": load_compas, "german": load_german,
    "bank": load_bank, "law_school": load_law_school, "pendigits": load_pendigits,
    "segment": load_segment, "usps": load_usps, "drybean": load_drybean,
}
