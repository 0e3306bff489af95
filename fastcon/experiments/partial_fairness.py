r"""He, Huang, Yao & Lin [HHYL25] Figures 1, 2, 9 and 10: partial fairness by DC constraints.

**Problems.** A linear logistic model with group cross-terms, :math:`h(\xi) = \langle w, (1, \xi,
\gamma, \gamma\xi)\rangle` (`fastcon.problems.cross_term_features`), trained under

* model (13): partial demographic parity on the rank band :math:`\mathcal I` of each group, 10 rank
  levels spread over :math:`\mathcal I` as the paper does (``grid="paper"``), ramp surrogate, shared
  thresholds :math:`\theta_p`;
* model (17): weak partial demographic parity at the decision threshold 0, ramp surrogate.

**Methods.** IDCA (`fastcon.solvers.idca`, Algorithms 1–2) from :math:`w = 0`; the pairwise
quadratic baselines group AUC (66), inter-group (69) and intra-group (71) solved by projected
gradient with exact QCQP projections (`fastcon.solvers.projected_gradient`); the penalty models
(78)/(83) by subgradient descent (`fastcon.solvers.penalty_subgradient`); and for Figures 9–10 the
direct switching subgradient with Polyak steps (Algorithm 3, `fastcon.solvers.switching_polyak`).

**Data and splits** (Appendix D.1): a9a (LIBSVM; groups female / male) — the official training
file split 90/10 into train/validation with the split's seed, the official test file as test; bank
(UCI bank-additional-full; groups age 25–60 / other) — 60/20/20; law school (groups White /
non-White) — 56.25/18.75/25. Five splits (seeds ``seed + 0..4``). Intervals (§7):
a9a [5%, 30%), bank [0%, 25%), law school [70%, 100%]. The κ and λ grids are the paper's
(Appendices D.2.1, D.3.2, D.4.2, `CONFIG`).

**Selection** (Appendices D.2.2–D.4.2), all on validation accuracy: IDCA picks
:math:`(T, \epsilon) \in \{150, 200\} \times \{5\cdot10^{-4}, 10^{-3}, 2\cdot10^{-3}, 5\cdot10^{-3}\}`
after 50 outer iterations, then :math:`K \in \{100, 150, \dots, 400\}` along one run of 400; the
penalty method picks its step in :math:`\{5\cdot10^{-4}, 10^{-3}, 2\cdot10^{-3}, 5\cdot10^{-3}\}`
after :math:`10^4` iterations and then runs 80,000 (the largest IDCA budget :math:`K T`), last
iterate; the baselines run 1000 projected-gradient steps (law school 500) with step :math:`1/L`,
:math:`L = \frac14\lambda_{\max}(\tilde X^\top\tilde X)/n` (the paper gives no step). The direct
SSG of Figures 9–10 (split 0, the smallest κ of each model) picks its schedule among static
:math:`\epsilon \in \{10^{-4}, 2\cdot10^{-4}, 5\cdot10^{-4}, 10^{-3}\}` and diminishing
:math:`c/(t+1)`, :math:`c \in \{0.2, 0.5, 1, 2\}` by the lowest final objective after
:math:`10^4` iterations, then reruns 50,000.

**Outputs.** ``results.json`` (one run per (dataset, model, method, κ/λ, split), with test and
validation accuracy, pDP and weak pDP; per dataset its group names, band, the band the paper's
rule picks on these data and the majority class's test accuracy), ``runs.csv``, ``frontier.csv`` (means and 95% t-intervals over splits; none with
one split), ``figure1_frontiers.png`` (with the majority class's accuracy dotted: a constant
classifier is perfectly fair), ``figure2_ccdf.png`` (the paper's group γ = 1 on the x axis),
``figure9_10_idca_vs_ssg.png``, the frontier comparison (is IDCA's pDP frontier at or above
every baseline's at matched fairness?, `frontier_check`) and, printed and in ``summary.txt``, its
table and one line per dataset and row saying whether the paper's claim holds (`paper_claims`).

**Quick mode** (``--quick``) changes exactly: one split; training sets subsampled (seeded) to
3,000 rows, validation and test to 2,000; κ: the largest and the smallest of each grid; one κ per
baseline kind and one λ; IDCA without tuning (T = 50, ε = 2e-3, K chosen in {20, 40}); baselines
100 steps; penalty 2,000 steps with step 2e-3; direct SSG 2,000 iterations, static 1e-3 vs
diminishing 1/(t+1).
"""
from __future__ import annotations

import math

import numpy as np

from ._sampling import subsample

NAME = "partial-fairness"
TITLE = "He, Huang, Yao & Lin [HHYL25], partial fairness by DC constraints"
PAPER = ("He, Huang, Yao & Lin [HHYL25], Enforcing Fairness Where It Matters: An Approach Based on "
         "Difference-of-Convex Constraints (arXiv:2505.12530v1), Figures 1, 2, 9, 10")
RESUMABLE = True
DATASETS = ("a9a", "bank", "law_school")
MODELS = ("pdp", "weak_pdp")
PAIRWISE = ("group_auc", "inter_group", "intra_group")

CONFIG = {
    "datasets": DATASETS,
    "n_splits": 5,
    "max_train_rows": None,
    "max_eval_rows": None,
    "interval": {"a9a": (0.05, 0.30), "bank": (0.0, 0.25), "law_school": (0.70, 1.0)},
    "n_levels": 10,
    "grid": "paper",
    "kappa": {
        "pdp": {"a9a": (0.01, 0.05, 0.1, 0.2, 0.28), "bank": (0.01, 0.08, 0.22, 0.3),
                "law_school": (0.005, 0.08, 0.1, 0.15, 0.2)},
        "weak_pdp": {"a9a": (0.005, 0.03, 0.05, 0.1, 0.15), "bank": (0.01, 0.03, 0.05, 0.07, 0.1),
                     "law_school": (0.005, 0.04, 0.06, 0.1, 0.15)},
    },
    "pairwise_kappa": {
        "group_auc": {"pdp": {"a9a": (0.7, 1, 2, 3.5), "bank": (0.1, 0.3, 0.56, 0.7, 1),
                              "law_school": (0.5, 0.75, 1.15, 1.8, 2.7)},
                      "weak_pdp": {"a9a": (0.3, 0.4, 0.5, 0.7, 1), "bank": (0.06, 0.5, 2.35, 2.62, 3.28, 4),
                                   "law_school": (1, 3, 4, 5, 6, 10)}},
        "inter_group": {"pdp": {"a9a": (1.5, 3, 3.5, 6), "bank": (1.5, 1.8, 2, 3), "law_school": (0.4, 1.6, 2.4, 4)},
                        "weak_pdp": {"a9a": (0.9, 1.2, 1.5, 2, 2.7), "bank": (0.3, 1, 5, 5.4, 6),
                                     "law_school": (2, 6.5, 8, 9, 10, 15)}},
        "intra_group": {"pdp": {"a9a": (3, 5, 8), "bank": (2, 3, 4), "law_school": (3, 5, 10)},
                        "weak_pdp": {"a9a": (0.7, 1, 1.3, 1.7, 2.2), "bank": (0.1, 0.3, 0.42, 0.5, 1, 2.5),
                                     "law_school": (0.1, 0.8, 2, 3.5, 10)}},
    },
    "penalty_lambda": {
        "pdp": {"a9a": (0.2, 0.3, 0.37, 1), "bank": (0.4, 0.405, 0.41, 1, 1.5),
                "law_school": (0.39, 0.4, 0.5, 0.8, 1.5)},
        "weak_pdp": {"a9a": (0.13, 0.17, 0.2, 0.23, 1), "bank": (0.005, 0.015, 0.018, 0.1, 2),
                     "law_school": (0.001, 0.01, 1)},
    },
    "idca": {"inner_iter": (150, 200), "switching_level": (5e-4, 1e-3, 2e-3, 5e-3), "tuning_outer": 50,
             "outer": (100, 150, 200, 250, 300, 350, 400)},
    "pairwise_iter": {"a9a": 1000, "bank": 1000, "law_school": 500},
    "penalty": {"step_size": (5e-4, 1e-3, 2e-3, 5e-3), "tuning_iter": 10000, "final_iter": 80000},
    "direct_ssg": {"static": (1e-4, 2e-4, 5e-4, 1e-3), "diminishing": (0.2, 0.5, 1.0, 2.0), "tuning_iter": 10000,
                   "final_iter": 50000},
    "figure2_kappa": {"a9a": (0.1, 0.05, 0.01), "bank": (0.3, 0.08, 0.01), "law_school": (0.2, 0.1, 0.005)},
}


