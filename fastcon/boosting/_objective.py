r"""The prox-subproblem objective of Lin & Deng [LD23] as XGBoost / LightGBM custom-objective callables.

On the training scores :math:`F` the subproblem of ABPP (Algorithm 1, line 6) and of CBPR's inner
ABPP (subproblem (4.2)) is

.. math::

    \psi(F) = \sum_i W_i\,\ell_i(F_i) + \frac c2\|F - F^t\|^2 + \frac{1}{2\tau}\|F - F^k\|^2,

with the logistic or softmax cross-entropy :math:`\ell_i` and Lagrangian weights :math:`W_i` of
either sign (folded into the gradient, never passed as a library ``sample_weight``). The callables
return its gradient and floored Hessian diagonal ([LD23] §3 and §4), computed by the kernels of
`fastcon._kernels._boosting`. Design notes: docs/design.md, 'Module notes'.
"""
from __future__ import annotations

import numbers

import numpy as np

from .._kernels import _boosting as _kernels
from ..solvers._validation import check_real

__all__ = ["xgboost_objective", "lightgbm_objective", "ProxObjective"]


def _check_labels(labels, n_classes):
    y = np.asarray(labels)
    if y.ndim != 1 or y.size == 0:
        raise ValueError(f"labels: expected a non-empty 1-D array, got shape {y.shape}")
    if not (np.issubdtype(y.dtype, np.integer) or np.issubdtype(y.dtype, np.bool_)):
        if not np.issubdtype(y.dtype, np.floating) or not np.all(np.isfinite(y)) or np.any(y != np.round(y)):
            raise ValueError(f"labels: expected class ids 0..J-1 (integers), got dtype {y.dtype}")
    y = y.astype(np.int64)
    if n_classes is None:
        n_classes = max(2, int(y.max()) + 1)
    elif (isinstance(n_classes, (bool, np.bool_)) or not isinstance(n_classes, (numbers.Integral, np.integer))
          or n_classes < 2):
        raise ValueError(f"n_classes: expected an integer >= 2, got {n_classes!r}")
    n_classes = int(n_classes)
    if y.min() < 0 or y.max() >= n_classes:
        bad = y[(y < 0) | (y >= n_classes)][0]
        raise ValueError(f"labels: class id {bad} out of range [0, {n_classes})")
    return y, n_classes


def _check_scores(name, value, shape):
    F = np.ascontiguousarray(value, dtype=np.float64)
    if F.shape != shape:
        raise ValueError(f"{name}: expected shape {shape}, got {F.shape}")
    if not np.all(np.isfinite(F)):
        raise ValueError(f"{name}: must be finite")
    return F


class ProxObjective:
    r"""Gradient and Hessian diagonal of :math:`\psi` (module docstring) at given scores.

    Parameters
    ----------
    labels : array-like of int, shape (n,)
        Class ids: 0/1 for two classes, 0..J-1 for J classes.
    weights : array-like, shape (n,), optional
        :math:`W_i`, any sign; default 1.
    n_classes : int, optional
        J; default ``max(labels) + 1`` (at least 2). Two classes have scores of shape (n,),
        J >= 3 classes of shape (n, J).
    anchor : array-like, optional
        :math:`F^k`, the scores' shape; needed when ``inv_tau > 0``.
    inv_tau : float
        :math:`1/\tau \ge 0`.
    anchor_t : array-like, optional
        :math:`F^t`; needed when ``c > 0``.
    c : float
        :math:`c \ge 0`.

    Notes
    -----
    Calling the object with scores ``F`` returns ``(grad, hess)`` of ``F``'s shape, in buffers that
    the next call overwrites (the libraries copy them before asking again).
    """

    def __init__(self, labels, weights=None, *, n_classes=None, anchor=None, inv_tau=0.0, anchor_t=None, c=0.0):
        self.labels, self.n_classes = _check_labels(labels, n_classes)
        n = self.labels.size
        self.shape = (n,) if self.n_classes == 2 else (n, self.n_classes)
        if weights is None:
            self.weights = np.ones(n)
        else:
            self.weights = _check_scores("weights", weights, (n,))
        self.inv_tau = check_real("inv_tau", inv_tau)
        self.c = check_real("c", c)
        if anchor is None and self.inv_tau > 0:
            raise ValueError("anchor: the prox term inv_tau > 0 needs the anchor scores F^k")
        # a None anchor drops its term inside the kernels (pruned at compile time)
        self.anchor = None if anchor is None else _check_scores("anchor", anchor, self.shape)
        if anchor_t is None and self.c > 0:
            raise ValueError("anchor_t: the prox term c > 0 needs the anchor scores F^t")
        self.anchor_t = None if anchor_t is None else _check_scores("anchor_t", anchor_t, self.shape)
        self.grad = np.empty(self.shape)
        self.hess = np.empty(self.shape)

    def __call__(self, scores, name="scores"):
        F = np.asarray(scores, dtype=np.float64)
        if F.shape != self.shape:
            if self.n_classes == 2 and F.shape == (self.shape[0], 1):   # a library that keeps a class axis
                F = F[:, 0]
            else:
                raise ValueError(f"{name}: expected shape {self.shape} (the objective's {self.shape[0]} rows), "
                                 f"got {F.shape}")
        F = np.ascontiguousarray(F)
        if self.n_classes == 2:
            _kernels.logistic_grad_hess(F, self.labels, self.weights, self.anchor, self.inv_tau, self.anchor_t, self.c,
                                        self.grad, self.hess)
        else:
            _kernels.softmax_grad_hess(F, self.labels, self.weights, self.anchor, self.inv_tau, self.anchor_t,
                                       self.c, self.grad, self.hess)
        return self.grad, self.hess

    def value(self, scores):
        r""":math:`\psi(F)` (stable per-row losses; for tests and monitoring)."""
        F = _check_scores("scores", scores, self.shape)
        losses = np.empty(self.shape[0])
        if self.n_classes == 2:
            _kernels.logistic_losses(F, self.labels, losses)
        else:
            _kernels.softmax_losses(F, self.labels, losses)
        value = float(self.weights @ losses)
        if self.anchor is not None:
            value += 0.5 * self.inv_tau * float(np.sum((F - self.anchor) ** 2))
        if self.anchor_t is not None:
            value += 0.5 * self.c * float(np.sum((F - self.anchor_t) ** 2))
        return value


