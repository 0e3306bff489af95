"""Multi-class Neyman-Pearson ([MLY20] eq. 11): the fused class-loss kernels against the NumPy reference,
the `ClassPairwiseRisk` term (gradients, invariances, values at W = 0, counters), the problem constructors
`multiclass_neyman_pearson` and `neyman_pearson`, and pendigits."""
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st
from numba import njit

from fastcon import Dataset
from fastcon._kernels import _multiclass_np as kern
from fastcon._kernels._linalg import CSR
from fastcon._kernels._losses import LOSS_CODES, sigmoid
from fastcon.datasets import load, make_multiclass, make_neyman_pearson
from fastcon.problems import (
    Ball, ClassPairwiseRisk, ColumnBalls, ConstrainedProblem, MarginRisk, ProductOfBalls, Whole,
    multiclass_neyman_pearson, neyman_pearson,
)
from fastcon.problems._multiclass_np import LOSS_AT_ZERO
from reference import kernels as ref_kernels
from reference import multiclass_np as ref

RTOL = 1e-12
LOSSES = list(LOSS_CODES)


def assert_close(actual, expected, magnitude):
    """|actual - expected| <= RTOL (|expected| + magnitude): the round-off of a reordered sum."""
    actual, expected, magnitude = (np.asarray(a, dtype=float) for a in (actual, expected, magnitude))
    err = np.abs(actual - expected).ravel()
    bound = (RTOL * (np.abs(expected) + magnitude + 1e-300)).ravel()
    assert np.all(err <= bound), f"max error {err.max():.3g}, bound there {bound[np.argmax(err - bound)]:.3g}"


def make_data(rng, n=60, d=5, C=4, sparse=False, binary=False, weights=False):
    X = (rng.random((n, d)) < 0.5) * (1.0 if binary else rng.standard_normal((n, d)))
    X[0] = 0.0  # an empty row
    y = np.arange(n) % C
    rng.shuffle(y)
    sw = rng.random(n) + 0.1 if weights else None
    return Dataset(sp.csr_matrix(X) if sparse else X, y, sample_weight=sw, task="multiclass")


def grad_of(term, x, rows=None):
    out = np.full(term.n_features, np.nan)
    if rows is None:
        return term.value_and_subgradient(x, out), out
    return term.value_and_subgradient_rows(x, rows, out), out


def kernel_args(kind, X):
    if kind == "dense":
        return (X,)
    A = sp.csr_matrix(X)
    return (CSR(A.indptr.astype(np.uint64), A.indices.astype(np.uint32), None if kind == "binary" else A.data),)


def column_args(kind, X):
    """The CSC copy that csr_full_pairwise_value_grad reads (the CSR record of the transpose)."""
    A = sp.csc_matrix(X)
    return (CSR(A.indptr.astype(np.uint64), A.indices.astype(np.uint32), None if kind == "binary" else A.data),)


def stale(*shapes):
    """Scratch full of NaN: the kernels must overwrite before they read."""
    return tuple(np.full(shape, np.nan) for shape in shapes)


