"""Kernel benchmarks on a9a: fastcon numba kernels against the honest SciPy/NumPy reference, same run.

Each group holds one ``fastcon`` and one ``reference`` benchmark (see bench/conftest.py). The
references are those of ``bench/_references.py`` (``expit``/``log_expit``, ``X @ w`` and ``X.T @ c``
through ``scipy.sparse``), checked against fastcon before timing; the loss groups also time the
``tests/reference`` oracle (two ``logaddexp`` and two ``exp`` per sigmoid) for the old ratio.

Roofline (bench/_roofline.py): bytes a pass reads — fastcon's CSR arrays as it holds them
(``indptr`` uint64, ``indices`` uint32, ``data`` float64 except on the binary path, which has no
``data``) plus ``y`` and the vectors — at the read bandwidth measured for a working set of that
size, and the transcendentals (logistic: one ``exp`` and one ``log1p`` per row; sigmoid: one
``exp``), at the measured rates of NumPy's vectorised ``np.exp``/``np.log1p`` (the kernels
evaluate them with vectorised polynomials, `fastcon._kernels._vecmath`). No BLAS is involved on either side (``scipy.sparse``
products are its own C loops); numba runs with its default thread count, recorded.
"""

import numpy as np
import pytest

from _references import hinge_rows_value_grad, margin_loss_value_grad
from _roofline import record_roofline
from _timing import best_time
from fastcon._kernels import _linalg as la
from fastcon._kernels import _losses as lo
from reference.kernels import loss_value_grad as oracle_loss_value_grad

ROUNDS = dict(rounds=200, warmup_rounds=5, iterations=1)
N_EXP = {"hinge": 0, "logistic": 1, "sigmoid": 1}   # per row, in fastcon's loss functions
N_LOG = {"hinge": 0, "logistic": 1, "sigmoid": 0}


@pytest.fixture(scope="module")
def a9a(data_home):
    from fastcon.datasets import load

    ds = load("a9a", data_home=data_home, subset="train")
    X, y = ds.X, ds.y
    rng = np.random.default_rng(2024)
    w = rng.standard_normal(123) * 0.3
    indptr, indices = X.indptr.astype(np.uint64), X.indices.astype(np.uint32)
    n = X.shape[0]
    # bytes fastcon's full pass reads: structure, labels, w and out (d-vectors are noise here)
    structure = indptr.nbytes + indices.nbytes + 8 * n + 2 * 8 * 123
    return dict(X=X, y=y.astype(np.float64), w=w, indptr=indptr, indices=indices,
                bytes_binary=structure, bytes_data=structure + X.data.nbytes,
                rows=rng.integers(0, n, size=181), rng=rng)


def pedantic(benchmark, fn, *args):
    fn(*args)  # compile (or load from cache) before timing
    return benchmark.pedantic(fn, args=args, **ROUNDS)


def record_threads(benchmark):
    import numba

    # Parallel timings depend on the threading layer and on other load on the 2 cores: record both.
    benchmark.extra_info["numba_threads"] = numba.get_num_threads()
    benchmark.extra_info["threading_layer"] = numba.threading_layer()


def record_oracle(benchmark, fn, repeat=30):
    """The ``tests/reference`` oracle's time, for the old ratio (timed runs only)."""
    if benchmark.stats is not None:
        benchmark.extra_info.update(superseded_ms=best_time(fn, repeat) * 1e3,
                                    superseded_label="tests/reference oracle")


def check_loss(loss, X, y, w, rows, value, grad):
    """fastcon's value/gradient against the honest reference on the same rows (before timing)."""
    if rows is None:
        v_ref, g_ref = margin_loss_value_grad(loss, X, y, w)
    else:
        v_ref, g_ref = hinge_rows_value_grad(X, y, rows, w)
    np.testing.assert_allclose(value, v_ref, rtol=1e-12)
    np.testing.assert_allclose(grad, g_ref, rtol=1e-10, atol=1e-14)


# --------------------------------------------------------------------------- fused losses, full pass
@pytest.mark.parametrize("loss", ["hinge", "logistic", "sigmoid"])
@pytest.mark.parametrize("role", ["fastcon", "reference"])
def test_fused_value_grad(benchmark, a9a, loss, role):
    benchmark.group = f"fused {loss} value+subgradient, a9a full pass"
    benchmark.extra_info["role"] = role
    X, y, w = a9a["X"], a9a["y"], a9a["w"]
    n = X.shape[0]
    out = np.empty(123)
    ws = lo.loss_workspace(n, X.nnz, 123)
    args = (lo.LOSS_CODES[loss], la.CSR(a9a["indptr"], a9a["indices"], None), y, None, 1.0 / n, None, w, out, ws)
    check_loss(loss, X, y, w, None, lo.csr_loss_value_grad(*args), out)
    if role == "fastcon":
        benchmark.extra_info["target"] = 2
        pedantic(benchmark, lo.csr_loss_value_grad, *args)
        record_threads(benchmark)
        # The logistic and sigmoid passes evaluate exp/log1p with vectorised polynomials (_vecmath).
        record_roofline(benchmark, a9a["bytes_binary"], n_exp=N_EXP[loss] * n, n_log=N_LOG[loss] * n,
                        exp_kind="vector")
    else:
        pedantic(benchmark, margin_loss_value_grad, loss, X, y, w)
        if loss != "hinge":  # the hinge reference was already the honest one: no old ratio to show
            record_oracle(benchmark, lambda: oracle_loss_value_grad(loss, X, y, w))


