r"""Plain NumPy references for the Bregman-prox boosting kernels (`fastcon._kernels._boosting`).

One obvious expression per formula of Lin & Deng [LD23] (§3 custom objectives), no fastcon code.
Two quantities are written without cancellation so that the references stay exact where the scores
are extreme (the kernels promise that too): :math:`1 - p` is the sum of the *other* classes'
probabilities (a product with the all-ones-but-the-diagonal matrix), and the binary
:math:`p - y` and :math:`p(1 - p)` come from ``expit`` of the signed score.
"""
import numpy as np
from scipy.special import expit

HESSIAN_FLOOR = 1e-16


def _prox_terms(F, anchor_k, inv_tau, anchor_t, c):
    """The anchors' gradient and curvature: :math:`c(F - F^t) + \\tau^{-1}(F - F^k)`, :math:`c + \\tau^{-1}`
    (a term whose anchor is None is absent)."""
    grad, curv = np.zeros_like(F), 0.0
    if anchor_t is not None:
        grad = grad + c * (F - anchor_t)
        curv += c
    if anchor_k is not None:
        grad = grad + inv_tau * (F - anchor_k)
        curv += inv_tau
    return grad, curv


def logistic_grad_hess(F, y, W, anchor_k, inv_tau, anchor_t, c):
    r""":math:`g = W(p - y) + c(F - F^t) + \tau^{-1}(F - F^k)`, :math:`h = \max(Wp(1-p) + c + \tau^{-1}, 10^{-16})`."""
    p, one_minus_p = expit(F), expit(-F)
    p_minus_y = np.where(y == 1, -one_minus_p, p)
    prox, curv = _prox_terms(F, anchor_k, inv_tau, anchor_t, c)
    return W * p_minus_y + prox, np.maximum(W * p * one_minus_p + curv, HESSIAN_FLOOR)


def softmax_probabilities(F):
    """``(p, 1 - p)`` row by row, the second as the sum of the other classes' probabilities."""
    e = np.exp(F - F.max(axis=1, keepdims=True))
    total = e.sum(axis=1, keepdims=True)
    others = e @ (1.0 - np.eye(F.shape[1]))
    return e / total, others / total


def softmax_grad_hess(F, b, W, anchor_k, inv_tau, anchor_t, c):
    r""":math:`g_{ij} = W_i(p_{ij} - [j = b_i]) + \dots`, :math:`h_{ij} = \max(W_i p_{ij}(1 - p_{ij}) + c + \tau^{-1}, 10^{-16})`."""
    p, one_minus_p = softmax_probabilities(F)
    onehot = np.arange(F.shape[1])[None, :] == b[:, None]
    p_minus_y = np.where(onehot, -one_minus_p, p)
    prox, curv = _prox_terms(F, anchor_k, inv_tau, anchor_t, c)
    return W[:, None] * p_minus_y + prox, np.maximum(W[:, None] * p * one_minus_p + curv, HESSIAN_FLOOR)


def logistic_losses(F, y):
    r""":math:`\ell_i = \log(1 + e^{F_i}) - y_i F_i = \log(1 + e^{-s_i F_i})`, :math:`s_i = 2y_i - 1`."""
    return np.logaddexp(0.0, -np.where(y == 1, F, -F))


def softmax_losses(F, b):
    r""":math:`\ell_i = \log\sum_j e^{F_{ij}} - F_{ib_i} = (m_i - F_{ib_i}) + \log\sum_j e^{F_{ij} - m_i}`
    (:math:`m_i` the row maximum: ``scipy.special.logsumexp`` rounds :math:`m_i` + a small logarithm
    first, which loses the small part at :math:`|F| = 10^4`); for :math:`p_{ib_i} > 1/2` as
    :math:`-\log(1 - q)` with :math:`q` the other classes' probability (``log1p``, no cancellation)."""
    rows = np.arange(F.shape[0])
    m = F.max(axis=1)
    shifted = (m - F[rows, b]) + np.log(np.exp(F - m[:, None]).sum(axis=1))
    q = softmax_probabilities(F)[1][rows, b]
    with np.errstate(divide="ignore"):
        return np.where(q < 0.5, -np.log1p(-q), shifted)


def psi(F, y_or_b, W, anchor_k, inv_tau, anchor_t, c):
    r""":math:`\psi(F) = \sum_i W_i\ell_i + \frac c2\lVert F - F^t\rVert^2 + \frac{1}{2\tau}\lVert F - F^k\rVert^2`
    (binary when ``F`` is 1-D), the function whose gradient and Hessian diagonal the kernels return."""
    loss = logistic_losses(F, y_or_b) if F.ndim == 1 else softmax_losses(F, y_or_b)
    value = np.sum(W * loss)
    if anchor_t is not None:
        value += 0.5 * c * np.sum((F - anchor_t) ** 2)
    if anchor_k is not None:
        value += 0.5 * inv_tau * np.sum((F - anchor_k) ** 2)
    return value


def segment_sums(values, codes, n_codes):
    """Sums per code (``np.bincount`` with weights)."""
    return np.bincount(codes, weights=values, minlength=n_codes)[:n_codes]


def segment_means(values, codes, n_codes):
    """Means per code, NaN for a code with no sample."""
    counts = np.bincount(codes, minlength=n_codes)[:n_codes]
    with np.errstate(invalid="ignore", divide="ignore"):
        return segment_sums(values, codes, n_codes) / counts
