"""Partial demographic-parity metrics (`fastcon.metrics._partial_fairness`): the closed form (29) of He,
Huang, Yao & Lin against the truncated-sample definitions (6) and (9), the KS special case, Lemma 5.1 by a
threshold scan, invariances, the interval rule of their §4, the Figure 2 curves and the argument checks.

Bound used below (derived in `partial_dp`'s docstring): with no ties in group k, its truncated CCDF is
T_k = (clip(c, ceil(a n_k), ceil(b n_k)) - ceil(a n_k)) / (ceil(b n_k) - ceil(a n_k)) and the clip form is
C_k = (clip(c, a n_k, b n_k) - a n_k) / ((b - a) n_k), c = n_k Fbar_k(theta); 0 <= C_k - T_k < 1/(n_k (b - a))
at every theta, hence |pDP - pDP_truncated| < max_k 1/(n_k (b - a)), and equality when a n_k, b n_k are integers.
"""
import itertools
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st
from scipy.stats import ks_2samp, norm

from fastcon.metrics import (
    IntervalChoice, ScoreCCDFCurves, choose_interval, ks_demographic_parity, partial_dp, roc_gap,
    score_ccdf_curves, weak_partial_dp,
)
from reference import partial_fairness as ref

# Interval ends on a 5% grid, as the paper's intervals.
ENDS = [k / 20 for k in range(21)]
intervals = st.tuples(st.sampled_from(ENDS), st.sampled_from(ENDS)).filter(lambda ab: ab[0] < ab[1])


def _sample(seed, sizes, shift=0.6):
    """Continuous scores (no ties), group k shifted and scaled differently; groups are 0..G-1."""
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(len(sizes)), sizes)
    scores = rng.normal(size=groups.size) * (1 + 0.3 * groups) + shift * groups
    perm = rng.permutation(groups.size)
    return scores[perm], groups[perm]


# --------------------------------------------------------------------------- closed form vs truncated samples
@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**31), sizes=st.lists(st.integers(5, 90), min_size=2, max_size=4),
       interval=intervals, threshold=st.floats(-1.5, 2.0))
def test_clip_form_within_one_over_n_of_the_truncated_samples(seed, sizes, interval, threshold):
    alpha, beta = interval
    assume(min(sizes) * (beta - alpha) >= 1)  # every truncated sample non-empty
    s, g = _sample(seed, sizes)
    assert np.unique(s).size == s.size
    bound = max(1 / (n * (beta - alpha)) for n in sizes) + 1e-12
    value = partial_dp(s, sensitive_features=g, interval=interval)
    assert 0.0 <= value <= 1.0
    assert abs(value - ref.partial_dp(s, g, interval)) < bound
    weak = weak_partial_dp(s, sensitive_features=g, interval=interval, threshold=threshold)
    assert abs(weak - ref.weak_partial_dp(s, g, interval, threshold)) < bound


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**31), multiples=st.lists(st.integers(1, 5), min_size=2, max_size=4),
       interval=intervals, threshold=st.floats(-1.5, 2.0))
def test_clip_form_equals_the_truncated_samples_when_the_band_edges_are_whole_ranks(
        seed, multiples, interval, threshold):
    # n_k a multiple of 20 and alpha, beta multiples of 1/20: alpha n_k and beta n_k are integers.
    s, g = _sample(seed, [20 * m for m in multiples])
    assert partial_dp(s, sensitive_features=g, interval=interval) == pytest.approx(
        ref.partial_dp(s, g, interval), abs=1e-12)
    assert weak_partial_dp(s, sensitive_features=g, interval=interval, threshold=threshold) == pytest.approx(
        ref.weak_partial_dp(s, g, interval, threshold), abs=1e-12)


def test_the_bound_is_needed_off_whole_ranks():
    # Off whole ranks the two definitions do differ (so the equality test above is not vacuous).
    diffs = []
    for seed in range(20):
        s, g = _sample(seed, [37, 23])
        diffs.append(abs(partial_dp(s, sensitive_features=g, interval=(0.05, 0.3)) - ref.partial_dp(s, g, (0.05, 0.3))))
    assert max(diffs) > 1e-3
    assert max(diffs) < 1 / (23 * 0.25)