@pytest.mark.parametrize("role", ["fastcon", "reference"])
def test_fused_hinge_value_grad_data_path(benchmark, a9a, role):
    """The same pass without the binary shortcut (reads ``data``), as on real-valued features."""
    benchmark.group = "fused hinge value+subgradient, a9a full pass, data-array path"
    benchmark.extra_info["role"] = role
    X, y, w = a9a["X"], a9a["y"], a9a["w"]
    out = np.empty(123)
    ws = lo.loss_workspace(X.shape[0], X.nnz, 123)
    args = (lo.HINGE, la.CSR(a9a["indptr"], a9a["indices"], X.data), y, None, 1.0 / X.shape[0], None, w, out, ws)
    check_loss("hinge", X, y, w, None, lo.csr_loss_value_grad(*args), out)
    if role == "fastcon":
        benchmark.extra_info["target"] = 2
        pedantic(benchmark, lo.csr_loss_value_grad, *args)
        record_threads(benchmark)
        record_roofline(benchmark, a9a["bytes_data"])
    else:
        pedantic(benchmark, margin_loss_value_grad, "hinge", X, y, w)


# --------------------------------------------------------------------------- mat-vecs
@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("role", ["fastcon", "reference"])
def test_csr_matvec(benchmark, a9a, binary, role):
    benchmark.group = f"CSR mat-vec X @ w, a9a{' (binary path)' if binary else ''}"
    benchmark.extra_info["role"] = role
    X, w = a9a["X"], a9a["w"]
    out = np.empty(X.shape[0])
    args = (a9a["indptr"], a9a["indices"], None if binary else X.data, None, w, out)
    la.csr_matvec(*args)
    np.testing.assert_allclose(out, X @ w, rtol=1e-12, atol=1e-14)
    if role == "fastcon":
        benchmark.extra_info["target"] = 1
        pedantic(benchmark, la.csr_matvec, *args)
        record_threads(benchmark)
        record_roofline(benchmark, a9a["bytes_binary" if binary else "bytes_data"])
    else:
        pedantic(benchmark, X.__matmul__, w)


@pytest.mark.parametrize("role", ["fastcon", "reference"])
def test_csr_rmatvec(benchmark, a9a, role):
    benchmark.group = "CSR transposed mat-vec X.T @ c, a9a"
    benchmark.extra_info["role"] = role
    X = a9a["X"]
    c = a9a["rng"].standard_normal(X.shape[0])
    XT = X.T  # a CSC view, no copy: what `X.T @ c` builds on every call anyway
    out = np.zeros(123)
    scratch = la.chunk_scratch(X.shape[0], X.nnz, 123)
    args = (a9a["indptr"], a9a["indices"], X.data, None, c, out, scratch)
    la.csr_rmatvec(*args)
    np.testing.assert_allclose(out, XT @ c, rtol=1e-10, atol=1e-12)
    if role == "fastcon":
        pedantic(benchmark, la.csr_rmatvec, *args)
        record_threads(benchmark)
        record_roofline(benchmark, a9a["bytes_data"])
    else:
        pedantic(benchmark, XT.__matmul__, c)


@pytest.mark.parametrize("role", ["fastcon", "reference"])
def test_csr_matvec2(benchmark, a9a, role):
    """Scores at two points. Reference: two ``X @ w`` calls (measured faster here than one product
    with the two points side by side, ``X @ np.column_stack((w, w_prev))``)."""
    benchmark.group = "CSR two-point scores (x, x_prev), a9a"
    benchmark.extra_info["role"] = role
    X, w = a9a["X"], a9a["w"]
    w_prev = w + 0.01
    out, out_prev = np.empty(X.shape[0]), np.empty(X.shape[0])
    args = (a9a["indptr"], a9a["indices"], X.data, None, w, w_prev, out, out_prev)
    la.csr_matvec2(*args)
    np.testing.assert_allclose(out, X @ w, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(out_prev, X @ w_prev, rtol=1e-12, atol=1e-14)
    if role == "fastcon":
        pedantic(benchmark, la.csr_matvec2, *args)
        record_threads(benchmark)
        record_roofline(benchmark, a9a["bytes_data"] + 8 * X.shape[0])
    else:
        pedantic(benchmark, lambda: (X @ w, X @ w_prev))


# --------------------------------------------------------------------------- minibatch
@pytest.mark.parametrize("role", ["fastcon", "reference"])
def test_fused_hinge_rows(benchmark, a9a, role):
    """181 random rows. Reference: one CSR row gather ``X[rows]`` and the same formulas. The rows'
    bytes are ~10 kB, so this pass is bound by call overhead and latency, not by the roofline."""
    benchmark.group = "fused hinge value+subgradient, 181 random rows of a9a"
    benchmark.extra_info["role"] = role
    X, y, w, rows = a9a["X"], a9a["y"], a9a["w"], a9a["rows"]
    out = np.empty(123)
    ws = lo.loss_workspace(rows.size, rows.size * 14, 123)
    # the record's fields as a plain tuple, as fastcon.problems.MarginRisk passes them per minibatch
    design = tuple(la.CSR(a9a["indptr"], a9a["indices"], None))
    args = (lo.HINGE, design, y, None, 1.0 / rows.size, rows, w, out, ws)
    check_loss("hinge", X, y, w, rows, lo.csr_loss_value_grad(*args), out)
    if role == "fastcon":
        pedantic(benchmark, lo.csr_loss_value_grad, *args)
        nnz = int(np.sum(np.diff(X.indptr)[rows]))
        record_roofline(benchmark, 4 * nnz + 32 * rows.size + 2 * 8 * 123)
    else:
        pedantic(benchmark, hinge_rows_value_grad, X, y, rows, w)
