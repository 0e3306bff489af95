r"""Branch-free :math:`e^{-x}` and :math:`\log(1 + e)` that LLVM vectorises (no SVML here).

A loop that calls libm's ``exp`` or ``log1p`` stays scalar, so the fused loss passes use these
plain-arithmetic versions (Cody-Waite reduction, polynomials, bit patterns, selects,
``np.true_divide``). :func:`exp_minus` is within 1.2 ulp over :math:`[0, \infty]`, :func:`log1p_unit`
within 1 ulp over :math:`[0, 1]`; NaN gives NaN. Both are ``inline="always"`` building blocks.
Design notes: docs/design.md, 'Module notes'; measurements: docs/measurements.md.
"""
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from ._jit import njit

__all__ = ["exp_minus", "log1p_unit"]


@intrinsic
def _bits_as_float(typingctx, bits):
    """The float64 whose IEEE-754 bit pattern is the int64 ``bits`` (an LLVM bitcast)."""
    sig = types.float64(types.int64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return sig, codegen


_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01   # high bits of ln 2 (k * _LN2_HI is exact for |k| < 2^11)
_LN2_LO = 1.90821492927058770002e-10   # ln 2 - _LN2_HI
_ROUND = 6755399441055744.0            # 1.5 * 2^52: (t + _ROUND) - _ROUND rounds t to an integer
_X_MAX = 746.0                         # e^{-746} < 2^{-1075}: rounds to 0


@njit(inline="always")
def exp_minus(x):
    r""":math:`e^{-x}` for :math:`x \ge 0` (or NaN), branch-free so that loops over it vectorise.

    :math:`x = k \ln 2 + r` with :math:`|r| \le \ln(2)/2` (Cody-Waite: :math:`k \ln 2` in two
    parts), :math:`e^{-r}` by its degree-13 Taylor polynomial (truncation below
    :math:`10^{-17}`), and :math:`2^{-k}` as the product of two powers of two built from their bit
    patterns, so subnormal results round once. Within 1.2 ulp of :math:`e^{-x}` (tested against
    extended precision); +inf gives 0, NaN gives NaN. Timings: module notes.
    """
    xc = _X_MAX if x > _X_MAX else x          # NaN stays NaN
    kf = (xc * _LOG2E + _ROUND) - _ROUND
    kf = kf if kf <= 1100.0 else 0.0         # NaN -> 0: keeps the integer conversion defined
    r = (kf * _LN2_HI - xc) + kf * _LN2_LO   # -(x - k ln 2)
    # sum_{j<=13} r^j / j!: the small tail j >= 4 by Estrin's scheme (shorter dependency chains, 14%
    # faster), the four leading terms by Horner's rule, which keeps the rounding error near 1 ulp.
    r2 = r * r
    r4 = r2 * r2
    t01 = (1.0 / 24.0 + r * (1.0 / 120.0)) + r2 * (1.0 / 720.0 + r * (1.0 / 5040.0))
    t23 = (1.0 / 40320.0 + r * (1.0 / 362880.0)) + r2 * (1.0 / 3628800.0 + r * (1.0 / 39916800.0))
    t4 = 1.0 / 479001600.0 + r * (1.0 / 6227020800.0)
    p = 1.0 / 6.0 + r * (t01 + r4 * (t23 + r4 * t4))
    p = 0.5 + r * p
    p = 1.0 + r * p
    p = 1.0 + r * p
    k = np.int64(kf)
    k1 = k >> 1
    return p * _bits_as_float((1023 - k1) << 52) * _bits_as_float((1023 - (k - k1)) << 52)


@njit(inline="always")
def log1p_unit(e):
    r""":math:`\log(1 + e)` for :math:`0 \le e \le 1` (or NaN), branch-free so that loops over it vectorise.

    The range of the logistic loss: :math:`\log(1 + e^{-|z|})` with ``e = exp_minus(|z|)``.
    Reduction without rounding: :math:`1 + e = 2^k (1 + f)` with :math:`k = 0, f = e` for
    :math:`e < 1/2` and :math:`k = 1, f = (e - 1)/2` (exact: :math:`e - 1` is exact for
    :math:`e \ge 1/2` by Sterbenz's lemma) otherwise, so :math:`f \in [-1/4, 1/2)`. Then, as in
    fdlibm's ``log`` (Sun Microsystems), with :math:`s = f/(2 + f) \in [-1/7, 1/5)`,

    .. math::

        \log(1 + f) = 2\,\mathrm{artanh}(s) = f - \tfrac12 f^2 + s\,(\tfrac12 f^2 + R),
        \qquad R = \sum_{j=1}^{11} \frac{2 s^{2j}}{2j + 1},

    where the exact leading term :math:`f` carries the result and the rounding of the small
    correction hardly shows. The series is truncated where :math:`s^{24}/25 < 10^{-18}` (a
    Taylor series rather than fdlibm's minimax fit, which holds for :math:`|s| \le 0.172` only).
    Adding :math:`k \ln 2` in two parts keeps :math:`\log 2` itself correctly rounded. Within
    1 ulp of :math:`\log(1 + e)` (tested against extended precision); ``log1p_unit(0) == 0``
    and NaN gives NaN. Outside :math:`[0, 1]` the result is not accurate (the callers never go
    there).
    """
    upper = e >= 0.5                           # NaN: False, and NaN propagates through f
    f = (e - 1.0) * 0.5 if upper else e
    kf = 1.0 if upper else 0.0
    s = np.true_divide(f, 2.0 + f)            # true_divide: `/` tests for a zero divisor (a branch)
    z = s * s
    z2 = z * z
    z4 = z2 * z2
    # R / z = sum_{j=1}^{11} 2 z^{j-1} / (2j + 1), by Estrin's scheme (short dependency chains)
    q01 = (2.0 / 3.0 + z * (2.0 / 5.0)) + z2 * (2.0 / 7.0 + z * (2.0 / 9.0))
    q23 = (2.0 / 11.0 + z * (2.0 / 13.0)) + z2 * (2.0 / 15.0 + z * (2.0 / 17.0))
    q4 = (2.0 / 19.0 + z * (2.0 / 21.0)) + z2 * (2.0 / 23.0)
    R = z * (q01 + z4 * (q23 + z4 * q4))
    hfsq = 0.5 * f * f
    return kf * _LN2_HI - ((hfsq - (s * (hfsq + R) + kf * _LN2_LO)) - f)
