r"""Grid search, the paper's selection rule and one solver run of the experiments of Huang & Lin [HL23].

One experiment module (`ssg_roc`, `ssg_wasserstein`) describes *what* is run: datasets, how a
problem is built, the hyperparameter grids, iteration budgets. `fastcon.experiments._hl23` turns it
into tasks for the shared driver (`fastcon.experiments._runner`); this module holds what a task
needs:

1. each dataset's problem is built once per process (:func:`register_bundle` lets the parent's
   own build be reused; ERM, :math:`\kappa`, radius, :math:`w_{ERM}`);
2. :func:`execute_task` runs one grid point of one method (:func:`solve_method`) and returns a
   plain record;
3. :func:`select_config` picks one configuration per (dataset, method) (the tuning rule below);
4. the winner is re-run with a near-stationarity tracker (:class:`StationarityTracker`), which
   measures :math:`\|\hat x_{\hat\rho}(x_t) - x_t\|` at about ``n_stationarity`` equally spaced
   iterations with one fixed :math:`\hat\rho` per problem for all methods.

**Tuning rule** ([HL23] §6.1-6.2: "the smallest objective value after N iterations"; the paper does
not say how infeasible runs are treated; see docs/references.md). Among the runs of one method on one dataset,

* a run is *feasible* when its final constraint value satisfies
  :math:`g(x_T) \le \max(\epsilon_{final}, 10^{-4}\kappa)`, where :math:`\epsilon_{final}` is the
  method's own switching tolerance at its last iteration (static SSG: :math:`\epsilon`; diminishing
  SSG: :math:`E_1/\sqrt T`; IPP-SSG: the inner :math:`\epsilon`) and, for the methods without a
  tolerance (ConEx, IPP-ConEx), the reference tolerance ``EPS_REF`` = 1e-5, the middle of the
  paper's static-SSG grid, so they are held to the same standard as static SSG;
* the selected run is the feasible one with the **smallest final objective** :math:`f(x_T)`
  (ties: first in grid order);
* ``feasibility_factor`` in the experiment configuration multiplies the threshold. The experiments
  use 2: the last iterate of static SSG settles just above its switching tolerance (one constraint
  step past ε at a time), so with factor 1 none of its 9 grid points ever passed on a9a or COMPAS
  and the fallback below decided instead; "a small multiple of ε" is the paper's own standard;
* if no run is feasible, the run of **least final violation** :math:`g(x_T)` is selected (ties:
  smaller objective), and the selection is flagged ``"least_violation"``.

"Final" is the method's last point :math:`x_T`: single-loop methods run with ``output="last"``
(the figure plots the trajectory, not the random output of Algorithm 1), IPP returns
its last outer iterate.

**Threads.** Every solve runs with one numba thread and one BLAS thread (`fastcon.experiments._runner`);
parallelism comes from ``jobs`` processes.

**Reproducibility.** Every run's seed is a fixed function of the experiment seed, the dataset and
the method (not of the grid point, nor of ``jobs``): all grid points of a method see the same
minibatch streams, and the worker processes compute exactly what the parent would (the numba kernels
are bit-identical for any thread count). Results therefore do not depend on ``jobs``.
"""
from __future__ import annotations

import itertools
import math
import time

import numpy as np

from ..solvers import near_stationarity
from ..solvers import inverse_linear, inverse_sqrt, linear, prox_weights_to_steps, proximal_point
from ..solvers.conex import _conex as conex  # the implementation behind conex: it takes record_problem
from ..solvers.switching import _switching_subgradient as switching_subgradient  # likewise

__all__ = ["select_config", "expand_grid", "method_seed", "EPS_REF", "VIOLATION_FLOOR_REL", "StationarityTracker",
           "solve_method", "execute_task", "register_bundle", "feasibility_threshold", "CHECKPOINT_FIELDS", "METHODS"]

#: Tolerance used for the feasibility filter of methods without a switching tolerance (ConEx, IPP-ConEx).
EPS_REF = 1e-5
#: The filter never demands less violation than this fraction of kappa.
VIOLATION_FLOOR_REL = 1e-4
#: Method names, in the order of the figure legend and of results.json.
METHODS = ("ssg_static", "ssg_diminishing", "conex", "ipp_ssg", "ipp_conex")


# ------------------------------------------------------------------------------- selection rule
def feasibility_threshold(epsilon_final, kappa, factor=1.0):
    r"""``factor`` :math:`\cdot\max(\epsilon_{final}, 10^{-4}\kappa)`: the largest final :math:`g` of a feasible run."""
    return float(factor) * max(float(epsilon_final), VIOLATION_FLOOR_REL * float(kappa))


