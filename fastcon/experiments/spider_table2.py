r"""Liu & Xu [LX25] (3S-Econ), Table 2 and Figures 1-2: six methods, two problems, a9a and COMPAS.

**Data** ([LX25] §4.1 gives the sizes and the 2:1 split; which rows go where and the encoding are
fastcon's reading; see docs/references.md). a9a: the train file (32,561 rows) is the hinge data
:math:`\mathcal D`, the test file (16,281 rows) split by sex is the group data (p = female,
u = male); 123 binary features, no intercept. COMPAS: all 6,172 rows, a seeded 2:1 split (as in
`ssg_roc`; :math:`\mathcal D` 4,115 rows, p = non-Caucasian).

**Problem 1** (eq. 4): ROC gap over 400 thresholds spanning the ERM score range on
:math:`\mathcal D` widened by half its width on each side, s.t. hinge :math:`\le L^* + 10^{-3}L^*`,
ball :math:`5\|x^*\|`, start :math:`x^*` (exact LP ERM). **Problem 2** (eq. 47): hinge risk + 0.02 SCAD
(the continuous ``-1`` form), s.t. :math:`|d(w)| \le 0.02`, start 0, no ball.

**Methods.** ``spider_d``/``spider_s``: `fastcon.solvers.spider` with the paper's defaults (β = 10,
ν = 1e-5; D: q = 1, α = 0.01; S: q = ⌈√n⌉ (a9a 181, COMPAS 65), S2 = ⌈N_g/q⌉, objective batch
⌈N_f/q⌉, α_k = 0.01/√max(1, k/q)); Problem 1 projects onto the ball. ``ssg``: deterministic
switching subgradient (static ε and η); ``ssg_s``: the same with an objective minibatch of
⌈N_f/q⌉ rows (stratified for the ROC gap) and the full constraint; ``ipp_ssg``/``ipp_conex``:
`proximal_point` with 100 inner iterations, :math:`\hat\rho = 2\rho_f`, IPP-ConEx in [BDL22]'s
prox-weight notation (:math:`\eta_k = c_1(k+1)`, :math:`\tau_k = c_2/(k+1)`, :math:`\theta_k = k/(k+1)`).
Baseline parameters: the paper picks the smallest objective after 5,000 iterations over its
grids; we run the grids of ``GRIDS`` for ``tune_iter`` iterations and pick the smallest objective
among runs ending with :math:`g \le 10^{-4}` (else the least violation), so an infeasible run
cannot win.

**Stopping** ([LX25] §4.2-4.3): SVio :math:`= \|\hat x - x_k\|` with :math:`\hat x` the solution of
:math:`\min f + \rho_f\|\cdot - x_k\|^2` s.t. :math:`g + \rho_g\|\cdot - x_k\|^2 \le 0` (`near_stationarity`,
``svio_iter`` steps; :math:`\rho_g = 0` in Problem 1), computed every ``svio_every`` iterations and
excluded from times and data passes; stop when SVio < 1e-3 (deterministic) / 5e-3 (stochastic) or
at the DP(g) cap (2e5 Problem 1, 7.2e5 Problem 2); the stochastic methods also stop after
``max_iter_sto`` = 2e5 iterations (the paper's SSG-S ran 1.99e5; without it a 3S-Econ-S run that
never reaches the SVio level would need 1.8e7 iterations to spend the DP(g) cap). :math:`\rho_f` is the corrected
:math:`\frac1{4n_p}\sum\|a^p\|^2 + \frac1{4n_u}\sum\|a^u\|^2` (Problem 2: :math:`\max(2\lambda, \cdot)`).

**Data passes** (the convention of [LX25] §4.3, with the per-method counts its Table 2 implies):
3S-Econ from its counters; deterministic baselines DP(f) = iterations, DP(g) = 2 x iterations (a value and a subgradient pass); SSG-S
DP(f) = iterations/q, DP(g) = iterations x (1 + 1/q).

**β sweep** (Problem 1): 3S-Econ-D with β in ``beta_sweep`` on both datasets, each β with α = 0.01
and with α = 0.1/β (`_sweep_params`); which β ends feasible.

**Quick mode** changes exactly: a9a train/test subsampled (seeded) to 3,000/1,500 rows and COMPAS to
3,000 rows; caps DP(g) 600 (both problems) and 3,000 stochastic iterations; SVio every 100 iterations with
100 steps; no tuning (the middle grid values); β sweep {10, 1000}.

``baseline_params`` (an override, ``{"p1/a9a/ssg": {"step_size": 0.01}, ...}``) skips the tuning and
uses an earlier tuning run's picks; ``tuning_records`` carries that run's grid results into results.json.
"""
from __future__ import annotations

