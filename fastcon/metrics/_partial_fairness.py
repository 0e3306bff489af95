r"""Partial demographic parity: parity of the scores inside a band of within-group ranks.

He, Huang, Yao & Lin [HHYL25] ask for demographic parity only among the samples whose rank inside
their group, :math:`\bar F_k(\theta) = \Pr(s > \theta \mid \gamma = k)` (Definition 4.1), lies in
:math:`\mathcal I = [\alpha, \beta)`. The rate of :math:`s > \theta` in that band has the closed form
(eq. (29)) :math:`(\operatorname{clip}(\bar F_k(\theta), \alpha, \beta) - \alpha)/(\beta - \alpha)`,
used here as the definition with the empirical CCDF. Every function takes
``(y_score, *, sensitive_features, ...)``; every gap is the worst pair, :math:`\max_k - \min_k`.
Design notes: docs/design.md, 'Module notes'.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._fairness import _scores

__all__ = ["partial_dp", "weak_partial_dp", "ks_demographic_parity", "choose_interval", "IntervalChoice",
           "score_ccdf_curves", "ScoreCCDFCurves"]

# Interval ends and widths are decimal fractions (0.05, 0.3) that a float sum misses by an ulp or two:
# 0.05 + 0.25 != 0.3. Comparisons between such values allow this much.
_ROUND_OFF = 1e-9


def _group_codes(sensitive_features, n):
    """Dense codes 0..G-1 (sorted order of the labels) of the group labels, and G >= 2."""
    g = np.asarray(sensitive_features)
    if g.ndim != 1:
        raise ValueError(f"sensitive_features: expected a 1-D array, got shape {g.shape}")
    if g.shape[0] != n:
        raise ValueError(f"sensitive_features: has {g.shape[0]} ids but y_score has {n}")
    if g.dtype.kind == "f":
        if not np.all(np.isfinite(g)):
            raise ValueError("sensitive_features: contains NaN or inf")
        if np.any(g != np.round(g)):
            bad = g[g != np.round(g)][0]
            raise ValueError(f"sensitive_features: expected integer-valued group ids, found {bad!r}")
    elif g.dtype.kind not in "iubUSO":
        raise TypeError(f"sensitive_features: expected group labels (integers, bools or strings), got dtype {g.dtype}")
    try:
        labels, codes = np.unique(g, return_inverse=True)
    except TypeError:   # object labels that do not sort together, e.g. None beside strings
        raise TypeError("sensitive_features: labels must be comparable with each other (integers, bools or "
                        "strings)") from None
    if labels.size < 2:
        raise ValueError(f"sensitive_features: need at least two non-empty groups, found {labels.size}")
    return codes.reshape(-1).astype(np.int64, copy=False), labels.size


def check_interval(interval):
    """(start, end) as floats with 0 <= start < end <= 1."""
    try:
        ends = tuple(interval)
        if any(isinstance(v, (bool, np.bool_)) for v in ends):   # (False, True) is not a rank band
            raise TypeError
        start, end = (float(v) for v in ends)
    except (TypeError, ValueError):
        raise ValueError(f"interval: expected a pair (start, end) of numbers, got {interval!r}") from None
    if not (np.isfinite(start) and np.isfinite(end)):
        raise ValueError(f"interval: ends must be finite, got ({start}, {end})")
    if not 0.0 <= start < end <= 1.0:
        raise ValueError(f"interval: expected 0 <= start < end <= 1, got ({start}, {end})")
    return start, end


def _threshold(threshold, field="threshold"):
    if isinstance(threshold, (bool, np.bool_)):   # float(True) is 1.0: a bool here is a mistake
        raise TypeError(f"{field}: expected a real number, got {threshold!r}")
    try:
        t = float(threshold)
    except (TypeError, ValueError):
        raise TypeError(f"{field}: expected a real number, got {threshold!r}") from None
    if not np.isfinite(t):
        raise ValueError(f"{field}: must be finite, got {t}")
    return t


def _checked(y_score, sensitive_features):
    s = _scores(y_score)
    codes, n_groups = _group_codes(sensitive_features, s.shape[0])
    return s, codes, n_groups


def _sorted_by_group(s, codes, n_groups):
    """Each group's scores sorted ascending, and the distinct scores of all groups ascending.

    One sort of everything; a boolean selection keeps the order, so each group comes out sorted.
    """
    order = np.argsort(s, kind="stable")
    s_sorted = s[order]
    c_sorted = codes[order]
    parts = [s_sorted[c_sorted == k] for k in range(n_groups)]
    last_of_run = np.empty(s_sorted.shape[0], dtype=bool)
    np.not_equal(s_sorted[1:], s_sorted[:-1], out=last_of_run[:-1])
    last_of_run[-1] = True
    return parts, s_sorted[last_of_run]


def _ccdf(part, thresholds):
    r""":math:`\bar F_k(\theta) = \#\{s > \theta\}/n_k` at every threshold: one binary search each."""
    n_k = part.shape[0]
    return (n_k - np.searchsorted(part, thresholds, side="right")) / n_k


def _clipped_gap(ccdfs, start, end) -> float:
    r""":math:`\max_\theta (\max_k - \min_k)\operatorname{clip}(\bar F_k(\theta), \alpha, \beta) / (\beta - \alpha)`.

    ``ccdfs`` yields one CCDF per group on a common threshold set; running max and min keep the
    memory at one threshold set whatever the number of groups.
    """
    hi = lo = None
    for f in ccdfs:
        c = np.clip(f, start, end)
        if hi is None:
            hi, lo = c, c.copy()
        else:
            np.maximum(hi, c, out=hi)
            np.minimum(lo, c, out=lo)
    # At theta -> +inf (every CCDF 0) and -inf (every CCDF 1) all clipped values coincide: gap 0.
    return float(max(np.max(hi - lo), 0.0) / (end - start))


def partial_dp(y_score, *, sensitive_features, interval) -> float:
    r"""Partial demographic parity (pDP) of scores: the worst pair's truncated KS distance.

    He, Huang, Yao & Lin [HHYL25] Definition 4.2, eq. (6): the Kolmogorov–Smirnov distance between
    two groups' score distributions, each truncated to its own rank band
    :math:`\mathcal I = [\alpha, \beta)`. By the closed form (29),

    .. math::

        \mathrm{pDP}_{\mathcal I} = \max_{k, k'} \mathrm{DP}^{\mathcal I}_{k,k'}
        = \frac{1}{\beta - \alpha}\, \sup_{\theta \in \mathbb R}\, \Bigl(
          \max_k \operatorname{clip}(\bar F_k(\theta), \alpha, \beta)
          - \min_k \operatorname{clip}(\bar F_k(\theta), \alpha, \beta)\Bigr),

    with :math:`\bar F_k(\theta)` the fraction of group :math:`k`'s scores :math:`> \theta`. The
    CCDFs are right-continuous steps that change only at sample values, and at
    :math:`\theta \to \pm\infty` all clipped values coincide, so the supremum is a maximum over
    the distinct scores: exact, :math:`O(n \log n)` for the sort plus :math:`O(G\,n \log n)` binary
    searches, no loop over thresholds. :math:`\mathcal I = [0, 1]` gives the KS distance (strong
    demographic parity, eq. (2)), see :func:`ks_demographic_parity`.

    Relation to the truncated samples: keep in group :math:`k` the rows whose rank
    :math:`\#\{j \in k : s_j > s_i\}/n_k` lies in :math:`[\alpha, \beta)` and take the KS distance
    of these truncated samples. With no ties inside a group its truncated CCDF is
    :math:`(\operatorname{clip}(c, a, b) - a)/(b - a)` with :math:`c = n_k \bar F_k(\theta)`,
    :math:`a = \lceil \alpha n_k \rceil`, :math:`b = \lceil \beta n_k \rceil`, while the clip
    form is the same expression with :math:`a = \alpha n_k`, :math:`b = \beta n_k`. The clip form
    is larger by :math:`[0, 1/(n_k(\beta - \alpha)))` at every :math:`\theta`, so the two pDP values
    differ by less than :math:`\max_k 1/(n_k(\beta - \alpha))`, and they are equal when every
    :math:`\alpha n_k` and :math:`\beta n_k` is an integer.

    Parameters
    ----------
    y_score : array-like of shape (n,)
        Finite real scores (a higher score ranks first).
    sensitive_features : array-like of shape (n,)
        Group labels (integers, bools or strings), at least two distinct values.
    interval : pair of float
        :math:`(\alpha, \beta)` with :math:`0 \le \alpha < \beta \le 1`: the rank band, e.g.
        ``(0.05, 0.3)`` for the scores between each group's top 5% and top 30%.

    Returns
    -------
    float in [0, 1]
        0 when all groups' truncated score distributions agree; the reported fairness of
        [HHYL25] §7 is one minus this.
    """
    s, codes, n_groups = _checked(y_score, sensitive_features)
    start, end = check_interval(interval)
    parts, thresholds = _sorted_by_group(s, codes, n_groups)
    return _clipped_gap((_ccdf(p, thresholds) for p in parts), start, end)


def ks_demographic_parity(y_score, *, sensitive_features) -> float:
    r"""Strong demographic parity gap: the worst pair's Kolmogorov–Smirnov distance of the scores.

    He, Huang, Yao & Lin [HHYL25] eq. (2),

    .. math::

        \max_{k, k'} \sup_\theta \bigl|\Pr(s > \theta \mid \gamma = k) - \Pr(s > \theta \mid \gamma = k')\bigr|,

    :func:`partial_dp` with the interval :math:`[0, 1]`. For two groups it is the two-sample
    statistic of ``scipy.stats.ks_2samp`` (and `fastcon.metrics.roc_gap`'s exact value).

    Parameters
    ----------
    y_score : array-like of shape (n,)
        Finite real scores.
    sensitive_features : array-like of shape (n,)
        Group labels (integers, bools or strings), at least two distinct values.

    Returns
    -------
    float in [0, 1]
    """
    return partial_dp(y_score, sensitive_features=sensitive_features, interval=(0.0, 1.0))


def weak_partial_dp(y_score, *, sensitive_features, interval, threshold=0.0) -> float:
    r"""Weak partial demographic parity: the selection-rate gap inside the rank band, at one threshold.

    He, Huang, Yao & Lin [HHYL25] Definition 4.3, eq. (9), evaluated through the closed form (29)
    (as in their Lemma 5.2, eq. (16)):

    .. math::

        \mathrm{WDP}_{\mathcal I} = \frac{1}{\beta - \alpha}\Bigl(\max_k \operatorname{clip}(P_k, \alpha, \beta)
        - \min_k \operatorname{clip}(P_k, \alpha, \beta)\Bigr), \qquad
        P_k = \Pr(s > \hat\theta \mid \gamma = k),

    the fraction of group :math:`k`'s scores above the decision threshold :math:`\hat\theta`
    (strictly, as the paper's decision rule; `fastcon.metrics.demographic_parity_gap` counts
    :math:`s \ge \hat\theta`). :math:`\mathcal I = [0, 1]` gives the plain selection-rate gap
    (weak demographic parity, eq. (3)). Cost :math:`O(n)`.

    Parameters
    ----------
    y_score : array-like of shape (n,)
        Finite real scores.
    sensitive_features : array-like of shape (n,)
        Group labels (integers, bools or strings), at least two distinct values.
    interval : pair of float
        :math:`(\alpha, \beta)` with :math:`0 \le \alpha < \beta \le 1`.
    threshold : float
        :math:`\hat\theta`, finite (0: the sign of a decision value).

    Returns
    -------
    float in [0, 1]
    """
    s, codes, n_groups = _checked(y_score, sensitive_features)
    start, end = check_interval(interval)
    t = _threshold(threshold)
    rates = (np.bincount(codes, weights=s > t, minlength=n_groups)
             / np.bincount(codes, minlength=n_groups))
    clipped = np.clip(rates, start, end)
    return float((clipped.max() - clipped.min()) / (end - start))


@dataclass(frozen=True, eq=False)
class IntervalChoice:
    r"""The rank band picked by :func:`choose_interval` and the candidates it compared.

    Attributes
    ----------
    interval : tuple of float
        :math:`(\alpha, \beta)`, the candidate with the largest pDP.
    rate : float
        :math:`p`, the positive rate every candidate covers.
    candidates : tuple of tuple of float
        Every :math:`(\alpha, \beta)` compared, :math:`\alpha` ascending, then width ascending.
    partial_dp_values : ndarray of float64, shape (len(candidates),)
        :func:`partial_dp` of the scores on each candidate (read-only).
    """

    interval: tuple
    rate: float
    candidates: tuple
    partial_dp_values: np.ndarray


#: Smallest ``step`` of `choose_interval`: a finer grid only multiplies the candidates, each a pass over the scores.
MIN_INTERVAL_STEP = 1e-3


def _grid(step):
    """0, step, 2 step, ... <= 1, rounded to 12 decimals so that 3 * 0.05 reads 0.15."""
    step = _threshold(step, "step")
    if not MIN_INTERVAL_STEP <= step <= 1.0:
        raise ValueError(f"step: expected {MIN_INTERVAL_STEP:g} <= step <= 1, got {step}")
    n_steps = int(np.floor(1.0 / step + _ROUND_OFF))
    return np.round(np.arange(n_steps + 1) * step, 12)


def _widths(widths):
    try:
        w = np.asarray(widths, dtype=np.float64)
    except (TypeError, ValueError):
        w = None
    if w is None or w.ndim > 1 or w.size == 0:
        raise ValueError(f"widths: expected a non-empty sequence of numbers, got {widths!r}")
    if not np.all(np.isfinite(w)) or np.any(w <= 0.0) or np.any(w > 1.0):
        raise ValueError(f"widths: every width must be in (0, 1], got {w.tolist()}")
    return np.unique(w.reshape(-1))


def choose_interval(y_score, *, sensitive_features, rate=None, threshold=0.0, widths=(0.25, 0.3),
                    step=0.05) -> IntervalChoice:
    r"""Pick the rank band :math:`\mathcal I` on which unconstrained scores are the most unfair.

    The rule of He, Huang, Yao & Lin [HHYL25] §4 ("How to choose :math:`\mathcal I`"): cover a
    positive-decision rate :math:`p` — a historical rate when one is known, else the fraction of
    the unconstrained model's scores above the decision threshold,
    :math:`p = \Pr(h_{\mathbf w^*}(\xi) > \hat\theta)` — and among the candidate intervals that
    cover it take the one with the largest :func:`partial_dp` of the unconstrained scores.

    Candidates are :math:`[\alpha, \beta)` with :math:`\alpha, \beta` multiples of ``step`` in
    :math:`[0, 1]`, :math:`\beta - \alpha` one of ``widths`` (up to float round-off) and
    :math:`\alpha \le p < \beta` (or :math:`\beta = 1 = p`, so that a rate of 1 is covered).
    Ties go to the first candidate in the order (:math:`\alpha` ascending, width ascending).
    The defaults (widths 0.25 and 0.3 on a 5% grid) are the shapes of the paper's intervals
    :math:`[5\%, 30\%]`, :math:`[0\%, 25\%]` and :math:`[70\%, 100\%]`.

    Parameters
    ----------
    y_score : array-like of shape (n,)
        Scores of the unconstrained model (on the training data).
    sensitive_features : array-like of shape (n,)
        Group labels (integers, bools or strings), at least two distinct values.
    rate : float in [0, 1], optional
        :math:`p`; by default the fraction of all ``y_score`` above ``threshold``.
    threshold : float
        :math:`\hat\theta` defining the default rate.
    widths : sequence of float in (0, 1]
        Allowed widths :math:`\beta - \alpha`.
    step : float in [0.001, 1]
        Grid of the interval ends.

    Returns
    -------
    IntervalChoice

    Raises
    ------
    ValueError
        When no candidate exists (``widths`` not multiples of ``step``, or none long enough to
        fit), besides the argument checks.
    """
    s, codes, n_groups = _checked(y_score, sensitive_features)
    t = _threshold(threshold)
    if rate is None:
        p = float(np.mean(s > t))
    else:
        p = _threshold(rate, "rate")
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"rate: expected a value in [0, 1], got {p}")
    grid = _grid(step)
    w = _widths(widths)
    found = []                                   # (start index, width index, end index) of every candidate
    for j, width in enumerate(w):
        end = grid + width
        b = np.searchsorted(grid, end - _ROUND_OFF)      # the first grid point within round-off of start + width
        on_grid = b < grid.size
        on_grid[on_grid] = np.abs(grid[b[on_grid]] - end[on_grid]) <= _ROUND_OFF
        a = np.flatnonzero(on_grid)
        ends = grid[b[a]]
        covers = ((grid[a] <= p) & (p < ends)) | ((ends == 1.0) & (p == 1.0))
        found += [(int(i), j, int(k)) for i, k in zip(a[covers], b[a][covers])]
    found.sort()                                 # start ascending, then width ascending
    candidates = [(float(grid[i]), float(grid[k])) for i, _, k in found]
    if not candidates:
        raise ValueError(f"widths: no interval of width in {w.tolist()} with ends on multiples of "
                         f"step={step} covers the rate {p}")
    parts, thresholds = _sorted_by_group(s, codes, n_groups)
    ccdfs = [_ccdf(part, thresholds) for part in parts]  # shared by every candidate
    values = np.array([_clipped_gap(ccdfs, a, b) for a, b in candidates])
    values.flags.writeable = False
    best = int(np.argmax(values))  # the first maximum: the documented tie rule
    return IntervalChoice(interval=candidates[best], rate=p, candidates=tuple(candidates),
                          partial_dp_values=values)


@dataclass(frozen=True, eq=False)
class ScoreCCDFCurves:
    r"""Group CCDFs of the scores on a common threshold sweep ([HHYL25] Figure 2).

    Attributes
    ----------
    thresholds : ndarray of float64, shape (m + 2,)
        :math:`+\infty`, the distinct scores in decreasing order, :math:`-\infty` (read-only).
    ccdf : ndarray of float64, shape (G, m + 2)
        ``ccdf[k, j]`` :math:`= \bar F_k(\theta_j)`, the fraction of group :math:`k`'s scores
        :math:`> \theta_j`; row :math:`k` is the :math:`k`-th smallest group id. Each row rises
        from 0 to 1 (read-only).
    """

    thresholds: np.ndarray
    ccdf: np.ndarray


def score_ccdf_curves(y_score, *, sensitive_features) -> ScoreCCDFCurves:
    r"""Every group's CCDF :math:`\bar F_k(\theta)` as :math:`\theta` sweeps from :math:`+\infty` to :math:`-\infty`.

    The data of Figure 2 of He, Huang, Yao & Lin [HHYL25]: plotting ``ccdf[1]`` against
    ``ccdf[0]`` draws the curve :math:`(\bar F_1(\theta), \bar F_2(\theta))`, the diagonal where
    the groups are at parity; pDP on :math:`[\alpha, \beta)` measures how far the curve strays from
    the diagonal inside the square :math:`[\alpha, \beta]^2` (after clipping). The thresholds are
    every distinct score, where the steps are, so the curves are exact.

    Parameters
    ----------
    y_score : array-like of shape (n,)
        Finite real scores.
    sensitive_features : array-like of shape (n,)
        Group labels (integers, bools or strings), at least two distinct values.

    Returns
    -------
    ScoreCCDFCurves
    """
    s, codes, n_groups = _checked(y_score, sensitive_features)
    parts, thresholds = _sorted_by_group(s, codes, n_groups)
    descending = thresholds[::-1]
    ccdf = np.empty((n_groups, descending.shape[0] + 2))
    ccdf[:, 0] = 0.0
    ccdf[:, -1] = 1.0
    for k, part in enumerate(parts):
        ccdf[k, 1:-1] = _ccdf(part, descending)
    sweep = np.concatenate([[np.inf], descending, [-np.inf]])
    sweep.flags.writeable = False
    ccdf.flags.writeable = False
    return ScoreCCDFCurves(thresholds=sweep, ccdf=ccdf)
