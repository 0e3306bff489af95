r"""Euclidean projection onto the transportation polytope (Huang & Lin [HL23] §6.2, eqs. 13–14).

.. math::

    \mathcal P = \{P \in \mathbb R^{m\times n} : P \ge 0,\ P\mathbf 1 = \alpha\mathbf 1,\
    P^\top\mathbf 1 = \beta\mathbf 1\},\qquad \alpha m = \beta n,

solved through its dual (Li, Sun & Toh, *Math. Prog.* 179, 2020): maximise the concave
piecewise-quadratic :math:`\theta(u, v) = -\tfrac12\|(C + u\mathbf 1^\top + \mathbf 1 v^\top)_+\|_F^2
+ \alpha\mathbf 1^\top u + \beta\mathbf 1^\top v` by semismooth Newton–CG with an exact line search
(optionally from a ray start), with exact block-coordinate ascent as fallback. Scalars and scratch
pass as the ``NamedTuple`` records `TransportParameters` and `TransportScratch`.
Design notes: docs/design.md, 'Module notes'.
"""
from typing import NamedTuple

import numpy as np

from ._jit import njit
from ._linalg import JIT

__all__ = ["TransportProjection", "TransportParameters", "TransportWorkspace", "TransportScratch", "project_transport",
           "transport_solve", "transport_workspace", "transport_cost_block", "marginal_residual"]

#: Status codes returned by :func:`transport_solve`.
CONVERGED, MAX_ITER, NONFINITE = 0, 1, 2
#: Line-search stopping levels q, :math:`|\varphi'(t)| \le q\,\varphi'(0)` (see `_line_search`): the
#: ray start needs an accurate multiple (its error is what Newton has to repair; 0.1 instead of 1e-3
#: costs 2 more Newton steps per near-stationarity projection on COMPAS), a Newton direction does
#: not (the next Newton step repairs it): its full step is taken within a factor 1.5 of the best.
Q_RAY, Q_FULL, Q_NEWTON = 1e-3, 0.5, 0.1
#: Smallest multiple of the ray direction worth searching for, estimated at the start (no pass
#: spent) and again after the first trial (t = 1), where the search gives up below it. Measured
#: on the projections of the Wasserstein experiment (german, COMPAS): near-stationarity dense steps
#: give multiples 0.66-0.92 (close to gamma_k / gamma_{k-1}; the ray then saves 5-20 Newton
#: steps), minibatch SSG block steps at most 0.13 (and no Newton step saved).
RAY_MIN = 0.25
#: CG budget per Newton step, in passes over C (see `_cg_budget`): about what the step's pattern
#: and line-search passes cost, so CG may solve tightly (rtol 0.01 x the relative residual) where
#: products are cheap (a nearly full or nearly empty pattern) and stays a truncated Newton method
#: where they are not.
CG_PASSES = 3.0


class TransportParameters(NamedTuple):
    r"""The scalars of one :func:`transport_solve`."""

    row_marginal: float      #: row sums :math:`\alpha`
    column_marginal: float   #: column sums :math:`\beta` (:math:`\alpha m = \beta n`, the caller checks)
    tol: float         #: absolute stopping level on :math:`\|P1 - \alpha1\| + \|P^T1 - \beta1\|`
    max_newton: int    #: Newton iterations
    max_sweeps: int    #: then block-ascent sweeps of the fallback
    cold: bool         #: start with one exact block-ascent sweep (u, then v) instead of trusting the duals given
    ray: bool          #: exact line search from the start along the ray direction before Newton
    #: if the start given (``cold`` False) does not converge within the limits, start again from a
    #: cold start (zero duals and one block-ascent sweep): a warm start may then cost time, never the result
    retry: bool


class TransportWorkspace(NamedTuple):
    r"""The buffers of :func:`transport_solve` for an m×n ``C`` (:func:`transport_workspace`)."""

    work: np.ndarray    #: float64 (12, m + n), C-contiguous: the block `TransportScratch` is cut from
    idx: np.ndarray     #: uint32 (m n + n,) the pattern, stored row by row (see `_pattern`)


class TransportScratch(NamedTuple):
    r"""The named views of a `TransportWorkspace` the kernels work in (`_scratch`): float64 vectors of
    length m (``*u``, ``r``, ``deg_r``) or n (``*v``, ``c``, ``deg_c``), rows of ``work`` split at m."""

    r: np.ndarray        #: marginals :math:`P\mathbf 1`
    c: np.ndarray        #: marginals :math:`P^\top\mathbf 1`
    deg_r: np.ndarray    #: row degrees of the pattern :math:`\Omega`
    deg_c: np.ndarray    #: column degrees of :math:`\Omega`
    gu: np.ndarray       #: gradient :math:`\nabla\theta` (rows); the start's marginals while a ray is tried
    gv: np.ndarray       #: gradient (columns)
    du: np.ndarray       #: Newton direction (rows)
    dv: np.ndarray       #: Newton direction (columns)
    ut: np.ndarray       #: dual point of a line-search trial (rows)
    vt: np.ndarray       #: dual point of a line-search trial (columns)
    ru: np.ndarray       #: CG residual (rows)
    rv: np.ndarray       #: CG residual (columns)
    zu: np.ndarray       #: preconditioned CG residual (rows)
    zv: np.ndarray       #: preconditioned CG residual (columns)
    pu: np.ndarray       #: CG search direction (rows)
    pv: np.ndarray       #: CG search direction (columns)
    qu: np.ndarray       #: Hessian times ``pu, pv`` (rows)
    qv: np.ndarray       #: Hessian times ``pu, pv`` (columns)
    t: np.ndarray        #: (m + n,) block-ascent trial duals
    s: np.ndarray        #: (m + n,) block-ascent sums
    cnt: np.ndarray      #: (m + n,) block-ascent active counts
    prev: np.ndarray     #: (m + n,) block-ascent previous counts; the memory of ``ru, rv`` (ascent runs outside CG)
    idx: np.ndarray      #: uint32 (m n + n,) the pattern, stored row by row (see `_pattern`)


