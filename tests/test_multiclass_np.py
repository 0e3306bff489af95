"""Multi-class Neyman-Pearson (paper 001, eq. 11): the fused class-loss kernels against the NumPy reference,
the `ClassPairwiseRisk` term (gradients, invariances, values at W = 0, counters), the problem constructors
`multiclass_neyman_pearson` and `neyman_pearson`, and pendigits."""
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

from fastcon import Dataset
from fastcon._kernels import _multiclass_np as kern
from fastcon._kernels._losses import LOSS_CODES
from fastcon.datasets import load, make_multiclass, make_neyman_pearson
from fastcon.problems import (
    Ball, ClassPairwiseRisk, ConstrainedProblem, MarginRisk, ProductOfBalls, Whole, multiclass_neyman_pearson,
    neyman_pearson,
)
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
    return A.indptr.astype(np.uint64), A.indices.astype(np.uint32), None if kind == "binary" else A.data


# --------------------------------------------------------------------------- kernels vs reference
@st.composite
def class_blocks(draw):
    """A class block (dense, CSR or binary CSR; empty rows allowed), W, k, weights, row subset."""
    n = draw(st.integers(1, 30))
    d = draw(st.integers(1, 8))
    C = draw(st.integers(2, 5))
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
    return kind, X, W, k, weights, rows


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


@settings(max_examples=50, deadline=None)
@given(class_blocks(), st.sampled_from(LOSSES))
def test_kernels_match_reference(block, loss):
    kind, X, W, k, weights, rows = block
    C, d = W.shape
    m = X.shape[0] if rows is None else rows.shape[0]
    args = kernel_args(kind, X)
    w_t, grad_t, coef = (np.full_like(a, np.nan) for a in kern.pairwise_workspace(C, d))  # stale scratch
    G = np.full((C, d), np.nan)
    if kind == "dense":
        v = kern.dense_pairwise_value_grad(LOSS_CODES[loss], *args, weights, float(m), rows, W, k, G, coef)
        v_only = kern.dense_pairwise_value(LOSS_CODES[loss], *args, weights, float(m), rows, W, k, coef)
    else:
        v = kern.csr_pairwise_value_grad(LOSS_CODES[loss], *args, weights, float(m), rows, W, k, G, w_t, grad_t, coef)
        v_only = kern.csr_pairwise_value(LOSS_CODES[loss], *args, weights, float(m), rows, W, k, w_t, coef)
    v_ref, g_ref = ref.class_loss_value_grad(X, W, k, loss, weights, 1.0 / m, rows)
    v_mag, g_mag = roundoff_magnitudes(X, W, k, loss, weights, rows)
    assert_close(v, v_ref, v_mag / m)
    assert_close(G, g_ref, g_mag / m)
    assert v_only == v  # the value-only pass sums in the same order: bit-identical


@pytest.mark.parametrize("kind", ["dense", "csr", "binary"])
def test_kernel_rows_none_equals_all_rows(rng, kind):
    X = (rng.random((40, 6)) < 0.5) * (1.0 if kind == "binary" else rng.standard_normal((40, 6)))
    W = rng.standard_normal((3, 6))
    w_t, grad_t, coef = kern.pairwise_workspace(3, 6)
    ws = (coef,) if kind == "dense" else (w_t, grad_t, coef)
    fn = kern.dense_pairwise_value_grad if kind == "dense" else kern.csr_pairwise_value_grad
    G_all, G_rows = np.empty((3, 6)), np.empty((3, 6))
    v_all = fn(LOSS_CODES["sigmoid"], *kernel_args(kind, X), None, 40.0, None, W, 1, G_all, *ws)
    v_rows = fn(LOSS_CODES["sigmoid"], *kernel_args(kind, X), None, 40.0, np.arange(40), W, 1, G_rows, *ws)
    assert v_all == v_rows and np.array_equal(G_all, G_rows)


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
    """Digest §2.7: L_k(0) = (C-1)/2 exactly, grad_k = -(C-1)/4 mean(a), grad_l = mean(a)/4.

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
    problem = multiclass_neyman_pearson(ds, priority_class=1, r=[1.0, 2.0, 3.0])
    assert [c.bound for c in problem.constraints] == [1.0, 2.0, 3.0]
    assert [c.bound for c in multiclass_neyman_pearson(ds, r=0.7).constraints] == [0.7] * 3
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
        (dict(dataset=ds, r=[1.0, 1.0, 1.0]), "r"),
        (dict(dataset=ds, r=[1.0, np.nan]), "r"),
        (dict(dataset=ds, r="high"), "r"),
        (dict(dataset=ds, radius=0.0), "radius"),
        (dict(dataset=ds, radius=-1.0), "radius"),
        (dict(dataset=ds, radius=np.nan), "radius"),
        (dict(dataset=ds, loss="zero_one"), "loss"),
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
    problem = neyman_pearson(ds, loss=loss, alpha=0.4)
    assert isinstance(problem.objective, MarginRisk) and isinstance(problem.domain, Whole)
    assert problem.objective.n_samples == 24 and problem.constraints[0].term.n_samples == 56
    two = Dataset(ds.X, (ds.y > 0).astype(np.int64), task="multiclass")
    multi = multiclass_neyman_pearson(two, priority_class=1, r=0.4, loss=loss, radius=np.inf)
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
    problem = neyman_pearson(ds)                      # hinge, alpha = phi(0) = 1
    assert problem.constraints[0].bound == 1.0 and problem.g(problem.x0)[0] == 0.0
    assert problem.f(problem.x0) == 1.0
    w = rng.standard_normal(3)
    pos, neg = ds.y > 0, ds.y < 0
    assert problem.f(w) == pytest.approx(np.mean(np.maximum(0, 1 - ds.X[pos] @ w)), rel=1e-12)
    assert problem.g(w)[0] == pytest.approx(np.mean(np.maximum(0, 1 + ds.X[neg] @ w)) - 1.0, rel=1e-12, abs=1e-14)
    swapped = neyman_pearson(ds, loss="sigmoid", alpha=0.2, radius=2.0, priority_label=-1)
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
        (dict(dataset=ds, alpha=np.inf), "alpha"),
        (dict(dataset=ds, radius=0.0), "radius"),
        (dict(dataset=ds, priority_label=0), "priority_label"),
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
