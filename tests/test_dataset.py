"""The Dataset container: normalisation, validation messages, subsets, splits, groups."""
import numpy as np
import pytest
import scipy.sparse as sp

from fastcon.datasets import Dataset


def _toy(n=12, d=3, seed=0, sparse=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    groups = np.arange(n) % 2
    return Dataset(sp.csr_matrix(X) if sparse else X, y, groups=groups, group_names=["a", "b"], name="toy")


def test_normalises_layout_and_dtypes():
    X = np.asfortranarray(np.arange(6, dtype=np.int32).reshape(3, 2))
    ds = Dataset(X, [1, -1, 1])
    assert ds.X.flags.c_contiguous and ds.X.dtype == np.float64
    assert ds.y.dtype == np.float64 and ds.task == "binary"
    # Unsorted CSR with duplicates becomes canonical CSR float64.
    M = sp.coo_matrix((np.array([1, 2, 3], dtype=np.float32), ([0, 0, 1], [1, 1, 0])), shape=(2, 2))
    ds = Dataset(M, [1, 1])
    assert sp.isspmatrix_csr(ds.X) and ds.X.has_canonical_format and ds.X.dtype == np.float64
    np.testing.assert_array_equal(ds.X.toarray(), [[0, 3], [3, 0]])


def test_multiclass_labels():
    ds = Dataset(np.ones((4, 2)), [0, 2, 1, 2])
    assert ds.task == "multiclass" and ds.y.dtype == np.int64
    np.testing.assert_array_equal(ds.classes, [0, 1, 2])


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(X=np.ones((3, 2)), y=[1, -1]), "y: has 2 labels but X has 3 rows"),
        (dict(X=np.ones(3), y=[1, -1, 1]), "X: expected a 2-D matrix"),
        (dict(X=np.array([[1.0, np.nan], [0, 0]]), y=[1, -1]), "X: non-finite value (NaN or inf) in row 0"),
        (dict(X=sp.csr_matrix(np.array([[0, 0], [np.inf, 1]])), y=[1, -1]), "X: non-finite value (NaN or inf) in row 1"),
        (dict(X=np.ones((3, 2)), y=[1, 0, -1], task="binary"), "y: binary labels must be -1/+1, 0/1 or bool"),
        (dict(X=np.ones((2, 2)), y=[2, 1], task="binary"), "y: binary labels must be -1/+1, 0/1 or bool"),
        (dict(X=np.ones((2, 2)), y=[1.5, 0]), "y: multi-class labels must be"),
        (dict(X=np.ones((2, 2)), y=[1, np.nan]), "y: non-finite label at row 1"),
        (dict(X=np.ones((2, 2)), y=["a", "b"]), "y: labels must be numeric"),
        (dict(X=np.ones((2, 2)), y=[1, -1], groups=[0, 2]), "groups: group 1 is empty"),
        (dict(X=np.ones((2, 2)), y=[1, -1], groups=[0, -1]), "groups: negative group id"),
        (dict(X=np.ones((2, 2)), y=[1, -1], groups=[0, 1, 1]), "groups: expected shape (2,)"),
        (dict(X=np.ones((2, 2)), y=[1, -1], groups=[0, 0], group_names=["a", "b"]), "groups: group 'b' is empty"),
        (dict(X=np.ones((2, 2)), y=[1, -1], groups=[0.5, 1]), "groups: group ids must be integers"),
        (dict(X=np.ones((2, 2)), y=[1, -1], sample_weight=[1, -1]), "sample_weight: weights must be finite"),
        (dict(X=np.ones((2, 2)), y=[1, -1], feature_names=["a"]), "feature_names: has 1 names but X has 2"),
        (dict(X=np.ones((2, 2)), y=[1, -1], task="regression"), "task: expected"),
    ],
)
def test_validation_names_the_field(kwargs, field):
    with pytest.raises(ValueError) as err:
        Dataset(**kwargs)
    assert field in str(err.value)


@pytest.mark.parametrize("sparse", [False, True])
def test_subset_split_and_groups(sparse):
    ds = _toy(n=30, sparse=sparse)
    sub = ds.subset([3, 1, 1])
    np.testing.assert_array_equal(sub.y, ds.y[[3, 1, 1]])
    assert sub.n_groups == 1 and sub.group_names == ["b"]  # group ids stay dense
    mask = np.zeros(30, bool)
    mask[:4] = True
    assert ds.subset(mask).n_samples == 4
    a, b = ds.split((2 / 3, 1 / 3), seed=7)
    assert a.n_samples == 20 and b.n_samples == 10
    assert a.n_samples + b.n_samples == ds.n_samples
    a2, _ = ds.split((2 / 3, 1 / 3), seed=7)
    dense = (lambda M: M.toarray()) if sparse else (lambda M: M)
    np.testing.assert_array_equal(dense(a.X), dense(a2.X))
    parts = ds.by_group()
    assert set(parts) == {"a", "b"} and sum(p.n_samples for p in parts.values()) == 30
    with pytest.raises(ValueError, match="rows: index out of range"):
        ds.subset([30])
    with pytest.raises(ValueError, match="fractions"):
        ds.split((0.5, 0.6))


def test_split_sizes_like_the_papers():
    ds = Dataset(np.zeros((6172, 1)), np.where(np.arange(6172) % 3 == 0, 1.0, -1.0))
    a, b = ds.split((2 / 3, 1 / 3), seed=0)
    assert (a.n_samples, b.n_samples) == (4115, 2057)
    a, b = ds.split((2 / 3, 1 / 3), seed=0, stratify=True)
    assert abs(np.mean(a.y == 1) - np.mean(b.y == 1)) < 1e-3


def test_csr_arrays_and_binary_features():
    X = sp.csr_matrix(np.array([[1.0, 0, 1], [0, 1, 0]]))
    ds = Dataset(X, [1, -1])
    indptr, indices, data = ds.csr_arrays
    assert indptr.dtype == np.uint64 and indices.dtype == np.uint32 and data.dtype == np.float64
    assert ds.is_binary_features
    assert not Dataset(X * 2.0, [1, -1]).is_binary_features
    with pytest.raises(ValueError, match="csr_arrays: X is dense"):
        Dataset(np.ones((2, 2)), [1, -1]).csr_arrays
    assert "toy" in repr(_toy())