# --------------------------------------------------------------------------- full interval
@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**31), n0=st.integers(1, 60), n1=st.integers(1, 60), ties=st.booleans())
def test_full_interval_is_the_two_sample_ks_statistic(seed, n0, n1, ties):
    rng = np.random.default_rng(seed)
    s = rng.integers(-4, 5, n0 + n1).astype(float) if ties else rng.normal(size=n0 + n1)
    g = np.repeat([3, 8], [n0, n1])
    with warnings.catch_warnings():   # only the statistic is compared; scipy may warn about its p-value
        warnings.simplefilter("ignore", RuntimeWarning)
        ks = ks_2samp(s[g == 3], s[g == 8]).statistic
    assert partial_dp(s, sensitive_features=g, interval=(0.0, 1.0)) == pytest.approx(ks, abs=1e-12)
    assert ks_demographic_parity(s, sensitive_features=g) == pytest.approx(ks, abs=1e-12)
    assert ks_demographic_parity(s, sensitive_features=g) == pytest.approx(roc_gap(s, sensitive_features=g), abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31), sizes=st.lists(st.integers(1, 40), min_size=2, max_size=4),
       threshold=st.sampled_from([-1.0, -0.5, 0.0, 0.5, 2.0]))
def test_weak_full_interval_is_the_rate_gap(seed, sizes, threshold):
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(len(sizes)), sizes)
    s = rng.integers(-2, 3, g.size) / 2  # ties at the threshold: strictly above counts
    rates = [np.mean(s[g == k] > threshold) for k in range(len(sizes))]
    weak = weak_partial_dp(s, sensitive_features=g, interval=(0, 1), threshold=threshold)
    assert weak == pytest.approx(max(rates) - min(rates), abs=1e-15)
    # several groups: the worst pair
    pairs = max(abs(a - b) for a, b in itertools.combinations(rates, 2))
    assert weak == pytest.approx(pairs, abs=1e-15)


def test_worst_pair_over_several_groups():
    s, g = _sample(4, [50, 70, 90], shift=0.4)
    for interval in [(0.05, 0.3), (0.0, 0.25), (0.7, 1.0)]:
        pairs = [partial_dp(s[(g == a) | (g == b)], sensitive_features=g[(g == a) | (g == b)], interval=interval)
                 for a, b in itertools.combinations(range(3), 2)]
        assert partial_dp(s, sensitive_features=g, interval=interval) == pytest.approx(max(pairs), abs=1e-15)


# --------------------------------------------------------------------------- Lemma 5.1
def _levels(alpha, beta, kappa, h):
    """alpha, alpha + h, ... below beta - kappa (beta - alpha) (by more than round-off: the range is open)."""
    levels = alpha + h * np.arange(int(np.ceil(1 / h)) + 1)
    return levels[levels < beta - kappa * (beta - alpha) - 1e-12]


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**31), sizes=st.lists(st.integers(8, 60), min_size=2, max_size=3),
       interval=intervals)
def test_lemma_5_1_on_samples(seed, sizes, interval):
    # Finite-sample form of He et al.'s Lemma 5.1, on the exact theta scan (every CCDF vector occurs at
    # -inf, a sample value or +inf):
    #  (a) pDP <= kappa  =>  for every p in [alpha, beta - kappa (beta - alpha)) some theta has
    #      p <= Fbar_k(theta) <= p + kappa (beta - alpha) + 1/min_k n_k for all k (the largest theta with
    #      every Fbar_k >= p; one step further some group drops below p, and the step is one sample);
    #  (b) the windows exist (no slack) for every p of a grid of spacing h  =>  pDP <= kappa + h/(beta - alpha).
    alpha, beta = interval
    s, g = _sample(seed, sizes, shift=0.8)
    width = beta - alpha
    ccdf = ref.ccdf_scan(s, g)
    d = partial_dp(s, sensitive_features=g, interval=interval)
    h = width / 100
    levels = _levels(alpha, beta, d, h)
    assert np.all(ref.lemma_5_1_windows(ccdf, levels, d * width + 1 / min(sizes) + 1e-12))
    kappa_out = d - 2 * h / width
    if kappa_out > 0:
        assert not np.all(ref.lemma_5_1_windows(ccdf, _levels(alpha, beta, kappa_out, h), kappa_out * width))


