"""Numba kernels of fastcon._kernels against the NumPy/SciPy references in tests/reference.

Tolerance: 1e-12 relative to the magnitude of the summed terms (|A| |w|), which is what round-off
in a different summation order can produce.
"""

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

from conftest import dataset_file
from fastcon._kernels import _linalg as la
from fastcon._kernels import _losses as lo
from reference import kernels as ref

RTOL = 1e-12
LOSS_NAMES = list(lo.LOSS_CODES)


def assert_close(actual, expected, magnitude):
    actual, expected, magnitude = (np.asarray(a, dtype=float) for a in (actual, expected, magnitude))
    bound = RTOL * (np.abs(expected) + magnitude + 1e-300)
    err = np.abs(actual - expected)
    assert np.all(err <= bound), f"max error {err.max():.3g}, bound there {bound[np.argmax(err - bound)]:.3g}"


def csr_args(X, binary):
    X = sp.csr_matrix(X)
    return X.indptr.astype(np.uint64), X.indices.astype(np.uint32), None if binary else X.data


@st.composite
def problems(draw):
    """A random design (CSR with empty rows, binary CSR, or dense), labels, w, rows, chunk count."""
    n = draw(st.integers(1, 40))
    d = draw(st.integers(1, 12))
    kind = draw(st.sampled_from(["csr", "binary", "dense"]))
    density = draw(st.sampled_from([0.0, 0.1, 0.5, 1.0]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    mask = rng.random((n, d)) < density
    if kind != "dense":
        mask[rng.random(n) < 0.2] = False          # empty rows
    vals = np.ones((n, d)) if kind == "binary" else rng.standard_normal((n, d))
    dense = np.where(mask, vals, 0.0)
    X = dense if kind == "dense" else sp.csr_matrix(dense)
    y = rng.choice([-1.0, 1.0], size=n)
    w = rng.standard_normal(d) * draw(st.sampled_from([0.1, 1.0, 3.0]))
    rows = None
    if draw(st.booleans()):
        m = draw(st.integers(1, 2 * n))
        rows = rng.integers(0, n, size=m).astype(draw(st.sampled_from([np.int64, np.uint64])))
    weights = rng.random(n) * 2 if draw(st.booleans()) else None
    n_chunks = draw(st.sampled_from([1, 2, 3, 4]))
    return kind, X, y, w, rows, weights, n_chunks, rng


def design_args(kind, X):
    return csr_args(X, kind == "binary") if kind != "dense" else (X,)


def loss_design(kind, X):
    """The design argument of the loss kernels: a `CSR` record, or the dense array."""
    return la.CSR(*csr_args(X, kind == "binary")) if kind != "dense" else X


def matvec(kind, X, rows, w):
    out = np.empty(X.shape[0] if rows is None else rows.shape[0])
    (la.dense_matvec if kind == "dense" else la.csr_matvec)(*design_args(kind, X), rows, w, out)
    return out


@settings(max_examples=60, deadline=None)
@given(problems())
def test_linalg_matches_reference(problem):
    kind, X, y, w, rows, _, n_chunks, rng = problem
    absX = abs(X)
    m = X.shape[0] if rows is None else rows.shape[0]
    args = design_args(kind, X)

    scores = matvec(kind, X, rows, w)
    assert_close(scores, ref.matvec(X, rows, w), ref.matvec(absX, rows, np.abs(w)))

    x_prev = rng.standard_normal(w.shape[0])
    out, out_prev = np.empty(m), np.empty(m)
    (la.dense_matvec2 if kind == "dense" else la.csr_matvec2)(*args, rows, w, x_prev, out, out_prev)
    assert np.array_equal(out, scores)  # same summation order as the one-point kernel
    assert_close(out_prev, ref.matvec(X, rows, x_prev), ref.matvec(absX, rows, np.abs(x_prev)))

    c = rng.standard_normal(m)
    start = rng.standard_normal(w.shape[0])
    acc = start.copy()
    scratch = np.full((n_chunks, w.shape[0] + 1), np.nan)  # stale scratch must not leak in
    (la.dense_rmatvec if kind == "dense" else la.csr_rmatvec)(*args, rows, c, acc, scratch)
    assert_close(acc, start + ref.rmatvec(X, rows, c), np.abs(start) + ref.rmatvec(absX, rows, np.abs(c)))

    acc = start.copy()
    (la.dense_weighted_column_squares if kind == "dense" else la.csr_weighted_column_squares)(
        *args, rows, c, acc)
    assert_close(acc, start + ref.weighted_column_squares(X, rows, c),
                 np.abs(start) + ref.weighted_column_squares(X, rows, np.abs(c)))


@settings(max_examples=60, deadline=None)
@given(problems(), st.sampled_from(LOSS_NAMES))
def test_losses_match_reference(problem, loss):
    kind, X, y, w, rows, weights, n_chunks, _ = problem
    code = lo.LOSS_CODES[loss]
    m = X.shape[0] if rows is None else rows.shape[0]
    scale = 1.0 / m
    design = loss_design(kind, X)
    value_grad = lo.dense_loss_value_grad if kind == "dense" else lo.csr_loss_value_grad
    value_only = lo.dense_loss_value if kind == "dense" else lo.csr_loss_value
    ws = np.full((n_chunks, w.shape[0] + 1), np.nan)
    g = np.full(w.shape[0], np.nan)

    v = value_grad(code, design, y, weights, scale, rows, w, g, ws)
    v_ref, g_ref = ref.loss_value_grad(loss, X, y, w, weights, scale, rows)
    _, g_mag = ref.loss_value_grad(loss, abs(X), np.ones_like(y), w, weights, scale, rows)
    v_mag = abs(v_ref) + scale * m * 10
    assert_close(v, v_ref, v_mag)
    assert_close(g, g_ref, np.abs(g_mag) + 1e-16 * scale)
    assert value_only(code, design, y, weights, scale, rows, w, ws) == pytest.approx(v, rel=1e-13, abs=1e-300)


@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_loss_functions_of_z(loss):
    """Per-sample (value, derivative) against the reference, including extreme margins."""
    code = lo.LOSS_CODES[loss]
    z = np.concatenate([np.linspace(-40, 40, 801), [-1e300, -745.0, -1.0, 0.0, 1.0, 1e-300, 745.0, 1e300]])
    got = np.array([lo_scalar(code, t) for t in z])
    with np.errstate(over="ignore"):  # the squared hinge of -1e300 is inf in both
        v_ref, d_ref = ref.LOSSES[loss](z)
    finite = np.isfinite(v_ref)
    np.testing.assert_allclose(got[finite, 0], v_ref[finite], rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(got[:, 1], d_ref, rtol=1e-13, atol=1e-300)
    assert np.all(np.isfinite(got[:, 1]))


@numba.njit(cache=True)
def lo_scalar(code, z):
    v, dv = lo.margin_loss(code, z)
    return v, dv


def test_hinge_kink_uses_zero():
    """At z = 1 the hinge subgradient choice is 0 (strict z < 1)."""
    assert lo_scalar(lo.HINGE, 1.0) == (0.0, 0.0)
    assert lo_scalar(lo.SQUARED_HINGE, 1.0) == (0.0, 0.0)


def test_n_chunks_is_a_power_of_two_and_serial_when_small():
    assert la.n_chunks_for(100, 1400, 123) == 1
    for n, work, d in [(32561, 451592, 123), (10**6, 10**8, 10), (50000, 50000 * 300, 300)]:
        c = la.n_chunks_for(n, work, d)
        assert 1 <= c <= la.MAX_CHUNKS and c & (c - 1) == 0
    assert la.n_chunks_for(10**6, 10**7, 10**7) == 1  # scratch would cost more than the pass


# --------------------------------------------------------------------------- real data and threads
@pytest.fixture(scope="module")
def a9a(data_home):
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(str(dataset_file(data_home, "a9a", "a9a.gz")), n_features=123)
    # Five stacked copies (2.3M nonzeros): a9a alone is below the size where passes go parallel,
    # and the thread-count tests must exercise the parallel path.
    return sp.vstack([sp.csr_matrix(X)] * 5, format="csr"), np.tile(y.astype(np.float64), 5)


@pytest.fixture
def thread_counts():
    """Run a callable at 1 and at 2 numba threads; restore the setting afterwards."""
    before = numba.get_num_threads()

    def run(fn):
        results = []
        for t in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(t)
            results.append(fn())
        return results

    yield run
    numba.set_num_threads(before)


@pytest.mark.parametrize("binary", [True, False])
def test_a9a_linalg(a9a, binary, thread_counts):
    X, y = a9a
    assert np.all(X.data == 1.0)
    args = csr_args(X, binary)
    rng = np.random.default_rng(0)
    w = rng.standard_normal(123)
    c = rng.standard_normal(X.shape[0])
    rows = rng.integers(0, X.shape[0], size=200_000)
    scratch = la.chunk_scratch(X.shape[0], X.nnz, 123)
    assert scratch.shape[0] > 1  # the parallel path is what we test here

    def run():
        out = np.empty(X.shape[0])
        la.csr_matvec(*args, None, w, out)
        out_rows = np.empty(rows.size)
        la.csr_matvec(*args, rows, w, out_rows)
        acc = np.zeros(123)
        la.csr_rmatvec(*args, None, c, acc, scratch)
        return out, out_rows, acc

    (s1, r1, g1), (s2, r2, g2) = thread_counts(run)
    assert np.array_equal(s1, s2) and np.array_equal(r1, r2) and np.array_equal(g1, g2)
    assert_close(s1, X @ w, abs(X) @ np.abs(w))
    assert_close(r1, (X @ w)[rows], (abs(X) @ np.abs(w))[rows])
    assert_close(g1, X.T @ c, abs(X).T @ np.abs(c))


def test_wide_rmatvec_reduction_is_thread_independent_and_exact(thread_counts):
    # d spans several column blocks of the parallel chunk reduction (one of them partial)
    d = 3 * la.REDUCE_BLOCK + 5
    rng = np.random.default_rng(4)
    X = sp.random(3000, d, density=40 / d, format="csr", random_state=rng)
    X.sort_indices()
    args = csr_args(X, False)
    c = rng.standard_normal(3000)
    scratch = np.zeros((4, d))

    def run():
        acc = np.full(d, 0.25)
        la.csr_rmatvec(*args, None, c, acc, scratch)
        return acc

    g1, g2 = thread_counts(run)
    assert np.array_equal(g1, g2)
    # the chunks' partial sums added in chunk order, as a plain loop does
    want = np.full(d, 0.25)
    for k in range(4):
        lo, hi = (k * 3000) // 4, ((k + 1) * 3000) // 4
        part = np.zeros(d)
        for i in range(lo, hi):
            for p in range(X.indptr[i], X.indptr[i + 1]):
                part[X.indices[p]] += c[i] * X.data[p]
        want += part
    assert np.array_equal(g1, want)


@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_a9a_losses_thread_independent(a9a, loss, thread_counts):
    X, y = a9a
    design = la.CSR(*csr_args(X, True))
    code = lo.LOSS_CODES[loss]
    w = np.random.default_rng(1).standard_normal(123) * 0.3
    ws = lo.loss_workspace(X.shape[0], X.nnz, 123)
    assert ws.shape[0] > 1

    def run():
        g = np.empty(123)
        v = lo.csr_loss_value_grad(code, design, y, None, 1.0 / X.shape[0], None, w, g, ws)
        return v, g, lo.csr_loss_value(code, design, y, None, 1.0 / X.shape[0], None, w, ws)

    (v1, g1, u1), (v2, g2, u2) = thread_counts(run)
    assert v1 == v2 and u1 == u2 and np.array_equal(g1, g2)
    v_ref, g_ref = ref.loss_value_grad(loss, X, y, w)
    _, g_mag = ref.loss_value_grad(loss, abs(X), np.ones_like(y), w)
    assert_close(v1, v_ref, abs(v_ref))
    assert_close(g1, g_ref, np.abs(g_mag))
    # the data-array path agrees with the binary path to round-off
    g3 = np.empty(123)
    v3 = lo.csr_loss_value_grad(code, la.CSR(*csr_args(X, False)), y, None, 1.0 / X.shape[0], None, w, g3, ws)
    assert v3 == v1 and np.array_equal(g3, g1)


def test_dense_parallel_thread_independent(thread_counts):
    rng = np.random.default_rng(3)
    n = 60_000  # 2.4M entries: enough for the parallel path
    X = rng.standard_normal((n, 40))
    y = rng.choice([-1.0, 1.0], size=n)
    w = rng.standard_normal(40) * 0.2
    ws = lo.loss_workspace(n, n * 40, 40)
    assert ws.shape[0] > 1

    def run():
        g = np.empty(40)
        v = lo.dense_loss_value_grad(lo.LOGISTIC, X, y, None, 1 / n, None, w, g, ws)
        s = np.empty(n)
        la.dense_matvec(X, None, w, s)
        return v, g, s

    (v1, g1, s1), (v2, g2, s2) = thread_counts(run)
    assert v1 == v2 and np.array_equal(g1, g2) and np.array_equal(s1, s2)
    v_ref, g_ref = ref.loss_value_grad("logistic", X, y, w)
    assert_close(g1, g_ref, np.abs(X).T @ np.full(n, 1 / n))
    assert_close(s1, X @ w, np.abs(X) @ np.abs(w))