def config(quick=False) -> dict:
    """The configuration of a full (the paper's) or ``--quick`` run (see the module docstring)."""
    import copy

    cfg = copy.deepcopy(CONFIG)
    if not quick:
        return cfg
    cfg["n_splits"] = 1
    cfg["max_train_rows"], cfg["max_eval_rows"] = 3000, 2000
    for model in MODELS:
        for ds in DATASETS:
            grid = cfg["kappa"][model][ds]
            cfg["kappa"][model][ds] = (max(grid), min(grid))
            lam = cfg["penalty_lambda"][model][ds]
            cfg["penalty_lambda"][model][ds] = (lam[len(lam) // 2],)
            for kind in PAIRWISE:
                grid = cfg["pairwise_kappa"][kind][model][ds]
                cfg["pairwise_kappa"][kind][model][ds] = (grid[len(grid) // 2],)
    cfg["idca"] = {"inner_iter": (50,), "switching_level": (2e-3,), "tuning_outer": None, "outer": (20, 40)}
    cfg["pairwise_iter"] = {ds: 100 for ds in DATASETS}
    cfg["penalty"] = {"step_size": (2e-3,), "tuning_iter": None, "final_iter": 2000}
    cfg["direct_ssg"] = {"static": (1e-3,), "diminishing": (1.0,), "tuning_iter": None, "final_iter": 2000}
    cfg["figure2_kappa"] = {ds: (max(cfg["kappa"]["pdp"][ds]), min(cfg["kappa"]["pdp"][ds])) for ds in DATASETS}
    return cfg


# ----------------------------------------------------------------------------------------------- data
def split_rows(dataset, split, n_rows, seed):
    """Row indices ``(train, validation, test)`` of one split (Appendix D.1's proportions)."""
    rng = np.random.default_rng([seed, split, 16])
    perm = rng.permutation(n_rows)
    if dataset == "a9a":  # the official train file only; the test file is the test set
        n_val = int(round(0.1 * n_rows))
        return np.sort(perm[n_val:]), np.sort(perm[:n_val]), None
    fractions = (0.6, 0.2) if dataset == "bank" else (0.5625, 0.1875)
    n_tr = int(round(fractions[0] * n_rows))
    n_val = int(round(fractions[1] * n_rows))
    return np.sort(perm[:n_tr]), np.sort(perm[n_tr:n_tr + n_val]), np.sort(perm[n_tr + n_val:])


class SplitData:
    """Cross-term design, labels and groups of the train, validation and test rows of one split.

    A mostly-zero dense design (bank's one-hot columns) is kept as CSR
    (`fastcon.datasets._storage.fast_storage`).
    """

    def __init__(self, dataset, split, cfg, data_home=None, seed=0, download=None):
        from ..datasets import load
        from ..datasets._storage import fast_storage
        from ..problems import cross_term_features

        self.dataset, self.split = dataset, split
        if dataset == "a9a":
            full, test = load("a9a", data_home=data_home, subset="train", download=download), \
                load("a9a", data_home=data_home, subset="test", download=download)
        else:
            full = load(dataset, data_home=data_home, subset="all", download=download)
            test = full
        tr, va, te = split_rows(dataset, split, full.n_samples, seed)
        if te is None:
            te = np.arange(test.n_samples)
        rng = np.random.default_rng([seed, split, 17])
        tr = tr[subsample(tr.size, cfg["max_train_rows"], rng)]
        va = va[subsample(va.size, cfg["max_eval_rows"], rng)]
        te = te[subsample(te.size, cfg["max_eval_rows"], rng)]
        self.parts = {}
        for name, source, rows in (("train", full, tr), ("validation", full, va), ("test", test, te)):
            X = source.X[rows]
            g = np.asarray(source.groups)[rows]
            self.parts[name] = (fast_storage(cross_term_features(X, g, n_groups=2)), np.asarray(source.y)[rows], g)
        self.group_names = list(full.group_names)
        self.n_features = self.parts["train"][0].shape[1]

    def scores(self, part, w):
        X = self.parts[part][0]
        return np.asarray(X @ w[:self.n_features]).ravel()


def evaluate(data, w, interval):
    """Accuracy (threshold 0), partial DP and weak partial DP on validation and test."""
    from ..metrics import partial_dp, weak_partial_dp

    out = {}
    for part in ("validation", "test"):
        _, y, g = data.parts[part]
        s = data.scores(part, w)
        out[part] = {"accuracy": float(np.mean(np.where(s > 0, 1.0, -1.0) == y)),
                     "pdp": float(partial_dp(s, sensitive_features=g, interval=interval)),
                     "weak_pdp": float(weak_partial_dp(s, sensitive_features=g, interval=interval, threshold=0.0))}
    return out


# ------------------------------------------------------------------------------------------ problems
def _train_dataset(data):
    from ..datasets import Dataset

    X, y, g = data.parts["train"]
    return Dataset(X, y, groups=g, name=f"{data.dataset}[train, split {data.split}]")


def build_problem(data, model, kappa, cfg):
    """`PartialFairnessProblem` of model (13) (``"pdp"``) or (17) (``"weak_pdp"``) on the training rows."""
    from ..problems import (LinearLoss, LinearScores, PartialFairnessProblem, partial_dp_constraints,
                            weak_partial_dp_constraints)

    ds = _train_dataset(data)
    scores = LinearScores(ds, fit_intercept=False)
    loss = LinearLoss(scores, ds.y, np.ones(ds.n_samples), loss="logistic")
    interval = tuple(cfg["interval"][data.dataset])
    if model == "pdp":
        block = partial_dp_constraints(scores, ds.groups, interval, kappa, n_levels=cfg["n_levels"],
                                       grid=cfg["grid"], surrogate="ramp")
    else:
        block = weak_partial_dp_constraints(scores, ds.groups, interval, kappa, threshold=0.0, surrogate="ramp")
    return PartialFairnessProblem(loss, block, name=f"{data.dataset}/{model}/kappa={kappa:g}")


def unconstrained_optimum(data):
    """:math:`w^* = \\arg\\min f_0` on the training rows (L-BFGS-B to a gradient norm of 1e-8)."""
    from scipy.optimize import minimize

    from ..problems import LinearLoss, LinearScores

    ds = _train_dataset(data)
    loss = LinearLoss(LinearScores(ds, fit_intercept=False), ds.y, np.ones(ds.n_samples), loss="logistic")
    grad = np.empty(loss.n_features)

    def fun(w):
        value = loss.value_and_subgradient(w, grad)
        return value, grad.copy()

    res = minimize(fun, np.zeros(loss.n_features), jac=True, method="L-BFGS-B",
                   options={"maxiter": 5000, "gtol": 1e-8, "ftol": 1e-15})
    return res.x, float(res.fun)


# ------------------------------------------------------------------------------------------- methods
def base_rate_start(data, problem, cfg):
    r"""The constant model whose ramp rate is the training base rate clipped to the band.

    Every constant model is feasible for models (13) and (17) (all groups share its rates). Model
    (17)'s threshold is fixed at 0, so the start's rate picks the branch IDCA follows: at w = 0 it
    is :math:`\sigma(0) = 1/2`, above a band below 1/2 (docs/design.md, "Partial fairness").
    """
    alpha, beta = cfg["interval"][data.dataset]
    rate = min(max(float(np.mean(data.parts["train"][1] > 0)), alpha), beta)
    x0 = problem.x0.copy()
    x0[0] = rate - 0.5     # column 0 of the cross-term design is the ones column; ramp = clip(s + 1/2, 0, 1)
    return x0


def run_idca(data, model, kappa, cfg, keep_history=False, start="zero"):
    """IDCA with the paper's two-stage selection; the record of the selected run.

    ``start``: ``"zero"``, the paper's :math:`w^{(0)} = 0`, or ``"base_rate"`` (`base_rate_start`,
    for model (17) only; results/partial-fairness/start_study.py compares the two).
    """
    from ..solvers import idca

    if start not in ("zero", "base_rate") or (start == "base_rate" and model != "weak_pdp"):
        raise ValueError(f"start: expected 'zero', or 'base_rate' with model (17), got {start!r} with {model!r}")

    def problem_at():
        problem = build_problem(data, model, kappa, cfg)
        if start == "base_rate":
            problem.x0 = base_rate_start(data, problem, cfg)
        return problem

    interval = tuple(cfg["interval"][data.dataset])
    grid = cfg["idca"]
    candidates = [(T, eps) for T in grid["inner_iter"] for eps in grid["switching_level"]]
    tuning = []
    if len(candidates) > 1:
        for T, eps in candidates:
            res = idca(problem_at(), outer_iter=grid["tuning_outer"], inner_iter=T, switching_level=eps)
            tuning.append({"inner_iter": T, "switching_level": eps, "status": res.status,
                           "validation_accuracy": evaluate(data, res.x, interval)["validation"]["accuracy"]})
        best = max(tuning, key=lambda r: r["validation_accuracy"])  # first of the ties: grid order
        T, eps = best["inner_iter"], best["switching_level"]
    else:
        T, eps = candidates[0]
    outers = sorted(grid["outer"])
    snapshots, inner_done = {}, {}

    def keep(k, x, info):
        if k + 1 in outers:
            snapshots[k + 1] = x.copy()
            inner_done[k + 1] = int(info["inner_iterations"])
        return False

    problem = problem_at()
    res = idca(problem, outer_iter=outers[-1], inner_iter=T, switching_level=eps, callback=keep)
    scored = [(K, evaluate(data, snapshots[K], interval)) for K in outers if K in snapshots]
    K, metrics = max(scored, key=lambda item: item[1]["validation"]["accuracy"])
    x = snapshots[K]
    record = {"params": {"inner_iter": T, "switching_level": eps, "outer_iter": K}, "status": res.status,
              "n_iter": inner_done[K],
              "train_objective": problem.objective_value(x),
              "train_max_violation": max(0.0, float(np.max(problem.constraint_values(x)))),
              "metrics": metrics, "tuning": tuning,
              "outer_validation_accuracy": {str(k): m["validation"]["accuracy"] for k, m in scored}}
    if keep_history:
        record["history"] = {"inner_iterations": res.history["inner_iterations"].tolist(),
                             "objective": res.history["objective"].tolist(),
                             "max_violation": res.history["max_violation"].tolist()}
    return record, x


def run_pairwise(data, model, kind, kappa, cfg):
    """A pairwise quadratic baseline by projected gradient from w = 0 with step 1/L."""
    from ..problems import LinearLoss, LinearScores, pairwise_fairness_constraints
    from ..solvers import projected_gradient

    interval = tuple(cfg["interval"][data.dataset])
    ds = _train_dataset(data)
    loss = LinearLoss(LinearScores(ds, fit_intercept=False), ds.y, np.ones(ds.n_samples), loss="logistic")
    cons = pairwise_fairness_constraints(ds.X, ds.y, ds.groups, kind, kappa)
    res = projected_gradient(loss, cons, step_size="auto",
                             max_iter=cfg["pairwise_iter"][data.dataset])
    return {"params": {"kind": kind, "max_iter": cfg["pairwise_iter"][data.dataset]}, "status": res.status,
            "n_iter": res.n_iter,
            "train_objective": res.objective, "train_max_violation": res.max_violation,
            "metrics": evaluate(data, res.x, interval)}, res.x


def run_penalty(data, model, lam, cfg):
    """The penalty model (78)/(83) by subgradient descent; step chosen on validation accuracy."""
    from ..solvers import penalty_subgradient

    interval = tuple(cfg["interval"][data.dataset])
    pen = cfg["penalty"]
    tuning = []
    steps = pen["step_size"]
    if len(steps) > 1:
        for eta in steps:
            res = penalty_subgradient(build_problem(data, model, 1.0, cfg), penalty=lam, max_iter=pen["tuning_iter"],
                                      step_size=eta)
            tuning.append({"step_size": eta,
                           "validation_accuracy": evaluate(data, res.x, interval)["validation"]["accuracy"]})
        eta = max(tuning, key=lambda r: r["validation_accuracy"])["step_size"]
    else:
        eta = steps[0]
    problem = build_problem(data, model, 1.0, cfg)
    res = penalty_subgradient(problem, penalty=lam, max_iter=pen["final_iter"], step_size=eta)
    return {"params": {"step_size": eta, "max_iter": pen["final_iter"]}, "status": res.status,
            "n_iter": res.n_iter, "train_objective": res.objective, "train_max_violation": 0.0,
            "train_penalty": res.info["penalty"],
            "metrics": evaluate(data, res.x, interval), "tuning": tuning}, res.x


def run_direct_ssg(data, model, kappa, cfg):
    """Algorithm 3 with the schedule of lowest final objective; its trace for Figures 9–10."""
    from ..solvers import switching_polyak

    interval = tuple(cfg["interval"][data.dataset])
    grid = cfg["direct_ssg"]
    schedules = [("static", e) for e in grid["static"]] + [("diminishing", c) for c in grid["diminishing"]]

    def level(kind, value):
        return float(value) if kind == "static" else (lambda t, c=float(value): c / (t + 1))

    tuning = []
    if len(schedules) > 1 and grid["tuning_iter"]:
        for kind, value in schedules:
            problem = build_problem(data, model, kappa, cfg)
            res = switching_polyak(problem, max_iter=grid["tuning_iter"], switching_level=level(kind, value),
                                   output="last")
            tuning.append({"schedule": kind, "value": value, "final_objective": problem.objective_value(res.x),
                           "final_max_violation": res.max_violation})
        best = min(tuning, key=lambda r: r["final_objective"])
        kind, value = best["schedule"], best["value"]
    else:
        kind, value = schedules[0]
    problem = build_problem(data, model, kappa, cfg)
    T = grid["final_iter"]
    res = switching_polyak(problem, max_iter=T, switching_level=level(kind, value), record_every=max(1, T // 400))
    return {"params": {"schedule": kind, "value": value, "max_iter": T}, "status": res.status, "n_iter": res.n_iter,
            "train_objective": res.objective, "train_max_violation": res.max_violation,
            "metrics": evaluate(data, res.x, interval), "tuning": tuning,
            "history": {"iteration": res.history["iteration"].tolist(),
                        "objective": res.history["objective"].tolist(),
                        "max_violation": res.history["max_violation"].tolist()}}, res.x


def unconstrained_record(data, cfg):
    """The common start of every frontier: :math:`w^*` and its metrics."""
    w, f0 = unconstrained_optimum(data)
    return {"params": {}, "status": "converged", "n_iter": 0, "train_objective": f0, "train_max_violation": 0.0,
            "metrics": evaluate(data, w, tuple(cfg["interval"][data.dataset]))}, w


def ccdf_curve(data, w, n_points=201):
    r"""Figure 2's curve on the test rows: :math:`(\bar F_1(\theta), \bar F_2(\theta))` at ``n_points`` thresholds.

    The thresholds are quantiles of the pooled test scores (plus both ends), so the curve keeps its
    shape at a fixed size whatever the number of rows.
    """
    from ..metrics import score_ccdf_curves

    _, _, g = data.parts["test"]
    curves = score_ccdf_curves(data.scores("test", w), sensitive_features=g)
    keep = np.unique(np.linspace(0, curves.thresholds.size - 1, n_points).round().astype(np.int64))
    return {"x": curves.ccdf[0, keep].tolist(), "y": curves.ccdf[1, keep].tolist()}


# --------------------------------------------------------------------------------------- aggregation
def _mean_ci(values):
    """Mean and half-width of the two-sided 95% Student-t interval (NaN for a single value: no
    interval, written as an empty cell / ``null``)."""
    from scipy.stats import t as student_t

    v = np.asarray(values, dtype=np.float64)
    if v.size < 2:
        return float(v.mean()), math.nan
    t = float(student_t.ppf(0.975, v.size - 1))
    return float(v.mean()), float(t * v.std(ddof=1) / math.sqrt(v.size))


def fairness_of(record, model, part="test"):
    """:math:`1 - \\max_{k,k'}` (weak) partial DP of a run, the paper's fairness axis."""
    return 1.0 - record["metrics"][part][model]


def frontier_points(runs, n_splits):
    """Mean and 95% CI over splits of (fairness, accuracy) per (dataset, model row, method, parameter).

    The unconstrained model enters both rows (pDP and weak pDP) as the start of every frontier.
    """
    cells = {}
    for r in runs:
        models = MODELS if r["method"] == "unconstrained" else (r["model"],)
        for model in models:
            key = (r["dataset"], model, r["method"], r["param"])
            cells.setdefault(key, []).append(r)
    points = []
    for (dataset, model, method, param), rs in sorted(cells.items(), key=lambda kv: str(kv[0])):
        fair = _mean_ci([fairness_of(r, model) for r in rs])
        acc = _mean_ci([r["metrics"]["test"]["accuracy"] for r in rs])
        points.append({"dataset": dataset, "model": model, "method": method, "param": param, "n_splits": len(rs),
                       "complete": len(rs) == n_splits, "fairness": fair[0], "fairness_ci": fair[1],
                       "accuracy": acc[0], "accuracy_ci": acc[1]})
    return points


def idca_frontier(points, dataset, model):
    """IDCA's frontier in one panel: its non-dominated points and the unconstrained start, by fairness."""
    mine = [(p["fairness"], p["accuracy"]) for p in points if p["dataset"] == dataset and p["model"] == model
            and p["method"] in ("idca", "unconstrained")]
    front = [q for q in mine if not any(r[0] >= q[0] and r[1] >= q[1] and r != q for r in mine)]
    return sorted(front)


def frontier_check(points):
    r"""Is IDCA's frontier at or above each baseline point at matched fairness?

    IDCA's frontier in a panel is the piecewise-linear curve through its non-dominated points
    (mean test fairness :math:`x`, mean test accuracy :math:`y`) and the unconstrained start, as the
    paper's Figure 1 draws it. A baseline point :math:`(x_b, y_b)` is *matched* when :math:`x_b` lies
    within that curve's fairness range, and IDCA is *at or above* it when the curve's accuracy at
    :math:`x_b` is :math:`\ge y_b`. Returns one entry per (dataset, row, baseline method): points,
    matched, IDCA at or above, the largest lead of the baseline in accuracy (positive: the baseline
    is above IDCA's curve) with that point's parameter and accuracy CI, the fairness values outside
    IDCA's range, and the points fairer than IDCA's fairest (``beyond_idca``: parameter, fairness,
    accuracy), where the comparison cannot be made.
    """
    out = []
    keys = sorted({(p["dataset"], p["model"]) for p in points})
    for dataset, model in keys:
        front = idca_frontier(points, dataset, model)
        xs = np.array([q[0] for q in front])
        ys = np.array([q[1] for q in front])
        others = sorted({p["method"] for p in points if p["dataset"] == dataset and p["model"] == model}
                        - {"idca", "unconstrained"})
        for method in others:
            pts = [p for p in points if p["dataset"] == dataset and p["model"] == model and p["method"] == method]
            matched = below = 0
            lead, leader = -math.inf, None
            unmatched, beyond = [], []
            for p in pts:
                if xs.size == 0 or not xs[0] <= p["fairness"] <= xs[-1]:
                    unmatched.append(p["fairness"])
                    if xs.size and p["fairness"] > xs[-1]:
                        beyond.append({"param": p["param"], "fairness": p["fairness"], "accuracy": p["accuracy"]})
                    continue
                matched += 1
                gap = p["accuracy"] - float(np.interp(p["fairness"], xs, ys))
                if gap > lead:
                    lead, leader = gap, p
                below += gap <= 1e-12  # equal accuracies up to round-off count as "at"
            out.append({"dataset": dataset, "model": model, "baseline": method, "points": len(pts),
                        "matched": matched, "idca_at_or_above": int(below),
                        "largest_baseline_lead": None if matched == 0 else float(lead),
                        "lead_param": None if leader is None else leader["param"],
                        "lead_accuracy_ci": None if leader is None else _finite_or_none(leader.get("accuracy_ci")),
                        "unmatched_fairness": unmatched, "idca_fairest": float(xs[-1]) if xs.size else None,
                        "beyond_idca": beyond})
    return out


def _finite_or_none(v):
    return None if v is None or not math.isfinite(v) else float(v)


_CLAIM = "IDCA's frontier is at or above every baseline's at matched fairness"


def paper_claims(check, facts) -> list:
    """Lines saying, per dataset and row, whether [HHYL25]'s Figure 1 claim holds on these results.

    From `frontier_check`: the matched baseline points IDCA's curve is below (with the largest
    lead, its parameter and the baseline's 95% CI there), then what the comparison cannot reach:
    baseline points fairer than IDCA's fairest point, with their accuracy against the majority
    class's (``facts``, `dataset_facts`), and points less fair than the unconstrained start.
    """
    lines = []
    for dataset, model in sorted({(c["dataset"], c["model"]) for c in check}):
        rows = [c for c in check if c["dataset"] == dataset and c["model"] == model]
        matched = sum(c["matched"] for c in rows)
        short = [c for c in rows if c["idca_at_or_above"] < c["matched"]]
        where = f"{_DATASET_TITLE.get(dataset, dataset)}, {_ROW_LABEL[model].split(' (')[0]}"
        if matched == 0:
            line = f"paper claim '{_CLAIM}' on {where}: no baseline point within IDCA's fairness range"
        elif not short:
            line = f"paper claim '{_CLAIM}' on {where}: holds at all {matched} matched baseline points"
        else:
            n_short = sum(c["matched"] - c["idca_at_or_above"] for c in short)
            worst = max(short, key=lambda c: c["largest_baseline_lead"])
            ci = worst["lead_accuracy_ci"]
            line = (f"paper claim '{_CLAIM}' on {where}: does NOT hold at {n_short} of {matched} matched points ("
                    + ", ".join(f"{c['baseline']} {c['matched'] - c['idca_at_or_above']}" for c in short)
                    + f"; largest lead {worst['baseline']} {worst['lead_param']:g} by "
                    f"{worst['largest_baseline_lead']:+.4f}"
                    + ("" if ci is None else f", its 95% CI +/-{ci:.4f}") + ")")
        majority = facts.get(dataset, {}).get("test_majority_accuracy")
        beyond = [(c["baseline"], b) for c in rows for b in c["beyond_idca"]]
        if beyond:
            below = sum(majority is not None and b["accuracy"] <= majority + 1e-9 for _, b in beyond)
            line += (f"; fairer than IDCA's fairest point ({rows[0]['idca_fairest']:.3f}), not comparable: "
                     + ", ".join(f"{m} {b['param']:g} ({b['fairness']:.3f}, accuracy {b['accuracy']:.4f})"
                                 for m, b in beyond))
            if majority is not None:
                line += (f" ({below} of {len(beyond)} at or below the accuracy of the majority class, a constant "
                         f"classifier: {majority:.4f})")
        less = sum(len(c["unmatched_fairness"]) - len(c["beyond_idca"]) for c in rows)
        if less and rows[0]["idca_fairest"] is not None:
            line += f"; {less} baseline point{'s' if less > 1 else ''} less fair than the unconstrained model"
        lines.append(line)
    return lines


# ------------------------------------------------------------------------------------------- figures
_METHOD_STYLE = {
    "idca": ("IDCA (proposed)", "tab:red", "o"),
    "group_auc": ("Group AUC (66)", "tab:blue", "s"),
    "inter_group": ("Inter-group pairwise (69)", "tab:green", "^"),
    "intra_group": ("Intra-group pairwise (71)", "tab:purple", "v"),
    "penalty": ("Regularization (78)/(83)", "tab:orange", "D"),
}
_DATASET_TITLE = {"a9a": "a9a", "bank": "bank", "law_school": "law school"}
#: Our group ids of the paper's groups γ = 1, 2 (Appendix D.1: female / male, ages 25–60 / other
#: ages, White / non-White); Figure 2 draws γ = 2's CCDF against γ = 1's.
PAPER_GROUPS = {"a9a": (1, 0), "bank": (0, 1), "law_school": (0, 1)}
_ROW_LABEL = {"pdp": "1 − pDP (test)", "weak_pdp": "1 − weak pDP (test)"}


def dataset_facts(session) -> dict:
    """Per dataset: its group names, the test accuracy of the majority class (mean over splits: the
    accuracy of a constant classifier, drawn in Figure 1), the band used and the band the paper's
    rule (§4, `fastcon.metrics.choose_interval` with the unconstrained model's training scores at
    threshold 0, split 0) picks on these data."""
    from ..metrics import choose_interval

    cfg = session.cfg
    out = {}
    for dataset in cfg["datasets"]:
        majority, names, rule = [], None, None
        for split in range(cfg["n_splits"]):
            data = split_data(dataset, split, cfg, data_home=session.data_home, seed=session.seed,
                              download=session.download)
            y = data.parts["test"][1]
            majority.append(max(float(np.mean(y == 1)), float(np.mean(y != 1))))
            names = data.group_names
            if split == 0:
                w, _ = unconstrained_optimum(data)
                rule = choose_interval(data.scores("train", w), sensitive_features=data.parts["train"][2],
                                       threshold=0.0).interval
        out[dataset] = {"group_names": names, "test_majority_accuracy": float(np.mean(majority)),
                        "interval": list(cfg["interval"][dataset]), "rule_interval": list(rule)}
    return out


def _no_nan(values):
    return np.nan_to_num(np.asarray(values, dtype=np.float64), nan=0.0)


def plot_frontiers(points, datasets, pyplot, facts=None):
    """Figure 1: test accuracy against test fairness, rows pDP / weak pDP, one column per dataset;
    the majority class's test accuracy (``facts``, `dataset_facts`) as a dotted line."""
    # one or two panels get a wider figure and a two-row legend, so that the title and legend fit
    legend_cols = 7 if len(datasets) >= 3 else 4
    fig, axes = pyplot.subplots(2, len(datasets), figsize=(max(4.2 * len(datasets), 8.4), 7.4), squeeze=False)
    for i, model in enumerate(MODELS):
        for j, dataset in enumerate(datasets):
            ax = axes[i][j]
            if facts and dataset in facts:
                ax.axhline(facts[dataset]["test_majority_accuracy"], color="gray", lw=0.8, ls=":",
                           label="majority class")
            start = [p for p in points if p["dataset"] == dataset and p["model"] == model
                     and p["method"] == "unconstrained"]
            for method, (label, color, marker) in _METHOD_STYLE.items():
                pts = sorted((p for p in points if p["dataset"] == dataset and p["model"] == model
                              and p["method"] == method), key=lambda p: p["fairness"])
                if not pts:
                    continue
                pts = start + pts
                ax.errorbar([p["fairness"] for p in pts], [p["accuracy"] for p in pts],
                            xerr=_no_nan([p["fairness_ci"] for p in pts]), yerr=_no_nan([p["accuracy_ci"] for p in pts]),
                            color=color, marker=marker, ms=4, lw=1.2, capsize=2, label=label)
            for p in start:
                ax.plot(p["fairness"], p["accuracy"], marker="*", color="black", ms=10, zorder=5,
                        label="unconstrained $w^*$")
            band = "" if not facts or dataset not in facts else \
                " (band [{:g}, {:g}))".format(*facts[dataset]["interval"])
            ax.set_title(f"{_DATASET_TITLE.get(dataset, dataset)}{band}")
            ax.set_xlabel(_ROW_LABEL[model])
            ax.set_ylabel("test accuracy")
            ax.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    seen = dict(zip(labels, handles))
    fig.legend(seen.values(), seen.keys(), loc="lower center", ncol=legend_cols, fontsize=8, frameon=False)
    n_splits = max((p["n_splits"] for p in points), default=0)
    spread = "mean, 95% CI over splits" if n_splits > 1 else "one split: no interval"
    fig.suptitle(f"He, Huang, Yao & Lin [HHYL25] Figure 1: accuracy vs partial fairness ({spread})", fontsize=10)
    fig.tight_layout(rect=(0, 0.05 if legend_cols == 7 else 0.07, 1, 0.96))
    return fig


def plot_ccdf(runs, cfg, pyplot, facts=None):
    """Figure 2: the CCDF of the paper's group γ = 2 against γ = 1's (`PAPER_GROUPS`; test, split 0),
    unconstrained and three κ of model (13); the square :math:`[\alpha, \beta]^2` of the band shaded."""
    datasets = [d for d in cfg["datasets"]]
    n_cols = 1 + max(len(cfg["figure2_kappa"][d]) for d in datasets)
    fig, axes = pyplot.subplots(len(datasets), n_cols, figsize=(3.0 * n_cols, 3.0 * len(datasets)), squeeze=False)
    for i, dataset in enumerate(datasets):
        a, b = cfg["interval"][dataset]
        panels = [("unconstrained", None)] + [("idca", k) for k in cfg["figure2_kappa"][dataset]]
        for j, (method, kappa) in enumerate(panels):
            ax = axes[i][j]
            found = [r for r in runs if r["dataset"] == dataset and r["method"] == method and r["split"] == 0
                     and r.get("ccdf") and (method == "unconstrained" or (r["model"] == "pdp" and r["param"] == kappa))]
            first, second = PAPER_GROUPS.get(dataset, (0, 1))
            if found:   # the stored curve has group id 0 on "x", group id 1 on "y"
                curve = (found[0]["ccdf"]["x"], found[0]["ccdf"]["y"])
                ax.plot(curve[first], curve[second], color="tab:blue", lw=1.4)
            ax.plot([0, 1], [0, 1], color="gray", lw=0.6, ls=":")
            ax.fill_between([a, b], a, b, color="red", alpha=0.12, lw=0)
            for v in (a, b):
                ax.axvline(v, color="red", lw=0.6, ls="--")
                ax.axhline(v, color="red", lw=0.6, ls="--")
            ax.set_xlim(0, 1)
            ax.set_ylim(0, 1)
            ax.set_title(f"{_DATASET_TITLE.get(dataset, dataset)}: "
                         + ("unconstrained" if kappa is None else f"κ = {kappa:g}"), fontsize=9)
            names = facts[dataset]["group_names"] if facts and dataset in facts else None
            for setter, gid, gamma in ((ax.set_xlabel, first, 1), (ax.set_ylabel, second, 2)):
                who = f"{names[gid]}, γ = {gamma}" if names else f"γ = {gamma}"
                setter(f"CCDF, {who}", fontsize=8)
    fig.suptitle("He, Huang, Yao & Lin [HHYL25] Figure 2: score CCDFs of the two groups (test); the band "
                 "[α, β]² shaded", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    return fig


def _best_feasible_so_far(record):
    r"""Running minimum of the direct SSG's objective over its recorded iterates with
    :math:`\max_i f_i \le \epsilon_t` (static :math:`\epsilon` or :math:`c/(t+1)`), NaN before the
    first: the point the method would output there, comparable with IDCA's outer iterates (each the
    inner solver's best nearly-feasible point)."""
    h, params = record["history"], record["params"]
    t = np.asarray(h["iteration"], dtype=np.float64)
    eps = np.full_like(t, params["value"]) if params["schedule"] == "static" else params["value"] / (t + 1.0)
    obj = np.asarray(h["objective"], dtype=np.float64)
    ok = np.asarray(h["max_violation"], dtype=np.float64) <= eps
    best = np.minimum.accumulate(np.where(ok, obj, np.inf))
    return np.where(np.isfinite(best), best, np.nan)


def plot_idca_vs_ssg(runs, cfg, pyplot):
    """Figures 9 (model 13) and 10 (model 17): objective and infeasibility against inner iterations."""
    datasets = list(cfg["datasets"])
    fig, axes = pyplot.subplots(4, len(datasets), figsize=(4.2 * len(datasets), 11), squeeze=False)
    for m, model in enumerate(MODELS):
        for j, dataset in enumerate(datasets):
            ax_obj, ax_inf = axes[2 * m][j], axes[2 * m + 1][j]
            # the direct SSG alternates between feasible and infeasible iterates every few steps: a thin
            # line under IDCA's, so that IDCA's curve stays visible through SSG's band
            for method, color, label, lw, z in (("direct_ssg", "tab:blue", "direct SSG", 0.6, 2),
                                                ("idca", "tab:red", "IDCA", 1.4, 3)):
                found = [r for r in runs if r["dataset"] == dataset and r["model"] == model and r["method"] == method
                         and r.get("history") and r["split"] == 0]
                if not found:
                    continue
                h = found[0]["history"]
                x = h.get("inner_iterations", h.get("iteration"))
                ax_obj.plot(x, h["objective"], color=color, lw=lw, zorder=z,
                            label=f"{label} (κ = {found[0]['param']:g})")
                if method == "direct_ssg":
                    best = _best_feasible_so_far(found[0])
                    ax_obj.plot(x, best, color=color, lw=1.2, ls="--", zorder=z,
                                label="direct SSG: best ε-feasible so far")
                ax_inf.plot(x, np.maximum(np.asarray(h["max_violation"], dtype=float), 1e-12), color=color, lw=lw,
                            zorder=z, label=label)
            figure = 9 if model == "pdp" else 10
            ax_obj.set_title(f"Figure {figure}, {_DATASET_TITLE.get(dataset, dataset)}", fontsize=9)
            ax_obj.set_ylabel("objective $f_0$")
            ax_inf.set_ylabel("infeasibility $\\max(0, \\max_i f_i)$\n(0 drawn at $10^{-12}$)", fontsize=8)
            ax_inf.set_yscale("log")
            ax_inf.set_xlabel("inner iterations (IDCA) / iterations (SSG)")
            if ax_obj.get_legend_handles_labels()[0]:   # a panel without runs has nothing to list
                ax_obj.legend(fontsize=7)
            for ax in (ax_obj, ax_inf):
                ax.grid(alpha=0.3)
    fig.suptitle("He, Huang, Yao & Lin [HHYL25] Figures 9-10: IDCA vs direct switching subgradient (split 0)",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    return fig


# --------------------------------------------------------------------------------------------- tasks
def make_tasks(cfg) -> list:
    """One task per (dataset, split, method, model, κ/λ).

    Dataset by dataset, the smallest first, so that a run cut off midway has whole frontiers to
    show (the full run takes longer than a working session); within a dataset the most expensive
    methods first, so that the pool's last tasks are short.
    """
    out = []
    for ds in cfg["datasets"]:
        for split in range(cfg["n_splits"]):
            out.append({"dataset": ds, "split": split, "method": "unconstrained", "model": None, "param": None})
            for model in MODELS:
                for kappa in cfg["kappa"][model][ds]:
                    out.append({"dataset": ds, "split": split, "method": "idca", "model": model, "param": kappa})
                for kind in PAIRWISE:
                    for kappa in cfg["pairwise_kappa"][kind][model][ds]:
                        out.append({"dataset": ds, "split": split, "method": kind, "model": model, "param": kappa})
                for lam in cfg["penalty_lambda"][model][ds]:
                    out.append({"dataset": ds, "split": split, "method": "penalty", "model": model, "param": lam})
                if split == 0:
                    out.append({"dataset": ds, "split": 0, "method": "direct_ssg", "model": model,
                                "param": min(cfg["kappa"][model][ds])})
    cost = {"idca": 3, "penalty": 2, "direct_ssg": 2}
    size = {"law_school": 0, "bank": 1, "a9a": 2}
    out.sort(key=lambda t: (size[t["dataset"]], -cost.get(t["method"], 0)))  # stable: ties keep order
    return out


def task_name(task) -> str:
    param = "" if task["param"] is None else f"={task['param']:g}"
    model = "" if task["model"] is None else f"/{task['model']}"
    return f"{task['dataset']}/split{task['split']}/{task['method']}{model}{param}"


_DATA_CACHE = {}


def split_data(dataset, split, cfg, data_home=None, seed=0, download=None):
    """`SplitData`, cached per process (a worker runs many tasks of the same split)."""
    key = (dataset, split, seed, cfg["max_train_rows"], cfg["max_eval_rows"], str(data_home))
    if key not in _DATA_CACHE:
        _DATA_CACHE.clear()  # one split at a time per worker keeps memory flat
        _DATA_CACHE[key] = SplitData(dataset, split, cfg, data_home=data_home, seed=seed, download=download)
    return _DATA_CACHE[key]


def execute_task(task, cfg, data_home=None, seed=0, download=None) -> dict:
    """Run one task; the record (JSON-ready) of results.json's ``runs``."""
    import time

    t0 = time.perf_counter()
    data = split_data(task["dataset"], task["split"], cfg, data_home, seed, download)
    method, model, param, split = task["method"], task["model"], task["param"], task["split"]
    figure_run = split == 0 and model is not None and param == min(cfg["kappa"][model][task["dataset"]])
    if method == "unconstrained":
        record, x = unconstrained_record(data, cfg)
    elif method == "idca":
        record, x = run_idca(data, model, param, cfg, keep_history=figure_run)
    elif method in PAIRWISE:
        record, x = run_pairwise(data, model, method, param, cfg)
    elif method == "penalty":
        record, x = run_penalty(data, model, param, cfg)
    elif method == "direct_ssg":
        record, x = run_direct_ssg(data, model, param, cfg)
    else:
        raise ValueError(f"task: unknown method {method!r}")
    if split == 0 and (method == "unconstrained" or (method == "idca" and model == "pdp"
                                                     and param in cfg["figure2_kappa"][task["dataset"]])):
        record["ccdf"] = ccdf_curve(data, x)
    record.update({"dataset": task["dataset"], "split": split, "method": method, "model": model, "param": param,
                   "interval": list(cfg["interval"][task["dataset"]]), "n_train": int(data.parts["train"][1].size),
                   "seconds": time.perf_counter() - t0})
    return record


# ------------------------------------------------------------------------------------ driver hooks
#: Task fields that determine a record (the data folder and ``download`` change no number).
CHECKPOINT_FIELDS = ("dataset", "split", "method", "model", "param", "seed", "cfg")


def task_kinds(task) -> list:
    """Kinds for the time left (`._time_left`): a run costs about what runs of its method cost on its
    dataset (IDCA 200-600 s on a9a, a pairwise baseline 1-4 s)."""
    return [(task["dataset"], task["method"], task["model"]), (task["dataset"], task["method"]), (task["method"],)]


def record_seconds(record):
    """A loaded record's duration (`execute_task` stores it)."""
    return record.get("seconds")


def check_config(cfg):
    unknown = sorted(set(cfg["datasets"]) - set(DATASETS))
    if unknown:
        raise ValueError(f"datasets: unknown {unknown}; known: {list(DATASETS)}")
    if not isinstance(cfg["n_splits"], int) or cfg["n_splits"] < 1:
        raise ValueError(f"n_splits: must be a positive integer, got {cfg['n_splits']!r}")


def data_needed(cfg) -> list:
    out = []
    for ds in cfg["datasets"]:
        out += [("a9a", "train"), ("a9a", "test")] if ds == "a9a" else [(ds, "all")]
    return out


def tasks(session) -> list:
    cfg = session.cfg
    out = []
    for t in make_tasks(cfg):
        out.append({**t, "seed": session.seed, "cfg": cfg, "data_home": session.data_home,
                    "download": session.download})
    if session.checkpoints is not None:
        session.checkpoints.total = len(out)
    session.log(f"{len(out)} runs on {', '.join(cfg['datasets'])} ({cfg['n_splits']} split(s))")
    return out


def execute(task) -> dict:
    return execute_task(task, task["cfg"], task["data_home"], task["seed"], task["download"])


def on_done(session, task, record):
    m = record["metrics"]["test"]
    session.log(f"{task_name(task)}: {record['status']}, test accuracy {m['accuracy']:.4f}, pDP {m['pdp']:.3f}, "
                f"weak pDP {m['weak_pdp']:.3f} [{record['seconds']:.1f}s]")


#: What a run's ``max_violation`` measures, by method (training rows; 0 where the method has no constraint).
VIOLATION_OF = {"idca": "the ramp-surrogate constraints of model (13)/(17)",
                "direct_ssg": "the ramp-surrogate constraints of model (13)/(17)",
                "group_auc": "quadratic constraint (66)", "inter_group": "quadratic constraint (69)",
                "intra_group": "quadratic constraints (71)", "penalty": "none (penalty model (78)/(83))",
                "unconstrained": "none"}


def _run_entry(record):
    """A results.json run entry: the common schema plus this experiment's fields."""
    problem = {"pdp": "partial_dp", "weak_pdp": "weak_partial_dp", None: "logistic"}[record["model"]]
    history = record.get("history")
    entry = dict(record)
    entry.pop("seconds", None)
    entry.update({"problem": problem, "wall_time_s": record["seconds"], "initial_objective": math.log(2.0),
                  "objective": record["train_objective"], "max_violation": record["train_max_violation"],
                  "max_violation_of": VIOLATION_OF[record["method"]],
                  "stationarity": None, "data_passes_f": float(record["n_iter"]), "data_passes_g":
                  float(record["n_iter"]),
                  "history_csv": _history_name(record) if history else ""})
    return entry


def _history_name(record):
    return f"{record['dataset']}_{record['model']}_{record['method']}_kappa{record['param']:g}.csv"


def write(session, all_tasks, records) -> dict:
    import datetime as _dt

    from .._version import __version__
    from ._writer import pyplot, ruled_table, save_figure, write_csv, write_history_csv, write_results_json

    cfg, out = session.cfg, session.out
    runs = sorted(records, key=lambda r: (r["dataset"], str(r["model"]), r["method"],
                                          -1 if r["param"] is None else r["param"], r["split"]))
    entries = [_run_entry(r) for r in runs]
    points = frontier_points([r for r in runs if r["method"] != "direct_ssg"], cfg["n_splits"])
    check = frontier_check(points)
    facts = dataset_facts(session)
    for entry in entries:
        if entry["history_csv"]:
            h = entry["history"]
            x = h.get("inner_iterations", h.get("iteration"))
            write_history_csv(out / entry["history_csv"], {"iteration": np.asarray(x), "objective":
                                                           np.asarray(h["objective"]), "max_violation":
                                                           np.asarray(h["max_violation"])})
    columns = ["dataset", "model", "method", "param", "split", "status", "n_iter", "wall_time_s",
               "test_accuracy", "test_pdp", "test_weak_pdp", "validation_accuracy", "validation_pdp",
               "validation_weak_pdp", "objective", "max_violation", "max_violation_of", "params"]
    write_csv(out / "runs.csv", columns, [
        {**{k: e.get(k) for k in columns[:8]},
         **{f"{part}_{m}": e["metrics"][part][m] for part in ("test", "validation")
            for m in ("accuracy", "pdp", "weak_pdp")},
         "objective": e["objective"], "max_violation": e["max_violation"], "max_violation_of": e["max_violation_of"],
         "params": repr(e["params"])}
        for e in entries])
    fcols = ["dataset", "interval", "model", "method", "param", "n_splits", "complete", "fairness", "fairness_ci",
             "accuracy", "accuracy_ci"]
    write_csv(out / "frontier.csv", fcols,
              [{**{k: None if isinstance(v, float) and math.isnan(v) else v for k, v in p.items()},
                "interval": "[{:g}, {:g})".format(*cfg["interval"][p["dataset"]])} for p in points])
    figures = []
    plt = pyplot(required=False)
    if plt is not None:
        figures.append(save_figure(plot_frontiers(points, list(cfg["datasets"]), plt, facts),
                                   out / "figure1_frontiers.png", 110).name)
        figures.append(save_figure(plot_ccdf(runs, cfg, plt, facts), out / "figure2_ccdf.png", 110).name)
        figures.append(save_figure(plot_idca_vs_ssg(runs, cfg, plt), out / "figure9_10_idca_vs_ssg.png", 110).name)
    doc = {"experiment": NAME, "paper": PAPER, "quick": session.quick, "fastcon_version": __version__,
           "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), "seed": session.seed,
           "jobs": session.jobs, "config": cfg, "datasets": facts, "runs": entries, "frontier": points,
           "frontier_check": check,
           "figures": figures,
           "timing": {"runs_wall_time_s": session.runs_wall_time_s, "total_wall_time_s": session.elapsed(),
                      "cpu_time_s": float(sum(r["seconds"] for r in runs))}}
    write_results_json(doc, out)
    lines = [f"{c['dataset']:<11} {c['model']:<9} {c['baseline']:<12} {c['points']:>6} {c['matched']:>7} "
             f"{c['idca_at_or_above']:>8}  {'' if c['largest_baseline_lead'] is None else format(c['largest_baseline_lead'], '+.4f')}"
             for c in check]
    table = ruled_table(f"{TITLE}: is IDCA's frontier at or above each baseline point at matched test fairness?",
                        f"{'dataset':<11} {'row':<9} {'baseline':<12} {'points':>6} {'matched':>7} {'IDCA>=':>8}  "
                        f"largest baseline lead (accuracy)", lines,
                        footer=f"outputs in {out}: results.json, runs.csv, frontier.csv, summary.txt, "
                               f"{', '.join(figures)}")
    text = "\n".join([table] + [
        "{}: band [{:g}, {:g}) as the paper's §7; its §4 rule picks [{:g}, {:g}) on these data; majority class "
        "test accuracy {:.4f}".format(_DATASET_TITLE.get(dataset, dataset), *f["interval"], *f["rule_interval"],
                                     f["test_majority_accuracy"]) for dataset, f in facts.items()]
        + paper_claims(check, facts))
    print(text)
    (out / "summary.txt").write_text(text + "\n")
    return doc


def run(quick=False, out_dir=None, data_home=None, seed=0, jobs=1, verbose=True, download=None, resume=False,
        **overrides):
    """Run the reproduction (see the module docstring); returns the results.json dict."""
    import sys

    from ._runner import drive

    return drive(sys.modules[__name__], quick=quick, out_dir=out_dir, data_home=data_home, seed=seed, jobs=jobs,
                 verbose=verbose, resume=resume, download=download, **overrides)
