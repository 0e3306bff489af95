r"""NumPy reference of the multi-class Neyman-Pearson class loss ([MLY20] eq. 11).

Dense matrix algebra, one expression per formula:

.. math::

    S = A_k W^\top,\quad M_{il} = S_{ik} - S_{il},\quad
    L_k = \sigma \sum_i s_i \sum_{l\ne k}\phi(M_{il}),\quad
    \nabla_W L_k = \sigma B^\top \operatorname{diag}(s) A_k,

with :math:`B_{il} = -\phi'(M_{il})` for :math:`l \ne k` and :math:`B_{ik} = \sum_{l\ne k}\phi'(M_{il})`.
``X`` may be scipy sparse or dense; ``rows=None`` means every row of the class block. With
``intercept`` the rows get a last column of ones (stacked here, as the oracle; the kernels keep it
implicit) and ``W`` has d + 1 columns.
"""
import numpy as np
import scipy.sparse as sp

from .kernels import LOSSES


def class_loss_value_grad(X_k, W, k, loss="sigmoid", weights=None, scale=None, rows=None, intercept=False):
    r"""Value and gradient (C x d) of :math:`L_k` over the rows ``rows`` of the class block ``X_k``.

    ``scale`` defaults to ``1 / |R|`` (the plain mean over the visited rows); ``intercept`` appends
    a column of ones to ``X_k`` (gradient C x (d + 1)).
    """
    A = X_k.toarray() if sp.issparse(X_k) else np.asarray(X_k, dtype=np.float64)
    if intercept:
        A = np.hstack([A, np.ones((A.shape[0], 1))])
    idx = np.arange(A.shape[0]) if rows is None else np.asarray(rows, dtype=np.int64)
    A = A[idx]
    s = np.ones(idx.size) if weights is None else np.asarray(weights)[idx]
    scale = 1.0 / idx.size if scale is None else scale
    S = A @ W.T
    M = S[:, [k]] - S
    phi, dphi = LOSSES[loss](M)
    others = np.arange(W.shape[0]) != k
    value = scale * np.sum(s[:, None] * phi[:, others])
    B = np.zeros_like(S)
    B[:, others] = -dphi[:, others]
    B[:, k] = dphi[:, others].sum(axis=1)
    grad = scale * (B * s[:, None]).T @ A
    return value, grad


def class_losses(X, y, W, loss="sigmoid", intercept=False):
    """All class losses :math:`(L_0, ..., L_{C-1})` of a labelled dataset (class means, unweighted)."""
    return np.array([class_loss_value_grad(X[np.flatnonzero(y == k)], W, k, loss, intercept=intercept)[0]
                     for k in range(W.shape[0])])