@njit(**JIT)
def _scratch(ws, m, n):
    """The `TransportScratch` of ``ws`` for an m×n ``C`` (views, nothing copied)."""
    work = ws.work
    return TransportScratch(work[0, :m], work[0, m:], work[1, :m], work[1, m:], work[2, :m], work[2, m:],
                            work[3, :m], work[3, m:], work[4, :m], work[4, m:], work[5, :m], work[5, m:],
                            work[6, :m], work[6, m:], work[7, :m], work[7, m:], work[8, :m], work[8, m:],
                            work[9], work[10], work[11], work[5], ws.idx)


class LineStart(NamedTuple):
    r"""The start :math:`t = 0` of a line search (`_line_search`)."""

    theta: float       #: :math:`\varphi(0) = \theta(u, v)`
    slope: float       #: :math:`\varphi'(0) > 0`
    residual: float    #: marginal residual at the start


class LineRule(NamedTuple):
    r"""When a line search (`_line_search`) stops."""

    q_first: float    #: level q of :math:`|\varphi'(t)| \le q\,\varphi'(0)` at the first trial :math:`t = 1`
    q: float          #: the same at later trials
    armijo: bool      #: accept a full step that passes the Armijo test or halves the residual
    t_min: float      #: give up after the first trial when the maximizer is estimated below this


# --------------------------------------------------------------------------- passes over C
# Reductions over a row may be reassociated (``fastmath={"reassoc"}``): it lets LLVM vectorize the
# sums (docs/measurements.md), and the order is still fixed for a given machine, so results
# stay deterministic. No other fast-math flag is set (no FMA contraction, no reciprocal tricks).
JIT_SUM = dict(JIT, fastmath={"reassoc"})


@njit(**JIT_SUM)
def _dual_eval(C, u, v, row_marginal, column_marginal, r, c):
    r""":math:`\theta(u, v)`; writes the marginals ``r = P1``, ``c = P^T 1`` of :math:`P(u, v)`."""
    m, n = C.shape
    c[:] = 0.0
    quad = 0.0
    for i in range(np.uint64(m)):
        ui = u[i]
        s = 0.0
        q = 0.0
        for j in range(np.uint64(n)):
            z = max(C[i, j] + ui + v[j], 0.0)
            s += z
            q += z * z
            c[j] += z
        r[i] = s
        quad += q
    return -0.5 * quad + row_marginal * u.sum() + column_marginal * v.sum()


@njit(**JIT)
def _residual(r, c, row_marginal, column_marginal):
    r""":math:`\|P\mathbf 1 - \alpha\mathbf 1\| + \|P^\top\mathbf 1 - \beta\mathbf 1\|`."""
    a = 0.0
    for i in range(r.shape[0]):
        a += (r[i] - row_marginal) ** 2
    b = 0.0
    for j in range(c.shape[0]):
        b += (c[j] - column_marginal) ** 2
    return np.sqrt(a) + np.sqrt(b)


@njit(**JIT_SUM)
def _line_eval(C, prm, u, v, du, dv, sc, count):
    r""":math:`\theta(u, v)`, :math:`-\varphi'' = \sum_{\Omega} (d_{u,i} + d_{v,j})^2` and whether ``C`` is finite.

    Writes the marginals ``sc.r``, ``sc.c`` and, if ``count``, the degrees ``sc.deg_r``, ``sc.deg_c`` of the
    pattern :math:`\Omega(u, v)` (so that the next Newton step only has to store it, see
    `_pattern`; counting makes the pass 30 % dearer at m = 692, so the line search counts only
    at its first trial, the one a Newton step near the solution keeps). The finiteness test rides
    on the pass for free (a memory-bound loop): :math:`\sum_{ij} 0\cdot C_{ij}` is 0 exactly
    when no entry is NaN or infinite.
    """
    row_marginal, column_marginal = prm.row_marginal, prm.column_marginal
    r, c, deg_r, deg_c = sc.r, sc.c, sc.deg_r, sc.deg_c
    m, n = C.shape
    c[:] = 0.0
    if count:
        deg_c[:] = 0.0
    quad = 0.0
    curv = 0.0
    nonfinite = 0.0
    for i in range(np.uint64(m)):
        ui = u[i]
        dui = du[i]
        s = 0.0
        q = 0.0
        h = 0.0
        cnt = 0.0
        for j in range(np.uint64(n)):
            cij = C[i, j]
            z = max(cij + ui + v[j], 0.0)
            e = dui + dv[j]
            one = 1.0 if z > 0.0 else 0.0
            s += z
            q += z * z
            h += e * e * one
            c[j] += z
            nonfinite += 0.0 * cij
            if count:
                cnt += one
                deg_c[j] += one
        r[i] = s
        if count:
            deg_r[i] = cnt
        quad += q
        curv += h
    return -0.5 * quad + row_marginal * u.sum() + column_marginal * v.sum(), curv, nonfinite == 0.0


