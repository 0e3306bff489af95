r"""Honest references: what a competent NumPy/SciPy user writes for each quantity.

Vectorised, ``scipy.special.expit``/``log_expit`` for sigmoids and logistic losses, sparse products
through ``scipy.sparse`` (``X @ w``, ``X.T @ c``), no copies of whole blocks and no materialised
broadcasts. The slow "obviously right" versions stay in ``tests/reference/`` as test oracles; the
benchmarks time them only to report the old ratio (labelled "tests/reference oracle").

Every benchmark checks its honest reference against fastcon (``np.testing.assert_allclose``) before
timing, so a reference that computes something else fails the benchmark.
"""
import math

import numpy as np
import scipy.sparse as sp
from scipy.special import expit, log_expit


# --------------------------------------------------------------------------- margin losses, a full pass
def margin_loss_value_grad(loss, X, y, w):
    r"""Mean of :math:`\phi(z_i)`, :math:`z_i = y_i a_i^\top w`, and its gradient :math:`\frac1n X^\top(\phi'(z)\,y)`.

    hinge :math:`\max(0, 1-z)`; logistic :math:`\log(1+e^{-z}) = -\log\sigma(z)` with
    :math:`\phi' = -\sigma(-z)`; sigmoid :math:`\phi = 1/(1+e^{z}) = \sigma(-z)` with
    :math:`\phi' = -\phi(1-\phi)`: one ``expit`` per row.
    """
    z = y * (X @ w)
    n = z.size
    if loss == "hinge":
        return np.maximum(0.0, 1.0 - z).mean(), X.T @ np.where(z < 1.0, -y / n, 0.0)
    if loss == "logistic":
        return -log_expit(z).mean(), X.T @ (y * expit(-z) * (-1.0 / n))
    if loss == "sigmoid":
        p = expit(-z)
        return p.mean(), X.T @ (y * (p * (p - 1.0)) / n)
    raise ValueError(f"loss: expected 'hinge', 'logistic' or 'sigmoid', got {loss!r}")


def hinge_rows_value_grad(X, y, rows, w):
    """Hinge value and subgradient on a minibatch: one sparse row gather ``X[rows]``, then as above."""
    A, yb = X[rows], y[rows]
    z = yb * (A @ w)
    return np.maximum(0.0, 1.0 - z).mean(), A.T @ np.where(z < 1.0, -yb / rows.size, 0.0)


# --------------------------------------------------------------------------- ROC threshold sweep
SWEEP_BLOCK = 128  # rows per block: a 128 x 400 float64 block (400 kB) stays in L2 for its 3 sweeps


def sigmoid_grid_means(s, theta, block=SWEEP_BLOCK):
    r""":math:`\frac1n\sum_i\sigma(s_i-\theta_j)` for all j with one ``exp`` per sample.

    :math:`\sigma(s_i-\theta_j) = 1/(1 + a_i f_j)` with :math:`a_i = e^{\theta_0 - s_i}` and
    :math:`f_j = e^{\theta_j-\theta_0}` (:math:`r^j` on an equally spaced grid, :math:`r = e^{\Delta\theta}`).
    Overflow guard: :math:`\theta_0-s_i` is clipped at 700, and the grid span must stay below 700 so
    :math:`f_j` is finite; a product :math:`a_i f_j` that overflows to ``inf`` then gives
    :math:`1/(1+\infty) = 0`, the correct limit, and :math:`a_i = 0` (underflow) gives 1. The
    :math:`n\times m` matrix is built in row blocks (multiply, add, reciprocal in place, column sums)
    so it never leaves the cache. Returns the means and ``a`` (reused for the gradient column).
    """
    span = theta[-1] - theta[0]
    if not (0.0 <= span < 700.0):
        raise ValueError(f"theta: expected an increasing grid spanning less than 700, got span {span!r}")
    f = np.exp(theta - theta[0])
    a = np.exp(np.minimum(theta[0] - s, 700.0))
    total = np.zeros(theta.size)
    buf = np.empty((min(block, s.size), theta.size))
    for lo in range(0, s.size, block):
        ab = a[lo:lo + block]
        M = buf[:ab.size]
        np.multiply.outer(ab, f, out=M)
        M += 1.0
        np.reciprocal(M, out=M)
        total += M.sum(axis=0)
    return total / s.size, a, f