# --------------------------------------------------------------------------- kernels vs reference
@st.composite
def class_blocks(draw):
    """A class block (dense, CSR or binary CSR; empty rows allowed), W, k, weights, row subset, block rows."""
    n = draw(st.integers(1, 30))
    d = draw(st.integers(1, 8))
    C = draw(st.integers(2, 9))  # 4 and 8: vector blocks only; 5-7, 9: with a scalar remainder
    kind = draw(st.sampled_from(["dense", "csr", "binary"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    mask = rng.random((n, d)) < draw(st.sampled_from([0.0, 0.3, 1.0]))
    X = np.where(mask, 1.0 if kind == "binary" else rng.standard_normal((n, d)), 0.0)
    W = rng.standard_normal((C, d)) * draw(st.sampled_from([0.1, 1.0, 10.0]))
    k = draw(st.integers(0, C - 1))
    weights = rng.random(n) * 2 if draw(st.booleans()) else None
    rows = None
    if draw(st.booleans()):
        rows = rng.integers(0, n, size=draw(st.integers(1, 2 * n))).astype(draw(st.sampled_from([np.int64, np.uint64])))
    block = draw(st.integers(1, 8))  # rows per block of the S, P scratch: several blocks per pass
    return kind, X, W, k, weights, rows, block


def roundoff_magnitudes(X, W, k, loss, weights, rows):
    """Per-entry sums of |summands| of the value and the gradient, widened by the margins' round-off.

    A margin carries an error of about eps (|a| |w_k| + |a| |w_l|); it moves phi by |phi'| times that
    and phi' by at most 2 times that (|phi''| <= 2 for every loss here, away from the hinge kink).
    """
    idx = np.arange(X.shape[0]) if rows is None else np.asarray(rows, dtype=np.int64)
    A = X[idx]
    s = np.ones(idx.size) if weights is None else weights[idx]
    S = A @ W.T
    _, dphi = ref_kernels.LOSSES[loss](S[:, [k]] - S)
    others = np.arange(W.shape[0]) != k
    reach = np.abs(A) @ np.abs(W).T                     # |a_i| |w_l|, per row and class
    spread = reach[:, [k]] + reach                      # bound on |m_il| and on its summands
    value_mag = np.sum(s[:, None] * (np.abs(dphi) * spread)[:, others])
    B = np.abs(dphi) + 2 * spread
    B[:, ~others] = 0.0
    B[:, k] = B[:, others].sum(axis=1)
    grad_mag = (B * s[:, None]).T @ np.abs(A)
    return value_mag, grad_mag


def run_kernels(kind, X, W, k, loss, weights, divisor, rows, block):
    """``[(value, value_only, G), ...]`` of every kernel that handles the call (stale scratch); the CSR
    kernels also with ``feature_major`` (weights read as W^T, gradient written transposed; G given back
    as (C, d))."""
    C, d = W.shape
    n = X.shape[0]
    code = LOSS_CODES[loss]
    args = kernel_args(kind, X)
    term, term_t = kern.PairwiseTerm(code, k, weights, False, False), kern.PairwiseTerm(code, k, weights, True, False)
    out = []
    G = np.full((C, d), np.nan)
    if kind == "dense":
        S, P = stale((block, C), (block, C))
        v = kern.dense_pairwise_value_grad(term, *args, divisor, rows, W, G, S, P)
        out.append((v, kern.dense_pairwise_value(term, *args, divisor, rows, W, S, P), G.copy()))
        if rows is None:  # the full pass: BLAS products on blocks of `block` rows
            T, S, P = stale((C, d), (block, C), (block, C))
            G[:] = np.nan
            v = kern.dense_blas_pairwise_value_grad(term, *args, divisor, W, G, T, S, P)
            out.append((v, kern.dense_blas_pairwise_value(term, *args, divisor, W, S, P), G.copy()))
        return out
    w_t, grad_t, S, P = stale((d, C), (d, C), (block, C), (block, C))
    v = kern.csr_pairwise_value_grad(term, *args, divisor, rows, W, G, w_t, grad_t, S, P)
    out.append((v, kern.csr_pairwise_value(term, *args, divisor, rows, W, w_t, S, P), G.copy()))
    Wt = np.ascontiguousarray(W.T)
    G_t, S, P = stale((d, C), (block, C), (block, C))
    v = kern.csr_pairwise_value_grad(term_t, *args, divisor, rows, Wt, G_t, Wt, G_t, S, P)
    out.append((v, kern.csr_pairwise_value(term_t, *args, divisor, rows, Wt, Wt, S, P), G_t.T.copy()))
    if rows is None:  # the full pass: every row at once, the gradient from the CSC copy
        w_t, S, P, acc = stale((d, C), (n, C), (kern.MAX_CHUNKS, block, C), (kern.MAX_CHUNKS, C + 1))
        G[:] = np.nan
        v = kern.csr_full_pairwise_value_grad(term, *args, *column_args(kind, X), divisor, W, G, w_t, S, P, acc)
        out.append((v, kern.csr_full_pairwise_value(term, *args, divisor, W, w_t, S, P, acc), G.copy()))
        G_t[:] = np.nan
        v = kern.csr_full_pairwise_value_grad(term_t, *args, *column_args(kind, X), divisor, Wt, G_t, Wt, S, P, acc)
        out.append((v, kern.csr_full_pairwise_value(term_t, *args, divisor, Wt, Wt, S, P, acc), G_t.T.copy()))
    return out


@settings(max_examples=25, deadline=None)  # each example runs every kernel variant against a Python-loop oracle (~1 s)
@given(class_blocks(), st.sampled_from(LOSSES))
def test_kernels_match_reference(block, loss):
    kind, X, W, k, weights, rows, b = block
    m = X.shape[0] if rows is None else rows.shape[0]
    v_ref, g_ref = ref.class_loss_value_grad(X, W, k, loss, weights, 1.0 / m, rows)
    v_mag, g_mag = roundoff_magnitudes(X, W, k, loss, weights, rows)
    results = run_kernels(kind, X, W, k, loss, weights, float(m), rows, b)
    for v, v_only, G in results:
        assert_close(v, v_ref, v_mag / m)
        assert_close(G, g_ref, g_mag / m)
        assert v_only == v  # the value-only pass sums in the same order: bit-identical
    if kind != "dense":  # each CSR kernel gives the same bits with the weights given transposed (feature_major)
        pairs = [(0, 1)] + ([(2, 3)] if rows is None else [])
        for a, b in pairs:
            assert results[a][0] == results[b][0] and np.array_equal(results[a][2], results[b][2])


@pytest.mark.parametrize("kind", ["dense", "csr", "binary"])
def test_kernel_rows_none_equals_all_rows(rng, kind):
    """The row-subset kernels with rows=None and with rows=0..n-1 give the same bits."""
    X = (rng.random((40, 6)) < 0.5) * (1.0 if kind == "binary" else rng.standard_normal((40, 6)))
    W = rng.standard_normal((3, 6))
    G_all, G_rows = np.empty((3, 6)), np.empty((3, 6))
    S, P = np.empty((16, 3)), np.empty((16, 3))
    term = kern.PairwiseTerm(LOSS_CODES["sigmoid"], 1, None, False, False)
    if kind == "dense":
        v_all = kern.dense_pairwise_value_grad(term, X, 40.0, None, W, G_all, S, P)
        v_rows = kern.dense_pairwise_value_grad(term, X, 40.0, np.arange(40), W, G_rows, S, P)
    else:
        w_t, grad_t = np.empty((6, 3)), np.empty((6, 3))
        args = kernel_args(kind, X)
        v_all = kern.csr_pairwise_value_grad(term, *args, 40.0, None, W, G_all, w_t, grad_t, S, P)
        v_rows = kern.csr_pairwise_value_grad(term, *args, 40.0, np.arange(40), W, G_rows, w_t, grad_t, S, P)
    assert v_all == v_rows and np.array_equal(G_all, G_rows)


@pytest.mark.parametrize("kind", ["dense", "csr", "binary"])
@pytest.mark.parametrize("loss", LOSSES)
def test_full_pass_kernels_at_zero(rng, kind, loss):
    """W = 0: every margin is 0, so L_k = (C-1) phi(0) exactly on every path when phi(0) is a short binary
    fraction (n_k = 49: see test_values_and_gradient_at_zero), and the gradient is the class mean times phi'(0)."""
    n, d, C = 49, 7, 5
    X = (rng.random((n, d)) < 0.5) * (1.0 if kind == "binary" else rng.standard_normal((n, d)))
    W = np.zeros((C, d))
    mean = X.mean(axis=0)
    dphi0 = ref_kernels.LOSSES[loss](np.zeros(1))[1][0]
    for v, v_only, G in run_kernels(kind, X, W, 2, loss, None, float(n), None, 8):
        assert v == v_only
        if loss == "logistic":  # phi(0) = log 2 is not a short binary fraction: the sums round
            assert v == pytest.approx((C - 1) * LOSS_AT_ZERO[loss], rel=1e-15)
        else:
            assert v == (C - 1) * LOSS_AT_ZERO[loss]
        np.testing.assert_allclose(G[2], (C - 1) * dphi0 * mean, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(np.delete(G, 2, axis=0), np.tile(-dphi0 * mean, (C - 1, 1)), rtol=1e-13,
                                   atol=1e-15)


@pytest.mark.parametrize("loss", ["sigmoid", "hinge"])
def test_csr_full_pass_parallel_chunks_match_and_ignore_thread_count(rng, loss):
    """A block big enough for parallel chunks: same bits with 1 and 2 threads, value-only == value+grad,
    and the reference's values (weighted)."""
    import numba

    n, d, C, k = 3000, 400, 4, 1
    A = sp.random(n, d, density=0.25, format="csr", random_state=np.random.default_rng(1))
    X = A.toarray()
    args, cols = kernel_args("csr", X), column_args("csr", X)
    assert kern._full_pass_chunks(args[0].indptr, C) > 1
    W = rng.standard_normal((C, d)) * 0.2
    weights = rng.random(n) + 0.5
    total = float(weights.sum())
    code = LOSS_CODES[loss]
    results = []
    Wt = np.ascontiguousarray(W.T)
    before = numba.get_num_threads()
    try:
        for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(threads)
            w_t, S, P, acc = stale((d, C), (n, C), (kern.MAX_CHUNKS, 50, C), (kern.MAX_CHUNKS, C + 1))
            G = np.full((C, d), np.nan)
            term = kern.PairwiseTerm(code, k, weights, False, False)
            v = kern.csr_full_pairwise_value_grad(term, *args, *cols, total, W, G, w_t, S, P, acc)
            assert kern.csr_full_pairwise_value(term, *args, total, W, w_t, S, P, acc) == v
            results.append((v, G))
            G_t = np.full((d, C), np.nan)  # feature_major: W^T read as it is, the gradient written transposed
            term = kern.PairwiseTerm(code, k, weights, True, False)
            v = kern.csr_full_pairwise_value_grad(term, *args, *cols, total, Wt, G_t, Wt, S, P, acc)
            assert kern.csr_full_pairwise_value(term, *args, total, Wt, Wt, S, P, acc) == v
            results.append((v, G_t.T))
    finally:
        numba.set_num_threads(before)
    for v, G in results[1:]:
        assert v == results[0][0] and np.array_equal(G, results[0][1])
    v_ref, g_ref = ref.class_loss_value_grad(X, W, k, loss, weights, 1.0 / total)
    v_mag, g_mag = roundoff_magnitudes(X, W, k, loss, weights, None)
    assert_close(results[0][0], v_ref, v_mag / total)
    assert_close(results[0][1], g_ref, g_mag / total)


@njit
def _exp_minus_loop(x, out):
    for j in range(x.shape[0]):
        out[j] = kern._exp_minus(x[j])


@njit
def _block_losses_of(loss, S, P, k, grad):
    kern._block_losses(loss, S, P, np.uint64(S.shape[0]), np.uint64(k), grad)


@njit
def _scalar_sigmoid_loop(z, phi, dphi):
    for j in range(z.shape[0]):
        phi[j], dphi[j] = sigmoid(z[j])


def test_vectorised_exp_is_accurate():
    """_exp_minus (the branch-free exp of the sigmoid path) is within 1.5 ulp of e^{-x}, subnormals included."""
    rng = np.random.default_rng(5)
    x = np.concatenate([np.linspace(0.0, 750.0, 200_001), rng.random(100_000) * 2.0, rng.random(100_000) * 40.0,
                        [0.0, 5e-324, 1e-300, 1e-17, 0.5 * np.log(2), 708.39, 709.79, 744.44, 745.13, 745.14, 746.0,
                         1e300, np.inf]])
    got = np.empty_like(x)
    _exp_minus_loop(x, got)
    exact = np.exp(-x.astype(np.longdouble))
    err = np.abs(got - exact)
    normal = exact >= np.finfo(np.float64).tiny
    assert np.all(err[normal] <= 1.5 * np.spacing(exact[normal].astype(np.float64)))
    assert np.all(err[~normal] <= 5e-324)  # subnormal results: at most one unit of the last place
    assert got[-1] == 0.0 and got[0] == 1.0
    nan = np.empty(1)
    _exp_minus_loop(np.array([np.nan]), nan)
    assert np.isnan(nan[0])


def test_vectorised_sigmoid_matches_scalar_sigmoid():
    """The block sigmoid (one exp, one division) agrees with the scalar sigmoid of _losses to a few ulp."""
    rng = np.random.default_rng(6)
    z = np.concatenate([rng.standard_normal(50_000) * 5, np.linspace(-800, 800, 50_001), [0.0, -0.0, 36.0, -36.0,
                                                                                          745.0, -745.0, np.inf,
                                                                                          -np.inf]])
    S = np.zeros((z.size, 2))
    S[:, 0] = z          # class 0: margins m_i1 = s_i0 - s_i1 = z
    P = np.empty_like(S)
    _block_losses_of(LOSS_CODES["sigmoid"], S, P, 0, True)
    phi, dphi = np.empty_like(z), np.empty_like(z)
    _scalar_sigmoid_loop(z, phi, dphi)
    for got, want in ((P[:, 1], phi), (-S[:, 1], dphi)):
        normal = np.abs(want) >= np.finfo(np.float64).tiny
        assert np.all(np.abs(got - want)[normal] <= 4 * np.spacing(np.abs(want[normal])))
        assert np.all(np.abs(got - want)[~normal] <= 4 * 5e-324)
    assert P[0, 0] == 0.5 and S[0, 0] == 0.25  # the skipped column k: phi(0), -phi'(0)


def test_dense_blas_blocks_stay_below_the_blas_threading_threshold():
    T, S, P = kern.pairwise_workspace(10, 256, 7291, dense=True)      # usps
    assert T.shape == (10, 256) and S.shape == P.shape and S.shape[1] == 10
    assert 1 <= S.shape[0] * 10 * 256 <= kern.BLAS_BLOCK_WORK
    assert kern.pairwise_workspace(10, 16, 780, dense=True)[1].shape[0] == 780  # pendigits: one block per class
    assert kern.pairwise_workspace(3, 10**6, 50, dense=True)[1].shape[0] == 1   # wider than a block: one row


# --------------------------------------------------------------------------- the term
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("weights", [False, True])
def test_term_matches_reference_all_layouts(rng, loss, weights):
    dense = make_data(rng, binary=True, weights=weights)
    csr = Dataset(sp.csr_matrix(dense.X), dense.y, sample_weight=dense.sample_weight, task="multiclass")
    csr_values = Dataset(sp.csr_matrix(dense.X * 2.0), dense.y, sample_weight=dense.sample_weight,
                         task="multiclass")
    C, d = 4, 5
    x = rng.standard_normal(C * d)
    W = x.reshape(C, d)
    for k in range(C):
        idx = np.flatnonzero(dense.y == k)
        sw = None if dense.sample_weight is None else dense.sample_weight[idx]
        total = idx.size if sw is None else sw.sum()
        rows = rng.integers(0, idx.size, size=7)
        for ds, factor in ((dense, 1.0), (csr, 1.0), (csr_values, 2.0)):
            term = ClassPairwiseRisk(ds, k, loss=loss)
            assert (term.n_samples, term.n_features, term.n_classes) == (idx.size, C * d, C)
            v_ref, g_ref = ref.class_loss_value_grad(factor * dense.X[idx], W, k, loss, sw, 1.0 / total)
            v, g = grad_of(term, x)
            assert v == pytest.approx(v_ref, rel=1e-12)
            np.testing.assert_allclose(g, g_ref.ravel(), rtol=1e-12, atol=1e-14)
            assert term.value(x) == v
            vb_ref, gb_ref = ref.class_loss_value_grad(factor * dense.X[idx], W, k, loss, sw,
                                                       idx.size / (rows.size * total), rows)
            vb, gb = grad_of(term, x, rows)
            assert vb == pytest.approx(vb_ref, rel=1e-12)
            np.testing.assert_allclose(gb, gb_ref.ravel(), rtol=1e-12, atol=1e-14)
            assert term.value_rows(x, rows) == vb
    assert ClassPairwiseRisk(csr, 0)._design[2] is None  # binary CSR: the values array is never read
    assert ClassPairwiseRisk(csr_values, 0)._design[2] is not None


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("sparse", [False, True])
def test_term_full_passes_over_several_blocks(rng, loss, sparse):
    """Wide rows: the dense full pass runs BLAS on blocks of 8 rows (C d = 15,000); weighted, vs the reference.

    Also: the full pass and the row-subset path over every row agree to round-off (they sum in different
    orders: BLAS blocks / CSC columns vs per-row loops).
    """
    C, d, n = 5, 3000, 120
    X = np.where(rng.random((n, d)) < 0.05, rng.standard_normal((n, d)), 0.0)
    ds = Dataset(sp.csr_matrix(X) if sparse else X, np.arange(n) % C, sample_weight=rng.random(n) + 0.5,
                 task="multiclass")
    x = rng.standard_normal(C * d) * 0.3
    W = x.reshape(C, d)
    for k in (0, 3):
        term = ClassPairwiseRisk(ds, k, loss=loss)
        if not sparse:
            assert term._work[1].shape[0] == kern.BLAS_BLOCK_WORK // (C * d) == 8 < term.n_samples
        idx = term.class_rows
        sw = ds.sample_weight[idx]
        v_ref, g_ref = ref.class_loss_value_grad(X[idx], W, k, loss, sw, 1.0 / sw.sum())
        v, g = grad_of(term, x)
        assert v == pytest.approx(v_ref, rel=1e-12)
        np.testing.assert_allclose(g, g_ref.ravel(), rtol=1e-10, atol=1e-13 * np.abs(g_ref).max())
        assert term.value(x) == v
        every = np.arange(term.n_samples)
        vb, gb = grad_of(term, x, every)
        assert vb == pytest.approx(v, rel=1e-12)
        np.testing.assert_allclose(gb, g, rtol=1e-10, atol=1e-13 * np.abs(g).max())


def test_subset_estimate_is_unbiased(rng):
    ds = make_data(rng, weights=True)
    term = ClassPairwiseRisk(ds, 2, loss="logistic")
    x = rng.standard_normal(term.n_features)
    singles = [term.value_rows(x, np.array([i])) for i in range(term.n_samples)]
    assert np.mean(singles) == pytest.approx(term.value(x), rel=1e-12)


@pytest.mark.parametrize("loss", ["sigmoid", "logistic"])
@pytest.mark.parametrize("sparse", [False, True])
def test_gradient_matches_finite_differences(rng, loss, sparse):
    ds = make_data(rng, C=5, d=8, sparse=sparse)
    h = 1e-6
    for k in (0, 3):
        term = ClassPairwiseRisk(ds, k, loss=loss)
        rows = rng.integers(0, term.n_samples, size=5)
        for _ in range(3):
            x, v = rng.standard_normal(40), rng.standard_normal(40)
            _, g = grad_of(term, x)
            fd = (term.value(x + h * v) - term.value(x - h * v)) / (2 * h)
            assert fd == pytest.approx(g @ v, rel=1e-6, abs=1e-9)
            _, gb = grad_of(term, x, rows)
            fdb = (term.value_rows(x + h * v, rows) - term.value_rows(x - h * v, rows)) / (2 * h)
            assert fdb == pytest.approx(gb @ v, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("loss", LOSSES)
def test_translation_invariance(rng, loss):
    """L_k depends on differences w_k - w_l only: shifting every row leaves the value, gradient blocks sum to 0."""
    ds = make_data(rng, C=5, d=6)
    for k in range(5):
        term = ClassPairwiseRisk(ds, k, loss=loss)
        W = rng.standard_normal((5, 6))
        shifted = W + rng.standard_normal(6)
        v, g = grad_of(term, W.ravel())
        assert term.value(shifted.ravel()) == pytest.approx(v, rel=1e-12, abs=1e-12)
        G = g.reshape(5, 6)
        np.testing.assert_allclose(G.sum(axis=0), 0.0, atol=1e-14 * (1 + np.abs(G).max()))
        assert np.abs(G).max() > 0


@pytest.mark.parametrize("sparse", [False, True])
def test_values_and_gradient_at_zero(rng, sparse):
    """At W = 0: L_k(0) = (C-1)/2 exactly, grad_k = -(C-1)/4 mean(a), grad_l = mean(a)/4.

    49 rows per class: there 49 * 2 * fl(1/49) != 2, so only a pass that divides by n_k is exact.
    """
    C, d = 5, 7
    ds = make_data(rng, n=49 * C, C=C, d=d, sparse=sparse)
    A = ds.X.toarray() if sparse else ds.X
    for k in range(C):
        term = ClassPairwiseRisk(ds, k)
        v, g = grad_of(term, np.zeros(C * d))
        assert v == (C - 1) / 2
        mean = A[ds.y == k].mean(axis=0)
        G = g.reshape(C, d)
        np.testing.assert_allclose(G[k], -(C - 1) / 4 * mean, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(np.delete(G, k, axis=0), np.tile(mean / 4, (C - 1, 1)), rtol=1e-13, atol=1e-15)


def test_rows_read_and_argument_checks(rng):
    ds = make_data(rng)
    term = ClassPairwiseRisk(ds, 1)
    n1 = int(np.sum(ds.y == 1))
    x, out = rng.standard_normal(20), np.empty(20)
    term.value(x)
    term.value_and_subgradient(x, out)
    assert term.rows_read == 2 * n1
    term.value_rows(x, np.array([0, 0, 3]))
    term.value_and_subgradient_rows(x, np.arange(4, dtype=np.uint64), out)
    assert term.rows_read == 2 * n1 + 7
    for bad_call in (lambda: term.value(np.full(20, np.nan)),
                     lambda: term.value(np.zeros(5)),
                     lambda: term.value_and_subgradient(x, np.empty(20, dtype=np.float32)),
                     lambda: term.value_rows(x, np.array([n1])),
                     lambda: term.value_rows(x, np.array([], dtype=np.int64))):
        with pytest.raises(ValueError):
            bad_call()
    assert term.rows_read == 2 * n1 + 7  # rejected calls read nothing
    term.reset_counters()
    assert term.rows_read == 0
    np.testing.assert_array_equal(term.class_rows, np.flatnonzero(ds.y == 1))
    assert "w_1 - w_l" in term.formula


def test_term_bad_inputs(rng):
    ds = make_data(rng, C=3)
    with pytest.raises(ValueError, match="class_id"):
        ClassPairwiseRisk(ds, 3)
    with pytest.raises(ValueError, match="class_id"):
        ClassPairwiseRisk(ds, 4, n_classes=5)  # in range but empty
    with pytest.raises(ValueError, match="n_classes"):
        ClassPairwiseRisk(ds, 0, n_classes=2)  # label 2 out of range
    with pytest.raises(ValueError, match="loss"):
        ClassPairwiseRisk(ds, 0, loss="zero_one")
    with pytest.raises(ValueError, match="sample_weight"):
        ClassPairwiseRisk(ds, 0, sample_weight=np.ones(3))
    with pytest.raises(ValueError, match="multi-class"):
        ClassPairwiseRisk(make_neyman_pearson(50, 3), 0)
    # Extra, empty classes are allowed for a single term: their rows w_c still enter the margins.
    term = ClassPairwiseRisk(ds, 0, n_classes=5)
    assert term.n_features == 5 * ds.n_features and term.value(np.zeros(term.n_features)) == 2.0


# --------------------------------------------------------------------------- multiclass_neyman_pearson
@pytest.mark.parametrize("priority", [0, 2])
def test_problem_structure_and_feasible_start(rng, priority):
    C, d = 4, 5
    ds = make_data(rng, n=49 * C, C=C, d=d)  # 49 rows per class: see test_values_and_gradient_at_zero
    problem = multiclass_neyman_pearson(ds, priority_class=priority)
    assert isinstance(problem, ConstrainedProblem)
    assert problem.dim == C * d and problem.n_constraints == C - 1
    assert problem.objective.class_id == priority
    assert [c.term.class_id for c in problem.constraints] == [k for k in range(C) if k != priority]
    assert all(c.bound == (C - 1) / 2 for c in problem.constraints)
    np.testing.assert_array_equal(problem.x0, np.zeros(C * d))
    # The paper's r_k = (C-1)/2 is the loss of the zero model: x0 = 0 sits exactly on every constraint.
    assert problem.f(problem.x0) == (C - 1) / 2
    np.testing.assert_array_equal(problem.constraint_values(problem.x0), np.zeros(C - 1))
    assert problem.g(problem.x0)[0] == 0.0
    # Values at a random point against the reference.
    x = rng.standard_normal(C * d)
    losses = ref.class_losses(ds.X, ds.y, x.reshape(C, d))
    assert problem.f(x) == pytest.approx(losses[priority], rel=1e-12)
    others = np.delete(losses, priority)
    np.testing.assert_allclose(problem.constraint_values(x), others - (C - 1) / 2, rtol=1e-12, atol=1e-13)
    assert problem.parts["w1"] == slice(d, 2 * d)


def test_problem_domain_is_one_ball_per_class(rng):
    C, d, radius = 3, 4, 0.1
    problem = multiclass_neyman_pearson(make_data(rng, C=C, d=d), radius=radius)
    assert isinstance(problem.domain, ProductOfBalls)
    W = np.zeros((C, d))
    W[0] = 0.05 / 2                      # norm 0.05: inside, unchanged
    W[1] = rng.standard_normal(d) * 10   # outside: scaled to the sphere
    P = problem.project(W.ravel()).reshape(C, d)
    np.testing.assert_array_equal(P[0], W[0])
    assert np.linalg.norm(P[1]) == pytest.approx(radius, rel=1e-14)
    np.testing.assert_allclose(P[1] / np.linalg.norm(P[1]), W[1] / np.linalg.norm(W[1]), rtol=1e-14)
    np.testing.assert_array_equal(P[2], 0.0)
    assert problem.domain.diameter == pytest.approx(2 * radius * np.sqrt(C))


def test_problem_levels_and_losses(rng):
    ds = make_data(rng, C=4)
    problem = multiclass_neyman_pearson(ds, priority_class=1, bound=[1.0, 2.0, 3.0])
    assert [c.bound for c in problem.constraints] == [1.0, 2.0, 3.0]
    assert [c.bound for c in multiclass_neyman_pearson(ds, bound=0.7).constraints] == [0.7] * 3
    hinge = multiclass_neyman_pearson(ds, loss="hinge")
    assert [c.bound for c in hinge.constraints] == [3.0] * 3      # (C-1) phi(0) with phi(0) = 1
    assert hinge.g(hinge.x0)[0] == 0.0 and hinge.objective.loss == "hinge"


def test_problem_bad_inputs(rng):
    ds = make_data(rng, C=3)
    gap = Dataset(ds.X, np.where(ds.y == 1, 2, ds.y), task="multiclass")  # labels {0, 2}: class 1 empty
    cases = [
        (dict(dataset=gap), "class"),
        (dict(dataset=make_neyman_pearson(40, 5)), "neyman_pearson"),
        (dict(dataset=Dataset(ds.X, np.zeros(ds.n_samples, dtype=int), task="multiclass")), "2 classes"),
        (dict(dataset=ds, priority_class=3), "priority_class"),
        (dict(dataset=ds, priority_class=-1), "priority_class"),
        (dict(dataset=ds, priority_class=1.5), "priority_class"),
        (dict(dataset=ds, bound=[1.0, 1.0, 1.0]), "bound"),
        (dict(dataset=ds, bound=[1.0, np.nan]), "bound"),
        (dict(dataset=ds, bound="high"), "bound"),
        (dict(dataset=ds, radius=0.0), "radius"),
        (dict(dataset=ds, radius=-1.0), "radius"),
        (dict(dataset=ds, radius=np.nan), "radius"),
        (dict(dataset=ds, loss="zero_one"), "loss"),
        (dict(dataset=ds, layout="rows"), "layout"),
    ]
    for kwargs, match in cases:
        with pytest.raises(ValueError, match=match):
            multiclass_neyman_pearson(**kwargs)


def test_synthetic_sparse_problem_runs_end_to_end():
    ds = make_multiclass(300, 10, n_classes=3, sparse=True, density=0.3, seed=1)
    problem = multiclass_neyman_pearson(ds)
    out = np.empty(problem.dim)
    value, active = problem.g_and_subgradient(problem.x0, out)
    assert value == 0.0 and active == 0 and np.any(out != 0)
    problem.reset_counters()
    problem.f(problem.x0)
    problem.constraint_values(problem.x0)
    assert problem.rows_read_f == 100 and problem.rows_read_g == 200


# --------------------------------------------------------------------------- binary neyman_pearson
@pytest.mark.parametrize("loss", LOSSES)
def test_binary_problem_is_the_two_class_case(rng, loss):
    """neyman_pearson(w) equals multiclass_neyman_pearson at W = (0, w), class 1 = label +1."""
    ds = make_neyman_pearson(80, 4, positive_fraction=0.3, seed=3)
    problem = neyman_pearson(ds, loss=loss, bound=0.4)
    assert isinstance(problem.objective, MarginRisk) and isinstance(problem.domain, Whole)
    assert problem.objective.n_samples == 24 and problem.constraints[0].term.n_samples == 56
    two = Dataset(ds.X, (ds.y > 0).astype(np.int64), task="multiclass")
    multi = multiclass_neyman_pearson(two, priority_class=1, bound=0.4, loss=loss, radius=np.inf)
    for _ in range(3):
        w = rng.standard_normal(4)
        W = np.concatenate([np.zeros(4), w])
        assert problem.f(w) == pytest.approx(multi.f(W), rel=1e-12)
        assert problem.g(w)[0] == pytest.approx(multi.g(W)[0], rel=1e-12, abs=1e-14)
        g_bin, g_multi = np.empty(4), np.empty(8)
        problem.f_and_subgradient(w, g_bin)
        multi.f_and_subgradient(W, g_multi)
        np.testing.assert_allclose(g_bin, g_multi[4:], rtol=1e-12, atol=1e-14)


def test_binary_problem_defaults_and_options(rng):
    ds = make_neyman_pearson(60, 3, seed=0)
    problem = neyman_pearson(ds)                      # hinge, bound = phi(0) = 1
    assert problem.constraints[0].bound == 1.0 and problem.g(problem.x0)[0] == 0.0
    assert problem.f(problem.x0) == 1.0
    w = rng.standard_normal(3)
    pos, neg = ds.y > 0, ds.y < 0
    assert problem.f(w) == pytest.approx(np.mean(np.maximum(0, 1 - ds.X[pos] @ w)), rel=1e-12)
    assert problem.g(w)[0] == pytest.approx(np.mean(np.maximum(0, 1 + ds.X[neg] @ w)) - 1.0, rel=1e-12, abs=1e-14)
    swapped = neyman_pearson(ds, loss="sigmoid", bound=0.2, radius=2.0, constrained_class=1)
    assert isinstance(swapped.domain, Ball) and swapped.domain.radius == 2.0
    # Objective on the negatives, margin -a^T w: phi(-a^T w) = 1 / (1 + exp(-a^T w)).
    assert swapped.f(w) == pytest.approx(np.mean(1 / (1 + np.exp(-ds.X[neg] @ w))), rel=1e-12)
    assert swapped.g(w)[0] == pytest.approx(np.mean(1 / (1 + np.exp(ds.X[pos] @ w))) - 0.2, rel=1e-12)


def test_binary_problem_bad_inputs():
    ds = make_neyman_pearson(40, 3, seed=0)
    only_pos = Dataset(ds.X, np.ones(40), task="binary")
    cases = [
        (dict(dataset=make_multiclass(30, 3, n_classes=3)), "binary"),
        (dict(dataset=only_pos), "label -1"),
        (dict(dataset=ds, bound=np.inf), "bound"),
        (dict(dataset=ds, radius=0.0), "radius"),
        (dict(dataset=ds, constrained_class=0), "constrained_class"),
        (dict(dataset=ds, loss="ramp"), "loss"),
    ]
    for kwargs, match in cases:
        with pytest.raises(ValueError, match=match):
            neyman_pearson(**kwargs)


# --------------------------------------------------------------------------- real data
def test_pendigits_kernel_matches_reference(data_home, rng):
    ds = load("pendigits", data_home=data_home)
    assert ds.n_features == 16 and ds.task == "multiclass"
    problem = multiclass_neyman_pearson(ds)
    assert problem.dim == 160 and problem.n_constraints == 9
    assert all(c.bound == 4.5 for c in problem.constraints)   # the paper's r_k for pendigits
    assert problem.f(problem.x0) == 4.5 and problem.g(problem.x0)[0] == 0.0
    W = problem.project(rng.standard_normal(160) * 5.0).reshape(10, 16) * 20.0  # margins of order 1-10
    x = W.ravel()
    terms = [problem.objective] + [c.term for c in problem.constraints]
    for term in terms:
        idx = term.class_rows
        v_ref, g_ref = ref.class_loss_value_grad(ds.X[idx], W, term.class_id)
        v, g = grad_of(term, x)
        assert v == pytest.approx(v_ref, rel=1e-12)
        np.testing.assert_allclose(g, g_ref.ravel(), rtol=1e-10, atol=1e-13 * np.abs(g_ref).max())
        rows = rng.integers(0, term.n_samples, size=100)
        vb_ref, gb_ref = ref.class_loss_value_grad(ds.X[idx], W, term.class_id, rows=rows)
        vb, gb = grad_of(term, x, rows)
        assert vb == pytest.approx(vb_ref, rel=1e-12)
        np.testing.assert_allclose(gb, gb_ref.ravel(), rtol=1e-10, atol=1e-13 * np.abs(gb_ref).max())


@pytest.mark.parametrize("d, index_type", [(65_536, np.uint16), (65_537, np.uint32)])
def test_sparse_term_index_width_at_the_uint16_boundary(rng, d, index_type):
    """Column indices are stored as uint16 up to d = 65,536 (largest index 65,535), as uint32 beyond;
    entries in the last columns are read correctly either way (full pass, rows, value-only)."""
    C, n = 3, 45
    X = sp.lil_matrix((n, d))
    for i in range(n):
        for j in rng.choice(d, size=6, replace=False):
            X[i, j] = rng.standard_normal()
        X[i, d - 1 - i % 2] = 1.0 + i  # the largest column indices
    X = X.tocsr()
    ds = Dataset(X, np.arange(n) % C, task="multiclass")
    x = rng.standard_normal(C * d) * 0.05
    W = x.reshape(C, d)
    for k in range(C):
        term = ClassPairwiseRisk(ds, k)
        assert term._design[1].dtype == index_type
        assert term._columns[1].dtype == np.uint16  # 15 rows per class
        idx = term.class_rows
        v_ref, g_ref = ref.class_loss_value_grad(X[idx], W, k)
        v, g = grad_of(term, x)
        assert v == pytest.approx(v_ref, rel=1e-12)
        np.testing.assert_allclose(g, g_ref.ravel(), rtol=1e-12, atol=1e-14)
        assert term.value(x) == v
        rows = np.array([0, 3, 3, 14])
        vb_ref, gb_ref = ref.class_loss_value_grad(X[idx], W, k, scale=1.0 / rows.size, rows=rows)
        vb, gb = grad_of(term, x, rows)
        assert vb == pytest.approx(vb_ref, rel=1e-12)
        np.testing.assert_allclose(gb, gb_ref.ravel(), rtol=1e-12, atol=1e-14)


# --------------------------------------------------------------------------- the "features" layout
def _terms(problem):
    return [problem.objective] + [c.term for c in problem.constraints]


@pytest.mark.parametrize("kind", ["dense", "csr", "binary"])
@pytest.mark.parametrize("loss", ["sigmoid", "hinge"])
def test_features_layout_gives_the_same_bits_as_classes(rng, kind, loss):
    """x = vec(W^T) instead of vec(W): every oracle returns the same value and the same gradient, transposed,
    bit for bit (weighted; full passes, minibatches, value-only); the domain projects the same."""
    C, d = 4, 6
    X = np.where(rng.random((90, d)) < 0.5, 1.0 if kind == "binary" else rng.standard_normal((90, d)), 0.0)
    y = np.arange(90) % C
    ds = Dataset(X if kind == "dense" else sp.csr_matrix(X), y, sample_weight=rng.random(90) + 0.5, task="multiclass")
    by_classes = multiclass_neyman_pearson(ds, loss=loss, radius=0.5)
    by_features = multiclass_neyman_pearson(ds, loss=loss, radius=0.5, layout="features")
    W = rng.standard_normal((C, d))
    xc, xf = W.ravel(), np.ascontiguousarray(W.T).ravel()
    rows = rng.integers(0, 20, size=9)
    for tc, tf in zip(_terms(by_classes), _terms(by_features)):
        assert tf.layout == "features" and "layout='features'" in repr(tf) and "layout" not in repr(tc)
        vc, gc = grad_of(tc, xc)
        vf, gf = grad_of(tf, xf)
        assert vc == vf and np.array_equal(gc.reshape(C, d), gf.reshape(d, C).T)
        assert tc.value(xc) == tf.value(xf) == vc
        vc, gc = grad_of(tc, xc, rows)
        vf, gf = grad_of(tf, xf, rows)
        assert vc == vf and np.array_equal(gc.reshape(C, d), gf.reshape(d, C).T)
        assert tc.value_rows(xc, rows) == tf.value_rows(xf, rows) == vc
        assert np.array_equal(tf.weights(xf), W) and np.array_equal(tc.weights(xc), W)
    assert isinstance(by_features.domain, ColumnBalls)
    Z = rng.standard_normal((C, d))
    assert np.array_equal(by_classes.project(Z.ravel()).reshape(C, d),
                          by_features.project(np.ascontiguousarray(Z.T).ravel()).reshape(d, C).T)
    assert by_features.parts["w2"] == slice(2, C * d, C) and np.array_equal(xf[by_features.parts["w2"]], W[2])
    assert by_features.domain.diameter == by_classes.domain.diameter
    with pytest.raises(ValueError, match="shape"):
        _terms(by_features)[0].weights(np.zeros(3))


def test_features_layout_on_parallel_chunks_and_its_normal_cone(rng):
    """A class block big enough for parallel chunks (CSR): the same bits in both layouts; and the KKT
    residual's normal cone of ColumnBalls is that of ProductOfBalls on the transposed point."""
    n, d, C = 6000, 400, 4
    A = sp.random(n, d, density=0.25, format="csr", random_state=np.random.default_rng(3))
    ds = Dataset(A, np.arange(n) % 2, task="multiclass")  # classes 2, 3 empty: allowed for single terms
    tc = ClassPairwiseRisk(ds, 1, n_classes=C)
    tf = ClassPairwiseRisk(ds, 1, n_classes=C, layout="features")
    assert kern._full_pass_chunks(tf._design[0], C) > 1
    W = rng.standard_normal((C, d)) * 0.1
    vc, gc = grad_of(tc, W.ravel())
    vf, gf = grad_of(tf, np.ascontiguousarray(W.T).ravel())
    assert vc == vf and np.array_equal(gc.reshape(C, d), gf.reshape(d, C).T)
    radii = np.array([0.5, np.inf, 1.0, 2.0])
    W[0] *= 0.5 / np.linalg.norm(W[0])   # on its sphere
    W[2] *= 0.3 / np.linalg.norm(W[2])   # inside
    V = rng.standard_normal((C, d))
    V[0] = -3.0 * W[0] + 0.1 * V[0]
    expected = ProductOfBalls(np.arange(C + 1) * d, radii).normal_cone_distance(W.ravel(), V.ravel())
    got = ColumnBalls(radii).normal_cone_distance(np.ascontiguousarray(W.T).ravel(), np.ascontiguousarray(V.T).ravel())
    assert got == pytest.approx(expected, rel=1e-14)


@pytest.mark.parametrize("layout", ["classes", "features"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_full_csr_passes_find_nan_in_every_chunk(rng, layout, bad):
    """The full CSR kernels check the point chunk by chunk inside their parallel region (no serial scan):
    a NaN or inf anywhere (first, last, each chunk's share, a feature no row uses) raises ValueError, the
    counters stay put, and a finite point whose value overflows keeps its NaN value."""
    n, d, C = 6000, 400, 4
    A = sp.random(n, d, density=0.25, format="csr", random_state=np.random.default_rng(4))
    A = sp.hstack([A, sp.csr_matrix((n, 1))], format="csr")  # feature d is in no row
    ds = Dataset(A, np.arange(n) % 2, task="multiclass")
    term = ClassPairwiseRisk(ds, 0, n_classes=C, layout=layout)
    dim = term.n_features
    n_chunks = kern._full_pass_chunks(term._design[0], C)
    assert n_chunks > 1
    positions = {0, dim - 1, dim // 2, d if layout == "classes" else d * C}  # the last: feature d of class 0
    positions |= {(c * (d + 1)) // n_chunks * C for c in range(n_chunks)}    # each chunk's first table row
    out = np.empty(dim)
    for pos in sorted(positions):
        x = np.zeros(dim)
        x[pos] = bad
        for call in (lambda: term.value(x), lambda: term.value_and_subgradient(x, out)):
            with pytest.raises(ValueError, match="NaN or inf"):
                call()
    assert term.rows_read == 0
    huge = np.full(dim, 1e308)          # finite, but the scores overflow: inf - inf margins
    assert np.isnan(term.value(huge)) and term.rows_read == term.n_samples


# --------------------------------------------------------------------------- implicit intercept column (issue 33)
def _stacked(X):
    return np.hstack([X, np.ones((X.shape[0], 1))])


def _intercept_runs(kind, X, W, k, code, weights, divisor, rows, block, intercept):
    """``[(value, value_only, G as (C, d + 1)), ...]`` of every kernel on ``X`` with ``intercept``, or on
    the stacked ``X`` (a stored column of ones) without: the two must agree to round-off."""
    C, dw = W.shape
    n = X.shape[0]
    Wt = np.ascontiguousarray(W.T)
    out = []
    if kind == "dense":
        term = kern.PairwiseTerm(code, k, weights, False, intercept)
        S, P = stale((block, C), (block, C))
        G = np.full((C, dw), np.nan)
        v = kern.dense_pairwise_value_grad(term, X, divisor, rows, W, G, S, P)
        out.append((v, kern.dense_pairwise_value(term, X, divisor, rows, W, S, P), G.copy()))
        if rows is None:
            T, Wx = stale((C, X.shape[1]), (C, X.shape[1]))
            G[:] = np.nan
            extra = (Wx,) if intercept else ()
            v = kern.dense_blas_pairwise_value_grad(term, X, divisor, W, G, T, S, P, *extra)
            out.append((v, kern.dense_blas_pairwise_value(term, X, divisor, W, S, P, *extra), G.copy()))
        return out
    args, cols = kernel_args(kind, X), column_args(kind, X)
    for fm in (False, True):
        term = kern.PairwiseTerm(code, k, weights, fm, intercept)
        Wm = Wt if fm else W
        G = np.full((dw, C) if fm else (C, dw), np.nan)
        w_t, grad_t = (Wt, G) if fm else stale((dw, C), (dw, C))
        S, P = stale((block, C), (block, C))
        v = kern.csr_pairwise_value_grad(term, *args, divisor, rows, Wm, G, w_t, grad_t, S, P)
        vo = kern.csr_pairwise_value(term, *args, divisor, rows, Wm, w_t, S, P)
        out.append((v, vo, (G.T if fm else G).copy()))
        if rows is None:
            S, P, acc = stale((n, C), (kern.MAX_CHUNKS, block, C), (kern.MAX_CHUNKS, C + 1))
            G[:] = np.nan
            v = kern.csr_full_pairwise_value_grad(term, *args, *cols, divisor, Wm, G, w_t, S, P, acc)
            vo = kern.csr_full_pairwise_value(term, *args, divisor, Wm, w_t, S, P, acc)
            out.append((v, vo, (G.T if fm else G).copy()))
    return out


@settings(max_examples=20, deadline=None)
@given(class_blocks(), st.sampled_from(LOSSES))
def test_intercept_kernels_match_a_stored_column_of_ones(block, loss):
    """Every kernel with ``intercept`` (W of d + 1 columns, rows of d) gives what it gives on the rows with a
    stored column of ones appended, to round-off (rtol 1e-12), and agrees with the oracle."""
    kind, X, W0, k, weights, rows, b = block
    rng = np.random.default_rng(int(abs(W0).sum() * 1e6) % 2**32)
    W = np.hstack([W0, rng.standard_normal((W0.shape[0], 1))])
    code = LOSS_CODES[loss]
    m = X.shape[0] if rows is None else rows.shape[0]
    implicit = _intercept_runs(kind, X, W, k, code, weights, float(m), rows, b, True)
    stored = _intercept_runs(kind, _stacked(X), W, k, code, weights, float(m), rows, b, False)
    assert len(implicit) == len(stored)
    for (v, vo, G), (v2, _, G2) in zip(implicit, stored):
        np.testing.assert_allclose(v, v2, rtol=1e-12, atol=1e-300)
        np.testing.assert_allclose(G, G2, rtol=1e-12, atol=1e-13 * max(1.0, np.abs(G2).max()))
        assert vo == v
    v_ref, g_ref = ref.class_loss_value_grad(X, W, k, loss, weights, 1.0 / m, rows, intercept=True)
    v_mag, g_mag = roundoff_magnitudes(_stacked(X), W, k, loss, weights, rows)
    for v, _, G in implicit:
        assert_close(v, v_ref, v_mag / m)
        assert_close(G, g_ref, g_mag / m)


@pytest.mark.parametrize("feature_major", [False, True])
def test_intercept_full_pass_parallel_chunks(feature_major):
    """A block large enough for parallel chunks: the intercepts' gradient (summed outside the CSC copy)
    matches a stored column of ones to round-off."""
    rng = np.random.default_rng(5)
    n, d, C = 3000, 4000, 12
    A = sp.random(n, d, density=30 / d, format="csr", random_state=5)
    A.sort_indices()
    assert kern._full_pass_chunks(A.indptr.astype(np.uint64), C) > 1
    W = rng.standard_normal((C, d + 1)) * 0.3
    results = []
    for M, icpt in ((A, True), (sp.csr_matrix(_stacked(A.toarray())), False)):
        X = CSR(M.indptr.astype(np.uint64), M.indices.astype(np.uint32), M.data)
        Mc = M.tocsc()
        Mc.sort_indices()
        Xc = CSR(Mc.indptr.astype(np.uint64), Mc.indices.astype(np.uint32), Mc.data)
        term = kern.PairwiseTerm(LOSS_CODES["sigmoid"], 3, None, feature_major, icpt)
        Wm = np.ascontiguousarray(W.T) if feature_major else W.copy()
        G = np.full(Wm.shape, np.nan)
        w_t = Wm if feature_major else np.full((d + 1, C), np.nan)
        S, P, acc = stale((n, C), (kern.MAX_CHUNKS, 128, C), (kern.MAX_CHUNKS, C + 1))
        v = kern.csr_full_pairwise_value_grad(term, X, Xc, float(n), Wm, G, w_t, S, P, acc)
        vo = kern.csr_full_pairwise_value(term, X, float(n), Wm, w_t, S, P, acc)
        assert vo == v
        results.append((v, G.copy()))
    (v1, G1), (v2, G2) = results
    np.testing.assert_allclose(v1, v2, rtol=1e-12)
    np.testing.assert_allclose(G1, G2, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("layout", ["classes", "features"])
def test_term_intercept_matches_stacked_dataset(rng, sparse, layout):
    """``ClassPairwiseRisk(..., intercept=True)`` on X equals the term on X with a stored column of ones:
    values and gradients of full passes and row subsets (rtol 1e-12), same layout of x."""
    base = make_data(rng, n=80, d=6, C=4, sparse=sparse, weights=True)
    Xd = base.X.toarray() if sparse else base.X
    Xs = _stacked(Xd)
    stacked = Dataset(sp.csr_matrix(Xs) if sparse else Xs, base.y, sample_weight=base.sample_weight,
                      task="multiclass")
    x = 0.5 * rng.standard_normal(4 * 7)
    rows = rng.integers(0, 15, 25)
    for k in range(4):
        t1 = ClassPairwiseRisk(base, k, layout=layout, intercept=True)
        t2 = ClassPairwiseRisk(stacked, k, layout=layout)
        assert t1.n_features == t2.n_features == 28 and t1.n_input_features == 7
        np.testing.assert_allclose(t1.value(x), t2.value(x), rtol=1e-12)
        for r in (None, rows):
            (v1, g1), (v2, g2) = grad_of(t1, x, r), grad_of(t2, x, r)
            np.testing.assert_allclose(v1, v2, rtol=1e-12)
            np.testing.assert_allclose(g1, g2, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(t1.value_rows(x, rows), t2.value_rows(x, rows), rtol=1e-12)
        assert np.array_equal(t1.weights(x), t2.weights(x))
    problem = multiclass_neyman_pearson(base, 1, layout=layout, intercept=True)
    assert problem.x0.shape == (28,) and problem.objective.intercept
    assert all(c.term.intercept for c in problem.constraints)
    assert problem.f(np.zeros(28)) == 1.5  # W = 0, intercepts included: (C - 1) phi(0)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("layout", ["classes", "features"])
def test_a_term_on_rows_equals_the_term_on_those_rows_copied(sparse, layout):
    # ``rows=`` (a fit that holds a calibration part out) reads the same rows as a sliced dataset
    rng = np.random.default_rng(11)
    data = make_data(rng, n=80, sparse=sparse, weights=True)
    rows = np.sort(rng.choice(80, 50, replace=False))
    sliced = Dataset(data.X[rows], data.y[rows], sample_weight=data.sample_weight[rows], task="multiclass")
    x = rng.normal(size=4 * (data.n_features + 1))
    for k in range(4):
        on_rows = ClassPairwiseRisk(data, k, 4, "logistic", layout=layout, intercept=True, rows=rows)
        copied = ClassPairwiseRisk(sliced, k, 4, "logistic", layout=layout, intercept=True)
        assert on_rows.n_samples == copied.n_samples
        g1, g2 = np.empty(x.size), np.empty(x.size)
        assert on_rows.value_and_subgradient(x, g1) == copied.value_and_subgradient(x, g2)
        np.testing.assert_array_equal(g1, g2)
        np.testing.assert_array_equal(on_rows.class_rows, rows[data.y[rows] == k])
    with pytest.raises(ValueError, match=r"^rows: expected a 1-d array of row indices in \[0, 80\)"):
        ClassPairwiseRisk(data, 0, 4, rows=np.array([0, 80]))
    with pytest.raises(ValueError, match="^class_id: class 3 has no rows in the dataset among rows"):
        ClassPairwiseRisk(data, 3, 4, rows=np.flatnonzero(data.y != 3))
