"""Plain NumPy loop of [HL23] Algorithm 1 (and the minibatch objective of Theorem 4.3).

Written straight from the pseudo-code, storing every iterate, to check `switching_subgradient`
step by step. The random streams follow the solver's documented convention: three generators
spawned from ``SeedSequence(seed)`` (objective rows, constraint rows, output draw); rows are
``floor(u * n)`` with ``u ~ U[0, 1)``; the output draw is one uniform per t in I (reservoir).
"""
import numpy as np


def _generators(seed):
    ss = np.random.SeedSequence(seed)
    return [np.random.default_rng(np.random.SeedSequence(ss.entropy, spawn_key=(i,))) for i in range(3)]


def project_ball(x, radius):
    norm = np.linalg.norm(x)
    return x if norm <= radius else x * (radius / norm)


def switching_reference(f_grad, g_value, g_grad, project, x0, eta, eps, start_index=0, seed=0,
                        f_grad_rows=None, n_rows_f=None, batch_f=None):
    """Run Algorithm 1 for ``T = len(eta)`` iterations.

    Parameters
    ----------
    f_grad, g_grad : callables ``x -> ndarray`` (subgradients)
    g_value : callable ``x -> float``
    project : callable ``x -> ndarray``
    eta, eps : arrays of length T
    f_grad_rows : callable ``(x, rows) -> ndarray``, optional
        Minibatch subgradient of f (stochastic objective) on ``batch_f`` of ``n_rows_f`` rows.

    Returns
    -------
    dict with ``iterates`` (T + 1, d), ``g`` (T,), ``kind`` (T,) of "f"/"g", ``I`` (list), ``tau``.
    """
    rng_f, _, rng_out = _generators(seed)
    x = np.array(x0, dtype=float)
    iterates, gs, kinds, I = [x.copy()], [], [], []
    W, tau = 0.0, -1
    for t in range(len(eta)):
        g = g_value(x)
        gs.append(g)
        if g <= eps[t]:
            if f_grad_rows is None:
                d = f_grad(x)
            else:
                rows = np.floor(rng_f.random(batch_f) * n_rows_f).astype(np.int64)
                d = f_grad_rows(x, rows)
            kinds.append("f")
            if t >= start_index:
                I.append(t)
                W += eta[t]
                if rng_out.random() < eta[t] / W:
                    tau = t
        else:
            d = g_grad(x)
            kinds.append("g")
        x = project(x - eta[t] * d)
        iterates.append(x.copy())
    return {"iterates": np.array(iterates), "g": np.array(gs), "kind": np.array(kinds), "I": I, "tau": tau}
