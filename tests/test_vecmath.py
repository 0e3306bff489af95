"""Branch-free exp/log1p of fastcon._kernels._vecmath and the block passes of the smooth losses.

Accuracy against the extended-precision oracles of tests/reference/vecmath.py, in ulp of the exact
value (stated bounds: exp_minus 1.2, log1p_unit 1, logistic 2.5, sigmoid 3 for the value and 5 for
the derivative). The block passes of `_losses` must give the bits of the row-by-row loop they
replace, since both call the same scalar loss functions.
"""
import numba
import numpy as np
import pytest
import scipy.sparse as sp

from fastcon._kernels import _linalg as la
from fastcon._kernels import _losses as lo
from fastcon._kernels._vecmath import exp_minus, log1p_unit
from reference import vecmath as ref

TINY = np.finfo(np.float64).tiny
SMOOTH = ["logistic", "sigmoid"]
#: Stated bounds in ulp (value, derivative); measured maxima 1.69/2.32 and 2.64/4.88.
LOSS_ULP = {"logistic": (2.5, 2.5), "sigmoid": (3.0, 5.0)}


@numba.njit
def _exp_minus_loop(x, out):
    for j in range(x.shape[0]):
        out[j] = exp_minus(x[j])


@numba.njit
def _log1p_loop(e, out):
    for j in range(e.shape[0]):
        out[j] = log1p_unit(e[j])


@numba.njit
def _loss_loop(code, z, v, dv):
    for j in range(z.shape[0]):
        v[j], dv[j] = lo.margin_loss(code, z[j])


def _apply(loop, x):
    out = np.empty_like(x)
    loop(x, out)
    return out


def test_exp_minus_within_1_2_ulp_over_its_range():
    rng = np.random.default_rng(11)
    x = np.concatenate([np.linspace(0.0, 750.0, 300_001), rng.random(200_000) * 2.0, rng.random(200_000) * 745.2,
                        10.0 ** rng.uniform(-320, 2.8, 100_000),
                        [0.0, 5e-324, 1e-300, 1e-17, 0.5 * np.log(2), 700.0, 708.39, 709.79, 744.44, 745.0, 745.13,
                         745.14, 746.0, 1e300, np.inf]])
    got = _apply(_exp_minus_loop, x)
    exact = ref.exp_minus(x)
    err = ref.ulp_error(got, exact)
    normal = exact >= TINY
    assert err[normal].max() <= 1.2
    assert err[~normal].max() <= 1.0        # subnormal results: one unit of the last place at most
    assert np.all(got >= 0.0)


def test_exp_minus_special_values():
    x = np.array([0.0, -0.0, 5e-324, 1e-300, 745.0, 745.14, 1e300, np.inf, np.nan])
    got = _apply(_exp_minus_loop, x)
    assert np.array_equal(got[:4], [1.0, 1.0, 1.0, 1.0])
    assert got[4] == 5e-324 and np.array_equal(got[5:8], [0.0, 0.0, 0.0])  # e^-745.14 < 2^-1075: 0
    assert np.isnan(got[8])


def test_log1p_unit_within_1_ulp_over_its_range():
    rng = np.random.default_rng(12)
    half, one = np.nextafter(0.5, 0.0), np.nextafter(1.0, 0.0)
    e = np.concatenate([np.linspace(0.0, 1.0, 500_001), rng.random(500_000), 10.0 ** rng.uniform(-323, 0, 200_000),
                        np.exp(-rng.random(200_000) * 40.0),
                        [0.0, 5e-324, 1e-300, 1e-17, 2.0 ** -53, 2.0 ** -52, np.sqrt(2.0) - 1.0, half, 0.5, one, 1.0]])
    got = _apply(_log1p_loop, e)
    assert ref.ulp_error(got, ref.log1p(e)).max() <= 1.0
    tiny = e < 2.0 ** -60
    assert np.array_equal(got[tiny], e[tiny])     # log(1 + e) = e - e^2/2 rounds to e
    assert got[e == 1.0][0] == np.log(2.0) and got[e == 0.0][0] == 0.0
    assert np.isnan(_apply(_log1p_loop, np.array([np.nan]))[0])