def roc_value_grad(A_p, A_u, w, theta):
    r"""ROC-fairness value :math:`R(w) = \max_j|\bar\sigma^p_j - \bar\sigma^u_j|` and subgradient.

    Scores by ``scipy.sparse`` products, both groups' sweeps by :func:`sigmoid_grid_means`, argmax,
    then :math:`\sigma' = \sigma(1-\sigma)` of the maximising column only (from the same :math:`a_i f_j`)
    and two transposed products.
    """
    s_p, s_u = A_p @ w, A_u @ w
    mean_p, a_p, f = sigmoid_grid_means(s_p, theta)
    mean_u, a_u, _ = sigmoid_grid_means(s_u, theta)
    gaps = mean_p - mean_u
    j = int(np.argmax(np.abs(gaps)))
    sig_p, sig_u = 1.0 / (1.0 + a_p * f[j]), 1.0 / (1.0 + a_u * f[j])
    grad = np.sign(gaps[j]) * (A_p.T @ (sig_p * (1.0 - sig_p)) / s_p.size
                               - A_u.T @ (sig_u * (1.0 - sig_u)) / s_u.size)
    return abs(gaps[j]), grad


def hinge_value_grad(X, y, w):
    """Hinge value and subgradient on every row (the switching constraint step)."""
    return margin_loss_value_grad("hinge", X, y, w)


# --------------------------------------------------------------------------- multi-class Neyman-Pearson
def class_loss_value_grad(A, W, k):
    r"""Sigmoid class loss :math:`L_k` of [MLY20] eq. (11) and its gradient (C x d), dense or CSR ``A``.

    :math:`S = A W^\top`, :math:`\phi(M_{il}) = \sigma(S_{il} - S_{ik})` (one ``expit`` per entry),
    :math:`B_{il} = \phi(1-\phi)` for :math:`l\ne k`, :math:`B_{ik} = -\sum_{l\ne k} B_{il}`,
    :math:`\nabla = B^\top A / n` (``(A^T B)^T`` when ``A`` is sparse). The class block is used as
    it is: no row copy.
    """
    n = A.shape[0]
    S = np.asarray(A @ W.T)
    P = expit(S - S[:, k:k + 1])
    P[:, k] = 0.0
    value = P.sum() / n
    B = P * (1.0 - P)
    B[:, k] = -B.sum(axis=1)
    grad = (A.T @ B).T / n if sp.issparse(A) else (B.T @ A) / n
    return value, grad


# --------------------------------------------------------------------------- 3S-Econ (SPIDER) iteration
def spider_iterations(ref, x0, K, q, alpha0, decay, beta, nu, f_sizes, g_sizes, rng_state, draw_rows):
    r"""3S-Econ iterates on Problem 2 of Liu & Xu [LX25], as a competent NumPy/SciPy user writes the loop.

    Same iteration map and same random stream as ``tests/reference/spider.spider_reference`` (and so
    as fastcon's compiled loop), restricted to what the benchmark runs: stratified constraint
    batches (``g_sizes = [k_p, k_u, 0, N]``), a plain objective batch (``f_sizes = [k, 0, 0, N]``).
    Per iteration the constraint rows are gathered **once** (``G[B]``, a CSR row gather) and serve
    the two-point SPIDER difference (one product with the two points side by side) and the
    constraint subgradient; the objective rows are gathered once as well. Sigmoids by ``expit``.
    ``draw_rows`` is fastcon's jitted sampler (the stream is replayed, not re-implemented).
    """
    if f_sizes[1] or f_sizes[2] or g_sizes[2]:
        raise ValueError("f_sizes, g_sizes: this loop covers plain objective batches and stratified "
                         "constraint batches only")
    A, y, G, n_p, lam, kappa = ref.A, ref.y, ref.G, ref.n_p, ref.lam, ref.kappa
    n_f, n_g = A.shape[0], G.shape[0]
    k_p, k_u, k_f = int(g_sizes[0]), int(g_sizes[1]), int(f_sizes[0])
    perm_f = np.arange(n_f, dtype=np.int64)
    perm_p, perm_u = np.arange(n_p, dtype=np.int64), np.arange(n_p, n_g, dtype=np.int64)
    bg, bf = np.empty(k_p + k_u, dtype=np.int64), np.empty(k_f, dtype=np.int64)
    # d(w) = mean_p sigma - mean_u sigma is a weighted sum of row sigmoids: weights on a batch, on all rows
    wb = np.concatenate([np.full(k_p, 1.0 / k_p), np.full(k_u, -1.0 / k_u)])
    wg = np.concatenate([np.full(n_p, 1.0 / n_p), np.full(n_g - n_p, -1.0 / (n_g - n_p))])
    x, x_prev, u = x0.copy(), x0.copy(), 0.0
    xs, us = [], []
    for k in range(K):
        alpha = alpha0 / math.sqrt(max(1.0, k / q)) if decay else alpha0
        if k % q == 0:
            u = wg @ expit(G @ x)                       # full refresh of the estimate
        draw_rows(rng_state, perm_p, k_p, bg, 0)
        draw_rows(rng_state, perm_u, k_u, bg, k_p)
        Gb = G[bg]
        if k % q == 0:
            sig = expit(Gb @ x)
        else:
            S = expit(Gb @ np.column_stack((x, x_prev)))
            u += wb @ (S[:, 0] - S[:, 1])
            sig = S[:, 0]
        weight = min(1.0, max(0.0, (abs(u) - kappa) / nu))
        draw_rows(rng_state, perm_f, k_f, bf, 0)
        Ab, yb = A[bf], y[bf]
        z = yb * (Ab @ x)
        direction = Ab.T @ np.where(z < 1.0, -yb / k_f, 0.0)
        a, sgn = np.abs(x), np.sign(x)
        direction += lam * np.where(a <= 1.0, 2.0 * sgn, np.where(a <= 2.0, (4.0 - 2.0 * a) * sgn, 0.0))  # SCAD'
        if weight > 0.0:
            direction += (beta * weight * np.sign(u)) * (Gb.T @ (sig * (1.0 - sig) * wb))
        x_prev = x
        x = x - alpha * direction
        xs.append(x)
        us.append(u)
    return xs, us