@njit(**JIT_SUM)
def _directional(r, c, row_marginal, column_marginal, du, dv):
    r""":math:`\langle\nabla\theta, d\rangle = \sum_i (\alpha - r_i)d_{u,i} + \sum_j (\beta - c_j)d_{v,j}`."""
    a = 0.0
    for i in range(r.shape[0]):
        a += (row_marginal - r[i]) * du[i]
    for j in range(c.shape[0]):
        a += (column_marginal - c[j]) * dv[j]
    return a


@njit(**JIT)
def _along(u, du, v, dv, t, ut, vt):
    """``ut = u + t du`` and ``vt = v + t dv``: the dual point at step ``t`` of a line search."""
    for i in range(u.shape[0]):
        ut[i] = u[i] + t * du[i]
    for j in range(v.shape[0]):
        vt[j] = v[j] + t * dv[j]


@njit(**JIT)
def _line_search(C, prm, u, v, du, dv, sc, start, rule):
    r"""Exact line search: :math:`t \approx \arg\max_{t \ge 0}\varphi(t) = \theta(u + td_u, v + td_v)`.

    :math:`\varphi` is concave and piecewise quadratic; ``start`` (a `LineStart`) holds
    :math:`\varphi(0) =` ``theta``, :math:`\varphi'(0) =` ``slope`` :math:`> 0` and the marginal
    residual ``res`` there, ``rule`` (a `LineRule`) the levels ``q_full`` (``q_first``), ``q``,
    ``armijo`` and ``t_min`` below; ``tol`` is ``prm.tol``; ``r``, ``c``, ``deg_r``, ``deg_c``,
    ``ut``, ``vt`` are those of ``sc``.
    Each trial costs one pass (value, derivative and curvature together). From :math:`t = 1`:
    a Newton step on :math:`\varphi'` (exact on the current quadratic piece), extrapolating up to 4x
    while no trial has :math:`\varphi' < 0`, then kept inside the bracket (secant, then bisection).
    Stops when :math:`|\varphi'(t)| \le q\,\varphi'(0)` (``q_full`` at the first trial
    :math:`t = 1`, ``q`` at later ones), when the trial's marginal residual is at most ``tol``,
    when ``armijo`` and the full step passes the Armijo test :math:`\varphi(1) \ge \varphi(0) +
    10^{-4}\varphi'(0)` or halves the residual ``res`` without a visible loss of dual value (a
    full Newton step that gains enough is kept, at one pass; near the solution :math:`\theta` and
    :math:`\varphi'` move below round-off while the residual still shrinks), or when the bracket
    collapses. The result is the last trial unless the search stopped without meeting its test,
    past the maximizer *and* with a loss of dual value; then it is the bracket's left end (where
    :math:`\varphi' > 0`, so :math:`\varphi` exceeds :math:`\varphi(0)`); 0 if no trial had
    :math:`\varphi' > 0`; and 0 at once, after the first trial, when the Newton step on
    :math:`\varphi'` from it estimates the maximizer below ``t_min`` (then ``r``, ``c`` hold the
    first trial's marginals).

    Returns ``(t, theta_t, passes)``; when ``t > 0``, on exit ``ut, vt`` hold :math:`u + td_u,
    v + td_v` and ``r``, ``c`` the marginals there; ``deg_r``, ``deg_c`` hold the degrees of the
    first trial's pattern (those of the result when ``passes == 1``).
    """
    row_marginal, column_marginal, tol = prm.row_marginal, prm.column_marginal, prm.tol
    r, c, ut, vt = sc.r, sc.c, sc.ut, sc.vt
    theta, slope, res = start.theta, start.slope, start.residual
    q_full, q, armijo, t_min = rule.q_first, rule.q, rule.armijo, rule.t_min
    lo, dlo = 0.0, slope
    hi, dhi = np.inf, 0.0
    t = 1.0
    theta_t = theta
    dphi = slope
    passes = 0
    met = False
    for _ in range(40):
        _along(u, du, v, dv, t, ut, vt)
        theta_t, curv, _ = _line_eval(C, prm, ut, vt, du, dv, sc, passes == 0)
        passes += 1
        dphi = _directional(r, c, row_marginal, column_marginal, du, dv)
        # Close enough to the maximizer: on a quadratic piece |phi'(t)| <= q phi'(0) puts t within
        # a factor 1 +- q of it and phi(t) within q^2 of the best gain.
        res_t = _residual(r, c, row_marginal, column_marginal)
        met = abs(dphi) <= (q_full if passes == 1 else q) * slope or res_t <= tol or (
            passes == 1 and armijo and (theta_t >= theta + 1e-4 * slope or (
                res_t <= 0.5 * res and theta_t >= theta - 1e-14 * abs(theta))))
        if met:
            break
        if dphi > 0.0:
            lo, dlo = t, dphi
        else:
            hi, dhi = t, dphi
        t_new = t + dphi / curv if curv > 0.0 else np.inf
        if hi == np.inf:
            # Still ascending at every trial: extrapolate, by at most 4x per trial.
            t_new = min(t_new, 4.0 * t) if t_new > t else 2.0 * t
        elif not lo < t_new < hi:
            t_new = lo - dlo * (hi - lo) / (dhi - dlo)
            if not lo < t_new < hi:
                t_new = 0.5 * (lo + hi)
        if hi - lo <= 1e-12 * hi:
            break
        if passes == 1 and t_new < t_min:
            # Give up at once: the maximizer is estimated below t_min (the caller's threshold).
            return 0.0, theta, passes
        t = t_new
    if not met and dphi < 0.0 and theta_t < theta - 1e-14 * abs(theta):
        # The search gave up past the maximizer and below the start's value: fall back to the
        # bracket's left end, an ascent point. Not applied to a trial that met the test: near the
        # solution theta moves below round-off while the residual still shrinks, and such a step
        # must not be refused (a refusal costs a block-ascent sweep).
        t = lo
        if t > 0.0:
            _along(u, du, v, dv, t, ut, vt)
            theta_t, _, _ = _line_eval(C, prm, ut, vt, du, dv, sc, False)
            passes += 1
        else:
            theta_t = theta
    return t, theta_t, passes


