"""ROC fairness ([HL23] eq. 11): threshold-sweep kernels, the ROCFairness term and the fairness
metrics, against the exp-per-pair NumPy reference (tests/reference/roc.py)."""
import numba
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

from fastcon import Dataset
from fastcon._kernels import _threshold_sweep as ts
from fastcon.metrics import accuracy, demographic_parity_gap, roc_gap, smoothed_roc_gap
from fastcon.problems._roc_fairness import (
    ROCFairness, roc_fairness, roc_fairness_from_dataset, threshold_grid,
)
from reference import roc as ref

# Means agree with the exp-per-pair formula to a few ulps; values below 1e-300 may be flushed to 0
# (sigma(z) for z < -709, see the kernel's docstring).
TOL = dict(rtol=1e-12, atol=1e-300)


def sweep_means(s, thresholds):
    s, t = np.ascontiguousarray(s, dtype=np.float64), np.ascontiguousarray(thresholds, dtype=np.float64)
    out = np.empty(t.size)
    ts.sigmoid_sweep(s, *ts.grid_blocks(t), out, ts.sweep_workspace(s.size, t.size))
    return out


def make_groups(rng, n_p=40, n_u=55, d=6, sparse=False):
    A_p = rng.standard_normal((n_p, d)) * (rng.random((n_p, d)) < 0.6)
    A_u = rng.standard_normal((n_u, d)) * (rng.random((n_u, d)) < 0.6) + 0.3
    if sparse:
        # Binary CSR, like a9a: shares the compiled data=None kernels with the real-data test.
        A_p, A_u = sp.csr_matrix(A_p != 0, dtype=np.float64), sp.csr_matrix(A_u != 0, dtype=np.float64)
    return A_p, A_u


# --------------------------------------------------------------------------- kernels
@settings(max_examples=80, deadline=None)
@given(n=st.integers(1, 70), m=st.integers(1, 60), scale=st.sampled_from([0.1, 3.0, 40.0, 800.0]),
       theta0=st.floats(-900, 900), delta=st.sampled_from([1e-3, 0.03, 0.7, 11.0, 60.0]),
       seed=st.integers(0, 2**31))
def test_uniform_grid_sweep_matches_reference(n, m, scale, theta0, delta, seed):
    # Scores up to +-800 and grid spans up to 3540 exercise overflow, underflow, several blocks and
    # both the four-sample and the single-sample paths (n not a multiple of 4).
    s = np.random.default_rng(seed).uniform(-scale, scale, n)
    t = theta0 + np.arange(m) * delta
    np.testing.assert_allclose(sweep_means(s, t), ref.sigmoid_means(s, t), **TOL)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 40), m=st.integers(1, 30), scale=st.sampled_from([1.0, 800.0]),
       seed=st.integers(0, 2**31))
def test_any_grid_sweep_matches_reference(n, m, scale, seed):
    # Unordered grids with repeats: blocks anchor at their smallest threshold.
    rng = np.random.default_rng(seed)
    s, t = rng.uniform(-scale, scale, n), rng.uniform(-scale, scale, m)
    t[rng.random(m) < 0.2] = t[0]
    np.testing.assert_allclose(sweep_means(s, t), ref.sigmoid_means(s, t), **TOL)


def test_grid_blocks():
    starts, anchors, tops, factors = ts.grid_blocks(np.linspace(-3, 3, 400))
    assert starts.tolist() == [0, 400] and anchors.tolist() == [-3.0]
    np.testing.assert_allclose(factors, np.exp(np.linspace(0, 6, 400)), rtol=1e-15)
    starts, anchors, tops, factors = ts.grid_blocks(np.array([0.0, 300.0, 500.0, 100.0, -400.0]))
    assert starts.tolist() == [0, 2, 3, 4, 5] and anchors.tolist() == [0.0, 500.0, 100.0, -400.0]
    assert np.all((factors >= 1) & np.isfinite(factors)) and np.all(np.isfinite(tops))


def test_sigmoid_prime_weights_tails():
    z = np.array([-800.0, -40.0, -1.0, 0.0, 1e-9, 2.0, 40.0, 800.0])
    out = np.empty(z.size)
    ts.sigmoid_prime_weights(z, 0.5, 3.0, out)
    np.testing.assert_allclose(out, 3.0 * ref.sigmoid_prime(z - 0.5), rtol=1e-14, atol=0)