# --------------------------------------------------------------------------- Wasserstein block oracle
def transport_block_subgradient(x, rows, m, Ap, Au, out):
    r"""Block estimate :math:`\sum_{i\in I, j\in J}P_{ij}|w^\top(a^p_i - a^u_j)|` and its subgradient.

    :math:`\partial_P = |D_{IJ}|` on the block (zero elsewhere) and
    :math:`\partial_w = \sum_{ij} Q_{ij}(a^p_i - a^u_j) = A_{p,I}^\top Q\mathbf 1 - A_{u,J}^\top Q^\top\mathbf 1`
    with :math:`Q = P_{IJ}\odot\operatorname{sign}(D)`: plain products, no (B, B, d) array.
    """
    I, J = rows[rows < m], rows[rows >= m] - m
    P, w = x[:m * m].reshape(m, m), x[m * m:]
    ApI, AuJ = Ap[I], Au[J]
    D = (ApI @ w)[:, None] - (AuJ @ w)[None, :]
    PIJ = P[np.ix_(I, J)]
    absD = np.abs(D)
    Q = PIJ * np.sign(D)
    out[:] = 0.0
    out[:m * m].reshape(m, m)[np.ix_(I, J)] = absD
    out[m * m:] = ApI.T @ Q.sum(axis=1) - AuJ.T @ Q.sum(axis=0)
    return float(np.sum(PIJ * absD))


