"""Kernel benchmarks on a9a: fastcon numba kernels against the SciPy/NumPy reference, same run.

Each group holds one ``fastcon`` and one ``reference`` benchmark (see bench/conftest.py). Full-pass
kernels also report their effective bandwidth over the standard CSR bytes of a9a (float64 data,
int32 indices and indptr: ~5.5 MB) and how many times slower they are than reading those bytes
once at ARCHITECTURE.md's ~27.5 GB/s (the physical limit of a pass, ~0.2 ms).
"""

import numpy as np
import pytest

from fastcon._kernels import _linalg as la
from fastcon._kernels import _losses as lo

LIMIT_GBPS = 27.5
ROUNDS = dict(rounds=200, warmup_rounds=5, iterations=1)


@pytest.fixture(scope="module")
def a9a(data_home):
    from fastcon.datasets import load

    ds = load("a9a", data_home=data_home, subset="train")
    X, y = ds.X, ds.y
    rng = np.random.default_rng(2024)
    w = rng.standard_normal(123) * 0.3
    indptr, indices = X.indptr.astype(np.uint64), X.indices.astype(np.uint32)
    csr_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    return dict(X=X, y=y.astype(np.float64), w=w, indptr=indptr, indices=indices, csr_bytes=csr_bytes,
                rows=rng.integers(0, X.shape[0], size=181), rng=rng)


def pedantic(benchmark, fn, *args):
    fn(*args)  # compile (or load from cache) before timing
    return benchmark.pedantic(fn, args=args, **ROUNDS)


def report_bandwidth(benchmark, nbytes):
    import numba

    # Parallel timings depend on the threading layer and on other load on the 2 cores: record both.
    benchmark.extra_info["numba_threads"] = numba.get_num_threads()
    benchmark.extra_info["threading_layer"] = numba.threading_layer()
    if benchmark.stats is None:  # --benchmark-disable: the function ran once, untimed
        return
    t = benchmark.stats.stats.min
    benchmark.extra_info["GBps_csr_bytes"] = nbytes / t / 1e9
    benchmark.extra_info["x_slower_than_read_limit"] = t / (nbytes / (LIMIT_GBPS * 1e9))


# --------------------------------------------------------------------------- fused losses, full pass
def reference_value_grad(loss, X, y, w):
    z = y * (X @ w)
    if loss == "hinge":
        mask = z < 1
        return np.maximum(0.0, 1.0 - z).mean(), X.T @ (-y * mask / z.size)
    if loss == "logistic":
        return np.logaddexp(0.0, -z).mean(), X.T @ (-y * np.exp(-np.logaddexp(0.0, z)) / z.size)
    p = np.exp(-np.logaddexp(0.0, z))
    q = np.exp(-np.logaddexp(0.0, -z))
    return p.mean(), X.T @ (-y * p * q / z.size)


@pytest.mark.parametrize("loss", ["hinge", "logistic", "sigmoid"])
@pytest.mark.parametrize("role", ["fastcon", "reference"])
def test_fused_value_grad(benchmark, a9a, loss, role):
    benchmark.group = f"fused {loss} value+subgradient, a9a full pass"
    benchmark.extra_info["role"] = role
    X, y, w = a9a["X"], a9a["y"], a9a["w"]
    n = X.shape[0]
    if role == "fastcon":
        if loss == "hinge":
            benchmark.extra_info["target"] = 2
        out = np.empty(123)
        ws = lo.loss_workspace(n, X.nnz, 123)
        pedantic(benchmark, lo.csr_loss_value_grad, lo.LOSS_CODES[loss], a9a["indptr"], a9a["indices"],
                 None, y, None, 1.0 / n, None, w, out, ws)
        report_bandwidth(benchmark, a9a["csr_bytes"])
    else:
        pedantic(benchmark, reference_value_grad, loss, X, y, w)