@njit(**JIT_SUM)
def _pattern(C, u, v, idx, deg_r, deg_c, counted):
    r"""Pattern of :math:`\Omega = 1[C + u1^T + 1v^T > 0]`, row by row, and its degrees.

    Row ``i`` owns ``idx[i*n:(i+1)*n]`` and stores only the shorter side: the ``deg_r[i]`` columns
    with :math:`\Omega_{ij} = 1` at the left, or else the columns with :math:`\Omega_{ij} = 0`
    after position ``deg_r[i]``. Hessian products then cost :math:`O(\sum_i \min(d_i, n - d_i))`:
    cheap both for the sparse plans of a far-away ``C`` and for the nearly full plans of a ``C`` near
    the polytope. Unless ``counted`` (the degrees are already those of :math:`\Omega(u, v)`, as
    after `_line_eval` at the same point), a first (vectorized) pass counts; the storing pass then
    runs without a branch: every column index is written at the next free slot, which advances only
    when the entry belongs to the stored side (a branch taken at random, 6 % of the entries of a
    COMPAS block step, costs more in mispredictions than the extra stores). Writes past a row's end
    land in the next row's slots, which that row overwrites later, or in the ``n`` spare slots at
    the end of ``idx`` (length ``m*n + n``): there is one such write when the counts are exact, and
    up to ``n`` when the comparison here is rounded differently from the one that counted (the
    sums may be reassociated; an entry on the edge then changes sides, which only perturbs the
    Newton direction, and the line search checks that). Returns the number of passes over ``C``.
    """
    m, n = C.shape
    if not counted:
        deg_c[:] = 0.0
        for i in range(np.uint64(m)):
            ui = u[i]
            cnt = 0.0
            for j in range(np.uint64(n)):
                one = 1.0 if C[i, j] + ui + v[j] > 0.0 else 0.0
                cnt += one
                deg_c[j] += one
            deg_r[i] = cnt
    for i in range(np.uint64(m)):
        ui = u[i]
        d = np.uint64(deg_r[i])
        k = i * np.uint64(n)
        if d <= np.uint64(n) - d:
            for j in range(np.uint64(n)):
                idx[k] = j
                k += np.uint64(C[i, j] + ui + v[j] > 0.0)
        else:
            k += d
            for j in range(np.uint64(n)):
                idx[k] = j
                k += np.uint64(not C[i, j] + ui + v[j] > 0.0)
    return 1 if counted else 2


@njit(**JIT_SUM)
def _hess_vec(idx, deg_r, deg_c, eps, xu, xv, yu, yv):
    r""":math:`y = (V + \epsilon I)x`, reading per row the shorter of the pattern and its complement."""
    m = deg_r.shape[0]
    n = deg_c.shape[0]
    total_v = xv.sum()
    spread = 0.0  # sum of xu over complement-stored rows: added to every yv at the end
    for j in range(n):
        yv[j] = (deg_c[j] + eps) * xv[j]
    for i in range(np.uint64(m)):
        d = np.uint64(deg_r[i])
        base = i * np.uint64(n)
        xi = xu[i]
        acc = 0.0
        if d <= np.uint64(n) - d:
            for k in range(base, base + d):
                j = idx[k]
                acc += xv[j]
                yv[j] += xi
        else:
            for k in range(base + d, base + np.uint64(n)):
                j = idx[k]
                acc -= xv[j]
                yv[j] -= xi
            acc += total_v
            spread += xi
        yu[i] = (deg_r[i] + eps) * xi + acc
    for j in range(n):
        yv[j] += spread