import itertools
import math
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp

from .._results import _jsonable
from .._version import __version__
from ..datasets import load
from ..solvers import near_stationarity
from ..problems import (ConstrainedProblem, ProximalTerm, Whole, erm_optimum, hinge_constrained_problem, hinge_risk,
                        less_equal, penalized, roc_fairness, scad_penalty, smoothed_demographic_parity)
from ..solvers import inverse_linear, linear, prox_weights_to_steps, proximal_point, spider, switching_subgradient
from ._runner import drive
from ._table2 import format_table2, plot_figures
from ._writer import history_csv_name, write_csv, write_history_csv, write_results_json
from .ssg_roc import load_split

NAME = "spider-table2"
PAPER = ("Liu & Xu [LX25], A Single-Loop SPIDER-Type Stochastic Subgradient Method for Expectation-Constrained "
         "Nonconvex Nonsmooth Optimization (arXiv:2501.19214), Table 2, Figures 1-2")
METHODS = ("ssg", "ipp_ssg", "ipp_conex", "spider_d", "ssg_s", "spider_s")
PROBLEMS = {"p1": "roc_fairness", "p2": "demographic_parity"}
GRIDS = {
    "ssg": {"step_size": [1e-3, 2e-3, 5e-3, 1e-2]},
    "ssg_s": {"step_size": [1e-3, 2e-3, 5e-3, 1e-2]},
    "ipp_ssg": {"step_size": [2e-4, 5e-4, 1e-3, 5e-3]},
    "ipp_conex": {"c1": [20.0, 50.0, 100.0, 200.0], "c2": [0.002, 0.005, 0.01, 0.02]},
}
SSG_SWITCHING_LEVEL = 1e-5


def config(quick=False) -> dict:
    cfg = {"datasets": ("a9a", "compas"), "problems": ("p1", "p2"), "methods": METHODS,
           "cap_p1": 2e5, "cap_p2": 7.2e5, "svio_every": 1000, "svio_iter": 300, "svio_tol": 1e-4,
           "stop_det": 1e-3, "stop_sto": 5e-3, "tune": True, "tune_iter": 5000, "max_rows": None,
           "beta_sweep": (10.0, 100.0, 1000.0), "inner_iter": 100, "n_thresholds": 400, "max_iter_sto": 200000,
           "baseline_params": None, "tuning_records": None}
    if quick:
        cfg.update(cap_p1=600.0, cap_p2=600.0, svio_every=100, svio_iter=100, tune=False, max_rows=3000,
                   beta_sweep=(10.0, 1000.0), max_iter_sto=3000)
    return cfg


#: 3S-Econ-D's step in Table 2 (paper: alpha = 0.01 with beta = 10).
SWEEP_STEP = 0.01


def _sweep_params(betas):
    r"""β-sweep grid points besides Table 2's own β = 10 run: each β with the paper's
    :math:`\alpha = 0.01` and with :math:`\alpha = 0.1/\beta` (the product :math:`\alpha\beta` of the paper's
    β = 10 run, i.e. the same step on the penalty term). The penalised function's Lipschitz constant
    grows like β, so a subgradient step has to shrink like 1/β to stay stable; with α fixed at 0.01,
    β = 1000 moves x by 10·ζ_g per violated step (quick run: CVio 0.85)."""
    out = []
    for b in (float(b) for b in betas):
        for alpha in dict.fromkeys((SWEEP_STEP, SWEEP_STEP * 10.0 / b)):
            if (b, alpha) != (10.0, SWEEP_STEP):
                out.append({"beta": b, "step_size": alpha})
    return out


