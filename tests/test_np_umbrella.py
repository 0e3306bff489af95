"""Neyman-Pearson umbrella threshold (Tong, Feng & Li 2018, [TFL18]) and the type-I / type-II errors.

The rank is checked against an exact rational brute force; the guarantee P(type-I error > alpha)
<= delta is checked by simulation on distributions whose type-I error is known in closed form.
"""
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.stats import norm, poisson

from fastcon.metrics import (
    np_umbrella_min_samples, np_umbrella_rank, np_umbrella_threshold, type_one_error, type_two_error,
)


def exact_violations(n, alpha):
    r"""[v(1), ..., v(n)], v(k) = sum_{j=k}^n C(n, j) (1-alpha)^j alpha^(n-j), exactly (alpha taken as
    the exact binary float), as Fractions: integer terms over the common denominator q^n."""
    p, q = Fraction(alpha).as_integer_ratio()
    terms = [math.comb(n, j) * (q - p) ** j * p ** (n - j) for j in range(n + 1)]
    tails, total = [], 0
    for j in range(n, 0, -1):
        total += terms[j]
        tails.append(total)
    return [Fraction(t, q**n) for t in reversed(tails)]


def brute_force_rank(n, alpha, delta):
    """Smallest k in 1..n with v(k) <= delta (None if there is none), and the relative margin
    |v - delta| / delta of the ranks that decide it (to skip cases decided below float resolution)."""
    d = Fraction(delta)
    values = exact_violations(n, alpha)
    k = next((k for k, v in zip(range(1, n + 1), values) if v <= d), None)
    near = [values[i] for i in ((k - 1, k - 2) if k else (n - 1,)) if 0 <= i < n]
    margin = min(abs(float((v - d) / d)) for v in near)
    return k, margin


@settings(max_examples=150, deadline=None)
@given(n=st.integers(1, 160), alpha=st.floats(0.01, 0.5), delta=st.floats(0.005, 0.5))
def test_rank_matches_exact_brute_force(n, alpha, delta):
    k, margin = brute_force_rank(n, alpha, delta)
    if margin < 1e-9:
        return  # decided below the resolution of a float computation: either answer is right
    if k is None:
        with pytest.raises(ValueError, match=f"^n: {n} held-out samples"):
            np_umbrella_rank(n, alpha, delta)
        assert np_umbrella_min_samples(alpha, delta) > n
    else:
        assert np_umbrella_rank(n, alpha, delta) == k
        assert np_umbrella_min_samples(alpha, delta) <= n


@pytest.mark.parametrize("alpha, delta", [(0.05, 0.05), (0.1, 0.1), (0.05, 0.01), (0.2, 0.3), (0.01, 0.05)])
def test_min_samples_is_the_smallest_n_with_a_valid_rank(alpha, delta):
    n = np_umbrella_min_samples(alpha, delta)
    a, d = Fraction(alpha), Fraction(delta)
    assert (1 - a) ** n <= d < (1 - a) ** (n - 1)
    assert np_umbrella_rank(n, alpha, delta) == n  # only the largest score works at the minimum
    with pytest.raises(ValueError, match=f"^n: {n - 1} held-out samples .* needs n >= {n}"):
        np_umbrella_rank(n - 1, alpha, delta)
    if (alpha, delta) == (0.05, 0.05):
        assert n == 59  # [TFL18]: "the minimal sample size ... is 59" for alpha = delta = 0.05


def test_rank_for_large_n_where_the_tail_underflows_a_direct_sum():
    # n = 10^6: each binomial term is far below the smallest double; bisection on binom.sf stays exact
    # enough that k is within the normal approximation's window around n(1 - alpha).
    n, alpha, delta = 10**6, 0.05, 1e-6
    k = np_umbrella_rank(n, alpha, delta)
    sd = math.sqrt(n * alpha * (1 - alpha))
    assert n * (1 - alpha) + 4 * sd < k < n * (1 - alpha) + 5.5 * sd  # z(1e-6) = 4.75


def test_threshold_is_the_kth_order_statistic(rng):
    s = rng.standard_normal(200)
    k = np_umbrella_rank(200, 0.1, 0.05)
    assert np_umbrella_threshold(s, 0.1, 0.05) == np.sort(s)[k - 1]
    assert np_umbrella_threshold(list(s), np.float32(0.1), 0.05) == np.sort(s)[k - 1]


def violation_rate(draw, true_type_one, threshold_rule, n, alpha, draws=200, seed=0):
    rng = np.random.default_rng(seed)
    bad = 0
    for _ in range(draws):
        t = threshold_rule(draw(rng, n))
        bad += true_type_one(t) > alpha
    return bad / draws


@pytest.mark.parametrize("n, alpha, delta", [(100, 0.1, 0.1), (59, 0.05, 0.05), (500, 0.05, 0.05), (80, 0.2, 0.02)])
def test_type_one_error_exceeds_alpha_with_probability_at_most_delta(n, alpha, delta):
    # Scores of the constrained class ~ N(0, 1); predicting the other class iff s > t has type-I
    # error P(S > t) = norm.sf(t), known exactly.
    draws = 200
    slack = 3 * math.sqrt(delta * (1 - delta) / draws)
    rate = violation_rate(lambda rng, n: rng.standard_normal(n), norm.sf,
                          lambda s: np_umbrella_threshold(s, alpha, delta), n, alpha, draws, seed=n)
    assert rate <= delta + slack
    # The check has power: the plug-in threshold (the empirical (1 - alpha)-quantile) violates about
    # half of the time.
    naive = violation_rate(lambda rng, n: rng.standard_normal(n), norm.sf,
                           lambda s: np.quantile(s, 1 - alpha), n, alpha, draws, seed=n)
    assert naive > delta + slack