@njit(**JIT_SUM)
def _row_ascent(C, u, v, row_marginal, t, s, cnt, prev):
    r"""Exact maximization of :math:`\theta` over ``u``: :math:`\sum_j (C_{ij} + v_j + u_i)_+ = \alpha`.

    Newton's method on each row's convex, increasing, piecewise-linear function, started right of
    the root at :math:`t_0 = (\alpha - \sum_j a_j)/n`: iterates decrease monotonically and stop
    when the active set repeats (then the last step landed exactly on the root).
    """
    m, n = C.shape
    for i in range(np.uint64(m)):
        acc = 0.0
        for j in range(np.uint64(n)):
            acc += C[i, j] + v[j]
        t[i] = (row_marginal - acc) / n
        prev[i] = -1.0
        for _ in range(200):
            ti = t[i]
            acc = 0.0
            k = 0.0
            for j in range(np.uint64(n)):
                z = max(C[i, j] + v[j] + ti, 0.0)
                acc += z
                k += 1.0 if z > 0.0 else 0.0
            if k == prev[i] or acc <= row_marginal:
                break
            prev[i] = k
            t[i] = ti - (acc - row_marginal) / k
        u[i] = t[i]


@njit(**JIT_SUM)
def _col_ascent(C, u, v, column_marginal, t, s, cnt, prev):
    r"""Exact maximization of :math:`\theta` over ``v``; all columns advance together, row-major passes."""
    m, n = C.shape
    s[:n] = 0.0
    for i in range(np.uint64(m)):
        ui = u[i]
        for j in range(np.uint64(n)):
            s[j] += C[i, j] + ui
    for j in range(n):
        t[j] = (column_marginal - s[j]) / m
        prev[j] = -1.0
    for _ in range(200):
        s[:n] = 0.0
        cnt[:n] = 0.0
        for i in range(np.uint64(m)):
            ui = u[i]
            for j in range(np.uint64(n)):
                z = max(C[i, j] + ui + t[j], 0.0)
                s[j] += z
                cnt[j] += 1.0 if z > 0.0 else 0.0
        moved = False
        for j in range(n):
            if cnt[j] != prev[j] and s[j] > column_marginal:
                t[j] -= (s[j] - column_marginal) / cnt[j]
                moved = True
            prev[j] = cnt[j]
        if not moved:
            break
    v[:] = t[:n]


@njit(**JIT)
def _block_ascent(C, u, v, row_marginal, column_marginal, t, s, cnt, prev):
    r"""One exact block-coordinate ascent sweep: all of ``u``, then all of ``v``."""
    _row_ascent(C, u, v, row_marginal, t, s, cnt, prev)
    _col_ascent(C, u, v, column_marginal, t, s, cnt, prev)


# --------------------------------------------------------------------------- solver
def transport_workspace(m, n) -> TransportWorkspace:
    r"""The `TransportWorkspace` of :func:`transport_solve` for an m×n ``C``.

    Parameters
    ----------
    m, n : int
        Rows and columns of ``C``.
    """
    return TransportWorkspace(np.zeros((12, m + n)), np.empty(m * n + n, dtype=np.uint32))


def _check_workspace(workspace, m, n) -> TransportWorkspace:
    """``workspace`` (a `TransportWorkspace` or a pair) as a `TransportWorkspace` for an m×n ``C``;
    ValueError naming the field otherwise."""
    try:
        work, idx = workspace
    except (TypeError, ValueError):
        raise ValueError(f"workspace: expected transport_workspace({m}, {n}), got {type(workspace).__name__}") from None
    if not (isinstance(work, np.ndarray) and work.dtype == np.float64 and work.ndim == 2 and work.shape[0] >= 12
            and work.shape[1] == m + n and work.flags.c_contiguous and work.flags.writeable):
        raise ValueError(f"workspace: field work is not that of transport_workspace({m}, {n})")
    if not (isinstance(idx, np.ndarray) and idx.dtype == np.uint32 and idx.shape == (m * n + n,)
            and idx.flags.writeable):
        raise ValueError(f"workspace: field idx is not that of transport_workspace({m}, {n})")
    return workspace if isinstance(workspace, TransportWorkspace) else TransportWorkspace(work, idx)


@njit(**JIT_SUM)
def _dot(au, av, bu, bv):
    return (au * bu).sum() + (av * bv).sum()


@njit(**JIT)
def _cg_budget(deg_r, m, n):
    r"""CG iterations worth about :data:`CG_PASSES` passes over :math:`C`.

    A Hessian product reads the stored side of each row (:math:`\min(d_i, n - d_i)` indices) and
    two vectors; a pass reads all :math:`mn` entries. At least 5 iterations, at most 500.
    """
    stored = 0.0
    for i in range(m):
        stored += min(deg_r[i], n - deg_r[i])
    return int(min(500.0, max(5.0, CG_PASSES * m * n / (stored + 2.0 * (m + n)))))