@pytest.mark.parametrize("interval", [(0.05, 0.3), (0.0, 0.25), (0.7, 1.0), (0.2, 0.7)])
def test_lemma_5_1_population_style(interval):
    # Quantile samples s_i = F^{-1}((i - 1/2)/n) follow the population CDF to 1/(2n): population values
    # up to O(1/n), without sampling noise. Three normal groups; the population pDP on a fine theta grid.
    n = 2000
    u = (np.arange(n) + 0.5) / n
    laws = [norm(0.0, 1.0), norm(0.5, 1.3), norm(-0.3, 0.8)]
    s = np.concatenate([law.ppf(u) for law in laws])
    g = np.repeat(np.arange(3), n)
    alpha, beta = interval
    width = beta - alpha
    theta = np.linspace(-8, 8, 400_001)
    clipped = np.clip([law.sf(theta) for law in laws], alpha, beta)
    d_pop = float(np.max(clipped.max(axis=0) - clipped.min(axis=0)) / width)
    assert d_pop > 0.1
    d = partial_dp(s, sensitive_features=g, interval=interval)
    assert d == pytest.approx(d_pop, abs=2 / (n * width) + 1e-4)
    ccdf = ref.ccdf_scan(s, g)
    margin, h = 0.02, 0.002
    kappa_in, kappa_out = d_pop + margin, d_pop - margin
    assert d <= kappa_in and np.all(ref.lemma_5_1_windows(ccdf, _levels(alpha, beta, kappa_in, h), kappa_in * width))
    assert d > kappa_out
    assert not np.all(ref.lemma_5_1_windows(ccdf, _levels(alpha, beta, kappa_out, h), kappa_out * width))


# --------------------------------------------------------------------------- invariances
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31), sizes=st.lists(st.integers(1, 40), min_size=2, max_size=4),
       interval=intervals, threshold=st.sampled_from([-1.5, 0.5, 2.5]))
def test_invariant_to_row_order_group_ids_and_increasing_maps(seed, sizes, interval, threshold):
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(len(sizes)), sizes)
    s = rng.integers(-6, 7, g.size).astype(float)  # ties included
    base = (partial_dp(s, sensitive_features=g, interval=interval),
            weak_partial_dp(s, sensitive_features=g, interval=interval, threshold=threshold))
    perm = rng.permutation(g.size)
    ids = rng.choice(np.arange(-1000, 1000), size=len(sizes), replace=False)  # any distinct integers
    cube = lambda x: x ** 3 + x  # exact on these integers and strictly increasing
    names = np.array([f"group {i}" for i in ids])                      # string labels, as the other metrics take
    for s2, g2, t2 in [(s[perm], g[perm], threshold), (s, ids[g], threshold), (s, ids[g].astype(float), threshold),
                       (s, names[g], threshold), (s, names[g].astype(object), threshold),
                       (cube(s), g, cube(threshold)), (np.exp(s / 7), g, np.exp(threshold / 7))]:
        assert partial_dp(s2, sensitive_features=g2, interval=interval) == base[0]
        assert weak_partial_dp(s2, sensitive_features=g2, interval=interval, threshold=t2) == base[1]


def test_boolean_groups_are_two_groups():
    s, g = _sample(1, [30, 40])
    assert partial_dp(s, sensitive_features=g == 1, interval=(0.05, 0.3)) == partial_dp(
        s, sensitive_features=g, interval=(0.05, 0.3))


# --------------------------------------------------------------------------- choose_interval
def test_candidates_are_the_covering_intervals_in_order():
    s, g = _sample(0, [40, 40])
    c = choose_interval(s, sensitive_features=g, rate=0.22)
    assert isinstance(c, IntervalChoice) and c.rate == 0.22
    expected = []
    for a in (0.0, 0.05, 0.1, 0.15, 0.2):
        expected += [(a, round(a + 0.25, 2)), (a, round(a + 0.3, 2))]
    assert c.candidates == tuple(expected)
    assert choose_interval(s, sensitive_features=g, rate=1.0).candidates == ((0.7, 1.0), (0.75, 1.0))
    assert choose_interval(s, sensitive_features=g, rate=0.0).candidates == ((0.0, 0.25), (0.0, 0.3))
    # an end on the rate: [alpha, beta) covers alpha, not beta
    assert choose_interval(s, sensitive_features=g, rate=0.25, widths=(0.25,)).candidates == ((0.05, 0.3), (0.1, 0.35),
                                                                            (0.15, 0.4), (0.2, 0.45), (0.25, 0.5))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31), sizes=st.lists(st.integers(2, 50), min_size=2, max_size=3),
       n_steps=st.sampled_from([4, 10, 20]), width_steps=st.lists(st.integers(1, 20), min_size=1, max_size=3),
       rate=st.one_of(st.none(), st.floats(0, 1)), threshold=st.floats(-1, 1))
