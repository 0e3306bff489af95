r"""The near-stationarity certificate: distance of a point to its proximal point.

Near stationarity (Huang & Lin [HL23] Definition 3.2; see docs/references.md) measures a point
:math:`x` by its distance to the proximal point

.. math::

    \hat x_{\hat\rho}(x) = \operatorname*{arg\,min}_{y \in \mathcal X}
        \Big\{ F(y) := f(y) + \frac{\hat\rho}{2}\|y - x\|^2 \ \text{ s.t. }\ g(y) \le 0 \Big\}
    \qquad \text{(eqs. 4-5)}.

If :math:`\|\hat x - x\| \le \epsilon` then :math:`\hat x` is :math:`\hat\rho\epsilon`-stationary
(KKT (2)-(3)). The paper plots :math:`\|\hat x - x\|` in Figure 1, solving (5) "with sufficient
iterations" of SSG ([HL23] §6.1); here the solver is the switching core
(`fastcon.solvers._switching_core`) with a strongly convex objective step and Polyak constraint
steps, and its accuracy is stated exactly. The data passes it spends are restored on exit
(`fastcon.metrics.preserved_counters`): a certificate is a measurement, not part of a solve.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..problems._protocol import require_constrained_problem
from .._kernels._vector import axpy, proximal_add
from ..metrics import preserved_counters
from ._step_rules import PolyakStep, StronglyConvexStep
from ._switching_core import FusedOracle, switching_loop
from ._validation import check_count, check_real

__all__ = ["near_stationarity"]


def near_stationarity(problem, x, rho_hat, *, max_iter=2000, tol=1e-6, return_details=False, mu=None,
                      feasibility_tolerance=1e-10, window=50, output="average"):
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
    return_details : bool
        Return a dict instead of ``(distance, x_hat)``.
    mu : float, optional
        Strong-convexity modulus used in the steps and the bound (default :math:`\hat\rho`, i.e.
        :math:`f` assumed convex). Pass :math:`\hat\rho - \rho` for a :math:`\rho`-weakly convex f.
    feasibility_tolerance : float
        :math:`\epsilon_{feas}` of the switching test (absolute, in the units of :math:`g`).
    window : int
        First checkpoint of the stopping rule (then every doubling of the objective-step count).
    output : {"average", "last"}
        :math:`\hat x` is the (j+1)-weighted average of the objective-step iterates (default; the
        one the bound covers) or the last objective-step iterate (which passed
        g <= feasibility_tolerance; the paper's Figure 1 takes the last iterate).

    Returns
    -------
    (distance, x_hat) or dict
        The dict has ``distance``, ``x_hat``, ``status`` (``"converged"``, ``"max_iter"``,
        ``"no_feasible_iterate"`` when no objective step was taken, or ``"infeasible_stationary"``
        when, after some objective steps, :math:`g > \epsilon_{feas}` at a point where its
        subgradient is zero: for a convex :math:`g`, :math:`\{g \le 0\}` is empty), ``n_iter``, ``n_objective_steps``, ``change`` (the error
        estimate, inf before the second checkpoint), ``gap_bound`` (:math:`\Gamma`), ``error_bound``,
        ``g`` (:math:`g(\hat x)`),
        ``F`` (:math:`F(\hat x)`), ``rho_hat``, ``mu``, ``tol``, ``feasibility_tolerance``,
        ``output``.

    Notes
    -----
    The terms' ``rows_read`` counters are restored on exit (see `preserved_counters`), so calling
    this between solver iterations does not change the solver's data-pass accounting.
    """
    require_constrained_problem(problem, "near_stationarity")
    rho_hat = float(rho_hat)
    if not rho_hat > 0 or not np.isfinite(rho_hat):
        raise ValueError(f"rho_hat: must be positive and finite, got {rho_hat}")
    mu = rho_hat if mu is None else float(mu)
    if not mu > 0 or not np.isfinite(mu):
        raise ValueError(f"mu: must be positive and finite, got {mu}")
    if output not in ("average", "last"):
        raise ValueError(f"output: expected 'average' or 'last', got {output!r}")
    max_iter = check_count("max_iter", max_iter)
    window = check_count("window", window)
    tol = check_real("tol", tol)
    feasibility_tolerance = check_real("feasibility_tolerance", feasibility_tolerance)
    x = np.array(x, dtype=np.float64)
    if x.shape != (problem.dim,):
        raise ValueError(f"x: expected shape ({problem.dim},), got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("x: contains NaN or inf")
    with preserved_counters(problem):
        res = _switching_prox(problem, x, rho_hat, mu, max_iter, tol, feasibility_tolerance, window, output)
    res.update(rho_hat=rho_hat, mu=mu, tol=tol, feasibility_tolerance=feasibility_tolerance, output=output)
    if res["status"] == "no_feasible_iterate":
        warnings.warn("near_stationarity: no iterate reached g <= feasibility_tolerance; x_hat is the last iterate "
                      "(increase max_iter, or check that the constraint has a feasible point)",
                      RuntimeWarning, stacklevel=2)
    if return_details:
        return res
    return res["distance"], res["x_hat"]


class _ProximalObjective:
    """:math:`F'(z) = \\zeta_f(z) + \\hat\\rho (z - x)` into ``out`` (the value is not needed)."""

    def __init__(self, problem, x, rho_hat):
        self.problem, self.x, self.rho_hat = problem, x, rho_hat

    def __call__(self, z, out):
        self.problem.f_and_subgradient(z, out)
        # Fused in place: on the Wasserstein problem z has m^2 + d entries and each NumPy
        # temporary of that size is a page-faulting allocation.
        proximal_add(z, self.x, self.rho_hat, out)
        return math.nan


def _switching_prox(problem, x, rho_hat, mu, max_iter, tol, feas_tol, window, output):
    z = x.copy()
    problem.project_inplace(z)
    grad = np.empty_like(z)         # one buffer: a step reads only the subgradient it chose
    avg_sum = np.zeros_like(z)      # running sum_j (j+1) z_j: no iterate is stored
    z_last = z.copy()
    acc = {"weight": 0.0, "bound": 0.0, "avg_then": None, "next_check": window, "change": np.inf}

    def before_step(state):
        if state.kind == "f":
            j = state.count
            axpy(j + 1.0, z, avg_sum)
            z_last[:] = z
            acc["weight"] += j + 1.0
            acc["bound"] += (j + 1.0) * float(grad @ grad) / (mu * (j + 2.0))  # sum (j+1)||F'||^2/(mu(j+2))

    def after_step(state):
        if state.kind == "f" and state.count + 1 == acc["next_check"]:
            # Doubling checkpoints (window, 2 window, 4 window, ...): O(d) memory, and the change
            # from J/2 to J over-estimates the error when it decays like 1/J or faster.
            avg_now = avg_sum / acc["weight"]
            if acc["avg_then"] is not None:
                acc["change"] = float(np.linalg.norm(avg_now - acc["avg_then"]))
                if acc["change"] <= tol:
                    return "converged"
            acc["avg_then"], acc["next_check"] = avg_now, 2 * acc["next_check"]

    run = switching_loop(z, FusedOracle(problem.g_and_subgradient, _ProximalObjective(problem, x, rho_hat), grad),
                         np.full(max_iter, feas_tol), max_iter, objective_rule=StronglyConvexStep(mu),
                         constraint_rule=PolyakStep(), project=problem.project_inplace, before_step=before_step,
                         after_step=after_step, objective_buffer=grad, constraint_buffer=grad)
    # g > 0 with a zero subgradient: z minimises the convex g, so {g <= 0} is empty.
    j = run.objective_steps
    status = {"converged": "converged", "zero_constraint_direction": "infeasible_stationary"}.get(run.stop,
                                                                                                "max_iter")
    if j == 0:
        status, x_hat, gap_bound = "no_feasible_iterate", z, np.inf
    else:
        x_hat = avg_sum / acc["weight"] if output == "average" else z_last
        gap_bound = acc["bound"] / acc["weight"]
    g_hat = float(problem.g(x_hat)[0])
    F_hat = float(problem.f(x_hat) + 0.5 * rho_hat * np.sum((x_hat - x) ** 2))
    return {
        "distance": float(np.linalg.norm(x_hat - x)), "x_hat": np.array(x_hat), "status": status,
        "n_iter": run.n_iter, "n_objective_steps": j, "change": acc["change"], "gap_bound": gap_bound,
        "error_bound": float(np.sqrt(2.0 * gap_bound / mu)) if output == "average" else np.nan,
        "g": g_hat, "F": F_hat,
    }