@njit(**JIT_SUM)
def _pcg(sc, eps, rtol, rtol_tight, budget, max_cg):
    r"""Jacobi-preconditioned CG for :math:`(V + \epsilon I)d = g` from ``d = 0``; returns iterations.

    :math:`V` is that of the pattern ``sc.idx`` with degrees ``sc.deg_r``, ``sc.deg_c``; :math:`g` is
    ``sc.gu, sc.gv``, :math:`d` is written to ``sc.du, sc.dv``. Stops at relative residual
    ``rtol_tight``, or at ``rtol`` once ``budget`` iterations are spent, or after ``max_cg``.
    """
    idx, deg_r, deg_c, gu, gv, du, dv = sc.idx, sc.deg_r, sc.deg_c, sc.gu, sc.gv, sc.du, sc.dv
    ru, rv, zu, zv, pu, pv, qu, qv = sc.ru, sc.rv, sc.zu, sc.zv, sc.pu, sc.pv, sc.qu, sc.qv
    m = gu.shape[0]
    n = gv.shape[0]
    du[:] = 0.0
    dv[:] = 0.0
    ru[:] = gu
    rv[:] = gv
    zu[:] = ru / (deg_r + eps)
    zv[:] = rv / (deg_c + eps)
    rz = _dot(ru, rv, zu, zv)
    g2 = _dot(ru, rv, ru, rv)
    stop2 = rtol * rtol * g2
    tight2 = rtol_tight * rtol_tight * g2
    pu[:] = zu
    pv[:] = zv
    it = 0
    while it < max_cg:
        it += 1
        _hess_vec(idx, deg_r, deg_c, eps, pu, pv, qu, qv)
        pq = _dot(pu, pv, qu, qv)
        if pq <= 0.0:
            break
        a = rz / pq
        for i in range(m):
            du[i] += a * pu[i]
            ru[i] -= a * qu[i]
        for j in range(n):
            dv[j] += a * pv[j]
            rv[j] -= a * qv[j]
        r2 = _dot(ru, rv, ru, rv)
        if r2 <= tight2 or (r2 <= stop2 and it >= budget):
            break
        for i in range(m):
            zu[i] = ru[i] / (deg_r[i] + eps)
        for j in range(n):
            zv[j] = rv[j] / (deg_c[j] + eps)
        rz_new = _dot(ru, rv, zu, zv)
        b = rz_new / rz
        rz = rz_new
        for i in range(m):
            pu[i] = zu[i] + b * pu[i]
        for j in range(n):
            pv[j] = zv[j] + b * pv[j]
    return it


@njit(**JIT)
def transport_solve(C, prm, u, v, wu, wv, out, ws):
    r"""Project ``C`` (m×n) onto :math:`\mathcal P`; write :math:`P = (C + u1^T + 1v^T)_+` into ``out``.

    Parameters
    ----------
    C : float64 (m, n), C-contiguous
    prm : TransportParameters
        Marginals, tolerance, iteration limits and the start rules (``cold``, ``ray``, ``retry``).
    u, v : float64 (m,), (n,)
        Dual start (warm start) on entry, the final duals on exit.
    wu, wv : float64 (m,), (n,)
        Ray-start direction, used when ``prm.ray`` (exact line search from the start along it).
    out : float64 (m, n)
        Receives :math:`P`; may be ``C`` itself (C is read for the last time in that pass).
    ws : TransportWorkspace
        From :func:`transport_workspace` (``work`` at least 12 × (m + n)).

    Returns
    -------
    (n_newton, n_cg, n_sweeps, n_passes, residual, status) : ``n_passes`` counts the passes over
    ``C`` outside the block-ascent sweeps (evaluations, line-search trials, one or two per pattern, the
    final write); status 0 converged, 1 iteration limit, 2 ``C`` holds NaN or inf (found by the
    first evaluation; nothing is written to ``out``).
    """
    m, n = C.shape
    tol = prm.tol
    sc = _scratch(ws, m, n)
    n_newton, n_cg, n_sweeps, n_passes, res = _solve_dual(C, prm, u, v, wu, wv, sc, prm.cold, prm.ray)
    if np.isnan(res):
        return n_newton, n_cg, n_sweeps, n_passes, res, NONFINITE
    if res > tol and prm.retry and not prm.cold:
        u[:] = 0.0
        v[:] = 0.0
        a, b, c, d, res = _solve_dual(C, prm, u, v, wu, wv, sc, True, False)
        n_newton += a
        n_cg += b
        n_sweeps += c
        n_passes += d
    for i in range(np.uint64(m)):
        ui = u[i]
        for j in range(np.uint64(n)):
            out[i, j] = max(C[i, j] + ui + v[j], 0.0)
    n_passes += 1
    return n_newton, n_cg, n_sweeps, n_passes, res, CONVERGED if res <= tol else MAX_ITER