def select_config(records, kappa, factor=1.0):
    r"""Index of the configuration chosen by the tuning rule (module docstring) and the reason.

    Parameters
    ----------
    records : sequence of dict
        One per grid point, in grid order, each with ``objective`` (final :math:`f`), ``constraint``
        (final raw :math:`g`) and ``epsilon_final``. NaN objectives/constraints count as +inf.
    kappa : float
        :math:`\kappa` of the problem.
    factor : float
        Slack of the filter (1: the rule above; the experiments' ``feasibility_factor`` setting).
        The last iterate of SSG oscillates around :math:`\epsilon` (an objective step from
        :math:`g(x_{T-1}) \le \epsilon` may end slightly above it), so with factor 1 static SSG runs
        are often all "infeasible" and the fallback decides.

    Returns
    -------
    (int, str)
        The index and ``"min_objective_feasible"`` or ``"least_violation"`` (no feasible run).
    """
    if not records:
        raise ValueError("records: no configuration to select from")

    def num(v):
        v = float(v) if v is not None else math.inf
        return math.inf if math.isnan(v) else v

    feasible = [i for i, r in enumerate(records)
                if num(r["constraint"]) <= feasibility_threshold(r["epsilon_final"], kappa, factor)]
    if feasible:
        return min(feasible, key=lambda i: (num(records[i]["objective"]), i)), "min_objective_feasible"
    return (min(range(len(records)), key=lambda i: (num(records[i]["constraint"]), num(records[i]["objective"]), i)),
            "least_violation")


