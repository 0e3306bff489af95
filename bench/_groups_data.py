r"""A synthetic two-group problem whose population rates are known exactly (issue 34's benchmarks).

Like ``make_groups_data`` of tests/test_estimators.py, with a minority group and more features:

* the group :math:`g \in \{0, 1\}` is 1 (the minority) with probability ``minority``;
* the label: :math:`P(y = 1 \mid g) = ` ``base_rates[g]``;
* five Gaussian features :math:`x_j = a_j (2y - 1) + c_j g + \varepsilon_j`,
  :math:`\varepsilon_j \sim N(0, 1)` independent (``SIGNAL`` = :math:`a`, ``SHIFT`` = :math:`c`),
  then the group indicator itself as a sixth column.

For a linear rule :math:`w^\top x + b > 0` the score given :math:`(g, y)` is normal with mean
:math:`\sum_j w_j (a_j (2y - 1) + c_j g) + w_6 g + b` and standard deviation
:math:`\lVert w_{1..5} \rVert`, so every group rate, the population gap of demographic parity or
equal opportunity, the type-I error and the accuracy are normal probabilities (`population_rates`):
no sample noise in what a benchmark calls the population's value. Checked against 2,000,000
fresh rows (the sampled gaps agree to about 0.002, their own noise).
"""
from __future__ import annotations

import numpy as np
from scipy.stats import norm

__all__ = ["make_groups", "population_rates", "population_gap", "population_type1", "population_accuracy",
           "MINORITY", "BASE_RATES"]

SIGNAL = np.array([0.7, 0.4, 0.3, 0.2, 0.0])
SHIFT = np.array([0.8, 0.5, 0.0, -0.3, 0.5])
MINORITY = 0.25
BASE_RATES = (0.35, 0.2)


def make_groups(n, seed, minority=MINORITY, base_rates=BASE_RATES):
    """``(X, y, g)``: float64 features of shape (n, 6) (the last is ``g``), labels and groups in {0, 1}."""
    rng = np.random.default_rng(seed)
    g = (rng.random(n) < minority).astype(np.int64)
    y = (rng.random(n) < np.asarray(base_rates)[g]).astype(np.int64)
    X = (2 * y - 1)[:, None] * SIGNAL + g[:, None] * SHIFT + rng.standard_normal((n, SIGNAL.size))
    return np.column_stack([X, g.astype(np.float64)]), y, g


def population_rates(coef, intercept):
    """``rate[g, y]`` = :math:`P(w^\\top x + b > 0 \\mid g, y)`, exactly."""
    w = np.ravel(coef)
    b = float(np.ravel(intercept)[0]) if np.ndim(intercept) else float(intercept)
    sd = float(np.linalg.norm(w[:SIGNAL.size]))
    rate = np.empty((2, 2))
    for g in (0, 1):
        for y in (0, 1):
            mean = w[:SIGNAL.size] @ (SIGNAL * (2 * y - 1) + SHIFT * g) + w[SIGNAL.size] * g + b
            rate[g, y] = norm.cdf(mean / sd) if sd > 0 else float(mean > 0)
    return rate


def population_gap(constraint, rate, base_rates=BASE_RATES):
    """The population gap of ``"demographic_parity"`` or ``"equal_opportunity"`` from `population_rates`."""
    p = np.asarray(base_rates)
    if constraint == "demographic_parity":
        selection = (1 - p) * rate[:, 0] + p * rate[:, 1]
        return float(abs(selection[0] - selection[1]))
    if constraint == "equal_opportunity":
        return float(abs(rate[0, 1] - rate[1, 1]))
    raise ValueError(f"constraint: {constraint!r} has no closed form here")


def population_type1(rate, minority=MINORITY, base_rates=BASE_RATES):
    """:math:`P(\\hat y = 1 \\mid y = 0)` over the population."""
    share = np.array([1 - minority, minority]) * (1 - np.asarray(base_rates))
    return float(share @ rate[:, 0] / share.sum())


def population_accuracy(rate, minority=MINORITY, base_rates=BASE_RATES):
    """:math:`P(\\hat y = y)` over the population."""
    group, p = np.array([1 - minority, minority]), np.asarray(base_rates)
    return float(group @ ((1 - p) * (1 - rate[:, 0]) + p * rate[:, 1]))
