r"""Optimality certificates on a problem and a point: near stationarity, KKT residual, violation.

Near stationarity (Huang & Lin [HL23] Definition 3.2; see docs/references.md) measures a point
:math:`x` by its distance to the proximal point

.. math::

    \hat x_{\hat\rho}(x) = \operatorname*{arg\,min}_{y \in \mathcal X}
        \Big\{ F(y) := f(y) + \frac{\hat\rho}{2}\|y - x\|^2 \ \text{ s.t. }\ g(y) \le 0 \Big\}
    \qquad \text{(eqs. 4-5)}.

If :math:`\|\hat x - x\| \le \epsilon` then :math:`\hat x` is :math:`\hat\rho\epsilon`-stationary
(KKT (2)-(3)). The paper plots :math:`\|\hat x - x\|` in Figure 1, solving (5) "with sufficient
iterations" of SSG ([HL23] §6.1); here the solver and its accuracy are stated exactly.

The functions accept any object with the `ConstrainedProblem` interface (``f_and_subgradient``,
``g_and_subgradient``, ``constraint_values``, ``project_inplace``, ``domain``, ``dim``,
``objective``, ``constraints``). They import nothing from ``fastcon.problems`` or
``fastcon.solvers`` (metrics sit below both layers) and leave the terms' ``rows_read`` counters
as they found them.
"""
from __future__ import annotations

import contextlib
import warnings

import numpy as np

from .._kernels._vector import axpy, proximal_add

__all__ = ["near_stationarity", "kkt_residual", "constraint_violation", "preserved_counters"]


# ---------------------------------------------------------------------- counters
def _counter_holders(term, out, seen):
    """Objects that store ``rows_read`` as a plain attribute, found through wrappers (``.term``/``.terms``).

    Wrappers (`ShiftedTerm`, `ProximalTerm`, ...) expose ``rows_read`` as a read-only property that
    forwards to the wrapped term; only the leaf that owns the count can (and must) be restored.
    """
    if term is None or id(term) in seen:
        return out
    seen.add(id(term))
    if "rows_read" in getattr(term, "__dict__", {}):
        out.append(term)
    _counter_holders(getattr(term, "term", None), out, seen)
    for sub in getattr(term, "terms", None) or ():
        _counter_holders(sub, out, seen)
    return out


@contextlib.contextmanager
def preserved_counters(problem):
    """Run a block and then put every term's ``rows_read`` back to its value before the block.

    Certificates are measurements, not part of the algorithm: the data passes they spend must not
    show up in the caller's solver accounting. A term whose counter cannot be found or restored
    triggers a RuntimeWarning (checked through ``problem.rows_read_f/g`` when available).

    Parameters
    ----------
    problem : ConstrainedProblem
        The problem whose terms' ``rows_read`` counters are restored.
    """
    seen = set()
    holders = _counter_holders(problem.objective, [], seen)
    for c in problem.constraints:
        _counter_holders(c, holders, seen)
    saved = [(h, h.rows_read) for h in holders]
    totals = (getattr(problem, "rows_read_f", None), getattr(problem, "rows_read_g", None))
    try:
        yield
    finally:
        for h, value in saved:
            h.rows_read = value
        after = (getattr(problem, "rows_read_f", None), getattr(problem, "rows_read_g", None))
        if after != totals:
            warnings.warn(f"metrics: could not restore the data-pass counters (rows_read f/g {totals} -> "
                          f"{after}); a term keeps its count somewhere other than a rows_read attribute",
                          RuntimeWarning, stacklevel=3)