def expand_grid(grid, mode="paper"):
    """List of parameter dicts: the full product of ``grid`` (``"paper"``) or its middle values (``"middle"``).

    ``grid`` maps a parameter name to its list of values (the paper's tables, in order). The middle
    value of a 3-point list is its second entry.
    """
    if mode not in ("paper", "middle"):
        raise ValueError(f"grid: expected 'paper' or 'middle', got {mode!r}")
    if mode == "middle":
        return [{k: v[(len(v) - 1) // 2] for k, v in grid.items()}]
    keys = list(grid)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(grid[k] for k in keys))]


def method_seed(seed, dataset_index, method):
    """Seed of every run of ``method`` on dataset number ``dataset_index``: independent of grid point and jobs."""
    ss = np.random.SeedSequence([int(seed), int(dataset_index), METHODS.index(method)])
    return int(ss.generate_state(1)[0])


# ------------------------------------------------------------------------------- near stationarity
class StationarityTracker:
    r"""Measures :math:`\|\hat x_{\hat\rho}(x_t) - x_t\|` (`fastcon.solvers.near_stationarity`) during a run.

    The measurement is taken inside solver callbacks, so no iterate has to be stored (the
    Wasserstein iterate holds an :math:`m\times m` plan). ``iterations`` are global iteration
    indices :math:`t` (IPP: total inner iterations, as on the figure's x-axis); :math:`x_0` is
    measured by `start`, :math:`x_{t+1}` after iteration :math:`t` by the callbacks.
    """

    def __init__(self, problem, iterations, rho_hat, mu, max_iter, tol, seed=0):
        self._ns = near_stationarity
        self.problem, self.due = problem, set(int(i) for i in iterations)
        self.rho_hat, self.mu, self.max_iter, self.tol, self.seed = float(rho_hat), float(mu), int(max_iter), float(tol), seed
        self.iterations, self.values, self.time_s = [], [], 0.0
        self._count = 0

    def measure(self, iteration, x):
        t0 = time.perf_counter()
        d = self._ns(self.problem, x, self.rho_hat, max_iter=self.max_iter, tol=self.tol, mu=self.mu)[0]
        self.time_s += time.perf_counter() - t0
        self.iterations.append(int(iteration))
        self.values.append(float(d))

    def start(self, x0):
        if 0 in self.due:
            self.measure(0, x0)

    def step_callback(self):
        """``callback(t, x_{t+1}, info)`` of a single-loop solver."""
        def callback(t, x, info):
            if t + 1 in self.due:
                self.measure(t + 1, x)
            return False
        return callback

    def inner_callback(self, inner_iter):
        """Inner-solver callback of IPP: counts inner iterations globally; subproblem ends are left to
        `outer_callback` (the next outer iterate is the inner *output*, not the last inner iterate)."""
        def callback(t, x, info):
            self._count += 1
            if self._count % inner_iter and self._count in self.due:
                self.measure(self._count, x)
            return False
        return callback

    def outer_callback(self, inner_iter):
        def callback(k, x, info):
            it = (k + 1) * inner_iter
            self._count = it
            if it in self.due:
                self.measure(it, x)
            return False
        return callback

    def curve(self):
        order = np.argsort(self.iterations, kind="stable")
        return {"iteration": [self.iterations[i] for i in order], "value": [self.values[i] for i in order]}


def stationarity_iterations(max_iter, n_points):
    """About ``n_points`` + 1 equally spaced iterations from 0 to ``max_iter`` inclusive."""
    n = max(1, int(n_points))
    return sorted({int(round(k * max_iter / n)) for k in range(n + 1)})


# ------------------------------------------------------------------------------- one run
def epsilon_final(method, params, max_iter):
    r""":math:`\epsilon_{final}` of the feasibility filter (module docstring)."""
    if method in ("ssg_static", "ipp_ssg"):
        return float(params["switching_level"])
    if method == "ssg_diminishing":
        return float(params["E1"]) / math.sqrt(max_iter)
    return EPS_REF


def solve_method(problem, method, params, *, max_iter, inner_iter, record_every, seed, rho_base,
                 conex_dual="constant", ipp_conex_primal="linear", ipp_conex_index="inner", oracle=None, tracker=None,
                 record_problem=None):
    r"""Run one method of Figure 1 with one grid point ([HL23] §6 notation).

    ``params`` keys: ``ssg_static`` (``switching_level`` :math:`\epsilon`, ``step_size`` :math:`\eta`),
    ``ssg_diminishing`` (:math:`E_1, E_2`: :math:`\epsilon_t = E_1/\sqrt{t+1}`, :math:`\eta_t =
    E_2/\sqrt{t+1}`), ``conex`` (:math:`c_1, c_2`: primal step :math:`c_1/\sqrt{t+1}`, dual step
    :math:`c_2` if ``conex_dual="constant"`` (ROC) or :math:`c_2/\sqrt{t+1}` (Wasserstein),
    :math:`\theta_t = 1`, multiplicative convention), ``ipp_ssg`` (``rho_hat_factor``,
    ``switching_level``, ``step_size``; :math:`\hat\rho` = factor x ``rho_base``), ``ipp_conex``
    (``rho_hat_factor``, :math:`c_1, c_2` as [BDL22]'s prox weights :math:`\eta_k = c_1(k+1)` (ROC,
    ``ipp_conex_primal="linear"``) or :math:`c_1/\sqrt{k+1}` (Wasserstein), :math:`\tau_k =
    c_2/(k+1)`, :math:`\theta_k = k/(k+1)`, converted by `prox_weights_to_steps`; k the inner index,
    or the outer index with ``ipp_conex_index="outer"``, see `proximal_point`'s ``schedule_index``).
    IPP runs ``max_iter // inner_iter`` outer steps of ``inner_iter`` inner iterations.

    ``oracle`` holds extra keyword arguments of the inner/single-loop solvers for the objective
    oracle (``objective_oracle``, ``objective_batch_size``). Single-loop methods use
    ``output="last"``. ``record_problem`` (single-loop methods) is the problem whose exact values
    the history records when ``problem``'s objective oracle is stochastic (IPP records the values of
    ``problem`` itself, i.e. its terms' ``value``).
    """
    oracle = dict(oracle or {})
    cb = tracker.step_callback() if tracker is not None else None
    common = dict(seed=seed, record_every=record_every)
    single = {} if record_problem is None else {"record_problem": record_problem}
    if method in ("ssg_static", "ssg_diminishing"):
        if method == "ssg_static":
            step, tol = float(params["step_size"]), float(params["switching_level"])
        else:
            step, tol = inverse_sqrt(params["E2"]), inverse_sqrt(params["E1"])
        return switching_subgradient(problem, max_iter=max_iter, step_size=step, switching_level=tol, output="last",
                                     callback=cb, **oracle, **common, **single)
    if method == "conex":
        dual = float(params["c2"]) if conex_dual == "constant" else inverse_sqrt(params["c2"])
        return conex(problem, max_iter=max_iter, primal_step=inverse_sqrt(params["c1"]), dual_step=dual, theta=1.0,
                     output="last", callback=cb, **oracle, **common, **single)
    if method in ("ipp_ssg", "ipp_conex"):
        rho_hat = float(params["rho_hat_factor"]) * float(rho_base)
        outer = max(1, int(max_iter) // int(inner_iter))
        inner = dict(oracle)
        if tracker is not None:
            inner["callback"] = tracker.inner_callback(int(inner_iter))
        if method == "ipp_ssg":
            inner.update(step_size=float(params["step_size"]), switching_level=float(params["switching_level"]))
            solver = "switching"
        else:
            eta_prox = linear(params["c1"]) if ipp_conex_primal == "linear" else inverse_sqrt(params["c1"])
            primal, dual = prox_weights_to_steps(eta_prox, inverse_linear(params["c2"]))
            inner.update(primal_step=primal, dual_step=dual, theta=_theta_k)
            solver = "conex"
        return proximal_point(problem, rho_hat=rho_hat, outer_iter=outer, inner_solver=solver, inner_iter=int(inner_iter),
                              inner_params=inner, schedule_index=ipp_conex_index if method == "ipp_conex" else "inner", callback=None if tracker is None else tracker.outer_callback(int(inner_iter)),
                              **common)
    raise ValueError(f"method: expected one of {METHODS}, got {method!r}")


def _theta_k(k):
    r""":math:`\theta_k = k/(k+1)`, the strongly convex extrapolation schedule of [BDL22] (IPP-ConEx)."""
    return k / (k + 1.0)


# ------------------------------------------------------------------------------- task execution
#: The task fields that determine a record (the checkpoint key): never the data folder, the
#: download setting, the ERM object (computed from the others) nor the builder function.
CHECKPOINT_FIELDS = ("module", "dataset", "build", "seed", "method", "params", "grid_index", "run_seed", "run",
                     "stationarity")
_BUNDLES = {}


def _bundle_key(task):
    return task["module"], task["dataset"], task["seed"], task["data_home"], repr(sorted(task["build"].items()))


def _bundle(task):
    """The problem of a task, built once per process by the experiment's ``task["builder"]``."""
    key = _bundle_key(task)
    if key not in _BUNDLES:
        _BUNDLES[key] = task["builder"](task["dataset"], task["build"], task["data_home"], task["seed"],
                                        erm=task["erm"], download=task.get("download"))
    return _BUNDLES[key]


def register_bundle(task, bundle):
    """Let the parent reuse the bundle it built (tasks run in-process then skip the rebuild)."""
    _BUNDLES[_bundle_key(task)] = bundle


def execute_task(task):
    """Run one task (a grid point, or a winner re-run with stationarity) and return a plain record."""
    bundle = _bundle(task)
    problem, meta = bundle["problem"], bundle["meta"]
    record_problem = None
    if bundle.get("instance") is not None:
        # A fresh (solve problem, exact problem) pair per run: stateful parts (seeded oracles,
        # warm-started projections) then depend only on the run's seed, never on the task order.
        problem, record_problem = bundle["instance"](task["run_seed"])
    run = task["run"]
    tracker = None
    if task.get("stationarity"):
        st = task["stationarity"]
        tracker = StationarityTracker(problem if record_problem is None else record_problem, stationarity_iterations(run["max_iter"], st["n_points"]),
                                      meta["stationarity_rho_hat"], meta["stationarity_mu"], st["max_iter"], st["tol"],
                                      seed=task["run_seed"])
        tracker.start(problem.x0)
    t0 = time.perf_counter()
    res = solve_method(problem, task["method"], task["params"], max_iter=run["max_iter"], inner_iter=run["inner_iter"],
                       record_every=run["record_every"], seed=task["run_seed"], rho_base=meta["rho_ipp_base"],
                       conex_dual=run["conex_dual"], ipp_conex_primal=run["ipp_conex_primal"],
                       ipp_conex_index=run.get("ipp_conex_index", "inner"), oracle=run.get("oracle"),
                       tracker=tracker, record_problem=record_problem)
    wall = time.perf_counter() - t0
    g_final = float(problem.g(res.x)[0])
    rec = {
        "dataset": task["dataset"], "method": task["method"], "params": dict(task["params"]),
        "grid_index": task["grid_index"], "status": res.status, "message": res.message, "n_iter": int(res.n_iter),
        "wall_time_s": wall - (tracker.time_s if tracker is not None else 0.0),
        "objective": float(res.objective), "constraint": g_final, "max_violation": float(res.max_violation),
        "epsilon_final": epsilon_final(task["method"], task["params"], run["max_iter"]),
        "data_passes_f": float(res.counters.get("data_passes_f", 0.0)),
        "data_passes_g": float(res.counters.get("data_passes_g", 0.0)),
        "history": {k: np.asarray(v).tolist() for k, v in res.history.items()},
        "run_seed": task["run_seed"],
    }
    if tracker is not None:
        rec["stationarity_curve"] = tracker.curve()
        rec["stationarity_time_s"] = tracker.time_s
    return rec
