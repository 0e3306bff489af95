r"""Fused vector updates for the long iterates of the Wasserstein problem (:math:`x = (\mathrm{vec}\,P, w)`).

On COMPAS the iterate has :math:`m^2 + d` = 478,880 entries (3.8 MB, beyond L2). Written in NumPy,
the proximal term :math:`\frac{\hat\rho}2\|x - c\|^2` and its gradient took three passes and two
3.8 MB temporaries per call, and a fresh temporary of that size is an ``mmap`` whose pages fault in
on first touch. The kernels below make one pass and allocate nothing, with the same bits
(measured: docs/measurements.md).

Rounding: ``out[i] += rho * (x[i] - c[i])`` is evaluated exactly as NumPy's
``out += rho * (x - c)`` (no fused multiply-add: ``fastmath`` is off except for reassociating the
sum of squares, whose order is fixed for a given machine).
"""
import numpy as np

from ._jit import njit
from ._linalg import JIT

__all__ = ["proximal_value", "proximal_add", "axpy", "conex_primal_step", "linearized_values"]

_JIT_SUM = dict(JIT, fastmath={"reassoc"})


@njit(**_JIT_SUM)
def proximal_value(x, center, rho):
    r""":math:`\frac{\rho}{2}\|x - c\|^2`."""
    s = 0.0
    for i in range(np.uint64(x.size)):
        t = x[i] - center[i]
        s += t * t
    return 0.5 * rho * s


@njit(**_JIT_SUM)
def proximal_add(x, center, rho, out):
    r""":math:`\frac{\rho}{2}\|x - c\|^2`, and ``out += rho (x - c)`` in the same pass."""
    s = 0.0
    for i in range(np.uint64(x.size)):
        t = x[i] - center[i]
        s += t * t
        out[i] += rho * t
    return 0.5 * rho * s


@njit(**JIT)
def axpy(a, x, y):
    """``y += a * x`` in place (BLAS ``daxpy`` may contract to FMA; this never does)."""
    for i in range(np.uint64(x.size)):
        y[i] += a * x[i]


@njit(**JIT)
def conex_primal_step(x, x_prev, f_grad, G, y, eta):
    r"""ConEx primal step before projection: ``x_prev = x``; :math:`x \leftarrow x - \eta(f' + \sum_i y_i g_i')`.

    One pass over ``x``, ``f_grad`` and the rows of ``G`` (m×d) instead of six NumPy passes; for one
    constraint the rounding equals NumPy's ``x -= eta * (y @ G + f_grad)``.
    """
    m = G.shape[0]
    for j in range(np.uint64(x.size)):
        s = 0.0
        if m > 0:
            s = y[0] * G[0, j]
            for i in range(1, m):
                s += y[i] * G[i, j]
        x_prev[j] = x[j]
        x[j] = x[j] - (s + f_grad[j]) * eta


@njit(**_JIT_SUM)
def linearized_values(G, x, x_prev, g, out):
    r""":math:`\ell_i = g_i + g_i'^\top(x - x_{prev})`, the linearized constraint values of ConEx (one pass per row)."""
    m = G.shape[0]
    for i in range(m):
        s = 0.0
        for j in range(np.uint64(x.size)):
            s += G[i, j] * (x[j] - x_prev[j])
        out[i] = g[i] + s
