"""Plain NumPy/SciPy references for the Wasserstein-fairness term and the transport projection."""
import numpy as np
from scipy.optimize import minimize


def transport_cost(P, Ap, Au, w):
    """H(P, w) = sum_ij P_ij |w.a^p_i - w.a^u_j| and a subgradient (gP, gw), brute force O(m^2 d)."""
    sp, su = Ap @ w, Au @ w
    D = sp[:, None] - su[None, :]
    value = float(np.sum(P * np.abs(D)))
    diffs = Ap[:, None, :] - Au[None, :, :]                      # (m, m, d): a^p_i - a^u_j
    gw = np.einsum("ij,ijk->k", P * np.sign(D), diffs)
    return value, np.abs(D), gw


def w1_sorted(sp, su):
    """W1 between two equal-size empirical measures: mean gap of the sorted samples."""
    return float(np.mean(np.abs(np.sort(sp) - np.sort(su))))


def project_transport_qp(C, alpha, beta):
    """argmin_{P >= 0, P1 = alpha, P^T 1 = beta} ||P - C||^2 / 2 by SLSQP (small m*n only)."""
    m, n = C.shape
    c = C.ravel()
    cons = [{"type": "eq", "fun": lambda p: p.reshape(m, n).sum(axis=1) - alpha,
             "jac": lambda p: np.kron(np.eye(m), np.ones((1, n)))},
            # The last column sum is implied by the others (total mass alpha*m = beta*n): drop it,
            # SLSQP wants independent equality constraints.
            {"type": "eq", "fun": lambda p: p.reshape(m, n).sum(axis=0)[:-1] - beta,
             "jac": lambda p: np.kron(np.ones((1, m)), np.eye(n))[:-1]}]
    x0 = np.full(m * n, alpha / n)
    if n == 1:
        cons = cons[:1]
    res = minimize(lambda p: 0.5 * np.sum((p - c) ** 2), x0, jac=lambda p: p - c, method="SLSQP",
                   bounds=[(0, None)] * (m * n), constraints=cons,
                   options={"ftol": 1e-14, "maxiter": 1000})
    # At such a tight ftol SLSQP may end with "positive directional derivative" at the optimum;
    # accept that (status 8) but insist on a feasible point.
    assert res.status in (0, 8), res.message
    P = res.x.reshape(m, n)
    assert P.min() > -1e-9 and np.abs(P.sum(axis=1) - alpha).max() < 1e-9
    assert np.abs(P.sum(axis=0) - beta).max() < 1e-9
    return P