def test_large_sweep_chunked_and_thread_count_independent():
    rng = np.random.default_rng(3)
    s = rng.standard_normal(20003) * 2  # 20003 x 400 > 2 chunks of work; odd: a remainder of the four-sample loop
    t = np.linspace(-6.0, 6.0, 400)
    assert ts.sweep_workspace(s.size, t.size).shape[0] > 1
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = sweep_means(s, t)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = sweep_means(s, t)
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(one, two)
    np.testing.assert_allclose(one, ref.sigmoid_means(s, t), **TOL)


@settings(max_examples=60, deadline=None)
@given(n_p=st.integers(1, 30), n_u=st.integers(1, 30), levels=st.sampled_from([3, 1000]),
       seed=st.integers(0, 2**31))
def test_hard_gap_exact_and_grid_vs_brute_force(n_p, n_u, levels, seed):
    rng = np.random.default_rng(seed)
    s_p, s_u = rng.integers(0, levels, n_p) * 0.5, rng.integers(0, levels, n_u) * 0.5  # ties
    gap, theta = ts.hard_roc_gap_exact(s_p, s_u)
    assert gap == pytest.approx(ref.hard_roc_gap(s_p, s_u), abs=1e-15)
    assert abs(np.mean(s_p >= theta) - np.mean(s_u >= theta)) == pytest.approx(gap, abs=1e-15)
    grid = np.linspace(-1, levels / 2 + 1, 17)
    assert ts.hard_roc_gap_grid(s_p, s_u, grid)[0] == pytest.approx(ref.hard_roc_gap(s_p, s_u, grid), abs=1e-15)


# --------------------------------------------------------------------------- the term
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("uniform", [True, False])
def test_term_matches_reference(rng, sparse, uniform):
    A_p, A_u = make_groups(rng, sparse=sparse)
    w = rng.standard_normal(6)
    t = np.linspace(-4, 4, 50) if uniform else rng.uniform(-4, 4, 50)
    term = roc_fairness(A_p, A_u, thresholds=t)
    out = np.empty(6)
    value = term.value_and_subgradient(w, out)
    r_value, r_grad, r_j, r_gap = ref.roc_value_grad(A_p, A_u, w, t)
    assert value == pytest.approx(r_value, rel=1e-12)
    assert term.value(w) == value
    assert term.last_threshold_index == r_j and term.last_gap == pytest.approx(r_gap, rel=1e-12)
    np.testing.assert_allclose(out, r_grad, rtol=1e-11, atol=1e-15)
    np.testing.assert_allclose(term.threshold_gaps(w),
                               ref.sigmoid_means(A_p @ w, t) - ref.sigmoid_means(A_u @ w, t), rtol=1e-11, atol=1e-15)


def test_subgradient_finite_differences(rng):
    A_p, A_u = make_groups(rng, d=5)
    term = roc_fairness(A_p, A_u, thresholds=np.linspace(-3, 3, 11))
    out, h, checked = np.empty(5), 1e-6, 0
    for _ in range(20):
        w = rng.standard_normal(5)
        term.value_and_subgradient(w, out)
        top = np.sort(np.abs(term.threshold_gaps(w)))[::-1]
        # |Delta_theta| moves by at most h * lipschitz_bound (~1e-6) under a step h: with a margin
        # of 1e-4 the argmax cannot switch and R is smooth on the stencil.
        if top[0] - top[1] < 1e-4 or top[0] < 1e-4:
            continue
        fd = np.array([(term.value(w + h * e) - term.value(w - h * e)) / (2 * h) for e in np.eye(5)])
        np.testing.assert_allclose(out, fd, rtol=1e-6, atol=1e-8)
        checked += 1
    assert checked >= 5


def test_argmax_first_index_on_ties():
    # Saturated sigmoids: every gap is exactly 1, so the first threshold must be chosen.
    term = roc_fairness(np.array([[1000.0]]), np.array([[-1000.0]]), thresholds=np.linspace(-10, 10, 9))
    assert term.value(np.array([1.0])) == 1.0 and term.last_threshold_index == 0
    # Repeated threshold in a (non-uniform) grid: equal gaps at indices 1 and 3.
    A_p, A_u = np.array([[0.5], [2.0]]), np.array([[-1.0]])
    term = roc_fairness(A_p, A_u, thresholds=np.array([5.0, 0.0, -5.0, 0.0]))
    gaps = term.threshold_gaps(np.array([1.0]))
    assert gaps[1] == gaps[3] and np.argmax(np.abs(gaps)) == 1 and term.last_threshold_index == 1
    # Identical groups: all gaps 0, index 0, and sign(0) = 0 gives the zero subgradient.
    term = roc_fairness(A_p, A_p, thresholds=np.linspace(-1, 1, 5))
    out = np.full(1, 7.0)
    assert term.value_and_subgradient(np.array([1.0]), out) == 0.0
    assert term.last_threshold_index == 0 and out[0] == 0.0