@pytest.mark.parametrize("loss", SMOOTH)
def test_smooth_losses_within_stated_ulp(loss):
    """phi and phi' of the scalar losses (the ones every pass calls) against the oracle, extremes included."""
    rng = np.random.default_rng(13)
    z = np.concatenate([np.linspace(-800.0, 800.0, 800_001), rng.standard_normal(300_000) * 5.0,
                        rng.standard_normal(100_000) * 1e-3,
                        [0.0, -0.0, 1e-300, -1e-300, 700.0, -700.0, 745.0, -745.0, 746.0, -746.0, 1e300, -1e300,
                         np.inf, -np.inf]])
    v, dv = np.empty_like(z), np.empty_like(z)
    _loss_loop(lo.LOSS_CODES[loss], z, v, dv)
    v_ref, dv_ref = getattr(ref, loss)(z)
    bound_v, bound_dv = LOSS_ULP[loss]
    assert ref.ulp_error(v, v_ref).max() <= bound_v
    assert ref.ulp_error(dv, dv_ref).max() <= bound_dv
    assert np.all(dv <= 0.0) and np.all(v >= 0.0)
    at = {t: k for k, t in enumerate(z[-14:].tolist()) if t != -0.0 or k == 1}
    v_end, dv_end = v[-14:], dv[-14:]
    if loss == "logistic":
        assert v_end[at[0.0]] == np.log(2.0) and dv_end[at[0.0]] == -0.5
        assert v_end[at[-np.inf]] == np.inf and dv_end[at[-np.inf]] == -1.0
        assert v_end[at[np.inf]] == 0.0 and dv_end[at[np.inf]] == 0.0
        assert v_end[at[-1e300]] == 1e300
    else:
        assert v_end[at[0.0]] == 0.5 and dv_end[at[0.0]] == -0.25
        assert v_end[at[-np.inf]] == 1.0 and v_end[at[np.inf]] == 0.0
        assert dv_end[at[np.inf]] == 0.0 and dv_end[at[-np.inf]] == 0.0
    nan_v, nan_dv = np.empty(1), np.empty(1)
    _loss_loop(lo.LOSS_CODES[loss], np.array([np.nan]), nan_v, nan_dv)
    assert np.isnan(nan_v[0]) and np.isnan(nan_dv[0])   # as the libm formulas before


# --------------------------------------------------------------------------- block passes
def _design(kind, rng, n, d):
    dense = np.where(rng.random((n, d)) < 0.3, rng.standard_normal((n, d)), 0.0)
    dense[rng.random(n) < 0.1] = 0.0                   # empty rows
    if kind == "binary":
        dense = (dense != 0.0).astype(np.float64)
    if kind == "dense":
        return (dense,)
    X = sp.csr_matrix(dense)
    return (la.CSR(X.indptr.astype(np.uint64), X.indices.astype(np.uint32), None if kind == "binary" else X.data),)


@pytest.mark.parametrize("kind", ["csr", "binary", "dense"])
@pytest.mark.parametrize("loss", SMOOTH)
@pytest.mark.parametrize("subset", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_block_pass_matches_row_by_row_bits(kind, loss, subset, weighted):
    """The block pass (margins, vectorised losses, accumulation) returns the row-by-row loop's bits."""
    rng = np.random.default_rng(14)
    n, d = 300, 9                                       # 300 rows: two full blocks of 128 and a partial one
    design = _design(kind, rng, n, d)
    y = rng.choice([-1.0, 1.0], size=n)
    w = rng.standard_normal(d) * 2.0
    weights = rng.random(n) * 2.0 if weighted else None
    rows = rng.integers(0, n, size=700).astype(np.uint64) if subset else None
    m = n if rows is None else rows.size
    code, scale = lo.LOSS_CODES[loss], 1.0 / m
    prefix = "_dense" if kind == "dense" else "_csr"
    blocks_vg, rows_vg = getattr(lo, prefix + "_blocks_value_grad"), getattr(lo, prefix + "_rows_value_grad")
    blocks_v, rows_v = getattr(lo, prefix + "_blocks_value"), getattr(lo, prefix + "_rows_value")
    for lo_, hi_ in [(0, m), (5, m - 3), (128, 256), (7, 7)]:
        span = (np.uint64(lo_), np.uint64(hi_))
        g_block, g_rows = np.zeros(d), np.zeros(d)
        v_block = blocks_vg(code, *design, y, weights, scale, rows, w, g_block, *span)
        v_rows = rows_vg(code, *design, y, weights, scale, rows, w, g_rows, *span)
        assert v_block == v_rows and np.array_equal(g_block, g_rows)
        assert blocks_v(code, *design, y, weights, rows, w, *span) == v_block
        assert rows_v(code, *design, y, weights, rows, w, *span) == v_rows


@pytest.mark.parametrize("kind", ["csr", "dense"])
@pytest.mark.parametrize("loss", SMOOTH)
@pytest.mark.parametrize("n_chunks", [1, 3])
def test_full_pass_equals_subset_of_all_rows(kind, loss, n_chunks):
    """rows=None and rows=arange(n) take the same blocks: same bits, value-only kernel included."""
    rng = np.random.default_rng(15)
    n, d = 1000, 6
    design = _design(kind, rng, n, d)
    y = rng.choice([-1.0, 1.0], size=n)
    w = rng.standard_normal(d)
    code = lo.LOSS_CODES[loss]
    value_grad = lo.dense_loss_value_grad if kind == "dense" else lo.csr_loss_value_grad
    value = lo.dense_loss_value if kind == "dense" else lo.csr_loss_value
    ws = np.full((n_chunks, d + 1), np.nan)
    g_all, g_sub = np.empty(d), np.empty(d)
    v_all = value_grad(code, *design, y, None, 1.0 / n, None, w, g_all, ws)
    v_sub = value_grad(code, *design, y, None, 1.0 / n, np.arange(n), w, g_sub, ws)
    assert v_all == v_sub and np.array_equal(g_all, g_sub)
    assert value(code, *design, y, None, 1.0 / n, None, w, ws) == v_all