def test_choice_covers_the_rate_with_an_allowed_width_and_is_the_most_unfair(
        seed, sizes, n_steps, width_steps, rate, threshold):
    step = 1 / n_steps
    widths = tuple(k * step for k in width_steps if k <= n_steps)
    assume(widths)
    s, g = _sample(seed, sizes)
    p = np.mean(s > threshold) if rate is None else rate
    # every (i/K, j/K) with j - i an allowed number of steps and i/K <= p < j/K (or j = K and p = 1)
    expected = [(i, j) for i in range(n_steps + 1) for j in sorted({i + k for k in width_steps})
                if j <= n_steps and i / n_steps <= p and (p < j / n_steps or (j == n_steps and p == 1))]
    if not expected:
        with pytest.raises(ValueError, match="^widths:"):
            choose_interval(s, sensitive_features=g, rate=rate, threshold=threshold, widths=widths, step=step)
        return
    c = choose_interval(s, sensitive_features=g, rate=rate, threshold=threshold, widths=widths, step=step)
    assert c.rate == pytest.approx(p)
    assert [(round(a * n_steps), round(b * n_steps)) for a, b in c.candidates] == expected
    for (a, b), value in zip(c.candidates, c.partial_dp_values):
        assert a <= c.rate < b or (b == 1.0 and c.rate == 1.0)
        assert any(abs((b - a) - w) < 1e-9 for w in widths)
        assert value == partial_dp(s, sensitive_features=g, interval=(a, b))
    best = int(np.flatnonzero(c.partial_dp_values == c.partial_dp_values.max())[0])
    assert c.interval == c.candidates[best]
    assert partial_dp(s, sensitive_features=g, interval=c.interval) == max(c.partial_dp_values)


def test_choice_finds_the_band_where_the_groups_differ():
    # Two groups with the same quantiles except ranks in [0.75, 0.8), where group 1 is squeezed toward the
    # band's lower edge: every CCDF difference lies above 0.75, so among the width-0.25 bands covering
    # p = 0.58 only [0.55, 0.8) sees it (the others clip both CCDFs to beta there).
    n = 400
    u = (np.arange(n) + 0.5) / n
    s0 = norm.isf(u)  # descending: row i has rank i/n
    s1 = s0.copy()
    band = (u >= 0.75) & (u < 0.8)
    lo, hi = s0[band].min(), s0[band].max()
    s1[band] = lo + (s0[band] - lo) ** 2 / (hi - lo)
    s, g = np.concatenate([s0, s1]), np.repeat([0, 1], n)
    c = choose_interval(s, sensitive_features=g, rate=0.58, widths=(0.25,))
    assert c.candidates == ((0.35, 0.6), (0.4, 0.65), (0.45, 0.7), (0.5, 0.75), (0.55, 0.8))
    assert c.partial_dp_values[:4].tolist() == [0.0] * 4 and c.partial_dp_values[4] > 0.02
    assert c.interval == (0.55, 0.8)


# --------------------------------------------------------------------------- Figure 2 curves
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), sizes=st.lists(st.integers(1, 30), min_size=2, max_size=4), interval=intervals)
def test_ccdf_curves_are_the_exact_steps(seed, sizes, interval):
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(len(sizes)), sizes)
    s = rng.integers(-5, 6, g.size) / 4
    curves = score_ccdf_curves(s, sensitive_features=g)
    assert isinstance(curves, ScoreCCDFCurves)
    t = curves.thresholds
    assert t[0] == np.inf and t[-1] == -np.inf and np.all(np.diff(t) < 0)
    np.testing.assert_array_equal(t[1:-1], np.unique(s)[::-1])
    expected = np.array([[np.mean(s[g == k] > th) for th in t] for k in range(len(sizes))])
    np.testing.assert_array_equal(curves.ccdf, expected)
    clipped = np.clip(curves.ccdf, *interval)
    assert partial_dp(s, sensitive_features=g, interval=interval) == pytest.approx(
        np.max(clipped.max(axis=0) - clipped.min(axis=0)) / (interval[1] - interval[0]), abs=1e-15)
    with pytest.raises(ValueError):
        curves.ccdf[0, 0] = 1.0  # read-only


# --------------------------------------------------------------------------- argument checks
S, G = np.array([0.1, -0.2, 0.3, 0.4]), np.array([0, 0, 1, 1])