def test_minibatch_rows_and_counters(rng):
    A_p, A_u = make_groups(rng, n_p=20, n_u=30, d=4)
    term = roc_fairness(A_p, A_u, thresholds=np.linspace(-3, 3, 30))
    assert term.n_samples == 50 and term.n_features == 4 and term.rows_read == 0
    w, out = rng.standard_normal(4), np.empty(4)
    term.value(w)
    term.value_and_subgradient(w, out)
    assert term.rows_read == 100
    rows = np.array([3, 25, 3, 49, 0, 20])  # p rows 3, 3, 0; u rows 5, 29, 0
    value = term.value_and_subgradient_rows(w, rows, out)
    assert term.rows_read == 106
    r_value, r_grad, _, _ = ref.roc_value_grad(A_p[[3, 3, 0]], A_u[[5, 29, 0]], w, term.thresholds)
    assert value == pytest.approx(r_value, rel=1e-12) and term.value_rows(w, rows) == value
    np.testing.assert_allclose(out, r_grad, rtol=1e-11, atol=1e-15)
    assert term.rows_read == 112
    with pytest.raises(ValueError, match="no rows of group u"):
        term.value_rows(w, np.array([1, 2]))
    with pytest.raises(ValueError, match="no rows of group p"):
        term.value_rows(w, np.array([20, 21]))
    with pytest.raises(ValueError, match="out of range"):
        term.value_rows(w, np.array([0, 50]))
    term.reset_counters()
    assert term.rows_read == 0


def test_validation_errors(rng):
    A_p, A_u = make_groups(rng, d=3)
    grid = np.linspace(-1, 1, 5)
    with pytest.raises(ValueError, match="group_p: the group has no rows"):
        roc_fairness(np.zeros((0, 3)), A_u, thresholds=grid)
    with pytest.raises(ValueError, match="group_u: has 4 features"):
        roc_fairness(A_p, np.zeros((2, 4)), thresholds=grid)
    with pytest.raises(ValueError, match="X: non-finite"):
        roc_fairness(np.array([[np.nan, 0, 0]]), A_u, thresholds=grid)
    with pytest.raises(ValueError, match="thresholds: contains NaN"):
        roc_fairness(A_p, A_u, thresholds=np.array([0.0, np.nan]))
    with pytest.raises(ValueError, match="erm_scores: needed"):
        roc_fairness(A_p, A_u, thresholds=400)
    with pytest.raises(ValueError, match="erm_scores: contains NaN"):
        roc_fairness(A_p, A_u, thresholds=10, erm_scores=np.array([0.0, np.nan]))
    with pytest.raises(ValueError, match="thresholds: expected a positive"):
        roc_fairness(A_p, A_u, thresholds=0, erm_scores=np.zeros(3))
    with pytest.raises(ValueError, match=r"^thresholds: 10,000,000,000,000 thresholds .* would need 582\.1 TiB"):
        roc_fairness(A_p, A_u, thresholds=10**13, erm_scores=np.zeros(3))
    with pytest.raises(ValueError, match=r"^n_thresholds: 10,000,000,000,000 thresholds"):
        threshold_grid(np.zeros(3), 10**13)
    with pytest.raises(ValueError, match="not both"):
        roc_fairness(A_p, A_u, thresholds=grid, erm_scores=np.zeros(3))
    term = roc_fairness(A_p, A_u, thresholds=grid)
    with pytest.raises(ValueError, match=r"x: expected shape \(3,\)"):
        term.value(np.zeros(4))
    with pytest.raises(ValueError, match="x: contains NaN"):
        term.value(np.array([0.0, np.nan, 0.0]))
    with pytest.raises(ValueError, match="out: expected"):
        term.value_and_subgradient(np.zeros(3), np.zeros(3, dtype=np.float32))