# ------------------------------------------------------------------------------ problems
def _groups_rho(p, u):
    def sq(X):
        return np.asarray(X.multiply(X).sum(axis=1)).ravel() if sp.issparse(X) else np.sum(np.asarray(X) ** 2, axis=1)
    return float(sq(p.X).sum() / (4 * p.n_samples) + sq(u.X).sum() / (4 * u.n_samples))


def data_needed(cfg) -> list:
    """``(dataset, subset)`` pairs the configuration ``cfg`` loads (checked before computing)."""
    return [pair for d in cfg["datasets"] for pair in ([(d, "train"), (d, "test")] if d == "a9a" else [(d, "all")])]


def load_data(dataset, data_home, seed, max_rows, download=None):
    if dataset == "a9a":
        D = load("a9a", data_home=data_home, subset="train", download=download)
        T = load("a9a", data_home=data_home, subset="test", download=download)
        if max_rows is not None:
            rng = np.random.default_rng(np.random.SeedSequence([int(seed), 4242]))
            D = D.subset(np.sort(rng.choice(D.n_samples, int(max_rows), replace=False)))
            T = T.subset(np.sort(rng.choice(T.n_samples, int(max_rows) // 2, replace=False)))
        return D, T.subset(T.groups == 1), T.subset(T.groups == 0)
    D, p, u, _, _ = load_split(dataset, data_home, seed, max_rows, download=download)
    return D, p, u


def build(dataset, problem_key, cfg, data_home=None, seed=0, download=None):
    """``{"problem", "meta"}`` for one (dataset, problem)."""
    D, p, u = load_data(dataset, data_home, seed, cfg["max_rows"], download)
    rho_groups = _groups_rho(p, u)
    if problem_key == "p1":
        erm = erm_optimum(D)
        scores = np.asarray(D.X @ erm.w).ravel()
        obj = roc_fairness(p, u, int(cfg["n_thresholds"]), erm_scores=scores)
        prob = hinge_constrained_problem(obj, D, relative_bound=1e-3, radius_factor=5.0, erm=erm,
                                         name=f"p1_roc_fairness({dataset})")
        rho_f, rho_g, extra = rho_groups, 0.0, {"L_star": float(erm.value), "radius": float(prob.domain.radius)}
    else:
        obj = penalized(hinge_risk(D), scad_penalty(D.n_features, 0.02))
        prob = ConstrainedProblem(obj, [less_equal(smoothed_demographic_parity(p, u), 0.02)], Whole(),
                                  x0=np.zeros(D.n_features), name=f"p2_demographic_parity({dataset})")
        rho_f = rho_g = max(0.04, rho_groups)
        extra = {}
    n_ref = max(prob.objective.n_samples, prob.constraints[0].n_samples)
    meta = {"n": int(D.n_samples), "n_p": int(p.n_samples), "n_u": int(u.n_samples), "d": int(D.n_features),
            "rho_f": rho_f, "rho_g": rho_g, "q": math.ceil(math.sqrt(n_ref)),
            "initial_objective": float(prob.f(prob.x0)), "initial_constraint": float(prob.g(prob.x0)[0]), **extra}
    return {"problem": prob, "meta": meta}


_CACHE = {}


def _bundle(dataset, problem_key, cfg, data_home, seed, download=None):
    key = (dataset, problem_key, cfg["max_rows"], str(data_home), seed)
    if key not in _CACHE:
        _CACHE[key] = build(dataset, problem_key, cfg, data_home, seed, download)
    return _CACHE[key]


class SVio:
    """The SVio metric of [LX25] §4.2 at a point, timed so solvers can exclude it."""

    def __init__(self, problem, meta, cfg, seed):
        self.problem, self.meta, self.cfg, self.seed = problem, meta, cfg, seed
        self.seconds = 0.0

    def __call__(self, x):
        t0 = time.perf_counter()
        prob = self.problem
        x = np.array(x, dtype=np.float64)
        if self.meta["rho_g"] > 0:
            prob = ConstrainedProblem(prob.objective, [ProximalTerm(c, 2.0 * self.meta["rho_g"], x) for c in prob.constraints],
                                      prob.domain, x0=x)
        with warnings.catch_warnings():
            # far-infeasible points (the large-beta sweep) leave the subproblem infeasible: SVio is then
            # just large, which is what the table should show
            warnings.simplefilter("ignore", RuntimeWarning)
            value = float(near_stationarity(prob, x, 2.0 * self.meta["rho_f"], max_iter=int(self.cfg["svio_iter"]),
                                            tol=float(self.cfg["svio_tol"]))[0])
        self.seconds += time.perf_counter() - t0
        return value


# ------------------------------------------------------------------------------ one run
def run_method(dataset, problem_key, method, params, cfg, data_home=None, seed=0, *, budget=None, svio=True,
               download=None):
    """Run one method; returns a plain record (final values, paper-convention passes, history)."""
    b = _bundle(dataset, problem_key, cfg, data_home, seed, download)
    prob, meta = b["problem"], b["meta"]
    q = meta["q"]
    cap = float(cfg["cap_p1"] if problem_key == "p1" else cfg["cap_p2"])
    stochastic = method in ("ssg_s", "spider_s")
    stop_at = float(cfg["stop_sto"] if stochastic else cfg["stop_det"])
    metric = SVio(prob, meta, cfg, seed)
    every = int(cfg["svio_every"])
    trace = {"iteration": [], "objective": [], "max_violation": [], "data_passes_f": [], "data_passes_g": [], "svio": []}
    nf = prob.objective.n_samples

    def dp(k):  # paper-convention passes of the baselines (module docstring)
        if method == "ssg_s":
            return k / q, k * (1.0 + 1.0 / q)
        return float(k), 2.0 * k

    def record(k, x, dpf, dpg):
        s = metric(x) if svio else math.nan
        trace["iteration"].append(int(k))
        trace["objective"].append(float(prob.f(x)))
        trace["max_violation"].append(float(prob.max_violation(x)))
        trace["data_passes_f"].append(float(dpf))
        trace["data_passes_g"].append(float(dpg))
        trace["svio"].append(s)
        return svio and s < stop_at

    t0 = time.perf_counter()
    if method in ("spider_d", "spider_s"):
        variant = "deterministic" if method == "spider_d" else "stochastic"
        beta = float(params.get("beta", 10.0))
        max_iter = int(budget) if budget is not None else int(cfg["max_iter_sto"] if stochastic else cap / 2)
        record(0, prob.x0, 0.0, 0.0)
        extra = {"step_size": float(params["step_size"])} if "step_size" in params else {}
        res = spider(prob, variant=variant, beta=beta, max_iter=max_iter, **extra, max_data_passes_g=None if budget else cap,
                     record_every=every, seed=seed,
                     callback=lambda t, x, info: record(t + 1, x, info["data_passes_f"], info["data_passes_g"]))
        n_iter = res.n_iter
        dpf, dpg = res.counters["data_passes_f"], res.counters["data_passes_g"]
        x, status = res.x, res.status
    else:
        max_iter = int(budget) if budget is not None else int(min(cfg["max_iter_sto"], cap / (1.0 + 1.0 / q))
                                                              if method == "ssg_s" else cap / 2)
        record(0, prob.x0, 0.0, 0.0)
        if method in ("ssg", "ssg_s"):
            kw = dict(objective_oracle="stochastic", objective_batch_size=math.ceil(nf / q)) if method == "ssg_s" else {}
            res = switching_subgradient(prob, max_iter=max_iter, step_size=float(params["step_size"]),
                                        switching_level=SSG_SWITCHING_LEVEL, output="last", seed=seed, record_every=max_iter,
                                        callback=lambda t, x, info: (t + 1) % every == 0 and record(t + 1, x, *dp(t + 1)),
                                        **kw)
        else:
            rho_hat = 2.0 * meta["rho_f"]
            inner = int(cfg["inner_iter"])
            if method == "ipp_ssg":
                solver, inner_params = "switching", dict(step_size=float(params["step_size"]), switching_level=SSG_SWITCHING_LEVEL)
            else:
                primal, dual = prox_weights_to_steps(linear(params["c1"]), inverse_linear(params["c2"]))
                solver, inner_params = "conex", dict(primal_step=primal, dual_step=dual, theta=lambda k: k / (k + 1.0))
            res = proximal_point(prob, rho_hat=rho_hat, outer_iter=max(1, max_iter // inner), inner_solver=solver,
                                 inner_iter=inner, inner_params=inner_params, seed=seed, record_every=inner,
                                 callback=lambda k, x, info: ((k + 1) * inner) % every == 0
                                 and record((k + 1) * inner, x, *dp((k + 1) * inner)))
        n_iter, x, status = res.n_iter, res.x, res.status
        dpf, dpg = dp(n_iter)
    wall = time.perf_counter() - t0 - metric.seconds
    if not trace["iteration"] or trace["iteration"][-1] != n_iter:
        record(n_iter, x, dpf, dpg)
    final_svio = trace["svio"][-1]
    stopped = svio and final_svio < stop_at
    return {"dataset": dataset, "problem_key": problem_key, "method": method, "params": dict(params),
            "status": "converged" if stopped else status, "n_iter": int(n_iter), "wall_time_s": wall,
            "svio_time_s": metric.seconds, "objective": float(prob.f(x)), "constraint": float(prob.g(x)[0]),
            "max_violation": float(prob.max_violation(x)), "svio": final_svio, "data_passes_f": float(dpf),
            "data_passes_g": float(dpg), "initial_objective": meta["initial_objective"], "history": trace,
            "table": (int(n_iter), float(dpf), float(dpg), float(prob.f(x)), float(prob.max_violation(x)), final_svio)}


def _grid(method, cfg):
    g = GRIDS.get(method)
    if g is None:
        return [{}]
    keys = list(g)
    if not cfg["tune"]:
        return [{k: g[k][(len(g[k]) - 1) // 2] for k in keys}]
    return [dict(zip(keys, c)) for c in itertools.product(*(g[k] for k in keys))]


def execute(task) -> dict:
    """The driver's hook: one run (`run_method`) of a tuning, Table 2 or β-sweep task."""
    return run_method(task["dataset"], task["problem_key"], task["method"], task["params"], task["cfg"],
                      data_home=task["data_home"], seed=task["seed"], budget=task.get("budget"),
                      svio=task.get("svio", True), download=task["download"])


def _task(session, phase, dataset, problem_key, method, params, **extra):
    return {"phase": phase, "dataset": dataset, "problem_key": problem_key, "method": method, "params": params,
            "cfg": session.cfg, "data_home": session.data_home, "seed": session.seed, "download": session.download,
            **extra}


def _table_tasks(session, chosen) -> list:
    """The Table 2 runs (tuned or middle parameters), then the β sweep."""
    cfg = session.cfg
    main = [_task(session, "main", d, p, m, chosen.get((d, p, m), _grid(m, cfg)[0]))
            for d, p in session.state["pairs"] for m in cfg["methods"]]
    sweep = [_task(session, "sweep", d, "p1", "spider_d", params)
             for d in cfg["datasets"] if "p1" in cfg["problems"] for params in _sweep_params(cfg["beta_sweep"])]
    return main + sweep


def tasks(session) -> list:
    """The driver's hook: the tuning runs when the baselines are tuned, else the Table 2 runs."""
    cfg, st = session.cfg, session.state
    st["pairs"] = pairs = [(d, p) for p in cfg["problems"] for d in cfg["datasets"]]
    st["metas"] = {f"{p}/{d}": build(d, p, cfg, session.data_home, session.seed, session.download)["meta"]
                   for d, p in pairs}
    session.log(f"{'quick' if session.quick else 'full'} run: {', '.join(st['metas'])}; jobs = {session.jobs}; "
                f"output {session.out}")
    # 1. baseline tuning (smallest objective among feasible runs after tune_iter iterations)
    st["chosen"], st["tuning"], st["tune_records"] = {}, dict(cfg["tuning_records"] or {}), []
    tune = [_task(session, "tune", d, p, m, params, budget=cfg["tune_iter"], svio=False, index=i)
            for i, (d, p, m, params) in enumerate((d, p, m, params) for d, p in pairs for m in cfg["methods"]
                                                  if m in GRIDS for params in _grid(m, cfg))]
    if cfg["baseline_params"]:
        # parameters picked by an earlier tuning run (keys "p1/a9a/ssg"), e.g. to re-run the table alone
        st["chosen"] = {tuple(k.split("/")[i] for i in (1, 0, 2)): dict(v) for k, v in cfg["baseline_params"].items()}
    elif cfg["tune"] and tune:
        st["n_tune"] = len(tune)
        return tune
    # 2. the Table 2 runs and the beta sweep
    return _table_tasks(session, st["chosen"])


def follow_up(session, task, rec) -> list:
    """The driver's hook: once every tuning run is in, pick the baselines' parameters and start Table 2."""
    if task["phase"] != "tune":
        return []
    st = session.state
    st["tune_records"].append((task["index"], rec))
    if len(st["tune_records"]) < st["n_tune"]:
        return []
    recs = [r for _, r in sorted(st["tune_records"], key=lambda ir: ir[0])]  # task order, whatever the jobs
    for d, p in st["pairs"]:
        for m in GRIDS:
            group = [r for r in recs if (r["dataset"], r["problem_key"], r["method"]) == (d, p, m)]
            if not group:
                continue
            ok = [r for r in group if r["constraint"] <= 1e-4]
            best = min(ok, key=lambda r: r["objective"]) if ok else min(group, key=lambda r: r["constraint"])
            st["chosen"][(d, p, m)] = best["params"]
            st["tuning"][f"{p}/{d}/{m}"] = [{k: r[k] for k in ("params", "objective", "constraint")} for r in group]
    return _table_tasks(session, st["chosen"])


def on_done(session, task, r) -> None:
    """The driver's hook: one progress line per run."""
    if task["phase"] == "tune":
        session.log(f"tune {r['problem_key']}/{r['dataset']} {r['method']} {r['params']}: f = {r['objective']:.5g}, "
                    f"g = {r['constraint']:.3g}")
    else:
        session.log(f"{r['problem_key']}/{r['dataset']} {r['method']} {r['params']}: {r['n_iter']} it, "
                    f"DP(g) = {r['data_passes_g']:.4g}, FV = {r['objective']:.5g}, CVio = {r['max_violation']:.3g}, "
                    f"SVio = {r['svio']:.3g}, {r['wall_time_s']:.1f} s")


def write(session, all_tasks, records) -> dict:
    """The driver's hook: results.json, table2.txt/.csv, the history CSVs and Figures 1-2; returns the doc."""
    cfg, st, out = session.cfg, session.state, session.out
    main = [r for t, r in zip(all_tasks, records) if t["phase"] == "main"]
    swept = [r for t, r in zip(all_tasks, records) if t["phase"] == "sweep"]
    beta_rows = [{"dataset": r["dataset"], "beta": float(r["params"].get("beta", 10.0)),
                  "step_size": float(r["params"].get("step_size", SWEEP_STEP)), "objective": r["objective"],
                  "cvio": r["max_violation"], "svio": r["svio"], "n_iter": r["n_iter"], "data_passes_g": r["data_passes_g"]}
                 for r in [x for x in main if x["method"] == "spider_d" and x["problem_key"] == "p1"] + swept]
    runs, histories = [], {}
    for r in main:
        name = history_csv_name(r["dataset"], PROBLEMS[r["problem_key"]], r["method"])
        write_history_csv(out / name, r["history"])
        histories[(r["problem_key"], r["dataset"], r["method"])] = r["history"]
        runs.append({"dataset": r["dataset"], "problem": PROBLEMS[r["problem_key"]], "problem_key": r["problem_key"],
                     "method": r["method"], "params": r["params"], "status": r["status"], "n_iter": r["n_iter"],
                     "wall_time_s": r["wall_time_s"], "initial_objective": r["initial_objective"],
                     "objective": r["objective"], "max_violation": r["max_violation"], "stationarity": r["svio"],
                     "data_passes_f": r["data_passes_f"], "data_passes_g": r["data_passes_g"], "history_csv": name,
                     "constraint": r["constraint"], "svio_time_s": r["svio_time_s"], "table": list(r["table"])})
    ratio = {}
    for d in cfg["datasets"]:
        a = next((r for r in runs if (r["dataset"], r["problem_key"], r["method"]) == (d, "p2", "ssg_s")), None)
        b = next((r for r in runs if (r["dataset"], r["problem_key"], r["method"]) == (d, "p2", "spider_s")), None)
        if a and b:
            ratio[d] = {"dp_g_ratio": a["data_passes_g"] / b["data_passes_g"], "wall_time_ratio": a["wall_time_s"] / b["wall_time_s"],
                        "paper_dp_g_ratio": {"a9a": 5.13e4 / 110, "compas": 1.17e5 / 4.35e3}.get(d)}
    doc = {"experiment": NAME, "quick": session.quick, "fastcon_version": __version__,
           "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "runs": runs, "seed": session.seed, "jobs": session.jobs,
           "paper": PAPER, "config": cfg, "datasets": st["metas"], "tuning": st["tuning"], "beta_sweep": beta_rows,
           "ssg_s_over_spider_s_p2": ratio, "timing": {"total_wall_time_s": session.elapsed()}}
    doc = _jsonable(doc)
    table = format_table2(runs)
    (out / "table2.txt").write_text(table + "\n")
    write_csv(out / "table2.csv", ["problem", "dataset", "method", "iteration", "dp_f", "dp_g", "fv", "cvio", "svio",
                                   "wall_time_s"],
              [[r["problem_key"], r["dataset"], r["method"], *r["table"], r["wall_time_s"]] for r in runs],
              lineterminator="\n")
    plot_figures(runs, histories, out)
    write_results_json(doc, out)
    if session.verbose:
        print(table)
        for row in beta_rows:
            print(f"beta sweep P1/{row['dataset']}: beta = {row['beta']:g}, alpha = {row['step_size']:g}: "
                  f"FV = {row['objective']:.4g}, "
                  f"CVio = {row['cvio']:.3g}, SVio = {row['svio']:.3g}")
        for d, v in ratio.items():
            print(f"P2/{d}: DP(g) SSG-S / 3S-Econ-S = {v['dp_g_ratio']:.1f} (paper {v['paper_dp_g_ratio']:.0f}), "
                  f"wall time ratio {v['wall_time_ratio']:.2f}")
    session.log(f"wrote {out / 'results.json'}, table2.txt/.csv, figure1_spider.png, figure2_spider.png in "
                f"{session.elapsed():.1f} s")
    return doc


def run(quick=False, out_dir=None, data_home=None, seed=0, jobs=1, verbose=True, download=None, **overrides):
    """Run the experiment (module docstring); writes results.json, table2.csv/.txt, figures; returns the doc.

    ``download`` is passed to `fastcon.datasets.load`; the other arguments are those of
    `fastcon.experiments.run_experiment`.
    """
    return drive(sys.modules[__name__], quick=quick, out_dir=out_dir, data_home=data_home, seed=seed, jobs=jobs,
                 verbose=verbose, download=download, **overrides)
