r"""Cost of the transport-polytope projection against its floor (docs/benchmarks.md, "Transport projection").

Run from the repository root:

    python bench/transport_projection_sweep.py [--sizes 692,1300] [--reps 3]

**Floor.** One pass over the :math:`m^2` entries that reads :math:`C`, writes
:math:`P = (C + u\mathbf 1^\top + \mathbf 1v^\top)_+` and accumulates its row and column sums: a
projection whose duals were known would cost exactly that. Every time is also given in passes
(time / floor time at the same m).

**Cases** (synthetic, shaped like the projections of the ssg-wasserstein experiment; scores
:math:`s^p, s^u` standard normal rounded to multiples of 1/4, because COMPAS scores take few
distinct values and whole blocks of :math:`|D_{ij}| = |s^p_i - s^u_j|` tie):

* ``near``: a feasible plan minus :math:`10^{-8}|D|` (a tiny step; zero duals are nearly exact);
* ``block``: a minibatch SSG objective step, :math:`\eta = 0.015` on a
  :math:`\lfloor m/10\rfloor^2` block of the uniform plan (zero-dual start, as the domain does it);
* ``far``: the uniform plan minus :math:`0.02|D|` from a cold start (every entry moved by hundreds
  of times its size; the case that took 250 Newton steps at m = 1,300 with the former method);
* ``dense chain``: 30 successive steps of the near-stationarity subproblem solver,
  :math:`C_k = P_{k-1} - \gamma_k(|D| + \hat\rho(P_{k-1} - P_0))`, :math:`\gamma_k = 2/(\hat\rho(k+2))`,
  :math:`\hat\rho = 180` (COMPAS's value), each projection from zero duals (``"zero"``, the former
  rule) and from zero duals plus the ray search along the previous duals (``"ray"``, the
  default); means over the chain without its first step.

Prints one line per case: Newton steps, CG iterations, passes counted by the solver (outside CG),
milliseconds (minimum over ``--reps``) and that time in floor passes.
"""
import argparse
import time

import numba
import numpy as np

from fastcon._kernels._transport import project_transport, transport_workspace


@numba.njit(cache=False, boundscheck=False, fastmath={"reassoc"})
def floor_pass(C, u, v, out, r, c):
    """Read C, write (C + u 1^T + 1 v^T)_+ and its row and column sums: the projection's floor."""
    m, n = C.shape
    c[:] = 0.0
    for i in range(np.uint64(m)):
        ui = u[i]
        s = 0.0
        for j in range(np.uint64(n)):
            z = max(C[i, j] + ui + v[j], 0.0)
            out[i, j] = z
            s += z
            c[j] += z
        r[i] = s


def best(fn, reps):
    """``(minimum seconds, last result)`` over ``reps`` calls."""
    t, out = np.inf, None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        t = min(t, time.perf_counter() - t0)
    return t, out


def scores(rng, m):
    return np.round(4 * rng.standard_normal(m)) / 4, np.round(4 * rng.standard_normal(m)) / 4


def run(m, reps):
    rng = np.random.default_rng(m)
    alpha = 1.0 / m
    sp, su = scores(rng, m)
    D = np.abs(sp[:, None] - su[None, :])
    P0 = np.full((m, m), alpha / m)
    out, work = np.empty((m, m)), transport_workspace(m, m)
    r, c, zeros = np.empty(m), np.empty(m), np.zeros(m)
    floor_pass(P0, zeros, zeros, out, r, c)
    t_floor, _ = best(lambda: floor_pass(P0, zeros, zeros, out, r, c), 20)
    print(f"m = {m}: floor pass {t_floor * 1e3:.3f} ms ({16 * m * m / t_floor / 1e9:.1f} GB/s read + write)")

    def line(name, rows):
        N, cg, passes, t = (np.mean([x[k] for x in rows]) for k in range(4))
        print(f"  {name:18s} Newton {N:5.1f}  CG {cg:6.1f}  passes {passes:5.1f}  {t * 1e3:8.2f} ms "
              f"= {t / t_floor:6.1f} floor passes")

    def one(C, u=None, v=None, direction=None):
        t, res = best(lambda: project_transport(C, (alpha, alpha), None if u is None else (u.copy(), v.copy()),
                                                out=out, workspace=work, direction=direction), reps)
        assert res.converged
        return res, (res.n_iter, res.n_cg, res.n_passes, t)

    P = project_transport(P0 - 0.005 * D).P  # a feasible plan away from the uniform one
    line("near", [one(P - 1e-8 * D, zeros, zeros)[1]])
    B = max(1, m // 10)
    rows = []
    for _ in range(5):
        I, J = rng.choice(m, B, replace=False), rng.choice(m, B, replace=False)
        C = P0.copy()
        C[np.ix_(I, J)] -= 0.015 * D[np.ix_(I, J)]
        rows.append(one(C, zeros, zeros)[1])
    line("block (SSG)", rows)
    line("far (cold)", [one(P0 - 0.02 * D)[1]])
    rho = 180.0
    for rule in ("zero", "ray"):
        Pk, prev, rows = P.copy(), None, []
        for k in range(30):
            C = Pk - 2.0 / (rho * (k + 2)) * (D + rho * (Pk - P))
            res, row = one(C, zeros, zeros, prev if rule == "ray" else None)
            if k:
                rows.append(row)
            prev, Pk = (res.u.copy(), res.v.copy()), res.P.copy()
        line(f"dense chain {rule}", rows)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="692,1300")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    numba.set_num_threads(1)
    for size in args.sizes.split(","):
        run(int(size), args.reps)
