"""Partial-fairness kernels (`fastcon._kernels._partial_rates`) against the plain NumPy references."""
import numpy as np
import pytest
import scipy.sparse as sp
from reference import partial_rates as ref

from fastcon._kernels._partial_rates import (
    LINEAR_SEARCH_MAX_CUTS,
    hinge_cut_row_sums_csr,
    hinge_cut_row_sums_dense,
    hinge_cut_sums,
    hinge_cut_sums_naive,
    logistic_level_row_sums_csr,
    logistic_level_row_sums_dense,
    logistic_level_sums,
    ramp_level_sums,
)


def _data(rng, n, n_groups, n_levels):
    """Scores with ties (a 1/8 grid) and scores exactly at the rounded cuts theta -/+ 1/2 and at theta."""
    groups = rng.permutation(np.arange(n) % n_groups)            # every group non-empty
    z = np.round(rng.normal(0.0, 1.5, n) * 8) / 8
    theta = rng.normal(0.0, 1.0, n_levels)
    theta[0] = 0.25                                              # cuts on the score grid too: more ties
    at = rng.choice(n, size=min(n // 2, 3 * n_levels), replace=False)
    picks = np.concatenate([theta - 0.5, theta + 0.5, theta])
    z[at] = picks[rng.integers(0, picks.size, at.size)]
    inv = 1.0 / np.bincount(groups, minlength=n_groups)
    return z, groups.astype(np.int64), theta, inv


def _bins(z, groups, cuts, inv, n_groups):
    """`hinge_cut_sums` outputs: sums, counts, bins."""
    sums = np.full((n_groups, cuts.size), np.nan)
    counts = np.full((n_groups, cuts.size), -1, dtype=np.int64)
    bins = np.full(z.size, -1, dtype=np.int32)
    hinge_cut_sums(z, groups, cuts, inv, sums, counts, bins)
    return sums, counts, bins


@pytest.mark.parametrize("n_groups", [2, 3, 4])
@pytest.mark.parametrize("n_levels", [1, 10, 100, 300])
def test_hinge_cut_sums_naive_and_binned_match_numpy(rng, n_groups, n_levels):
    # 300 levels = 600 cuts: above LINEAR_SEARCH_MAX_CUTS, the binary-search bins
    z, groups, theta, inv = _data(rng, 700, n_groups, n_levels)
    cuts = np.concatenate([theta - 0.5, theta + 0.5])
    want_sums, want_counts = ref.hinge_cut_sums(z, groups, cuts, n_groups)
    assert want_counts.min() < want_counts.max()                 # masks neither all empty nor all full
    s1 = np.full((n_groups, cuts.size), np.nan)
    c1 = np.full((n_groups, cuts.size), -1, dtype=np.int64)
    hinge_cut_sums_naive(z, groups, cuts, inv, s1, c1)
    s2, c2, bins = _bins(z, groups, cuts, inv, n_groups)
    for sums, counts in ((s1, c1), (s2, c2)):
        np.testing.assert_array_equal(counts, want_counts)       # strict z > t at exact ties
        np.testing.assert_allclose(sums, want_sums, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(bins, (cuts[None, :] < z[:, None]).sum(axis=1))
    # the two paths against each other (the naive one is the oracle of the binned one)
    np.testing.assert_allclose(s2, s1, rtol=1e-12, atol=1e-15)


def test_hinge_cut_sums_both_searches_and_repeated_cuts(rng):
    z, groups, _, inv = _data(rng, 400, 2, 3)
    z[:3] = [np.inf, -np.inf, 0.5]
    cuts = np.array([0.5, 0.5, -1.0, 0.5, 2.0])                  # equal cuts: empty bins between them
    want_sums, want_counts = ref.hinge_cut_sums(z[3:], groups[3:], cuts, 2)
    inv = 1.0 / np.bincount(groups[3:])
    sums, counts, _ = _bins(z[3:], groups[3:], cuts, inv, 2)
    np.testing.assert_array_equal(counts, want_counts)
    np.testing.assert_allclose(sums, want_sums, rtol=1e-12)
    # the linear count and the binary search give the same bin, ties and infinities included
    many = np.sort(np.concatenate([rng.normal(size=LINEAR_SEARCH_MAX_CUTS), [0.5, 0.5, 0.5]]))
    assert many.size > LINEAR_SEARCH_MAX_CUTS
    for cut_set in (cuts, many):
        full_inv = 1.0 / np.bincount(groups)
        counts_only = _bins(z, groups, cut_set, full_inv, 2)[2]
        np.testing.assert_array_equal(counts_only, (cut_set[None, :] < z[:, None]).sum(axis=1))


@pytest.mark.parametrize("n_levels", [1, 10, 100])
def test_ramp_level_sums_match_numpy(rng, n_levels):
    n_groups = 3
    z, groups, theta, inv = _data(rng, 600, n_groups, n_levels)
    shape = (n_groups, n_levels)
    s_plus, s_minus = np.empty(shape), np.empty(shape)
    c_plus, c_minus = np.empty(shape, dtype=np.int64), np.empty(shape, dtype=np.int64)
    ramp_level_sums(z, groups, theta, inv, s_plus, s_minus, c_plus, c_minus)
    want_p, want_cp = ref.hinge_cut_sums(z, groups, theta - 0.5, n_groups)
    want_m, want_cm = ref.hinge_cut_sums(z, groups, theta + 0.5, n_groups)
    np.testing.assert_allclose(s_plus, want_p, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(s_minus, want_m, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(c_plus, want_cp)
    np.testing.assert_array_equal(c_minus, want_cm)
    # S+ - S- is the group mean of the ramp clip(u + 1/2, 0, 1)
    np.testing.assert_allclose(s_plus - s_minus, ref.group_means(z, groups, theta, "ramp", n_groups), atol=1e-12)


def _designs(rng, n, d, layout):
    if layout == "dense":
        X = rng.normal(size=(n, d))
        return X, X, None
    if layout == "binary":
        X = sp.random(n, d, density=0.3, format="csr", random_state=rng, data_rvs=np.ones)
    else:
        X = sp.random(n, d, density=0.3, format="csr", random_state=rng)
    X.sort_indices()
    csr = (X.indptr.astype(np.uint64), X.indices.astype(np.uint32), None if layout == "binary" else X.data)
    return X, X.toarray(), csr


@pytest.mark.parametrize("layout", ["dense", "csr", "binary"])
@pytest.mark.parametrize("n_groups, n_levels", [(2, 1), (3, 10), (4, 100)])
def test_cut_row_sums_equal_masked_products(rng, layout, n_groups, n_levels):
    n, d = 500, 7
    z, groups, theta, _ = _data(rng, n, n_groups, n_levels)
    _, dense, csr = _designs(rng, n, d, layout)
    cuts = np.concatenate([theta - 0.5, theta + 0.5])
    out = np.full((n_groups, cuts.size, d), np.nan)
    counts = np.empty((n_groups, cuts.size), dtype=np.int64)
    bins = _bins(z, groups, cuts, 1.0 / np.bincount(groups, minlength=n_groups), n_groups)[2]
    if csr is None:
        read = hinge_cut_row_sums_dense(np.ascontiguousarray(dense), bins, groups, cuts, out, counts)
    else:
        read = hinge_cut_row_sums_csr(*csr, bins, groups, cuts, out, counts)
    want = ref.masked_row_sums(dense, z, groups, cuts, n_groups)
    scale = np.abs(dense).sum(axis=0).max()
    np.testing.assert_allclose(out, want, rtol=1e-10, atol=1e-13 * scale)
    np.testing.assert_array_equal(counts, ref.hinge_cut_sums(z, groups, cuts, n_groups)[1])
    assert read == np.count_nonzero(z > cuts.min())


@pytest.mark.parametrize("layout", ["dense", "csr", "binary"])
@pytest.mark.parametrize("n_groups, n_levels, spread", [(2, 1, 1.0), (3, 10, 1.0), (4, 100, 3.0), (2, 6, 300.0)])
def test_logistic_level_sums_and_row_sums_match_numpy(rng, layout, n_groups, n_levels, spread):
    # spread 300: levels span more than one anchor block of 350 units
    n, d = 400, 5
    z, groups, _, inv = _data(rng, n, n_groups, n_levels)
    theta = rng.normal(0.0, spread, n_levels)
    if spread > 100:
        z[:50] = rng.choice(theta, 50) + rng.normal(0, 2, 50)
        z[50] = 800.0                                              # saturated both ways
        z[51] = -800.0
    _, dense, csr = _designs(rng, n, d, layout)
    sums, dsums = np.empty((n_groups, n_levels)), np.empty((n_groups, n_levels))
    logistic_level_sums(z, groups, theta, inv, sums, dsums)
    want_s, want_d = ref.logistic_level_sums(z, groups, theta, n_groups)
    np.testing.assert_allclose(sums, want_s, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(dsums, want_d, rtol=1e-11, atol=1e-300)
    out = np.full((n_groups, n_levels, d), np.nan)
    dsums2 = np.empty((n_groups, n_levels))
    if csr is None:
        logistic_level_row_sums_dense(np.ascontiguousarray(dense), z, groups, theta, inv, out, dsums2)
    else:
        logistic_level_row_sums_csr(*csr, z, groups, theta, inv, out, dsums2)
    np.testing.assert_allclose(dsums2, want_d, rtol=1e-11, atol=1e-300)
    want = ref.logistic_row_sums(dense, z, groups, theta, n_groups)
    np.testing.assert_allclose(out, want, rtol=1e-10, atol=1e-13 * np.abs(want).max())
