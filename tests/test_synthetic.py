"""Synthetic generators: reproducible, exact class/group sizes, and the advertised structure."""
import numpy as np
import pytest
import scipy.sparse as sp

from fastcon.datasets._synthetic import make_fair_classification, make_multiclass, make_neyman_pearson

GENERATORS = [make_fair_classification, make_neyman_pearson, make_multiclass]


def _same(a, b):
    if sp.issparse(a.X):
        assert sp.issparse(b.X) and (a.X != b.X).nnz == 0
    else:
        np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    if a.groups is not None:
        np.testing.assert_array_equal(a.groups, b.groups)


@pytest.mark.parametrize("make", GENERATORS)
@pytest.mark.parametrize("sparse", [False, True])
def test_same_seed_same_output(make, sparse):
    a, b = make(n_samples=300, sparse=sparse, seed=7), make(n_samples=300, sparse=sparse, seed=7)
    _same(a, b)
    c = make(n_samples=300, sparse=sparse, seed=8)
    assert not np.array_equal(a.y, c.y)


@pytest.mark.parametrize("make", GENERATORS)
def test_sparse_vs_dense(make):
    dense = make(n_samples=2000, n_features=50, sparse=False)
    sparse = make(n_samples=2000, n_features=50, sparse=True, density=0.1)
    assert isinstance(dense.X, np.ndarray) and dense.X.flags.c_contiguous and dense.shape == (2000, 50)
    assert sp.isspmatrix_csr(sparse.X) and sparse.shape == (2000, 50)
    # About 10 % stored (the fairness proxy column adds one column's worth of entries).
    assert 0.08 < sparse.X.nnz / (2000 * 50) < 0.14


def test_fair_groups_make_unconstrained_score_unfair():
    ds = make_fair_classification(n_samples=20000, n_features=10, shift=1.5, noise=0.5, seed=1)
    assert np.bincount(ds.groups).tolist() == [10000, 10000]
    # Unconstrained least-squares scorer: its scores and positive rates differ by group.
    w = np.linalg.lstsq(np.c_[ds.X, np.ones(ds.n_samples)], ds.y, rcond=None)[0]
    score = np.c_[ds.X, np.ones(ds.n_samples)] @ w
    gap = score[ds.groups == 0].mean() - score[ds.groups == 1].mean()
    rates = [np.mean(score[ds.groups == g] > 0) for g in (0, 1)]
    assert gap > 0.3 and rates[0] - rates[1] > 0.15
    # The true score's group-mean difference is `shift` (column 0 is the proxy with weight 1).
    assert abs(ds.X[ds.groups == 0, 0].mean() - ds.X[ds.groups == 1, 0].mean() - 1.5) < 0.05
    # Without a shift the groups are exchangeable.
    fair = make_fair_classification(n_samples=20000, n_features=10, shift=0.0, seed=1)
    base = [np.mean(fair.y[fair.groups == g] == 1) for g in (0, 1)]
    assert abs(base[0] - base[1]) < 0.03


def test_fair_sparse_keeps_proxy_and_shift():
    ds = make_fair_classification(n_samples=4000, n_features=30, n_groups=3, group_proportions=[0.5, 0.3, 0.2],
                                  shift=2.0, sparse=True, density=0.05, seed=3)
    assert np.bincount(ds.groups).tolist() == [2000, 1200, 800]
    assert ds.group_names == ["group0", "group1", "group2"]
    assert np.all(np.diff(ds.X.indptr) >= 1)  # column 0 stored in every row
    rates = [np.mean(ds.y[ds.groups == g] == 1) for g in range(3)]
    assert rates[0] > rates[1] > rates[2]


def test_neyman_pearson_imbalance_and_separation():
    ds = make_neyman_pearson(n_samples=5000, n_features=20, positive_fraction=0.1, class_sep=3.0, seed=2)
    assert np.sum(ds.y == 1) == 500 and np.sum(ds.y == -1) == 4500
    mean_gap = ds.X[ds.y == 1].mean(axis=0) - ds.X[ds.y == -1].mean(axis=0)
    assert abs(np.linalg.norm(mean_gap) - 3.0) < 0.4
    assert ds.groups is None and ds.task == "binary"


def test_multiclass_counts_and_structure():
    ds = make_multiclass(n_samples=3001, n_features=15, n_classes=4, class_sep=4.0, seed=4)
    assert ds.task == "multiclass" and ds.y.dtype == np.int64
    assert np.bincount(ds.y).tolist() == [751, 750, 750, 750]
    centroids = np.stack([ds.X[ds.y == k].mean(axis=0) for k in range(4)])
    nearest = np.argmin(((ds.X[:, None, :] - centroids[None]) ** 2).sum(-1), axis=1)
    assert np.mean(nearest == ds.y) > 0.8


def test_invalid_arguments():
    with pytest.raises(ValueError, match="group_proportions"):
        make_fair_classification(group_proportions=[0.5, 0.6])
    with pytest.raises(ValueError, match="density"):
        make_multiclass(sparse=True, density=0)
    with pytest.raises(ValueError, match="positive_fraction"):
        make_neyman_pearson(positive_fraction=1.0)
    with pytest.raises(ValueError, match="n_classes"):
        make_multiclass(n_classes=1)
