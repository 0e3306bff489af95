r"""Grid search, the paper's selection rule, and the driver shared by the experiments of Huang & Lin [HL23].

One experiment module (`ssg_roc`, `ssg_wasserstein`) describes *what* is run: datasets, how a
problem is built, the hyperparameter grids, iteration budgets. This module runs it:

1. build each dataset's problem once in the parent (ERM, :math:`\kappa`, radius, :math:`w_{ERM}`);
2. run every grid point of every method (:func:`run_tasks`, optionally in ``jobs`` processes),
   saving each finished run at once (`fastcon.experiments._checkpoint`, for ``resume``);
3. pick one configuration per (dataset, method) with :func:`select_config` (the tuning rule below);
4. re-run each winner, as soon as its method's grid is complete and in the same process pool, with
   a near-stationarity tracker (:class:`StationarityTracker`), which measures
   :math:`\|\hat x_{\hat\rho}(x_t) - x_t\|` at about ``n_stationarity`` equally spaced iterations
   with one fixed :math:`\hat\rho` per problem for all methods (grid points run longest first when
   the experiment module defines ``relative_cost(meta, method)``);
5. hand everything to `fastcon.experiments._report` (results.json, CSVs, table) and
   `fastcon.experiments._figure` (the Figure 1 panels).

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

**Threads.** Every solve runs with one numba thread (the driver sets ``numba.set_num_threads(1)`` for
the duration of the experiment and restores the previous value; workers do the same), and
parallelism comes from ``jobs`` processes. Measured on the 2-core machine under load: with numba's
OpenMP layer and 2 threads, the idle worker thread spin-waits between the many small parallel
kernels of an iteration and starves the NumPy work of the main thread (german IPP-ConEx, 500
iterations: 4.1 s with 2 threads, 0.2 s with 1); the large a9a passes run as fast with 1 thread.

**Reproducibility.** Every run's seed is a fixed function of the experiment seed, the dataset and
the method (not of the grid point, nor of ``jobs``): all grid points of a method see the same
minibatch streams, and the worker processes compute exactly what the parent would (the numba kernels
are bit-identical for any thread count; workers use one numba thread each to avoid
oversubscription). Results therefore do not depend on ``jobs``.
"""
from __future__ import annotations

import importlib
import itertools
import math
import sys
import time

import numpy as np

__all__ = ["select_config", "expand_grid", "method_seed", "EPS_REF", "VIOLATION_FLOOR_REL", "StationarityTracker",
           "solve_method", "run_tasks", "run_paper_experiment", "METHODS"]

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
    r"""Measures :math:`\|\hat x_{\hat\rho}(x_t) - x_t\|` (`fastcon.metrics.near_stationarity`) during a run.

    The measurement is taken inside solver callbacks, so no iterate has to be stored (the
    Wasserstein iterate holds an :math:`m\times m` plan). ``iterations`` are global iteration
    indices :math:`t` (IPP: total inner iterations, as on the figure's x-axis); :math:`x_0` is
    measured by `start`, :math:`x_{t+1}` after iteration :math:`t` by the callbacks.
    """

    def __init__(self, problem, iterations, rho_hat, mu, max_iter, tol, seed=0):
        from ..metrics import near_stationarity

        self._ns = near_stationarity
        self.problem, self.due = problem, set(int(i) for i in iterations)
        self.rho_hat, self.mu, self.max_iter, self.tol, self.seed = float(rho_hat), float(mu), int(max_iter), float(tol), seed
        self.iterations, self.values, self.time_s = [], [], 0.0
        self._count = 0

    def measure(self, iteration, x):
        t0 = time.perf_counter()
        d = self._ns(self.problem, x, self.rho_hat, max_iter=self.max_iter, tol=self.tol, mu=self.mu,
                     seed=self.seed)[0]
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
        return float(params["tolerance"])
    if method == "ssg_diminishing":
        return float(params["E1"]) / math.sqrt(max_iter)
    return EPS_REF