@njit(**JIT)
def _solve_dual(C, prm, u, v, wu, wv, sc, cold, ray):
    r"""The dual iterations of `transport_solve` (no write of :math:`P`), with the start rules ``cold``
    and ``ray`` (those of ``prm`` in the first attempt); returns counters and the residual."""
    m, n = C.shape
    row_marginal, column_marginal = prm.row_marginal, prm.column_marginal
    tol, max_newton, max_sweeps = prm.tol, prm.max_newton, prm.max_sweeps
    r, c, deg_r, deg_c, gu, gv, du, dv = sc.r, sc.c, sc.deg_r, sc.deg_c, sc.gu, sc.gv, sc.du, sc.dv
    ut, vt, idx = sc.ut, sc.vt, sc.idx
    t, s, cnt, prev = sc.t, sc.s, sc.cnt, sc.prev
    n_newton = 0
    n_cg = 0
    n_sweeps = 0
    n_passes = 1
    if cold:
        # Input check first: the sweep's row and column equations divide by active counts.
        if not _line_eval(C, prm, u, v, wu, wv, sc, False)[2]:
            return n_newton, n_cg, n_sweeps, n_passes, np.nan
        n_passes += 1
        _block_ascent(C, u, v, row_marginal, column_marginal, t, s, cnt, prev)
        n_sweeps += 1
    # The start's value and marginals, the input check and the curvature along the ray at the
    # start, in one pass: the Newton estimate slope / curvature of the best multiple of the ray
    # decides whether it is worth a line search before any pass is spent on it.
    theta, curv, finite = _line_eval(C, prm, u, v, wu, wv, sc, True)
    if not finite:
        return n_newton, n_cg, n_sweeps, n_passes, np.nan
    counted = True  # deg_r, deg_c hold the degrees of the pattern at (u, v)
    res = _residual(r, c, row_marginal, column_marginal)
    scale = max(row_marginal, column_marginal)
    if ray and res > tol:
        slope = _directional(r, c, row_marginal, column_marginal, wu, wv)
        if slope > 0.0 and slope >= RAY_MIN * curv:
            gu[:] = r  # the start's marginals, restored if the ray is given up
            gv[:] = c
            step, theta_t, passes = _line_search(C, prm, u, v, wu, wv, sc, LineStart(theta, slope, res),
                                                 LineRule(Q_RAY, Q_RAY, False, RAY_MIN))
            n_passes += passes
            counted = step > 0.0 and passes == 1
            if step > 0.0:
                u[:] = ut
                v[:] = vt
                theta = theta_t
            else:
                r[:] = gu
                c[:] = gv
            res = _residual(r, c, row_marginal, column_marginal)
    while res > tol and n_newton < max_newton:
        n_newton += 1
        for i in range(m):
            gu[i] = row_marginal - r[i]
        for j in range(n):
            gv[j] = column_marginal - c[j]
        n_passes += _pattern(C, u, v, idx, deg_r, deg_c, counted)
        rel = res / scale
        # Small: the exact line search below globalizes, so the shift only has to make the system
        # definite (shift invariance, empty rows and columns); a large one would turn the
        # direction into a gradient step.
        eps = 1e-2 * min(1.0, rel)
        n_cg += _pcg(sc, eps, min(0.1, np.sqrt(rel)), min(0.1, 0.01 * rel), _cg_budget(deg_r, m, n), 500)
        slope = _dot(gu, gv, du, dv)
        step = 0.0
        if slope > 0.0:
            step, theta_t, passes = _line_search(C, prm, u, v, du, dv, sc, LineStart(theta, slope, res),
                                                 LineRule(Q_FULL, Q_NEWTON, True, 0.0))
            n_passes += passes
        if step > 0.0:
            u[:] = ut
            v[:] = vt
            theta = theta_t
            res = _residual(r, c, row_marginal, column_marginal)
            counted = passes == 1  # the degrees are the first trial's (see `_line_search`)
        else:
            counted = False
            # No ascent along the Newton direction (CG stopped on round-off): one exact
            # block-ascent sweep repairs whole rows and columns.
            _block_ascent(C, u, v, row_marginal, column_marginal, t, s, cnt, prev)
            n_sweeps += 1
            theta = _dual_eval(C, u, v, row_marginal, column_marginal, r, c)
            n_passes += 1
            res = _residual(r, c, row_marginal, column_marginal)
    # Fallback: exact block-coordinate ascent, a monotone method that converges on its own.
    while res > tol and n_sweeps < max_sweeps:
        n_sweeps += 1
        _block_ascent(C, u, v, row_marginal, column_marginal, t, s, cnt, prev)
        _dual_eval(C, u, v, row_marginal, column_marginal, r, c)
        n_passes += 1
        res = _residual(r, c, row_marginal, column_marginal)
    return n_newton, n_cg, n_sweeps, n_passes, res


# --------------------------------------------------------------------------- Python entry point
class TransportProjection(NamedTuple):
    r"""Result of :func:`project_transport`."""

    P: np.ndarray
    u: np.ndarray
    v: np.ndarray
    n_iter: int          #: Newton iterations
    n_cg: int            #: CG iterations (Hessian-vector products) over all Newton steps
    n_sweeps: int        #: exact block-ascent sweeps (cold start and fallback)
    residual: float      #: ||P1 - row_marginal 1|| + ||P^T 1 - column_marginal 1||
    converged: bool
    n_passes: int = 0    #: passes over C outside the block-ascent sweeps (see `transport_solve`)


def marginal_residual(P, row_marginal, column_marginal) -> float:
    r""":math:`\|P\mathbf 1 - \alpha\mathbf 1\| + \|P^\top\mathbf 1 - \beta\mathbf 1\|`."""
    return float(np.linalg.norm(P.sum(axis=1) - row_marginal) + np.linalg.norm(P.sum(axis=0) - column_marginal))