def test_guarantee_holds_with_ties_under_the_strict_rule():
    # Poisson(4) scores: many ties. The type-I error of "predict the other class iff s > t" is
    # P(S > t) = poisson.sf(t); the guarantee needs no continuity.
    alpha, delta, n, draws = 0.1, 0.1, 60, 200
    rate = violation_rate(lambda rng, n: rng.poisson(4.0, n).astype(float), lambda t: poisson.sf(t, 4.0),
                          lambda s: np_umbrella_threshold(s, alpha, delta), n, alpha, draws, seed=7)
    assert rate <= delta + 3 * math.sqrt(delta * (1 - delta) / draws)
    # All scores tied: the threshold is that score and nothing of the constrained class is rejected.
    assert np_umbrella_threshold(np.full(59, 2.5), 0.05, 0.05) == 2.5


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(scores_constrained=np.zeros(58), bound=0.05, delta=0.05), ValueError,
     r"^scores_constrained: n: 58 held-out samples .* needs n >= 59"),
    (dict(scores_constrained=np.zeros(0), bound=0.05, delta=0.05), ValueError, r"^scores_constrained: n: 0 held-out"),
    (dict(scores_constrained=np.zeros(100), bound=0.0, delta=0.05), ValueError,
     r"^bound: expected a number in \(0, 1\)"),
    (dict(scores_constrained=np.zeros(100), bound=0.05, delta=1.0), ValueError,
     r"^delta: expected a number in \(0, 1\)"),
    (dict(scores_constrained=np.zeros(100), bound="0.05", delta=0.05), TypeError, r"^bound: expected a number"),
    (dict(scores_constrained=np.r_[np.zeros(99), np.nan], bound=0.05, delta=0.05), ValueError,
     r"^scores_constrained: contains NaN or inf"),
    (dict(scores_constrained=np.zeros((10, 10)), bound=0.05, delta=0.05), ValueError,
     r"^scores_constrained: expected a 1-D array"),
])
def test_threshold_errors(kwargs, error, message):
    with pytest.raises(error, match=message):
        np_umbrella_threshold(**kwargs)


def test_rank_rejects_non_integer_n():
    with pytest.raises(TypeError, match="^n: expected an integer"):
        np_umbrella_rank(100.0, 0.05, 0.05)
    with pytest.raises(TypeError, match="^n: expected an integer"):
        np_umbrella_rank(True, 0.05, 0.05)


def test_type_one_and_type_two_errors():
    y_true = np.array([-1, -1, -1, -1, 1, 1, 1])
    y_pred = np.array([-1, 1, -1, -1, 1, -1, -1])
    assert type_one_error(y_true, y_pred, constrained_class=-1) == 0.25  # 1 of 4 negatives called positive
    assert type_two_error(y_true, y_pred, constrained_class=-1) == pytest.approx(2 / 3)  # 2 of 3 positives missed
    assert type_one_error(["a", "a"], ["a", "b"], constrained_class="a") == 0.5
    with pytest.raises(ValueError, match="^constrained_class: no sample of y_true has the label 0"):
        type_one_error(y_true, y_pred, constrained_class=0)
    with pytest.raises(ValueError, match="^y_true: every sample has the constrained label -1"):
        type_two_error([-1, -1], [1, 1], constrained_class=-1)
    with pytest.raises(ValueError, match=r"^y_pred: expected shape \(7,\)"):
        type_one_error(y_true, y_pred[:3], constrained_class=-1)
    with pytest.raises(TypeError):   # the class is keyword-only
        type_one_error(y_true, y_pred, -1)


def test_type_errors_sample_weight_is_a_repeated_row():
    rng = np.random.default_rng(3)
    y_true, y_pred = rng.choice([-1, 1], 80), rng.choice([-1, 1], 80)
    w = rng.integers(0, 4, 80)
    for error in (type_one_error, type_two_error):
        weighted = error(y_true, y_pred, constrained_class=-1, sample_weight=w)
        repeated = error(y_true.repeat(w), y_pred.repeat(w), constrained_class=-1)
        assert weighted == pytest.approx(repeated, rel=1e-14)
        assert error(y_true, y_pred, constrained_class=-1, sample_weight=np.ones(80)) == error(
            y_true, y_pred, constrained_class=-1)
    with pytest.raises(ValueError, match="^sample_weight: must be finite and non-negative"):
        type_one_error(y_true, y_pred, constrained_class=-1, sample_weight=-w)
    with pytest.raises(ValueError, match="^sample_weight: the rows of the constrained class have zero total weight"):
        type_one_error(y_true, y_pred, constrained_class=-1, sample_weight=(y_true == 1).astype(float))
    with pytest.raises(ValueError, match=r"^sample_weight: expected shape \(80,\)"):
        type_two_error(y_true, y_pred, constrained_class=-1, sample_weight=w[:3])