@pytest.mark.parametrize("role", ["fastcon", "reference"])
def test_fused_hinge_value_grad_data_path(benchmark, a9a, role):
    """The same pass without the binary shortcut (reads ``data``), as on real-valued features."""
    benchmark.group = "fused hinge value+subgradient, a9a full pass, data-array path"
    benchmark.extra_info["role"] = role
    X, y, w = a9a["X"], a9a["y"], a9a["w"]
    if role == "fastcon":
        benchmark.extra_info["target"] = 2
        out = np.empty(123)
        ws = lo.loss_workspace(X.shape[0], X.nnz, 123)
        pedantic(benchmark, lo.csr_loss_value_grad, lo.HINGE, a9a["indptr"], a9a["indices"], X.data,
                 y, None, 1.0 / X.shape[0], None, w, out, ws)
        report_bandwidth(benchmark, a9a["csr_bytes"])
    else:
        pedantic(benchmark, reference_value_grad, "hinge", X, y, w)


# --------------------------------------------------------------------------- mat-vecs
@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("role", ["fastcon", "reference"])
def test_csr_matvec(benchmark, a9a, binary, role):
    benchmark.group = f"CSR mat-vec X @ w, a9a{' (binary path)' if binary else ''}"
    benchmark.extra_info["role"] = role
    X, w = a9a["X"], a9a["w"]
    if role == "fastcon":
        benchmark.extra_info["target"] = 1
        out = np.empty(X.shape[0])
        pedantic(benchmark, la.csr_matvec, a9a["indptr"], a9a["indices"], None if binary else X.data,
                 None, w, out)
        report_bandwidth(benchmark, a9a["csr_bytes"])
    else:
        pedantic(benchmark, X.__matmul__, w)


@pytest.mark.parametrize("role", ["fastcon", "reference"])
def test_csr_rmatvec(benchmark, a9a, role):
    benchmark.group = "CSR transposed mat-vec X.T @ c, a9a"
    benchmark.extra_info["role"] = role
    X = a9a["X"]
    c = a9a["rng"].standard_normal(X.shape[0])
    if role == "fastcon":
        out = np.zeros(123)
        scratch = la.chunk_scratch(X.shape[0], X.nnz, 123)
        pedantic(benchmark, la.csr_rmatvec, a9a["indptr"], a9a["indices"], X.data, None, c, out, scratch)
        report_bandwidth(benchmark, a9a["csr_bytes"])
    else:
        XT = X.T
        pedantic(benchmark, XT.__matmul__, c)


@pytest.mark.parametrize("role", ["fastcon", "reference"])
def test_csr_matvec2(benchmark, a9a, role):
    benchmark.group = "CSR two-point scores (x, x_prev), a9a"
    benchmark.extra_info["role"] = role
    X, w = a9a["X"], a9a["w"]
    w_prev = w + 0.01
    if role == "fastcon":
        out, out_prev = np.empty(X.shape[0]), np.empty(X.shape[0])
        pedantic(benchmark, la.csr_matvec2, a9a["indptr"], a9a["indices"], X.data, None, w, w_prev,
                 out, out_prev)
        report_bandwidth(benchmark, a9a["csr_bytes"])
    else:
        pedantic(benchmark, lambda: (X @ w, X @ w_prev))


# --------------------------------------------------------------------------- minibatch
def reference_hinge_rows(X, y, rows, w):
    A = X[rows]
    yb = y[rows]
    z = yb * (A @ w)
    mask = z < 1
    return np.maximum(0.0, 1.0 - z).mean(), A.T @ (-yb * mask / rows.size)


@pytest.mark.parametrize("role", ["fastcon", "reference"])
def test_fused_hinge_rows(benchmark, a9a, role):
    benchmark.group = "fused hinge value+subgradient, 181 random rows of a9a"
    benchmark.extra_info["role"] = role
    X, y, w, rows = a9a["X"], a9a["y"], a9a["w"], a9a["rows"]
    if role == "fastcon":
        out = np.empty(123)
        ws = lo.loss_workspace(rows.size, rows.size * 14, 123)
        pedantic(benchmark, lo.csr_loss_value_grad, lo.HINGE, a9a["indptr"], a9a["indices"], None, y,
                 None, 1.0 / rows.size, rows, w, out, ws)
    else:
        pedantic(benchmark, reference_hinge_rows, X, y, rows, w)