def project_transport(C, marginals=None, start=None, *, tol=1e-10, max_newton=100, max_sweeps=20000, out=None,
                      workspace=None, direction=None, retry=True):
    r"""Euclidean projection of ``C`` onto :math:`\{P \ge 0: P1 = \alpha 1, P^T1 = \beta 1\}`.

    Parameters
    ----------
    C : array-like (m, n)
    marginals : pair of float, optional
        ``(row_marginal, column_marginal)``, the row and column sums :math:`\alpha, \beta`; default
        :math:`(1/m, 1/n)` (a coupling of two uniform distributions, [HL23] eq. 13). Must satisfy
        :math:`\alpha m = \beta n`.
    start : pair of arrays (m,), (n,), optional
        Warm-start duals ``(u, v)`` (e.g. those of the previous projection); copied. Without them
        the solver starts from one exact block-ascent sweep from zero.
    tol : float
        Stop when the marginal residual is at most ``tol * max(row_marginal, column_marginal)``.
    max_newton, max_sweeps : int
        Newton iterations, then fallback block-ascent sweeps (``max_newton=0``: block-coordinate
        ascent only).
    out : float64 (m, n) array, optional
        Receives P (may be ``C`` itself when C is float64 C-contiguous).
    workspace : TransportWorkspace, optional
        From :func:`transport_workspace` (reused to avoid allocating ``4 m n`` bytes per call); a pair
        ``(work, idx)`` of such arrays is accepted too.
    direction : pair of arrays (m,), (n,), optional
        Ray start: before Newton, an exact line search on the dual from ``start`` along
        this direction (typically zero duals and the previous projection's duals: the best multiple
        of them, 0 included, so the dual value never falls below the start's).
    retry : bool
        With a given ``start`` that does not converge, solve again from a cold start before
        reporting non-convergence.
    """
    C = np.ascontiguousarray(C, dtype=np.float64)
    if C.ndim != 2 or C.size == 0:
        raise ValueError(f"C: expected a non-empty 2-D array, got shape {C.shape}")
    m, n = C.shape
    if marginals is None:
        row_marginal = 1.0 / m
        column_marginal = row_marginal * m / n
    else:
        row_marginal, column_marginal = (float(a) for a in marginals)
    if (not (row_marginal > 0 and column_marginal > 0)
            or abs(row_marginal * m - column_marginal * n) > 1e-12 * row_marginal * m):
        raise ValueError(f"marginals: need positive (row_marginal, column_marginal) with row_marginal*m == "
                         f"column_marginal*n, got {row_marginal}, {column_marginal}")
    cold = start is None
    u, v = (np.zeros(m), np.zeros(n)) if cold else (np.array(a, dtype=np.float64) for a in start)
    if u.shape != (m,) or v.shape != (n,):
        raise ValueError(f"start: expected shapes ({m},), ({n},), got {u.shape}, {v.shape}")
    if direction is None:
        wu, wv = u, v  # not read
    else:
        wu, wv = (np.ascontiguousarray(a, dtype=np.float64) for a in direction)
        if wu.shape != (m,) or wv.shape != (n,):
            raise ValueError(f"direction: expected shapes ({m},), ({n},), got {wu.shape}, {wv.shape}")
        if not (np.all(np.isfinite(wu)) and np.all(np.isfinite(wv))):
            raise ValueError("direction: contains NaN or inf")
    if out is None:
        out = np.empty((m, n))
    elif not (isinstance(out, np.ndarray) and out.dtype == np.float64 and out.shape == (m, n)
              and out.flags.writeable):
        raise ValueError(f"out: expected a writeable float64 array of shape ({m}, {n})")
    workspace = transport_workspace(m, n) if workspace is None else _check_workspace(workspace, m, n)
    prm = TransportParameters(row_marginal, column_marginal, tol * max(row_marginal, column_marginal),
                              max_newton, max_sweeps,
                              cold, direction is not None, bool(retry))
    it, n_cg, sweeps, passes, res, status = transport_solve(C, prm, u, v, wu, wv, out, workspace)
    if status == NONFINITE:
        raise ValueError("C: contains NaN or inf")
    return TransportProjection(out, u, v, int(it), int(n_cg), int(sweeps), float(res), status == CONVERGED,
                               int(passes))


# --------------------------------------------------------------------------- transport cost
@njit(**JIT)
def transport_cost_block(P, rows, cols, sp, su, scale, with_grad, gP, rho_r, rho_c):
    r"""Cost :math:`\sum_{a,b} P_{I_a J_b}|s^p_a - s^u_b|` of a block of the plan, and its pieces.

    The transport cost :math:`H(P, w) = \sum_{ij} P_{ij}|w^\top a^p_i - w^\top a^u_j|` ([HL23]
    eq. 13) restricted to rows ``rows`` and columns ``cols`` of ``P`` (all of them for a full
    pass); ``sp[a]``, ``su[b]`` are the scores of those rows and columns. Writes the sign-weighted
    sums :math:`\rho_r = (P \odot \mathrm{sign}\,D)\mathbf 1` and
    :math:`\rho_c = (P\odot\mathrm{sign}\,D)^\top\mathbf 1` (with :math:`\mathrm{sign}\,0 = 0`), from
    which :math:`\partial_w H = A_p^\top\rho_r - A_u^\top\rho_c` costs one transposed product per
    group instead of :math:`O(m^2 d)`. With ``with_grad``, adds ``scale * |D|`` into ``gP`` at the
    block's entries (``+=``, so repeated indices count repeatedly). Returns the unscaled cost.
    """
    rho_c[:] = 0.0
    total = 0.0
    nb = np.uint64(cols.shape[0])
    for a in range(np.uint64(rows.shape[0])):
        i = rows[a]
        si = sp[a]
        acc = 0.0
        val = 0.0
        for b in range(nb):
            j = cols[b]
            diff = si - su[b]
            p = P[i, j]
            val += p * abs(diff)
            sg = p if diff > 0.0 else (-p if diff < 0.0 else 0.0)
            acc += sg
            rho_c[b] += sg
            if with_grad:
                gP[i, j] += scale * abs(diff)
        rho_r[a] = acc
        total += val
    return total