# ---------------------------------------------------------------------- near stationarity
def near_stationarity(problem, x, rho_hat, *, max_iter=2000, tol=1e-6, seed=0, return_details=False, mu=None,
                      feas_tol=1e-10, window=50, output="average"):
    r"""Near-stationarity measure :math:`\|\hat x_{\hat\rho}(x) - x\|` ([HL23] eqs. 4-5, Def. 3.2).

    Solves the proximal subproblem (5), warm-started at :math:`z_0 = P_{\mathcal X}(x)`, by a
    switching subgradient method for strongly convex objectives (Ma, Lin & Yang [MLY20] Algorithm 2),
    with one change on infeasible steps:

    * **objective step** if :math:`g(z) \le \epsilon_{feas}`: :math:`z \leftarrow P_{\mathcal X}(z -
      \gamma_j F'(z))`, :math:`F'(z) = \zeta_f(z) + \hat\rho(z - x)`, :math:`\gamma_j = 2/(\mu(j+2))`,
      where :math:`j = 0, 1, \dots` counts objective steps only; :math:`z` joins the running
      average with weight :math:`j + 1`;
    * **constraint step** otherwise: the Polyak step :math:`z \leftarrow P_{\mathcal X}(z -
      \frac{g(z)}{\|\zeta_g\|^2}\zeta_g)` (the projection onto the half-space
      :math:`\{y: g(z) + \zeta_g^\top(y - z) \le 0\} \supseteq \{g \le 0\}`).

    Why Polyak steps: in (4) only :math:`F` is strongly convex, :math:`g` is merely convex, and a
    :math:`2/(\mu(k+2))` step on :math:`g` breaks the telescoping of [MLY20]'s proof (it needs the
    constraint strongly convex too). A Polyak step never increases :math:`\|z - \hat x\|` (Fejér
    monotone: :math:`\hat x` lies in the half-space and in :math:`\mathcal X`), so the objective-step
    analysis telescopes across any number of constraint steps. It gives the **a-posteriori bound**

    .. math::

        F(\bar z) - F(\hat x) \le \Gamma := \frac{\sum_{j} (j+1)\|F'(z_j)\|^2 / (\mu (j+2))}
                                                 {\sum_j (j+1)},
        \qquad
        \|\bar z - \hat x\| \le \sqrt{2\Gamma / \mu} =: \text{error\_bound}
        \quad\text{if } g(\bar z) \le 0,

    computed from the subgradient norms actually observed (:math:`\bar z` is the weighted average).
    If :math:`0 < g(\bar z) \le \epsilon_{feas}` the distance bound becomes
    :math:`\sqrt{2(\Gamma + \hat\lambda g(\bar z))/\mu}` with :math:`\hat\lambda` the multiplier of
    (6) (bounded by Lemma 3.3); ``error_bound`` then omits that term and ``details["g"]`` reports
    :math:`g(\bar z)`. The bound is valid when :math:`F` is :math:`\mu`-strongly convex on
    :math:`\mathcal X`, i.e. :math:`f` is :math:`(\hat\rho - \mu)`-weakly convex; it decays like
    :math:`O(1/\sqrt{k})` (the worst-case rate of non-smooth strongly convex problems), so it is
    often far above the true error on smooth or polyhedral problems.

    Known slow case: when :math:`\hat x` lies on the boundary of both :math:`\mathcal X` and
    :math:`\{g \le 0\}`, projecting onto :math:`\mathcal X` and then stepping onto the half-space
    is not the projection onto their intersection, and the iterates converge only like
    :math:`1/J` (e.g. 1e-3 after 2000 steps on a 5-d quadratic); ``change`` still covers the error.
    In the paper's problems the ball (radius :math:`5\|w_{ERM}\|`) is normally inactive.

    **Tolerance (the stopping rule).** After :math:`J = W, 2W, 4W, \dots` objective steps
    (:math:`W` = ``window``) the weighted average :math:`\bar z_J` is compared with
    :math:`\bar z_{J/2}`; the method stops (status ``"converged"``) as soon as
    ``change`` :math:`= \|\bar z_J - \bar z_{J/2}\| \le` ``tol``, else after ``max_iter``
    iterations of either kind (status ``"max_iter"``). ``change`` is the **a-posteriori error
    estimate**: if :math:`\|\bar z_J - \hat x\| = c J^{-p}` with :math:`p \ge 1` (smooth or
    polyhedral problems; non-smooth strongly convex ones have :math:`p \ge 1/2` in the worst case),
    then :math:`\|\bar z_J - \hat x\| \le \text{change} / (2^p - 1) \le \text{change}`. It is
    an estimate, not a bound; ``error_bound`` is the rigorous one (and much larger).

    Parameters
    ----------
    problem : ConstrainedProblem
        :math:`f`, :math:`g = \max_i g_i` and :math:`\mathcal X`. Full (deterministic) oracles are used.
    x : array-like of shape (dim,)
        The point to certify.
    rho_hat : float
        :math:`\hat\rho > \rho` (the weak-convexity modulus of :math:`f`); use one fixed value per
        problem to compare methods.
    max_iter : int
        Iterations (objective plus constraint steps); each costs one fused :math:`g` pass and, on
        objective steps, one :math:`f` subgradient.
    tol : float
        Stop when ``change`` <= tol; see "Tolerance" above (absolute, in the norm of x).
    seed : int
        Accepted for interface uniformity with the solvers; the method is deterministic (full
        oracles), so equal inputs give bit-identical outputs whatever the seed.
    return_details : bool
        Return a dict instead of ``(distance, x_hat)``.
    mu : float, optional
        Strong-convexity modulus used in the steps and the bound (default :math:`\hat\rho`, i.e.
        :math:`f` assumed convex). Pass :math:`\hat\rho - \rho` for a :math:`\rho`-weakly convex f.
    feas_tol : float
        :math:`\epsilon_{feas}` of the switching test (absolute, in the units of :math:`g`).
    window : int
        First checkpoint of the stopping rule (then every doubling of the objective-step count).
    output : {"average", "last"}
        :math:`\hat x` is the (j+1)-weighted average of the objective-step iterates (default; the
        one the bound covers) or the last objective-step iterate (which passed g <= feas_tol; the
        paper's Figure 1 takes the last iterate).

    Returns
    -------
    (distance, x_hat) or dict
        The dict has ``distance``, ``x_hat``, ``status`` (``"converged"``, ``"max_iter"`` or
        ``"no_feasible_iterate"``), ``n_iter``, ``n_objective_steps``, ``change`` (the error
        estimate, inf before the second checkpoint), ``gap_bound`` (:math:`\Gamma`), ``error_bound``,
        ``g`` (:math:`g(\hat x)`),
        ``F`` (:math:`F(\hat x)`), ``rho_hat``, ``mu``, ``tol``, ``feas_tol``, ``output``.

    Notes
    -----
    The terms' ``rows_read`` counters are restored on exit (see `preserved_counters`), so calling
    this between solver iterations does not change the solver's data-pass accounting.
    """
    rho_hat = float(rho_hat)
    if not rho_hat > 0 or not np.isfinite(rho_hat):
        raise ValueError(f"rho_hat: must be positive and finite, got {rho_hat}")
    mu = rho_hat if mu is None else float(mu)
    if not mu > 0 or not np.isfinite(mu):
        raise ValueError(f"mu: must be positive and finite, got {mu}")
    if output not in ("average", "last"):
        raise ValueError(f"output: expected 'average' or 'last', got {output!r}")
    if int(max_iter) < 1 or int(window) < 1:
        raise ValueError("max_iter: max_iter and window must be at least 1")
    x = np.array(x, dtype=np.float64)
    if x.shape != (problem.dim,):
        raise ValueError(f"x: expected shape ({problem.dim},), got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("x: contains NaN or inf")
    with preserved_counters(problem):
        res = _switching_prox(problem, x, rho_hat, mu, int(max_iter), float(tol), float(feas_tol),
                              int(window), output)
    res.update(rho_hat=rho_hat, mu=mu, tol=float(tol), feas_tol=float(feas_tol), output=output, seed=seed)
    if res["status"] == "no_feasible_iterate":
        warnings.warn("near_stationarity: no iterate reached g <= feas_tol; x_hat is the last iterate "
                      "(increase max_iter, or check that the constraint has a feasible point)",
                      RuntimeWarning, stacklevel=2)
    if return_details:
        return res
    return res["distance"], res["x_hat"]


def _switching_prox(problem, x, rho_hat, mu, max_iter, tol, feas_tol, window, output):
    z = x.copy()
    problem.project_inplace(z)
    grad = np.empty_like(z)
    avg_sum = np.zeros_like(z)      # running sum_j (j+1) z_j: no iterate is stored
    weight_sum = 0.0
    bound_sum = 0.0                 # sum_j (j+1) ||F'(z_j)||^2 / (mu (j+2))
    avg_then, z_last = None, z.copy()
    j, change, status, k, next_check = 0, np.inf, "max_iter", 0, window
    for k in range(1, max_iter + 1):
        gz, _ = problem.g_and_subgradient(z, grad)
        if gz <= feas_tol:
            problem.f_and_subgradient(z, grad)
            # Fused in-place updates: on the Wasserstein problem z has m^2 + d entries and each
            # NumPy temporary of that size is a page-faulting allocation.
            proximal_add(z, x, rho_hat, grad)  # grad += rho_hat (z - x); the value is not needed
            axpy(j + 1.0, z, avg_sum)
            z_last[:] = z
            weight_sum += j + 1.0
            bound_sum += (j + 1.0) * float(grad @ grad) / (mu * (j + 2.0))
            axpy(-2.0 / (mu * (j + 2.0)), grad, z)
            j += 1
            if j == next_check:
                # Doubling checkpoints (window, 2 window, 4 window, ...): O(d) memory, and the
                # change from J/2 to J over-estimates the error when it decays like 1/J or faster.
                avg_now = avg_sum / weight_sum
                if avg_then is not None:
                    change = float(np.linalg.norm(avg_now - avg_then))
                    if change <= tol:
                        status = "converged"
                        problem.project_inplace(z)
                        break
                avg_then, next_check = avg_now, 2 * next_check
        else:
            gsq = float(grad @ grad)
            if gsq == 0.0:
                # g > 0 with a zero subgradient: z minimises the convex g, so {g <= 0} is empty.
                status = "no_feasible_iterate" if j == 0 else status
                break
            axpy(-gz / gsq, grad, z)
        problem.project_inplace(z)
    if j == 0:
        status, x_hat, gap_bound = "no_feasible_iterate", z, np.inf
    else:
        x_hat = avg_sum / weight_sum if output == "average" else z_last
        gap_bound = bound_sum / weight_sum
    g_hat = float(problem.g(x_hat)[0])
    F_hat = float(problem.f(x_hat) + 0.5 * rho_hat * np.sum((x_hat - x) ** 2))
    return {
        "distance": float(np.linalg.norm(x_hat - x)), "x_hat": np.array(x_hat), "status": status, "n_iter": k,
        "n_objective_steps": j, "change": change, "gap_bound": gap_bound,
        "error_bound": float(np.sqrt(2.0 * gap_bound / mu)) if output == "average" else np.nan,
        "g": g_hat, "F": F_hat,
    }


# ---------------------------------------------------------------------- KKT residual
def kkt_residual(problem, x, multipliers):
    r"""Residuals of the KKT conditions (2) at :math:`x` with multipliers :math:`\lambda_i`.

    .. math::

        r_{stat} = \operatorname{Dist}\Big(\zeta_f + \sum_i \lambda_i \zeta_{g_i},\,
                   -\mathcal N_{\mathcal X}(x)\Big), \quad
        r_{comp} = \max_i |\lambda_i g_i(x)|, \quad
        r_{feas} = \max_i [g_i(x)]_+, \quad
        r_{dual} = \max_i [-\lambda_i]_+ .

    :math:`\zeta_f, \zeta_{g_i}` are the subgradients the oracles return, one element of each
    subdifferential, so :math:`r_{stat}` is an upper bound on the best achievable one at a kink.
    :math:`r_{stat}` is the domain's ``normal_cone_distance`` (for a domain without a closed-form
    normal cone, the projected-gradient residual, zero exactly when the distance is).
    ([HL23] eq. (3) asks :math:`r_{stat} \le \epsilon`, :math:`r_{comp} \le \epsilon^2`,
    :math:`g \le \epsilon`.) Counters are preserved.

    Parameters
    ----------
    problem : ConstrainedProblem
    x : array-like of shape (dim,)
    multipliers : float or array-like of shape (n_constraints,)

    Returns
    -------
    dict
        ``stationarity``, ``complementarity``, ``feasibility``, ``dual_feasibility`` and ``max``
        (the largest of the four).
    """
    x = np.ascontiguousarray(x, dtype=np.float64)
    lam = np.atleast_1d(np.asarray(multipliers, dtype=np.float64))
    m = len(problem.constraints)
    if lam.shape != (m,):
        raise ValueError(f"multipliers: expected {m} value(s), got shape {lam.shape}")
    v, buf = np.empty(problem.dim), np.empty(problem.dim)
    with preserved_counters(problem):
        problem.f_and_subgradient(x, v)
        gvals = np.empty(m)
        for i, c in enumerate(problem.constraints):
            gvals[i] = c.value_and_subgradient(x, buf)
            v += lam[i] * buf
    out = {
        "stationarity": problem.domain.normal_cone_distance(x, v),
        "complementarity": float(np.max(np.abs(lam * gvals), initial=0.0)),
        "feasibility": float(np.max(np.maximum(gvals, 0.0), initial=0.0)),
        "dual_feasibility": float(np.max(np.maximum(-lam, 0.0), initial=0.0)),
    }
    out["max"] = max(out.values())
    return out


def constraint_violation(problem, x, per_constraint=False):
    r""":math:`\max_i [g_i(x)]_+` (0 when feasible or unconstrained); counters are preserved.

    With ``per_constraint=True`` returns the array :math:`([g_i(x)]_+)_i`. Membership of
    :math:`\mathcal X` is not included (solvers keep iterates in :math:`\mathcal X` by projection;
    check ``problem.domain.contains(x)`` separately).

    Parameters
    ----------
    problem : ConstrainedProblem
        The problem whose constraints :math:`g_i` are evaluated.
    x : ndarray
        The point.
    per_constraint : bool
        Return the per-constraint array instead of the maximum.
    """
    x = np.ascontiguousarray(x, dtype=np.float64)
    with preserved_counters(problem):
        values = np.maximum(problem.constraint_values(x), 0.0)
    if per_constraint:
        return values
    return float(np.max(values, initial=0.0))
