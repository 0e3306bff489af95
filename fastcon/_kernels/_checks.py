r"""Input scans for the oracles' argument checks.

:func:`all_finite` replaces ``np.all(np.isfinite(x))`` in `fastcon.problems._validation.check_x`,
which every term's oracle runs on its point. A double is NaN or infinite exactly when its 11
exponent bits are all ones, so the scan takes the unsigned minimum of
``(bits & EXP) ^ EXP`` over the vector: it is 0 iff some entry is not finite. An unsigned-minimum
reduction vectorises (integer reductions may be reordered; a floating-point test such as
``x - x == 0`` summed would not be), and nothing is allocated; about twice as fast as NumPy's
``isfinite`` + ``all`` (docs/measurements.md).
"""
import numpy as np

from ._jit import njit
from ._linalg import JIT

__all__ = ["all_finite", "finite_span"]

_EXPONENT = np.uint64(0x7FF0000000000000)
_ALL_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


@njit(inline="always")
def finite_span(x, lo, hi):
    """True iff no entry of ``x[lo:hi]`` (contiguous 1-D float64) is NaN or infinite; for kernels
    that check their part of a point inside a parallel region."""
    bits = x.view(np.uint64)
    smallest = _ALL_ONES
    for i in range(lo, hi):
        smallest = min(smallest, (bits[i] & _EXPONENT) ^ _EXPONENT)
    return smallest != 0


@njit(**JIT)
def all_finite(x):
    """True iff no entry of the contiguous 1-D float64 array ``x`` is NaN or infinite (True when empty)."""
    return finite_span(x, 0, x.shape[0])
