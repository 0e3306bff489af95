r"""Per-row kernels of linear models in score space: losses, smoothed group rates, 1-D transport.

A linear model's terms depend on the data only through the scores :math:`z = Xw + b`, so one
matrix-vector product serves the loss and every constraint, and their gradients meet in one
vector :math:`v = \partial F/\partial z` that a single :math:`X^\top v` turns into the gradient in
:math:`w` (`fastcon.problems.LinearModelProblem`). The kernels here are the :math:`O(n)` and
:math:`O(n\,m)` row loops between the two products:

* `weighted_margin_loss`: :math:`\sum_i c_i\,\phi(y_i z_i)` and :math:`v_i = c_i y_i \phi'(y_i z_i)`;
* `cell_sigmoid_sums`: :math:`S_{cj} = \sum_{i \in c} \sigma((z_i - \theta_j)/\tau)` for every cell
  :math:`c` (a group, or a group and a label) and threshold :math:`\theta_j`;
* `cell_sigmoid_vjp`: :math:`v_i \mathrel{+}= \tau^{-1}\sum_j C_{c(i) j}\,\sigma'((z_i - \theta_j)/\tau)`,
  the transpose of the previous map applied to the cell coefficients :math:`C`;
* `transport_gap`: the exact Wasserstein-1 distance between the empirical score laws of two row
  sets, :math:`\int_0^1 |Q_a(u) - Q_b(u)|\,du`, and its subgradient, by one merge of the sorted
  scores.

The sigmoid is evaluated with the branch-free ``exp_minus`` of `_vecmath`, the loss with
``margin_loss`` of `_losses`, so these rows have the same bits as every other fastcon kernel.
"""
import numpy as np

from ._jit import njit
from ._losses import margin_loss
from ._vecmath import exp_minus

__all__ = ["weighted_margin_loss", "cell_sigmoid_sums", "cell_sigmoid_vjp", "transport_gap"]


@njit(inline="always")
def _sigmoid(t):
    r""":math:`\sigma(t) = 1/(1 + e^{-t})` without overflow (``exp_minus`` of :math:`|t|`)."""
    e = exp_minus(abs(t))
    s = 1.0 / (1.0 + e)
    return s if t >= 0.0 else e * s


@njit(cache=True)
def weighted_margin_loss(loss, z, y, weight, v):
    r""":math:`\sum_i c_i \phi(y_i z_i)`; writes :math:`v_i = c_i y_i \phi'(y_i z_i)`.

    Parameters
    ----------
    loss : int
        A loss code of `fastcon._kernels._losses` (``HINGE``, ``LOGISTIC``, ...).
    z, y, weight : float64[n]
        Scores, labels in {-1, +1}, row weights :math:`c_i \ge 0` (0 leaves the row out).
    v : float64[n]
        Output, overwritten.
    """
    total = 0.0
    for i in range(z.shape[0]):
        c = weight[i]
        if c == 0.0:
            v[i] = 0.0
            continue
        phi, dphi = margin_loss(loss, y[i] * z[i])
        total += c * phi
        v[i] = c * y[i] * dphi
    return total


@njit(cache=True)
def cell_sigmoid_sums(z, cell, inv_tau, thresholds, sums):
    r""":math:`S_{cj} = \sum_{i:\,c(i) = c}\sigma((z_i - \theta_j)/\tau)`, written into ``sums`` (n_cells, m).

    Rows with a negative cell id belong to no cell and are skipped.
    """
    sums[:, :] = 0.0
    m = thresholds.shape[0]
    for i in range(z.shape[0]):
        c = cell[i]
        if c < 0:
            continue
        for j in range(m):
            sums[c, j] += _sigmoid((z[i] - thresholds[j]) * inv_tau)


@njit(cache=True)
def cell_sigmoid_vjp(z, cell, inv_tau, thresholds, coef, active, v):
    r""":math:`v_i \mathrel{+}= \tau^{-1}\sum_{j \in J} C_{c(i) j}\,\sigma'((z_i - \theta_j)/\tau)`.

    Parameters
    ----------
    coef : float64[n_cells, m]
        The cell coefficients :math:`C` (the vector-Jacobian product of the rates).
    active : int64[k]
        The thresholds :math:`J` with a non-zero column of ``coef`` (the others add nothing).
    """
    for i in range(z.shape[0]):
        c = cell[i]
        if c < 0:
            continue
        acc = 0.0
        for jj in range(active.shape[0]):
            j = active[jj]
            a = coef[c, j]
            if a != 0.0:
                s = _sigmoid((z[i] - thresholds[j]) * inv_tau)
                acc += a * s * (1.0 - s)
        v[i] += acc * inv_tau


@njit(cache=True)
def transport_gap(z, rows_a, rows_b, coef, v):
    r"""Wasserstein-1 distance between the score laws of ``rows_a`` and ``rows_b``; with ``coef != 0``
    adds ``coef`` times its subgradient to ``v``.

    .. math::

        W_1 = \int_0^1 |Q_a(u) - Q_b(u)|\,du,\qquad
        \frac{\partial W_1}{\partial z_{a,(k)}} = \int_{(k-1)/n_a}^{k/n_a}\mathrm{sign}(Q_a - Q_b)\,du,

    with :math:`Q` the empirical quantile functions and :math:`z_{a,(k)}` the k-th smallest score of
    ``rows_a`` (and symmetrically for b, with the opposite sign). The quantile breakpoints
    :math:`k/n_a` and :math:`l/n_b` are merged in integer units of :math:`1/(n_a n_b)`, so every
    interval length is exact.
    """
    na = rows_a.shape[0]
    nb = rows_b.shape[0]
    za = np.empty(na)
    zb = np.empty(nb)
    for k in range(na):
        za[k] = z[rows_a[k]]
    for k in range(nb):
        zb[k] = z[rows_b[k]]
    oa = np.argsort(za, kind="mergesort")
    ob = np.argsort(zb, kind="mergesort")
    scale = 1.0 / (float(na) * float(nb))
    total = 0.0
    ka = 0
    kb = 0
    pos = 0
    while ka < na and kb < nb:
        end_a = (ka + 1) * nb
        end_b = (kb + 1) * na
        end = end_a if end_a < end_b else end_b
        width = (end - pos) * scale
        d = za[oa[ka]] - zb[ob[kb]]
        total += width * abs(d)
        if coef != 0.0 and d != 0.0:
            s = coef * width if d > 0.0 else -coef * width
            v[rows_a[oa[ka]]] += s
            v[rows_b[ob[kb]]] -= s
        pos = end
        if end_a == end:
            ka += 1
        if end_b == end:
            kb += 1
    return total