def test_default_grid_from_dataset_and_constants(rng):
    n = 80
    X = rng.standard_normal((n, 4))
    y = rng.choice([-1.0, 1.0], n)
    groups = np.r_[np.zeros(30, dtype=np.int64), np.ones(50, dtype=np.int64)]
    ds = Dataset(X, y, groups=groups, group_names=["a", "b"])
    w_ref = rng.standard_normal(4)
    term = roc_fairness_from_dataset(ds, w_ref, protected="a")
    s = X @ w_ref
    spread = s.max() - s.min()
    np.testing.assert_allclose(term.thresholds, np.linspace(s.min() - spread / 2, s.max() + spread / 2, 400))
    assert isinstance(term, ROCFairness) and (term.n_p, term.n_u) == (30, 50)
    norms_p, norms_u = np.linalg.norm(X[:30], axis=1), np.linalg.norm(X[30:], axis=1)
    assert term.lipschitz_bound() == pytest.approx(0.25 * (norms_p.mean() + norms_u.mean()))
    assert term.weak_convexity_bound() == pytest.approx(
        (norms_p ** 2).mean() / (6 * 3 ** 0.5) + (norms_u ** 2).mean() / (6 * 3 ** 0.5))
    assert term.rho_heuristic() == pytest.approx(np.linalg.norm(X, axis=1).mean())
    explicit = roc_fairness_from_dataset(ds, w_ref, thresholds=np.linspace(-1, 1, 5), protected=1)
    assert (explicit.n_p, explicit.n_u) == (50, 30) and explicit.thresholds.tolist() == [-1, -0.5, 0, 0.5, 1]
    assert threshold_grid(np.full(3, 2.0), 3).tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="two sensitive groups"):
        roc_fairness_from_dataset(Dataset(X, y), w_ref)


