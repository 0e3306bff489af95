r"""NumPy references for [LX25] (3S-Econ): DP gap, SCAD, h^nu and the whole iteration.

The iteration reference replays the compiled loop's random stream by calling its jitted sampler
(``draw_rows``) from Python, so both see the same batches and must produce the same iterates up to
round-off. Everything else is one NumPy expression per formula.
"""
import math

import numpy as np

from fastcon._kernels._spider import draw_rows


def sigmoid(z):
    return np.exp(-np.logaddexp(0.0, -z))


def sigmoid_prime(z):
    s = sigmoid(z)
    return s * (1.0 - s)


def dp_signed_gap(A_p, A_u, w):
    return float(np.mean(sigmoid(A_p @ w)) - np.mean(sigmoid(A_u @ w)))


def dp_value_grad(A_p, A_u, w):
    r""":math:`|d(w)|` and :math:`\mathrm{sign}(d)\nabla d`."""
    zp, zu = np.asarray(A_p @ w).ravel(), np.asarray(A_u @ w).ravel()
    d = np.mean(sigmoid(zp)) - np.mean(sigmoid(zu))
    g = np.asarray(A_p.T @ sigmoid_prime(zp)).ravel() / zp.size - np.asarray(A_u.T @ sigmoid_prime(zu)).ravel() / zu.size
    return abs(d), np.sign(d) * g


def scad(t):
    a = np.abs(t)
    v = np.where(a <= 1, 2 * a, np.where(a <= 2, -a ** 2 + 4 * a - 1, 3.0))
    d = np.where(a <= 1, 2 * np.sign(t), np.where(a <= 2, (4 - 2 * a) * np.sign(t), 0.0))
    return v, d


def hinge_mean_grad(A, y, w):
    z = y * np.asarray(A @ w).ravel()
    c = np.where(z < 1, -y, 0.0)
    return float(np.mean(np.maximum(0, 1 - z))), np.asarray(A.T @ c).ravel() / z.size


def h_nu(z, nu):
    return np.where(z <= 0, 0.0, np.where(z <= nu, z * z / (2 * nu), z - nu / 2))


class Problem2Reference:
    r"""Hinge risk on ``(A, y)`` + :math:`\lambda`SCAD, s.t. :math:`|d(w)| \le \kappa` on groups ``A_p``, ``A_u``."""

    def __init__(self, A, y, A_p, A_u, lam, kappa):
        self.A, self.y, self.A_p, self.A_u, self.lam, self.kappa = A, y, A_p, A_u, lam, kappa
        self.G = self._stack(A_p, A_u)
        self.n_p = A_p.shape[0]

    @staticmethod
    def _stack(A_p, A_u):
        import scipy.sparse as sp
        if sp.issparse(A_p):
            return sp.vstack([A_p, A_u]).tocsr()
        return np.vstack([A_p, A_u])

    def stat(self, w, rows):
        rp, ru = rows[rows < self.n_p], rows[rows >= self.n_p]
        return dp_signed_gap(self.G[rp], self.G[ru], w)

    def stat_grad(self, w, rows, sign):
        rp, ru = rows[rows < self.n_p], rows[rows >= self.n_p]
        Gp, Gu = self.G[rp], self.G[ru]
        zp, zu = np.asarray(Gp @ w).ravel(), np.asarray(Gu @ w).ravel()
        g = np.asarray(Gp.T @ sigmoid_prime(zp)).ravel() / rp.size - np.asarray(Gu.T @ sigmoid_prime(zu)).ravel() / ru.size
        return sign * g

    def f_grad(self, w, rows):
        _, g = hinge_mean_grad(self.A[rows], self.y[rows], w)
        return g + self.lam * scad(w)[1]


def spider_reference(ref, x0, K, q, alpha0, decay, beta, nu, f_sizes, g_sizes, rng_state):
    """3S-Econ iterates ``x_1..x_K`` of the compiled loop, replayed in NumPy on the same batches.

    ``f_sizes``/``g_sizes`` as `spider_loop` (``[k_a, k_b, full, N]``); ``rng_state`` a fresh copy of
    the loop's splitmix64 state. Returns the list of iterates and of the SPIDER estimates u_k.
    """
    n_f, n_g = ref.A.shape[0], ref.G.shape[0]
    perm_fa, perm_fb = np.arange(n_f, dtype=np.int64), np.zeros(0, dtype=np.int64)
    perm_ga, perm_gb = np.arange(ref.n_p, dtype=np.int64), np.arange(ref.n_p, n_g, dtype=np.int64)
    all_f, all_g = np.arange(n_f), np.arange(n_g)

    def batch(perm_a, perm_b, sizes, full, n):
        if full:
            return np.arange(n)
        out = np.empty(sizes[0] + sizes[1], dtype=np.int64)
        draw_rows(rng_state, perm_a, sizes[0], out, 0)
        if sizes[1]:
            draw_rows(rng_state, perm_b, sizes[1], out, sizes[0])
        return out

    x, x_prev, u = x0.copy(), x0.copy(), 0.0
    xs, us = [], []
    for k in range(K):
        alpha = alpha0 / math.sqrt(max(1.0, k / q)) if decay else alpha0
        if k % q == 0:
            u = ref.stat(x, all_g)
        else:
            B = batch(perm_ga, perm_gb, g_sizes, g_sizes[2], n_g)
            u += ref.stat(x, B) - ref.stat(x_prev, B)
        g_hat = abs(u) - ref.kappa
        w = min(1.0, max(0.0, g_hat / nu))
        direction = np.zeros_like(x)
        if k % q == 0:
            Bg = all_g if g_sizes[2] else batch(perm_ga, perm_gb, g_sizes, False, n_g)
        else:
            Bg = B
        if w > 0:
            direction += beta * w * ref.stat_grad(x, Bg, np.sign(u))
        Bf = batch(perm_fa, perm_fb, f_sizes, f_sizes[2], n_f) if not f_sizes[2] else all_f
        direction += ref.f_grad(x, Bf)
        x_prev = x.copy()
        x = x - alpha * direction
        xs.append(x.copy())
        us.append(u)
    return xs, us