# --------------------------------------------------------------------------- estimator Lagrangians (score space)
def rate_gap_lagrangian(X, y, w, b, groups, thresholds, tau, lam, ridge):
    r"""Logistic loss + :math:`\sum_k\lambda_k g_k` over selection-rate gaps, and its gradient in :math:`(w, b)`.

    Constraints :math:`g_{(a,c),j} = r_a(\theta_j) - r_c(\theta_j) - \kappa` for the ordered pairs of
    groups (pair-major, as `fastcon.problems.LinearModelProblem` orders them), smoothed rates
    :math:`r_k(\theta) = \mathrm{mean}_{i \in k}\,\sigma((z_i - \theta)/\tau)`; ``lam`` the weights
    (the value returned is the loss only, as ``lagrangian`` returns :math:`f`). One sparse product
    each way; the rates on row blocks of :math:`2^{16}/m` rows (512 kB of sigmoids: few Python
    steps, in cache) with one ``exp`` per row (as `sigmoid_grid_means`), the group sums by a one-hot
    product, the rate gradient by the same blocks.
    """
    block = max(SWEEP_BLOCK, 2 ** 16 // thresholds.size)
    z = X @ w + b
    n = z.size
    yz = y * z
    f = -log_expit(yz).mean() + 0.5 * ridge * (w @ w)
    v = y * expit(-yz) * (-1.0 / n)
    K = int(groups.max()) + 1
    counts = np.bincount(groups, minlength=K).astype(np.float64)
    pairs = [(a, c) for a in range(K) for c in range(K) if a != c]
    lam = np.asarray(lam).reshape(len(pairs), thresholds.size)
    coef = np.zeros((K, thresholds.size))          # d(sum lam g)/d(sum of group k's sigmoids at theta_j)
    for (a, c), row in zip(pairs, lam):
        coef[a] += row / counts[a]
        coef[c] -= row / counts[c]
    onehot = np.eye(K)[groups]
    c0 = thresholds.min()
    f_j = np.exp((thresholds - c0) / tau)
    sums = np.zeros((K, thresholds.size))
    for lo in range(0, n, block):
        a = np.exp((c0 - z[lo:lo + block]) / tau)
        u = np.multiply.outer(a, f_j)
        sig = 1.0 / (1.0 + u)
        sums += onehot[lo:lo + block].T @ sig
        v[lo:lo + block] += np.einsum("ij,ij->i", coef[groups[lo:lo + block]], sig * (u * sig)) / tau
    rates = sums / counts[:, None]
    g = np.array([rates[a] - rates[c] for a, c in pairs]).ravel()
    grad = np.append(X.T @ v + ridge * w, v.sum())
    return f, g, grad


def transport_lagrangian(X, y, w, b, groups, lam, ridge):
    r"""Logistic loss + :math:`\lambda W_1(z_0, z_1)` (two groups, exact :math:`W_1` of the scores) and its gradient.

    :math:`W_1` over the merged quantile breakpoints of the two sorted score vectors (``np.union1d``
    of the breakpoints in units of :math:`1/(n_0 n_1)`), its subgradient by ``np.add.at`` on the
    matched pairs: vectorised NumPy, two sorts per call.
    """
    z = X @ w + b
    n = z.size
    yz = y * z
    f = -log_expit(yz).mean() + 0.5 * ridge * (w @ w)
    v = y * expit(-yz) * (-1.0 / n)
    rows_a, rows_b = np.flatnonzero(groups == 0), np.flatnonzero(groups == 1)
    rows_a, rows_b = rows_a[np.argsort(z[rows_a], kind="stable")], rows_b[np.argsort(z[rows_b], kind="stable")]
    na, nb = rows_a.size, rows_b.size
    cuts = np.union1d(np.arange(na + 1) * nb, np.arange(nb + 1) * na)
    widths = np.diff(cuts) / (na * nb)
    mid = (cuts[:-1] + cuts[1:]) // 2
    ia, ib = rows_a[mid // nb], rows_b[mid // na]
    d = z[ia] - z[ib]
    g = float(widths @ np.abs(d))
    s = lam * widths * np.sign(d)
    np.add.at(v, ia, s)
    np.add.at(v, ib, -s)
    grad = np.append(X.T @ v + ridge * w, v.sum())
    return f, g, grad


# --------------------------------------------------------------------------- partial fairness, model (13)
def partial_dp_ramp_parts(X_groups, w, theta, levels, width):
    r"""Every :math:`f_i^+, f_i^-` of model (13) of He, Huang, Yao & Lin [HHYL25] (ramp surrogate,
    :math:`\rho = 0`) and one subgradient of each, as a competent NumPy/SciPy user computes them.

    With :math:`S^\pm_{kp} = \frac{1}{n_k}\sum_{i\in k}\max\{z_i - (\theta_p \mp \tfrac12), 0\}` the
    hinge means of the ramp, constraint ``2(jG + k) + s`` (level ``j``, group ``k``, ``s = 0`` lower,
    ``1`` upper, `fastcon.problems.PartialDPConstraints`' order) has lower
    :math:`f^+ = S^-_{kp}`, :math:`f^- = S^+_{kp} - p`; upper :math:`f^+ = S^+_{kp}`,
    :math:`f^- = S^-_{kp} + p + \delta`. Gradients (kink convention :math:`\mathbf 1\{u > 0\}`):
    :math:`\nabla_w S = \frac{1}{n_k}\sum_{z_i > t}\tilde x_i`,
    :math:`\partial_{\theta_p} S = -\frac{1}{n_k}\#\{z_i > t\}`.

    Per group (``X_groups``: the group's row block, split once outside): the scores, the masks of the
    :math:`2P` cuts as one float :math:`(n_k, 2P)` matrix :math:`M`, the hinge sums from the same
    matrix as :math:`z^\top M - t\,\mathbf 1^\top M` (one BLAS product; faster than ``np.maximum``
    over the broadcast difference, 5.8 vs 7.5 ms at P = 10 and 57 vs 83 ms at P = 100 on a9a, and
    equal to it within 5e-15 relative), and every masked row sum by one sparse product
    :math:`\tilde X_k^\top M`. Per group beats one :math:`\tilde X^\top M` over all rows with a
    block-structured :math:`(n, 2GP)` matrix (3.3 vs 8.1 ms at P = 10, 34 vs 91 ms at P = 100: half
    of that matrix is zeros). ``M`` is dense (a9a scores put about half the rows above a cut), so a
    sparse ``M`` only adds conversion (25 ms at P = 10).

    Returns
    -------
    plus, minus : ndarray (m,)
    plus_jacobian, minus_jacobian : ndarray (m, n_w + P)
        One subgradient of every :math:`f_i^+` and :math:`f_i^-` (rows).
    """
    G, P, n_w = len(X_groups), theta.size, w.size
    cuts = np.concatenate([theta - 0.5, theta + 0.5])          # q < P: S+ cut, q >= P: S- cut
    S = np.empty((G, 2 * P))
    C = np.empty((G, 2 * P))
    R = np.empty((G, 2 * P, n_w))
    for k, Xk in enumerate(X_groups):
        z = Xk @ w
        M = (z[:, None] > cuts[None, :]).astype(np.float64)
        count = M.sum(axis=0)
        inv = 1.0 / z.size
        S[k] = (z @ M - cuts * count) * inv
        C[k] = count * inv
        R[k] = (Xk.T @ M).T * inv
    j, k = np.repeat(np.arange(P), G), np.tile(np.arange(G), P)
    s_plus, s_minus = S[k, j], S[k, P + j]
    p = levels[j]
    plus = np.stack([s_minus, s_plus], axis=1).ravel()
    minus = np.stack([s_plus - p, s_minus + p + width], axis=1).ravel()
    m, dim = 2 * G * P, n_w + P
    grad_plus, grad_minus = np.zeros((G * P, dim)), np.zeros((G * P, dim))    # gradients of S+ and S-
    rows = np.arange(G * P)
    grad_plus[:, :n_w], grad_plus[rows, n_w + j] = R[k, j], -C[k, j]
    grad_minus[:, :n_w], grad_minus[rows, n_w + j] = R[k, P + j], -C[k, P + j]
    plus_jac, minus_jac = np.empty((m, dim)), np.empty((m, dim))
    plus_jac[0::2], plus_jac[1::2] = grad_minus, grad_plus
    minus_jac[0::2], minus_jac[1::2] = grad_plus, grad_minus
    return plus, minus, plus_jac, minus_jac


# --------------------------------------------------------------------------- boosting custom objectives [LD23]
def boosting_grad_hess(F, labels, W, anchor_k, inv_tau, anchor_t, c):
    r"""Gradient and Hessian diagonal of :math:`\psi(F) = \sum_i W_i\ell_i + \frac c2\lVert F - F^t\rVert^2
    + \frac{1}{2\tau}\lVert F - F^k\rVert^2` (Lin & Deng [LD23] §3): binary when ``F`` is 1-D.

    What a user writes for a GBM custom objective: ``expit`` (binary) or ``scipy.special.softmax``
    (J classes) once, the one-hot subtraction as a fancy-indexed update of the gradient (no (n, J)
    one-hot array), the anchors' terms and the Hessian built in place. Both anchors must be given.
    """
    # a local import keeps this appended section's edit to itself
    from scipy.special import softmax

    if F.ndim == 1:
        p = expit(F)
        grad = p - labels
        grad *= W
        hess = p * (1.0 - p)
        hess *= W
    else:
        p = softmax(F, axis=1)
        grad = p * W[:, None]
        grad[np.arange(F.shape[0]), labels] -= W
        hess = 1.0 - p
        hess *= p
        hess *= W[:, None]
    grad += c * (F - anchor_t)
    grad += inv_tau * (F - anchor_k)
    hess += c + inv_tau
    np.maximum(hess, 1e-16, out=hess)
    return grad, hess
