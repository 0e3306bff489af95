"""Input scan (`fastcon._kernels._checks`) and huge-page scratch (`fastcon._kernels._memory`)."""
import mmap
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from fastcon._kernels._checks import all_finite
from fastcon._kernels._memory import HUGE_PAGE, MIN_HUGE_BYTES, huge_page_zeros
from fastcon._kernels._losses import SIGMOID
from fastcon._kernels._linalg import CSR
from fastcon._kernels._multiclass_np import (
    PairwiseTerm, csr_full_pairwise_value_grad, csr_pairwise_value_grad, pairwise_workspace,
)
from fastcon.problems._validation import check_x

SPECIAL = [np.nan, np.inf, -np.inf, -np.nan, 0.0, -0.0, 5e-324, -5e-324, np.finfo(float).max, -np.finfo(float).max,
           np.finfo(float).tiny, 1.0]


# ------------------------------------------------------------------------------------ all_finite
@settings(max_examples=300, deadline=None)
@given(arrays(np.float64, st.integers(0, 70), elements=st.sampled_from(SPECIAL) | st.floats(allow_nan=True,
                                                                                             allow_infinity=True)))
def test_all_finite_matches_numpy(x):
    assert all_finite(x) == bool(np.all(np.isfinite(x)))


@pytest.mark.parametrize("n", [1, 3, 4, 7, 8, 9, 15, 16, 17, 31, 33, 200_000])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_all_finite_finds_one_bad_entry_at_every_position_class(n, bad):
    """Lengths around the vector widths; the bad entry first, last and in the middle."""
    x = np.random.default_rng(n).standard_normal(n) * 1e300
    assert all_finite(x)
    for pos in {0, n // 2, n - 1}:
        y = x.copy()
        y[pos] = bad
        assert not all_finite(y)


def test_all_finite_nan_payloads_and_read_only_input():
    x = np.ones(10)
    bits = x.view(np.uint64)
    bits[3] = np.uint64(0x7FF0000000000001)  # signalling NaN with a payload
    assert not all_finite(x)
    y = np.arange(12.0)
    y.flags.writeable = False
    assert all_finite(y)
    assert all_finite(np.empty(0))


def test_check_x_uses_the_scan_with_its_error_wording():
    x = np.zeros(6)
    assert check_x(x, 6) is x
    x[4] = np.inf
    with pytest.raises(ValueError, match="^x: contains NaN or inf$"):
        check_x(x, 6)
    x[:] = 0.0
    x[1] = np.nan
    assert check_x(x, 6, finite_from=2) is x  # the leading block is not scanned
    np.testing.assert_array_equal(check_x(np.arange(6, dtype=np.float32), 6), np.arange(6.0))  # converted first
    with pytest.raises(ValueError, match="field: contains"):
        check_x(np.array([0.0, 1.0, -np.inf])[::1], 3, field="field")


# ------------------------------------------------------------------------------ huge_page_zeros
@pytest.mark.parametrize("shape", [(7,), (3, 5), (1000, 20), (10_000, 20), (300, 300, 3)])
def test_huge_page_zeros_is_a_zeroed_writeable_c_array(shape):
    a = huge_page_zeros(shape)
    assert a.shape == shape and a.dtype == np.float64
    assert a.flags.c_contiguous and a.flags.writeable and a.flags.aligned
    assert not np.any(a)
    a[...] = 2.5
    assert np.all(a == 2.5)


def test_huge_page_zeros_aligns_large_arrays_to_a_huge_page():
    a = huge_page_zeros((10_000, 20))
    assert a.nbytes >= MIN_HUGE_BYTES
    if hasattr(mmap, "MADV_HUGEPAGE"):
        assert a.ctypes.data % HUGE_PAGE == 0
    small = huge_page_zeros(100)
    assert small.nbytes < MIN_HUGE_BYTES and small.base is None  # an ordinary allocation


def test_huge_page_zeros_memory_outlives_the_helper_and_pickles_as_a_plain_array():
    a = huge_page_zeros((700, 400), dtype=np.float32)
    assert a.nbytes >= MIN_HUGE_BYTES
    a[17, 3] = 1.25
    if hasattr(mmap, "MADV_HUGEPAGE"):
        assert a.base is not None  # the view keeps its mapping alive
    b = pickle.loads(pickle.dumps(a))
    assert b.dtype == np.float32 and b.shape == (700, 400) and b[17, 3] == 1.25 and b.sum() == 1.25
    a[...] = 0.0
    assert b[17, 3] == 1.25  # an independent copy
    assert huge_page_zeros(5, dtype=np.int64).dtype == np.int64


def test_mnpc_workspace_on_huge_pages_gives_the_same_bits_as_plain_arrays():
    rng = np.random.default_rng(11)
    C, n, d = 6, 700, 3000
    A = sp.random(n, d, density=0.01, format="csr", random_state=rng)
    A.sort_indices()
    Cc = A.tocsc()
    Cc.sort_indices()
    csr = CSR(A.indptr.astype(np.uint64), A.indices.astype(np.uint32), A.data)
    csc = CSR(Cc.indptr.astype(np.uint64), Cc.indices.astype(np.uint32), Cc.data)
    term = PairwiseTerm(SIGMOID, 2, None, False, False)
    W = rng.standard_normal((C, d)) * 0.05
    huge = pairwise_workspace(C, d, n)
    plain = tuple(np.zeros_like(a) for a in huge)
    assert huge[0].nbytes < MIN_HUGE_BYTES or huge[0].ctypes.data % HUGE_PAGE == 0 or not hasattr(mmap, "MADV_HUGEPAGE")
    out = []
    for w_t, grad_t, S, P, acc in (huge, plain):
        G, G2 = np.zeros((C, d)), np.zeros((C, d))
        v = csr_full_pairwise_value_grad(term, csr, csc, float(n), W, G, w_t, S, P, acc)
        rows = np.arange(0, n, 3, dtype=np.int64)
        v2 = csr_pairwise_value_grad(term, csr, float(rows.size), rows, W, G2, w_t, grad_t, S[:P.shape[1]], P[0])
        out.append((v, G, v2, G2))
    assert out[0][0] == out[1][0] and out[0][2] == out[1][2]
    np.testing.assert_array_equal(out[0][1], out[1][1])
    np.testing.assert_array_equal(out[0][3], out[1][3])