def solve_method(problem, method, params, *, max_iter, inner_iter, record_every, seed, rho_base,
                 conex_dual="constant", ipp_conex_primal="linear", ipp_conex_index="inner", oracle=None, tracker=None,
                 record_problem=None):
    r"""Run one method of Figure 1 with one grid point ([HL23] §6 notation).

    ``params`` keys: ``ssg_static`` (``tolerance`` :math:`\epsilon`, ``step_size`` :math:`\eta`),
    ``ssg_diminishing`` (:math:`E_1, E_2`: :math:`\epsilon_t = E_1/\sqrt{t+1}`, :math:`\eta_t =
    E_2/\sqrt{t+1}`), ``conex`` (:math:`c_1, c_2`: primal step :math:`c_1/\sqrt{t+1}`, dual step
    :math:`c_2` if ``conex_dual="constant"`` (ROC) or :math:`c_2/\sqrt{t+1}` (Wasserstein),
    :math:`\theta_t = 1`, multiplicative convention), ``ipp_ssg`` (``rho_hat_factor``,
    ``tolerance``, ``step_size``; :math:`\hat\rho` = factor x ``rho_base``), ``ipp_conex``
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
    from ..solvers import inverse_linear, inverse_sqrt, linear, prox_weights_to_steps, proximal_point
    # the implementations behind switching_subgradient/conex: they take record_problem
    from ..solvers.conex import _conex as conex
    from ..solvers.switching import _switching_subgradient as switching_subgradient

    oracle = dict(oracle or {})
    cb = tracker.step_callback() if tracker is not None else None
    common = dict(seed=seed, record_every=record_every)
    single = {} if record_problem is None else {"record_problem": record_problem}
    if method in ("ssg_static", "ssg_diminishing"):
        if method == "ssg_static":
            step, tol = float(params["step_size"]), float(params["tolerance"])
        else:
            step, tol = inverse_sqrt(params["E2"]), inverse_sqrt(params["E1"])
        return switching_subgradient(problem, max_iter=max_iter, step_size=step, tolerance=tol, output="last",
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
            inner.update(step_size=float(params["step_size"]), tolerance=float(params["tolerance"]))
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
_BUNDLES = {}


def _bundle(task):
    """The problem of a task, built once per process (keyed by experiment, dataset and build options)."""
    key = (task["module"], task["dataset"], task["seed"], task["data_home"], repr(sorted(task["build"].items())))
    if key not in _BUNDLES:
        spec = importlib.import_module(task["module"])
        _BUNDLES[key] = spec.build(task["dataset"], task["build"], task["data_home"], task["seed"], erm=task["erm"],
                                   download=task.get("download"))
    return _BUNDLES[key]


def register_bundle(task, bundle):
    """Let the parent reuse the bundle it built (tasks run in-process then skip the rebuild)."""
    key = (task["module"], task["dataset"], task["seed"], task["data_home"], repr(sorted(task["build"].items())))
    _BUNDLES[key] = bundle


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


def _init_worker():
    try:
        import numba

        numba.set_num_threads(1)
    except Exception:  # pragma: no cover - numba is a hard dependency; be lenient in workers
        pass


def run_tasks(tasks, jobs=1, on_done=None, checkpoints=None, follow_up=None):
    """Execute ``tasks`` (one at a time when ``jobs`` is 1, else in a process pool).

    Returns ``(all_tasks, records)``: ``tasks`` followed by the tasks ``follow_up`` added, and their
    records in that order. ``on_done(task, record)`` is called as each task finishes (progress
    lines). With ``checkpoints`` (a `fastcon.experiments._checkpoint.TaskCheckpoints`), every
    finished record is saved at once, and records it loads (``resume``) replace their tasks' runs.

    Ctrl-C stops the workers at once (`fastcon.experiments._pool`); the records finished before it
    are in ``checkpoints``.

    ``follow_up(task, record)``, called for every record (run or loaded), returns tasks to add; they
    go to the **front** of the queue. The driver uses it to start a (dataset, method)'s
    near-stationarity re-run as soon as that method's last grid point ends, instead of after the
    whole grid: the re-runs are the longest single tasks (COMPAS static SSG: 881 s against a
    36 s grid point), and started last they ran with one core idle. At most ``jobs`` tasks are in
    the pool at a time so that an added task overtakes the waiting ones. Every task carries its
    own seed and builds its own problem instance, so the order changes no number.
    """
    from collections import deque

    all_tasks, results, queue = [], [], deque()

    def completed(i, record, fresh):
        results[i] = record
        if fresh and checkpoints is not None:
            checkpoints.save(all_tasks[i], record)
        if fresh and on_done is not None:
            on_done(all_tasks[i], record)
        if follow_up is not None:
            add(follow_up(all_tasks[i], record) or [], front=True)

    def add(new_tasks, front=False):
        fresh = []
        for task in new_tasks:
            all_tasks.append(task)
            results.append(None)
            fresh.append(len(all_tasks) - 1)
        waiting = []
        for i in fresh:
            record = None if checkpoints is None else checkpoints.load(all_tasks[i])
            if record is None:
                waiting.append(i)
            else:
                completed(i, record, fresh=False)
        if front:
            queue.extendleft(reversed(waiting))
        else:
            queue.extend(waiting)

    add(tasks)
    if int(jobs) <= 1:
        while queue:
            i = queue.popleft()
            completed(i, execute_task(all_tasks[i]), fresh=True)
        return all_tasks, results
    from concurrent.futures import FIRST_COMPLETED, wait

    from ._pool import WorkerPool

    # On Ctrl-C (or any error) the pool terminates its workers; records finished so far are saved.
    with WorkerPool(jobs, initializer=_init_worker) as pool:
        running = {}
        while queue or running:
            while queue and len(running) < int(jobs):
                i = queue.popleft()
                running[pool.submit(execute_task, all_tasks[i])] = i
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in done:
                completed(running.pop(fut), fut.result(), fresh=True)
    return all_tasks, results


# ------------------------------------------------------------------------------- the driver
def _log(verbose, msg):
    if verbose:
        print(msg, file=sys.stderr, flush=True)


def _fmt_params(params):
    return ", ".join(f"{k}={v:g}" if isinstance(v, (int, float)) else f"{k}={v}" for k, v in params.items())


def run_paper_experiment(spec, *, quick=False, out_dir=None, data_home=None, seed=0, jobs=1, verbose=True,
                         resume=False, download=None, **overrides):
    """Run one experiment module end to end and write its outputs; returns the results.json dict.

    ``spec`` is the experiment module (`ssg_roc` or `ssg_wasserstein`); ``overrides`` replace entries
    of its configuration (``spec.config(quick)``), e.g. ``datasets=("compas",)``, ``max_iter=60``
    (tests use them for a smaller-than-quick run). Every finished run is checkpointed in
    ``out_dir/checkpoints`` until the outputs are written; ``resume=True`` reuses the checkpoints
    of an interrupted run with the same settings (`fastcon.experiments._checkpoint`); Ctrl-C raises
    `fastcon.experiments._checkpoint.ExperimentInterrupted`, which says how many runs are saved.
    ``download`` is passed to `fastcon.datasets.load` (missing files are fetched, or an error).
    """
    import numba

    previous = numba.get_num_threads()
    numba.set_num_threads(1)  # see "Threads" in the module docstring
    try:
        return _run(spec, quick=quick, out_dir=out_dir, data_home=data_home, seed=seed, jobs=jobs, verbose=verbose,
                    resume=resume, download=download, **overrides)
    finally:
        numba.set_num_threads(previous)


def _run(spec, *, quick, out_dir, data_home, seed, jobs, verbose, resume, download, **overrides):
    from . import _report
    from ._checkpoint import ExperimentInterrupted, TaskCheckpoints

    t_start = time.perf_counter()
    cfg = _report.apply_overrides(spec.config(quick), overrides)
    out = _report.output_folder(spec.NAME, quick, out_dir)
    checkpoints = TaskCheckpoints(out / "checkpoints", resume=resume)
    try:
        return _run_checkpointed(spec, cfg, out, checkpoints, t_start=t_start, quick=quick, data_home=data_home,
                                 seed=seed, jobs=jobs, verbose=verbose, download=download)
    except ExperimentInterrupted:
        raise
    except KeyboardInterrupt:
        # One line for the user instead of a traceback: what is saved and how to go on.
        raise ExperimentInterrupted(checkpoints.interrupted_message()) from None


def _run_checkpointed(spec, cfg, out, checkpoints, *, t_start, quick, data_home, seed, jobs, verbose, download):
    from . import _figure, _report

    data_home = None if data_home is None else str(data_home)
    run_cfg = spec.run_options(cfg)
    grids = {m: expand_grid(g, cfg["grid"]) for m, g in spec.GRIDS.items() if m in cfg["methods"]}
    _log(verbose, f"[{spec.NAME}] {'quick' if quick else 'full'} run: datasets {', '.join(cfg['datasets'])}; "
                  f"T = {run_cfg['max_iter']}; {sum(len(g) for g in grids.values())} configurations per dataset; "
                  f"jobs = {jobs}; output {out}")

    datasets_meta, tasks, bundles = {}, [], {}
    for di, name in enumerate(cfg["datasets"]):
        t0 = time.perf_counter()
        bundle = spec.build(name, spec.build_options(cfg), data_home, seed, download=download)
        bundles[name] = bundle
        meta = bundle["meta"]
        datasets_meta[name] = meta
        _log(verbose, f"[{spec.NAME}] {name}: problem built in {time.perf_counter() - t0:.1f} s "
                      f"(L* = {meta['L_star']:.5g}, kappa = {meta['kappa']:.3g}, f(x0) = {meta['initial_objective']:.5g})")
        for method, points in grids.items():
            for gi, params in enumerate(points):
                task = {"module": spec.__name__, "dataset": name, "build": spec.build_options(cfg),
                        "data_home": data_home, "download": download, "seed": int(seed), "erm": bundle["erm"],
                        "method": method, "params": params, "grid_index": gi, "run_seed": method_seed(seed, di, method),
                        "run": run_cfg, "stationarity": None}
                register_bundle(task, bundle)
                tasks.append(task)

    n_grid = len(tasks)
    n_rerun = len(cfg["datasets"]) * len(grids) if cfg["n_stationarity"] > 0 else 0
    checkpoints.total = n_grid + n_rerun

    def progress(task, rec):  # resumed runs count as done (`follow_up` has seen them)
        if task.get("stationarity"):
            curve = rec["stationarity_curve"]["value"]
            _log(verbose, f"[{spec.NAME}] stationarity {len(curves) + 1}/{n_rerun} {rec['dataset']} {rec['method']}: "
                          f"{len(curve)} points, final {curve[-1] if curve else float('nan'):.3g} "
                          f"({rec['stationarity_time_s']:.1f} s)")
        else:
            done = sum(len(group) for group in group_records.values()) + 1
            _log(verbose, f"[{spec.NAME}] {done}/{n_grid} {rec['dataset']} {rec['method']} ({_fmt_params(rec['params'])}): "
                          f"f = {rec['objective']:.5g}, g = {rec['constraint']:.3g}, {rec['wall_time_s']:.1f} s")

    # Selection as soon as a method's grid is complete, then its winner's re-run with the
    # stationarity tracker (`run_tasks`, ``follow_up``).
    group_tasks, group_records, selection, curves = {}, {}, {}, {}
    for task in tasks:
        group_tasks.setdefault((task["dataset"], task["method"]), []).append(task)

    def follow_up(task, rec):
        key = (task["dataset"], task["method"])
        if task.get("stationarity"):
            curves[key] = rec
            return []
        group_records.setdefault(key, []).append(rec)
        group = group_records[key]
        if len(group) < len(group_tasks[key]):
            return []
        group.sort(key=lambda r: r["grid_index"])  # ties go to the first in grid order
        idx, reason = select_config(group, datasets_meta[key[0]]["kappa"], cfg["feasibility_factor"])
        selection[key] = (group, idx, reason)
        if cfg["n_stationarity"] <= 0:
            return []
        winner = next(t for t in group_tasks[key] if t["grid_index"] == group[idx]["grid_index"])
        return [dict(winner, stationarity={"n_points": cfg["n_stationarity"], "max_iter": cfg["stationarity_iter"],
                                           "tol": cfg["stationarity_tol"]})]

    # Longest tasks first (`spec.relative_cost`), so that the last to finish are short ones.
    cost = getattr(spec, "relative_cost", None)
    if cost is not None:
        order = {name: i for i, name in enumerate(cfg["datasets"])}
        tasks.sort(key=lambda t: (-cost(datasets_meta[t["dataset"]], t["method"]), order[t["dataset"]],
                                  METHODS.index(t["method"]), t["grid_index"]))
    t_run = time.perf_counter()
    run_tasks(tasks, jobs, progress, checkpoints, follow_up)
    run_time = time.perf_counter() - t_run
    if checkpoints.loaded:
        _log(verbose, f"[{spec.NAME}] resumed {checkpoints.loaded} of {n_grid + n_rerun} runs from {checkpoints.folder}")
    selected = [(name, method) + selection[(name, method)] for name in cfg["datasets"] for method in grids]

    doc = _report.build_results(spec, cfg, run_cfg, quick=quick, seed=seed, jobs=jobs, datasets_meta=datasets_meta,
                                selected=selected, reruns=curves)
    # With resumed runs the wall times cover this invocation only; each run's own time is in its record.
    doc["timing"] = {"runs_wall_time_s": run_time, "total_wall_time_s": time.perf_counter() - t_start,
                     "resumed_runs": checkpoints.loaded}
    _report.write_outputs(doc, out, {(n, m): group[idx] for n, m, group, idx, _ in selected}, curves)
    _figure.plot_figure([out], out / spec.FIGURE, title=spec.TITLE)
    doc["timing"]["total_wall_time_s"] = time.perf_counter() - t_start
    _report.write_results_json(doc, out)
    checkpoints.clear()
    table = _report.format_table(doc)
    if verbose:
        print(table, flush=True)
    _log(verbose, f"[{spec.NAME}] wrote {out / 'results.json'}, {out / 'summary.csv'}, {out / spec.FIGURE} "
                  f"in {doc['timing']['total_wall_time_s']:.1f} s")
    return doc
