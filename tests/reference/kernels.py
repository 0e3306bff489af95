r"""NumPy/SciPy references for every kernel in ``fastcon._kernels`` (linear algebra, losses, projections).

Written for clarity, not speed: one vectorised NumPy expression per formula. ``X`` is a scipy
sparse matrix or a dense array; ``rows=None`` means every row.
"""
import numpy as np


def _take(X, rows):
    return X if rows is None else X[np.asarray(rows, dtype=np.int64)]


def matvec(X, rows, w):
    r""":math:`(a_{r_j}^\top w)_j`."""
    return np.asarray(_take(X, rows) @ w, dtype=np.float64).ravel()


def rmatvec(X, rows, c):
    r""":math:`\sum_j c_j a_{r_j}` (repeated rows add up)."""
    return np.asarray(_take(X, rows).T @ c, dtype=np.float64).ravel()


def weighted_column_squares(X, rows, c):
    r""":math:`\sum_j c_j a_{r_j}^2`, squared entrywise: the diagonal of :math:`X_r^\top \operatorname{diag}(c) X_r`."""
    Xr = _take(X, rows)
    squares = Xr.multiply(Xr) if hasattr(Xr, "multiply") else Xr * Xr
    return np.asarray(squares.T @ c, dtype=np.float64).ravel()


# --------------------------------------------------------------------------- losses of z
def hinge(z):
    return np.maximum(0.0, 1.0 - z), np.where(z < 1.0, -1.0, 0.0)


def logistic(z):
    # logaddexp(0, -z) = log(1 + e^{-z}); derivative -1/(1 + e^z) = -expit(-z).
    return np.logaddexp(0.0, -z), -np.exp(-np.logaddexp(0.0, z))


def sigmoid(z):
    p = np.exp(-np.logaddexp(0.0, z))        # 1 / (1 + e^z)
    q = np.exp(-np.logaddexp(0.0, -z))       # e^z / (1 + e^z)
    return p, -p * q


def squared_hinge(z):
    m = np.maximum(0.0, 1.0 - z)
    return m * m, -2.0 * m


LOSSES = {"hinge": hinge, "logistic": logistic, "sigmoid": sigmoid, "squared_hinge": squared_hinge}


def loss_value_grad(loss, X, y, w, weights=None, scale=None, rows=None):
    r"""Value :math:`\sigma\sum_{i\in R} s_i\phi(z_i)` and gradient :math:`\sigma\sum s_i\phi'(z_i)y_i a_i`.

    ``scale`` defaults to ``1 / |R|`` (the plain mean).
    """
    idx = np.arange(X.shape[0]) if rows is None else np.asarray(rows, dtype=np.int64)
    A = _take(X, idx)
    yy = y[idx]
    s = np.ones(idx.size) if weights is None else weights[idx]
    scale = 1.0 / idx.size if scale is None else scale
    z = yy * np.asarray(A @ w).ravel()
    v, dv = LOSSES[loss](z)
    value = scale * np.sum(s * v)
    grad = np.asarray(A.T @ (scale * s * dv * yy)).ravel()
    return value, grad


# --------------------------------------------------------------------------- projections
def project_ball(x, radius, center=None):
    c = np.zeros_like(x) if center is None else center
    r = x - c
    norm = np.linalg.norm(r)
    return x.copy() if norm <= radius else c + r * (radius / norm)


def project_balls(x, offsets, radii, center=None):
    c = np.zeros_like(x) if center is None else center
    out = x.copy()
    for k, r in enumerate(radii):
        sl = slice(offsets[k], offsets[k + 1])
        if np.isfinite(r):
            out[sl] = project_ball(x[sl], r, c[sl])
    return out


def project_box(x, lo, hi):
    return np.clip(x, lo, hi)


def project_column_balls(x, radii):
    """Each column ``x[k::m]`` of ``x`` read as a row-major (n, m) matrix onto the ball of radius ``radii[k]``."""
    m = len(radii)
    M = x.reshape(-1, m).copy()
    for k, r in enumerate(radii):
        if np.isfinite(r):
            M[:, k] = project_ball(M[:, k], r, np.zeros(M.shape[0]))
    return M.ravel()


# --------------------------------------------------------------------------- fused vector updates
def proximal_value(x, center, rho):
    r""":math:`\frac{\rho}{2}\|x - c\|^2`."""
    return 0.5 * rho * float(np.sum((x - center) ** 2))


def proximal_add(x, center, rho, out):
    """Value of the proximal term, and ``out + rho (x - c)`` (returned, ``out`` untouched)."""
    return proximal_value(x, center, rho), out + rho * (x - center)


def conex_primal_step(x, f_grad, G, y, eta):
    r""":math:`x - \eta(f' + G^\top y)` (before projection)."""
    return x - eta * (y @ G + f_grad)


def linearized_values(G, x, x_prev, g):
    r""":math:`g + G(x - x_{prev})`."""
    return g + G @ (x - x_prev)