# --------------------------------------------------------------------------- metrics
def test_metrics_vs_brute_force(rng):
    s = np.round(rng.standard_normal(300), 1)  # ties
    g = rng.integers(0, 2, 300)
    s_p, s_u = s[g == 0], s[g == 1]
    assert roc_gap(s, sensitive_features=g) == pytest.approx(ref.hard_roc_gap(s_p, s_u), abs=1e-15)
    grid = np.linspace(-2, 2, 11)
    assert roc_gap(s, sensitive_features=g, thresholds=grid) == pytest.approx(ref.hard_roc_gap(s_p, s_u, grid),
                                                                              abs=1e-15)
    for t in (grid, np.sort(rng.uniform(-2, 2, 11))):
        expected = np.max(np.abs(ref.sigmoid_means(s_p, t) - ref.sigmoid_means(s_u, t)))
        assert smoothed_roc_gap(s, sensitive_features=g, thresholds=t) == pytest.approx(expected, rel=1e-12)
    y = rng.choice([-1, 1], 300)
    assert demographic_parity_gap(y, s, sensitive_features=g, threshold=0.3) == pytest.approx(
        abs(np.mean(s_p >= 0.3) - np.mean(s_u >= 0.3)))
    assert demographic_parity_gap(None, s, sensitive_features=g, threshold=0.0) <= roc_gap(s, sensitive_features=g)
    g3 = rng.integers(0, 3, 300)
    rates = [np.mean(s[g3 == k] >= 0) for k in range(3)]
    assert demographic_parity_gap(y, s, sensitive_features=g3, threshold=0.0) == pytest.approx(max(rates) - min(rates))
    # without a threshold y_pred are predictions (fairlearn's demographic_parity_difference); y_true is ignored
    pred = (s >= 0).astype(int)
    assert demographic_parity_gap(y, pred, sensitive_features=g3) == demographic_parity_gap(
        None, s, sensitive_features=g3, threshold=0.0)
    assert demographic_parity_gap(y, 2 * pred - 1, sensitive_features=g3) == demographic_parity_gap(
        y, pred.astype(bool), sensitive_features=g3)
    assert accuracy(y, s, threshold=0.0) == pytest.approx(np.mean(np.where(s >= 0, 1, -1) == y))
    assert accuracy((y + 1) // 2, s, threshold=0.0) == accuracy(y, s, threshold=0.0)
    assert accuracy(y, np.where(s >= 0, 1, -1)) == accuracy(y, s, threshold=0.0)   # labels: compared with ==
    S = rng.standard_normal((300, 4))
    assert accuracy(S.argmax(axis=1), S) == 1.0


def test_weighted_metrics_are_repeated_rows(rng):
    s = np.round(rng.standard_normal(200), 1)
    g = rng.integers(0, 3, 200)
    y = rng.choice([-1, 1], 200)
    w = rng.integers(0, 4, 200)
    r = np.repeat(np.arange(200), w)
    for threshold in (None, 0.2):
        pred = s if threshold is not None else (s >= 0).astype(int)
        weighted = demographic_parity_gap(y, pred, sensitive_features=g, threshold=threshold, sample_weight=w)
        repeated = demographic_parity_gap(y[r], pred[r], sensitive_features=g[r], threshold=threshold)
        assert weighted == pytest.approx(repeated, abs=1e-14)
    assert accuracy(y, s, threshold=0.2, sample_weight=w) == pytest.approx(accuracy(y[r], s[r], threshold=0.2),
                                                                           rel=1e-14)
    pred = np.where(s >= 0, 1, -1)
    assert accuracy(y, pred, sample_weight=w) == pytest.approx(accuracy(y[r], pred[r]), rel=1e-14)
    with pytest.raises(ValueError, match="^sample_weight: all zero"):
        accuracy(y, pred, sample_weight=np.zeros(200))


def test_metrics_validation():
    s, g = np.array([0.1, 0.2, 0.3]), np.array([0, 1, 1])
    with pytest.raises(ValueError, match="^y_score: contains NaN"):
        roc_gap(np.array([0.1, np.nan, 0.3]), sensitive_features=g)
    with pytest.raises(ValueError, match=r"^sensitive_features: expected shape \(3,\)"):
        roc_gap(s, sensitive_features=np.array([0, 1]))
    with pytest.raises(ValueError, match="^sensitive_features: the ROC gap compares exactly two groups, found 1"):
        roc_gap(s, sensitive_features=np.zeros(3))
    with pytest.raises(ValueError, match="^sensitive_features: the ROC gap compares exactly two groups, found 3"):
        smoothed_roc_gap(s, sensitive_features=np.array([0, 1, 2]), thresholds=np.linspace(0, 1, 3))
    with pytest.raises(TypeError):   # sensitive_features is keyword-only
        roc_gap(s, g)
    with pytest.raises(ValueError, match="^sensitive_features: a gap compares at least two groups, found 1"):
        demographic_parity_gap(None, s, sensitive_features=np.zeros(3), threshold=0.0)
    with pytest.raises(ValueError, match=r"^y_pred: expected 0/1, bool or -1/\+1 values .*; for scores, pass thresh"):
        demographic_parity_gap(None, s, sensitive_features=g)
    with pytest.raises(ValueError, match="^y_pred: contains NaN"):
        demographic_parity_gap(None, np.array([0.1, np.nan, 0.3]), sensitive_features=g, threshold=0.0)
    with pytest.raises(ValueError, match="^threshold: must be finite"):
        demographic_parity_gap(None, s, sensitive_features=g, threshold=np.inf)
    with pytest.raises(ValueError, match="^y_pred: expected a non-empty"):
        accuracy(np.array([]), np.array([]), threshold=0.0)
    with pytest.raises(ValueError, match="^y_pred: expected a non-empty"):
        accuracy(np.array([]), np.array([]))
    with pytest.raises(ValueError, match="^y_true: binary labels"):
        accuracy(np.array([0, 1, 2]), s, threshold=0.0)
    with pytest.raises(ValueError, match=r"^y_true: expected shape \(3,\)"):
        accuracy(np.array([0, 1]), s, threshold=0.0)
    with pytest.raises(ValueError, match=r"^y_true: expected shape \(3,\)"):
        accuracy(np.array([0, 1]), np.array([0, 1, 1]))
    with pytest.raises(ValueError, match="^threshold: applies to 1-D scores"):
        accuracy(np.array([0, 1]), np.ones((2, 2)), threshold=0.0)


# --------------------------------------------------------------------------- real data
def test_a9a_against_reference(data_home):
    from fastcon.datasets import load

    ds = load("a9a", data_home=data_home, subset="train")
    rng = np.random.default_rng(7)
    w = rng.standard_normal(ds.n_features)
    w *= 3.0 / np.abs(ds.X @ w).max()
    term = roc_fairness_from_dataset(ds, w)
    female = ds.groups == 1
    A_p, A_u = ds.X[female], ds.X[~female]
    out = np.empty(ds.n_features)
    value = term.value_and_subgradient(w, out)
    r_value, r_grad, r_j, _ = ref.roc_value_grad(A_p, A_u, w, term.thresholds)
    assert value == pytest.approx(r_value, rel=1e-12) and term.last_threshold_index == r_j
    np.testing.assert_allclose(out, r_grad, rtol=1e-10, atol=1e-14)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        out1 = np.empty_like(out)
        assert term.value_and_subgradient(w, out1) == value
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(out1, out)
    s = ds.X @ w
    assert smoothed_roc_gap(s, sensitive_features=ds.groups, thresholds=term.thresholds) == pytest.approx(
        value, rel=1e-12)
    assert roc_gap(s, sensitive_features=ds.groups) >= roc_gap(s, sensitive_features=ds.groups,
                                                               thresholds=term.thresholds)