def xgboost_objective(labels, weights=None, *, n_classes=None, anchor=None, inv_tau=0.0, anchor_t=None, c=0.0):
    r"""The prox-subproblem objective as XGBoost's custom objective, ``obj(predt, dtrain) -> (grad, hess)``.

    Pass it to ``xgboost.train(params, dtrain, num_boost_round, obj=...)`` with
    ``params["base_score"] = 0`` and ``num_class=J`` for J >= 3 classes (``predt`` then has
    shape (n, J), as XGBoost >= 2.0 hands it over). ``predt`` is the margin XGBoost holds for
    ``dtrain``, its ``base_margin`` included: set the training scores :math:`F^k` to start from with
    ``dtrain.set_base_margin(F_k)`` and pass the same array as ``anchor``.

    Parameters
    ----------
    labels, weights, n_classes, anchor, inv_tau, anchor_t, c
        As in `ProxObjective`: :math:`\psi(F) = \sum_i W_i\ell_i(F_i) + \frac c2\|F - F^t\|^2 +
        \frac{\text{inv\_tau}}{2}\|F - F^k\|^2` on the n rows of ``dtrain``, in order.

    Returns
    -------
    callable
        ``obj(predt, dtrain)``; ``predt`` of another number of rows is a ValueError naming it.

    Examples
    --------
    See docs/guide/boosting.md ("Your own training loop").
    """
    prox = ProxObjective(labels, weights, n_classes=n_classes, anchor=anchor, inv_tau=inv_tau, anchor_t=anchor_t,
                         c=c)

    def objective(predt, dtrain):
        return prox(predt, "predt")

    objective.prox = prox
    return objective


def lightgbm_objective(labels, weights=None, *, n_classes=None, anchor=None, inv_tau=0.0, anchor_t=None, c=0.0):
    r"""The prox-subproblem objective as LightGBM's custom objective, ``objective(preds, train_data) -> (grad, hess)``.

    Pass it as ``params["objective"]`` of ``lightgbm.train`` (LightGBM >= 4), with
    ``num_class=J`` for J >= 3 classes (``preds`` then has shape (n, J)). ``preds`` includes the
    Dataset's ``init_score``: build the Dataset with ``init_score=F_k`` (the training scores to
    start from) and pass the same array as ``anchor``. LightGBM's ``predict`` never adds the
    init score: the model of the scores is ``F_k`` (itself a sum of earlier boosters) plus the new
    booster's raw prediction.

    Parameters
    ----------
    labels, weights, n_classes, anchor, inv_tau, anchor_t, c
        As in `xgboost_objective`.

    Returns
    -------
    callable
        ``objective(preds, train_data)``.
    """
    prox = ProxObjective(labels, weights, n_classes=n_classes, anchor=anchor, inv_tau=inv_tau, anchor_t=anchor_t,
                         c=c)

    def objective(preds, train_data):
        return prox(preds, "preds")

    objective.prox = prox
    return objective