@pytest.mark.parametrize("call, error, message", [
    (lambda: partial_dp([[0.1, 0.2]], sensitive_features=[0, 1], interval=(0, 1)), ValueError, "^y_score:"),
    (lambda: partial_dp([], sensitive_features=[], interval=(0, 1)), ValueError, "^y_score:"),
    (lambda: partial_dp([0.1, np.nan], sensitive_features=[0, 1], interval=(0, 1)), ValueError, "^y_score:"),
    (lambda: partial_dp(S, sensitive_features=G[:3], interval=(0, 1)), ValueError, "^sensitive_features:"),
    (lambda: partial_dp(S, sensitive_features=G[:, None], interval=(0, 1)), ValueError, "^sensitive_features:"),
    (lambda: partial_dp(S, sensitive_features=[0, 0, 0, 0], interval=(0, 1)), ValueError,
     "^sensitive_features: need at least two"),
    (lambda: partial_dp(S, sensitive_features=[0, 0.5, 1, 1], interval=(0, 1)), ValueError,
     "^sensitive_features: expected integer-valued"),
    (lambda: partial_dp(S, sensitive_features=[0, np.nan, 1, 1], interval=(0, 1)), ValueError, "^sensitive_features:"),
    (lambda: partial_dp(S, sensitive_features=np.array(["a", None, "b", "b"], dtype=object), interval=(0, 1)),
     TypeError,
     "^sensitive_features: labels must be comparable"),
    (lambda: partial_dp(S.astype(complex), sensitive_features=G, interval=(0, 1)), TypeError,
     "^y_score: expected real numbers"),
    (lambda: partial_dp(["x", "y", "z", "w"], sensitive_features=G, interval=(0, 1)), TypeError,
     "^y_score: expected real numbers"),
    (lambda: partial_dp(S, G, interval=(0, 1)), TypeError, "positional"),   # sensitive_features is keyword-only
    (lambda: partial_dp(S, sensitive_features=G, interval=(False, True)), ValueError, "^interval: expected a pair"),
    (lambda: weak_partial_dp(S, sensitive_features=G, interval=(0, 1), threshold=True), TypeError, "^threshold:"),
    (lambda: choose_interval(S, sensitive_features=G, rate=True), TypeError, "^rate:"),
    (lambda: partial_dp(S, sensitive_features=G, interval=(0.3, 0.3)), ValueError, "^interval:"),
    (lambda: partial_dp(S, sensitive_features=G, interval=(0.4, 0.3)), ValueError, "^interval:"),
    (lambda: partial_dp(S, sensitive_features=G, interval=(-0.1, 0.3)), ValueError, "^interval:"),
    (lambda: partial_dp(S, sensitive_features=G, interval=(0.1, 1.2)), ValueError, "^interval:"),
    (lambda: partial_dp(S, sensitive_features=G, interval=(0.1, np.inf)), ValueError, "^interval:"),
    (lambda: partial_dp(S, sensitive_features=G, interval=(0.1, 0.2, 0.3)), ValueError, "^interval:"),
    (lambda: partial_dp(S, sensitive_features=G, interval=0.3), ValueError, "^interval:"),
    (lambda: weak_partial_dp(S, sensitive_features=G, interval=(0, 1), threshold=np.inf), ValueError, "^threshold:"),
    (lambda: weak_partial_dp(S, sensitive_features=G, interval=(0, 1), threshold="x"), TypeError, "^threshold:"),
    (lambda: weak_partial_dp(S, sensitive_features=G, interval=(1, 0)), ValueError, "^interval:"),
    (lambda: ks_demographic_parity(S, sensitive_features=[1, 1, 1, 1]), ValueError, "^sensitive_features:"),
    (lambda: score_ccdf_curves(S, sensitive_features=[1, 1, 1, 1]), ValueError, "^sensitive_features:"),
    (lambda: choose_interval(S, sensitive_features=G, rate=1.5), ValueError, "^rate:"),
    (lambda: choose_interval(S, sensitive_features=G, rate=np.nan), ValueError, "^rate:"),
    (lambda: choose_interval(S, sensitive_features=G, threshold=np.nan), ValueError, "^threshold:"),
    (lambda: choose_interval(S, sensitive_features=G, step=0.0), ValueError, "^step:"),
    (lambda: choose_interval(S, sensitive_features=G, step=1e-7), ValueError, "^step: expected 0.001 <= step <= 1"),
    (lambda: choose_interval(S, sensitive_features=G, widths=()), ValueError, "^widths:"),
    (lambda: choose_interval(S, sensitive_features=G, widths=(0.0,)), ValueError, "^widths:"),
    (lambda: choose_interval(S, sensitive_features=G, widths="wide"), ValueError, "^widths:"),
    (lambda: choose_interval(S, sensitive_features=G, widths=[[0.25]]), ValueError, "^widths:"),
    (lambda: choose_interval(S, sensitive_features=G, widths=(0.33,)), ValueError, "^widths: no interval"),
])
def test_errors_name_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()
