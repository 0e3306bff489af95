r"""Extended-precision oracles for `fastcon._kernels._vecmath` and the smooth losses built on it.

NumPy's ``exp``/``log1p`` on ``np.longdouble`` (x87 80-bit here: 64-bit significand, 11 more bits
than float64), so rounding the oracle to float64 adds at most 2^-11 ulp: the error of a float64
result against these values is its error against the exact value, to within that margin.
"""
import numpy as np

LD = np.longdouble


def exp_minus(x):
    r""":math:`e^{-x}`."""
    return np.exp(-np.asarray(x, dtype=LD))


def log1p(e):
    r""":math:`\log(1 + e)`."""
    return np.log1p(np.asarray(e, dtype=LD))


def logistic(z):
    r""":math:`\phi(z) = \log(1 + e^{-z})` and :math:`\phi'(z) = -1/(1 + e^{z})`, without overflow."""
    z = np.asarray(z, dtype=LD)
    e = np.exp(-np.abs(z))
    value = np.log1p(e) + np.maximum(-z, LD(0))
    return value, np.where(z > 0, -e / (1 + e), -1 / (1 + e))


def sigmoid(z):
    r""":math:`\phi(z) = 1/(1 + e^{z})` and :math:`\phi'(z) = -\phi(z)(1 - \phi(z))`, each factor exact."""
    z = np.asarray(z, dtype=LD)
    e = np.exp(-np.abs(z))
    p = np.where(z > 0, e / (1 + e), 1 / (1 + e))        # phi
    q = np.where(z > 0, 1 / (1 + e), e / (1 + e))        # 1 - phi
    return p, -p * q


def ulp_error(got, exact):
    r"""``|got - exact|`` in units of the last place of ``exact`` rounded to float64.

    Where ``exact`` is subnormal in float64 (below 2^-1022) the unit is the smallest subnormal,
    ``5e-324``: a float64 result cannot be closer than that. Both zero (or both the same infinity)
    gives 0.
    """
    got = np.asarray(got, dtype=np.float64)
    exact = np.asarray(exact, dtype=LD)
    unit = np.maximum(np.spacing(np.abs(exact.astype(np.float64))), np.float64(5e-324))
    with np.errstate(invalid="ignore"):
        err = (np.abs(got.astype(LD) - exact) / unit.astype(LD)).astype(np.float64)
    return np.where(got == exact, 0.0, err)    # equal infinities: inf - inf would be NaN
