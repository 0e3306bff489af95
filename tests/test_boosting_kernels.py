"""Gradient/Hessian kernels of the Bregman-prox boosting subproblems (`fastcon._kernels._boosting`)
against the plain NumPy references of tests/reference/boosting.py and against finite differences of
psi(F) = sum_i W_i l_i + (c/2)||F - F^t||^2 + (inv_tau/2)||F - F^k||^2 (Lin & Deng [LD23], §3)."""
import numba
import numpy as np
import pytest
from reference import boosting as ref

from fastcon._kernels._boosting import (
    HESSIAN_FLOOR,
    logistic_grad_hess,
    logistic_losses,
    segment_means,
    segment_sums,
    softmax_grad_hess,
    softmax_losses,
)
from fastcon._kernels._linalg import n_chunks_for

ANCHORS = ["both", "prox", "cbpr", "none"]      # which of F^k (prox) and F^t (cbpr) are given


def _problem(rng, n, J, scale, anchors):
    """Scores of magnitude ``scale`` (with exact ties and +-scale entries), labels, weights of both
    signs, and the requested anchors near F."""
    shape = (n,) if J is None else (n, J)
    F = rng.normal(0.0, 1.0, shape) * scale
    flat = F.reshape(-1)
    flat[rng.choice(flat.size, size=flat.size // 4, replace=False)] = scale * rng.choice([-1.0, 1.0], flat.size // 4)
    if J is not None:
        F[0] = scale          # a row of ties
        F[1, :] = 0.0
        F[1, 0] = scale       # one confident column
    labels = rng.integers(0, 2 if J is None else J, n)
    W = rng.normal(0.0, 2.0, n)
    W[:3] = [-5.0, 0.0, 3.0]
    anchor_k = F + rng.normal(0.0, 1.0, shape) if anchors in ("both", "prox") else None
    anchor_t = F + rng.normal(0.0, 1.0, shape) if anchors in ("both", "cbpr") else None
    return F, labels, W, anchor_k, anchor_t


def _assert_close(actual, want, F, W, anchor_k, inv_tau, anchor_t, c):
    """Within 1e-12 relative, or a few ulp of the largest term of the sum (the weight, the anchor terms):
    g and h add terms of both signs, so their own relative precision is not defined where they cancel."""
    size = np.abs(W if F.ndim == 1 else W[:, None]) + c + inv_tau
    size = size + (0.0 if anchor_t is None else c * np.abs(F - anchor_t))
    size = size + (0.0 if anchor_k is None else inv_tau * np.abs(F - anchor_k))
    bad = np.abs(actual - want) > 1e-12 * np.abs(want) + 1e-15 * size
    assert not bad.any(), (actual[bad][:5], want[bad][:5])


def _run(kernel, F, labels, W, anchor_k, inv_tau, anchor_t, c):
    grad, hess = np.full_like(F, np.nan), np.full_like(F, np.nan)
    kernel(F, labels, W, anchor_k, inv_tau, anchor_t, c, grad, hess)
    return grad, hess


# --------------------------------------------------------------------------- against the reference
@pytest.mark.parametrize("anchors", ANCHORS)
@pytest.mark.parametrize("scale", [3.0, 50.0, 1e4])
def test_logistic_grad_hess_matches_reference(rng, anchors, scale):
    F, y, W, Fk, Ft = _problem(rng, 500, None, scale, anchors)
    grad, hess = _run(logistic_grad_hess, F, y, W, Fk, 0.7, Ft, 0.3)
    want_g, want_h = ref.logistic_grad_hess(F, y, W, Fk, 0.7, Ft, 0.3)
    assert np.isfinite(grad).all() and np.isfinite(hess).all()
    _assert_close(grad, want_g, F, W, Fk, 0.7, Ft, 0.3)
    _assert_close(hess, want_h, F, W, Fk, 0.7, Ft, 0.3)


@pytest.mark.parametrize("anchors", ANCHORS)
@pytest.mark.parametrize("scale", [3.0, 50.0, 1e4])
@pytest.mark.parametrize("J", [2, 3, 4, 5, 6, 7])
def test_softmax_grad_hess_matches_reference(rng, J, anchors, scale):
    F, b, W, Fk, Ft = _problem(rng, 300, J, scale, anchors)
    grad, hess = _run(softmax_grad_hess, F, b, W, Fk, 0.7, Ft, 0.3)
    want_g, want_h = ref.softmax_grad_hess(F, b, W, Fk, 0.7, Ft, 0.3)
    assert np.isfinite(grad).all() and np.isfinite(hess).all()
    _assert_close(grad, want_g, F, W, Fk, 0.7, Ft, 0.3)
    _assert_close(hess, want_h, F, W, Fk, 0.7, Ft, 0.3)


def test_confident_rows_keep_relative_precision():
    """p - y and p(1 - p) of a confidently right sample are e^{-30}-sized, not rounded to 0 or 2^-53."""
    W = np.ones(2)
    e = np.exp(-30.0)
    g, h = _run(logistic_grad_hess, np.array([30.0, -30.0]), np.array([1, 0]), W, None, 0.0, None, 0.0)
    np.testing.assert_allclose(g, [-e / (1 + e), e / (1 + e)], rtol=1e-14)
    np.testing.assert_allclose(h, e / (1 + e) ** 2, rtol=1e-14)
    F = np.array([[30.0, 0.0, 0.0], [0.0, 30.0, 30.0]])
    g, h = _run(softmax_grad_hess, F, np.array([0, 2]), W, None, 0.0, None, 0.0)
    np.testing.assert_allclose(g[0], [-2 * e / (1 + 2 * e), e / (1 + 2 * e), e / (1 + 2 * e)], rtol=1e-14)
    np.testing.assert_allclose(h[0], [2 * e / (1 + 2 * e) ** 2] + 2 * [e * (1 + e) / (1 + 2 * e) ** 2], rtol=1e-14)
    q = 1.0 / (2.0 + e)                                          # tied maxima: p = 1/2 each, less a bit
    np.testing.assert_allclose(g[1], [e * q, q, -(1.0 + e) * q], rtol=1e-14)


@pytest.mark.parametrize("J", [None, 2, 7])
def test_hessian_floor(rng, J):
    """Negative weights without anchors make W p(1-p) < 0: the entries are floored at 1e-16."""
    F, labels, _, _, _ = _problem(rng, 200, J, 2.0, "none")
    W = -np.abs(rng.normal(1.0, 0.1, 200))
    kernel = logistic_grad_hess if J is None else softmax_grad_hess
    _, hess = _run(kernel, F, labels, W, None, 5.0, None, 5.0)     # anchors absent: c, inv_tau ignored
    assert (hess == HESSIAN_FLOOR).all()
    _, hess = _run(kernel, F, labels, W, F, 0.0, None, 0.0)        # W p(1-p) + 0 <= 0
    assert (hess == HESSIAN_FLOOR).all()
    W = np.full(200, -1.0)
    _, hess = _run(kernel, F, labels, W, F, 0.1, F, 0.1)            # 0.2 - p(1-p): floored for p near 1/2
    want = (ref.logistic_grad_hess if J is None else ref.softmax_grad_hess)(F, labels, W, F, 0.1, F, 0.1)[1]
    np.testing.assert_allclose(hess, want, rtol=1e-12)
    assert (hess > 0.01).any() and (hess == HESSIAN_FLOOR).any()


# --------------------------------------------------------------------------- finite differences of psi
def _central(fn, F, step):
    """Central differences of ``fn`` along every entry of ``F`` (``fn`` returns a scalar or an array of F's shape)."""
    out = []
    for k in range(F.size):
        Fp, Fm = F.copy(), F.copy()
        Fp.reshape(-1)[k] += step
        Fm.reshape(-1)[k] -= step
        out.append((fn(Fp) - fn(Fm)) / (2 * step))
    return out


@pytest.mark.parametrize("anchors", ANCHORS)
@pytest.mark.parametrize("J", [None, 2, 3, 5, 7])
def test_gradient_and_hessian_diagonal_by_finite_differences(rng, J, anchors):
    n = 4
    F, labels, W, Fk, Ft = _problem(rng, n, J, 2.0, anchors)
    F += rng.normal(0.0, 0.5, F.shape)                  # no ties: psi is smooth anyway, but vary the rows
    kernel = logistic_grad_hess if J is None else softmax_grad_hess
    inv_tau, c = 0.9, 0.4
    grad, hess = _run(kernel, F, labels, W, Fk, inv_tau, Ft, c)

    fd = np.array(_central(lambda G: ref.psi(G, labels, W, Fk, inv_tau, Ft, c), F, 1e-5)).reshape(F.shape)
    scale = np.abs(grad).max()
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-6 * scale)

    def kernel_grad(G):
        return _run(kernel, G, labels, W, Fk, inv_tau, Ft, c)[0]

    cols = _central(kernel_grad, F, 1e-6)
    fd_diag = np.array([col.reshape(-1)[k] for k, col in enumerate(cols)]).reshape(F.shape)
    unfloored = hess > HESSIAN_FLOOR
    np.testing.assert_allclose(hess[unfloored], fd_diag[unfloored], rtol=1e-6, atol=1e-6 * np.abs(hess).max())
    assert (~unfloored).sum() == 0 or (fd_diag[~unfloored] <= 1e-6).all()


# --------------------------------------------------------------------------- losses
@pytest.mark.parametrize("scale", [3.0, 50.0, 1e4])
def test_logistic_losses_match_reference(rng, scale):
    F, y, _, _, _ = _problem(rng, 500, None, scale, "none")
    out = np.full(500, np.nan)
    logistic_losses(F, y, out)
    np.testing.assert_allclose(out, ref.logistic_losses(F, y), rtol=1e-14, atol=1e-300)
    logistic_losses(np.array([40.0, -1e4, 1e4]), np.array([1, 1, 0]), out[:3])
    np.testing.assert_allclose(out[:3], [np.exp(-40.0), 1e4, 1e4], rtol=1e-15)


@pytest.mark.parametrize("scale", [3.0, 50.0, 1e4])
@pytest.mark.parametrize("J", [2, 3, 4, 5, 6, 7])
def test_softmax_losses_match_reference(rng, J, scale):
    F, b, _, _, _ = _problem(rng, 300, J, scale, "none")
    out = np.full(300, np.nan)
    softmax_losses(F, b, out)
    assert np.isfinite(out).all() and (out >= 0).all()
    np.testing.assert_allclose(out, ref.softmax_losses(F, b), rtol=1e-13, atol=1e-300)


def test_softmax_losses_small_and_tied():
    F = np.array([[40.0, 0.0, 0.0], [1e4, 1e4, -1e4], [-1e4, 0.0, 1e4]])
    out = np.empty(3)
    softmax_losses(F, np.array([0, 1, 0]), out)
    np.testing.assert_allclose(out, [np.log1p(2 * np.exp(-40.0)), np.log(2.0), 2e4], rtol=1e-15)


# --------------------------------------------------------------------------- labels, chunking, threads
# The library hands the kernels int64 labels (fastcon/boosting/_objective.py, problems/_score_problems.py);
# one narrower signed type checks that nothing in the kernels assumes 64 bits (each dtype is a compile).
@pytest.mark.parametrize("dtype", [np.int32])
def test_label_dtypes(rng, dtype):
    F, b, W, Fk, Ft = _problem(rng, 100, 4, 3.0, "both")
    g64, h64 = _run(softmax_grad_hess, F, b, W, Fk, 0.5, Ft, 0.5)
    g, h = _run(softmax_grad_hess, F, b.astype(dtype), W, Fk, 0.5, Ft, 0.5)
    np.testing.assert_array_equal(g, g64)
    np.testing.assert_array_equal(h, h64)
    f, y = F[:, 0].copy(), b % 2
    g64, h64 = _run(logistic_grad_hess, f, y, W, None, 0.5, None, 0.0)
    g, h = _run(logistic_grad_hess, f, y.astype(dtype), W, None, 0.5, None, 0.0)
    np.testing.assert_array_equal(g, g64)
    np.testing.assert_array_equal(h, h64)


def test_parallel_path_same_bits_as_serial_and_any_thread_count(rng):
    """Rows are independent: the chunked parallel pass equals row-block serial passes, at 1 and 2 threads."""
    n, J = 60_000, 7
    assert n_chunks_for(n, n * J, 1) > 1 and n_chunks_for(n, n, 1) == 1 and n_chunks_for(300_000, 300_000, 1) > 1
    F, b, W, Fk, Ft = _problem(rng, n, J, 5.0, "both")
    pieces = [slice(0, 1000), slice(1000, 1001), slice(1001, 4000)]         # serial-path calls
    threads = numba.get_num_threads()
    try:
        results = []
        for t in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(t)
            g, h = _run(softmax_grad_hess, F, b, W, Fk, 0.5, Ft, 0.25)
            loss = np.empty(n)
            softmax_losses(F, b, loss)
            f = np.repeat(F[:, 0], 5)
            y, w5 = np.repeat(b % 2, 5), np.repeat(W, 5)
            gb, hb = _run(logistic_grad_hess, f, y, w5, f[::-1].copy(), 0.5, None, 0.0)
            lb = np.empty(f.size)
            logistic_losses(f, y, lb)
            results.append((g, h, loss, gb, hb, lb))
    finally:
        numba.set_num_threads(threads)
    for other in results[1:]:
        for a, c in zip(results[0], other):
            np.testing.assert_array_equal(a, c)
    g, h, loss = results[0][:3]
    for s in pieces:
        gs, hs = _run(softmax_grad_hess, F[s], b[s], W[s], Fk[s], 0.5, Ft[s], 0.25)
        np.testing.assert_array_equal(gs, g[s])
        np.testing.assert_array_equal(hs, h[s])
        ls = np.empty(s.stop - s.start)
        softmax_losses(F[s], b[s], ls)
        np.testing.assert_array_equal(ls, loss[s])


# --------------------------------------------------------------------------- segment sums and means
def test_segment_sums_and_means(rng):
    values = rng.normal(size=1000)
    codes = rng.integers(0, 5, 1000)
    codes[codes == 3] = 2                                        # code 3 empty
    np.testing.assert_allclose(segment_sums(values, codes, 6), ref.segment_sums(values, codes, 6), rtol=1e-13)
    means = segment_means(values, codes, 6)
    want = ref.segment_means(values, codes, 6)
    assert np.isnan(means[3]) and np.isnan(means[5]) and np.isnan(want[3])
    np.testing.assert_allclose(means, want, rtol=1e-13)
    # sample order: the sum of one segment is the left-to-right float sum
    np.testing.assert_array_equal(segment_sums(values, np.zeros(1000, dtype=np.int32), 1),
                                  [sum(values.tolist(), 0.0)])
    assert segment_sums(values[:0], codes[:0], 2).tolist() == [0.0, 0.0]
