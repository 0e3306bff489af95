r"""Huang & Lin [HL23] (SSG), Figure 1 columns 1-3: ROC-based fairness on a9a, bank and COMPAS.

Problem (12) of [HL23] §6.1 (see docs/references.md):

.. math::

    \min_{\|w\| \le r} R(w) = \max_{\theta \in \Theta}\Big|\frac1{n_p}\sum_i \sigma(w^\top a^p_i - \theta)
      - \frac1{n_u}\sum_i \sigma(w^\top a^u_i - \theta)\Big|
    \quad\text{s.t.}\quad L(w) \le L^* + \kappa .

**Data** ([HL23] §6.1, Table 1). Each dataset (all rows: a9a = a9a + a9a.t, 48,842 x 123; bank =
bank-additional-full, 41,188 rows; COMPAS = ProPublica's two-year file, 6,172 rows after the
recipe's filters — the paper's 11,757-row file is not the one the project has) is split 2:1 at random
with ``seed`` (`Dataset.split`). The larger part :math:`\mathcal D` defines the hinge constraint;
the smaller part, split by group, gives :math:`\mathcal D_p` (group id 1: a9a female, bank age
outside [25, 60], COMPAS non-Caucasian) and :math:`\mathcal D_u` (group id 0). :math:`R` is symmetric
in p and u.

**Problem constants.** :math:`(L^*, w_{ERM})` from the exact dual LP (`erm_optimum`) on
:math:`\mathcal D`, :math:`\kappa = 10^{-3}L^*`, ball radius :math:`5\|w_{ERM}\|`, :math:`x_0 = w_{ERM}`;
:math:`\Theta` = 400 equally spaced thresholds spanning twice the range of the ERM scores on
:math:`\mathcal D` (`threshold_grid`).

**Methods and grids** ([HL23] §6.1, ``GRIDS``): static SSG, diminishing SSG, ConEx (multiplicative
steps, :math:`\eta_t = c_1/\sqrt{t+1}`, constant dual step :math:`c_2`, :math:`\theta_t = 1`), IPP-SSG
and IPP-ConEx (100 inner iterations; IPP-ConEx in [BDL22]'s prox-weight notation, converted by
`prox_weights_to_steps`); :math:`\hat\rho = \max(\rho, 1) \times \{1, 1.5, 2\}` with the paper's
heuristic :math:`\rho = \frac1n\sum_{i\in\mathcal D}\|a_i\|`. T = 5000 total iterations (IPP: 50
outer x 100 inner). Deterministic oracles throughout. Tuning: `fastcon.experiments._tuning`.

**Near stationarity** ([HL23] §6.1 solves (4) by SSG at 100 equally spaced iterations and gives
neither :math:`\hat\rho` nor the budget). One :math:`\hat\rho = 2\max(\rho, 1)` per dataset for every
method (the largest IPP value, which exceeds the weak-convexity bound of :math:`R`,
`ROCFairness.weak_convexity_bound`, on all three datasets), strong-convexity modulus
:math:`\mu = \hat\rho - \rho_{bound}` for the subproblem solver (`near_stationarity`), measured at
101 equally spaced iterations (0, T/100, ..., T) of the selected configuration with at most 500
subproblem iterations (stopping earlier when the a-posteriori change is below 1e-6).

**Quick mode** (``--quick``) changes exactly: the grids (``QUICK_GRIDS``: two values per parameter,
a sub-grid of the paper's, with the same selection rule, so the quick table tells the full run's
story in miniature); T = 1000 (IPP: 10 x 100); a9a and bank subsampled (seeded, before the split)
to 8,000 rows; history every 5 iterations; near stationarity at 11 points with at most 50
subproblem iterations. The quick grids keep the larger half of each step/tolerance list (static
and IPP-SSG :math:`\epsilon \in \{10^{-5}, 2\cdot10^{-5}\}`,
:math:`\eta \in \{10^{-3}, 2\cdot10^{-3}\}`;
diminishing :math:`E_1 \in \{0.02, 0.05\}`, :math:`E_2 \in \{2, 5\}\cdot10^{-4}`; ConEx :math:`c_1
\in \{0.02, 0.05\}`, :math:`c_2 \in \{50, 100\}`; IPP-ConEx :math:`c_1 \in \{50, 100\}`, :math:`c_2
\in \{0.005, 0.01\}`) and the ends of the :math:`\hat\rho` list: at T = 1000 the smallest steps have
barely moved from :math:`w_{ERM}`. On bank (8,000 rows) no ConEx point of the paper's grid is
feasible by T = 2000 (the least violation, :math:`c_1 = 0.05, c_2 = 100`, :math:`g =
1.6\cdot10^{-4}` at 1000 and :math:`9.9\cdot10^{-5}` at 2000), so the quick bank ConEx pick stays
flagged and the output's notes say why (`fastcon.experiments._hl23.selection_notes`).
"""
from __future__ import annotations

import sys

import numpy as np
import scipy.sparse as sp

from ..datasets import load
from ..problems import erm_optimum, hinge_constrained_problem, roc_fairness
from ._hl23 import follow_up, on_done, tasks, write  # noqa: F401 (the driver's hooks)
from ._runner import drive
from ._tuning import CHECKPOINT_FIELDS  # noqa: F401 (the task fields that make up a checkpoint's key)
from ._tuning import execute_task as execute  # noqa: F401 (the driver's hook)

NAME = "ssg-roc"
PROBLEM = "roc_fairness"
FIGURE = "figure1_roc.png"
TITLE = "Huang & Lin [HL23], Figure 1 (ROC fairness)"
PAPER = ("Huang & Lin [HL23], Single-Loop Switching Subgradient Methods for Non-Smooth Weakly Convex Optimization "
         "with Non-Smooth Convex Constraints (arXiv:2301.13314), Figure 1 columns 1-3")
#: The grid runs are checkpointed (`run_experiment(..., resume=True)`, ``--resume``).
RESUMABLE = True
DATASETS = ("a9a", "bank", "compas")

_EPS = [5e-6, 1e-5, 2e-5]
_ETA = [5e-4, 1e-3, 2e-3]
_RHO = [1.0, 1.5, 2.0]
#: [HL23] §6.1 grids (ROC), in the notation of `fastcon.experiments._tuning.solve_method`.
GRIDS = {
    "ssg_static": {"switching_level": _EPS, "step_size": _ETA},
    "ssg_diminishing": {"E1": [0.01, 0.02, 0.05], "E2": [1e-4, 2e-4, 5e-4]},
    "conex": {"c1": [0.01, 0.02, 0.05], "c2": [20.0, 50.0, 100.0]},
    "ipp_ssg": {"rho_hat_factor": _RHO, "switching_level": _EPS, "step_size": _ETA},
    "ipp_conex": {"rho_hat_factor": _RHO, "c1": [20.0, 50.0, 100.0], "c2": [0.005, 0.01, 0.02]},
}
_EPS_Q, _ETA_Q, _RHO_Q = [1e-5, 2e-5], [1e-3, 2e-3], [1.0, 2.0]
#: The ``--quick`` grids (module docstring): sub-grids of ``GRIDS``, tuned by the same rule.
QUICK_GRIDS = {
    "ssg_static": {"switching_level": _EPS_Q, "step_size": _ETA_Q},
    "ssg_diminishing": {"E1": [0.02, 0.05], "E2": [2e-4, 5e-4]},
    "conex": {"c1": [0.02, 0.05], "c2": [50.0, 100.0]},
    "ipp_ssg": {"rho_hat_factor": _RHO_Q, "switching_level": _EPS_Q, "step_size": _ETA_Q},
    "ipp_conex": {"rho_hat_factor": _RHO_Q, "c1": [50.0, 100.0], "c2": [0.005, 0.01]},
}


def config(quick=False) -> dict:
    """The run configuration (full or quick); `run_experiment` overrides accept these keys."""
    cfg = {"datasets": DATASETS, "methods": tuple(GRIDS), "grid": "paper", "max_iter": 5000, "inner_iter": 100,
           "record_points": 500, "max_rows": None, "n_thresholds": 400, "n_stationarity": 100,
           "stationarity_iter": 500, "stationarity_tol": 1e-6, "kappa_rel": 1e-3, "radius_factor": 5.0, "feasibility_factor": 2.0}
    if quick:
        cfg.update(grid="quick", max_iter=1000, record_points=200, max_rows=8000, n_stationarity=10,
                   stationarity_iter=50)
    return cfg


def _record_every(max_iter, inner_iter, points):
    """Largest divisor of ``inner_iter`` not above ``max_iter / points`` (IPP rows then align with outer steps)."""
    target = max(1, int(max_iter) // max(1, int(points)))
    return max(d for d in range(1, int(inner_iter) + 1) if inner_iter % d == 0 and d <= target)


def run_options(cfg) -> dict:
    return {"max_iter": int(cfg["max_iter"]), "inner_iter": int(cfg["inner_iter"]),
            "record_every": _record_every(cfg["max_iter"], cfg["inner_iter"], cfg["record_points"]),
            "conex_dual": "constant", "ipp_conex_primal": "linear", "oracle": None}


def build_options(cfg) -> dict:
    return {k: cfg[k] for k in ("max_rows", "n_thresholds", "kappa_rel", "radius_factor")}


def _row_norm_mean(X):
    if sp.issparse(X):
        return float(np.mean(np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())))
    return float(np.mean(np.linalg.norm(X, axis=1)))


def load_split(dataset, data_home, seed, max_rows=None, download=True):
    """All rows of ``dataset`` (optionally a seeded subsample of ``max_rows``), split 2:1: ``(D, D_p, D_u, n_all)``.

    ``download`` is passed to `fastcon.datasets.load` (False: a missing file is an error).
    """
    ds = load(dataset, data_home=data_home, subset="all", download=download)
    n_all = ds.n_samples
    if max_rows is not None and ds.n_samples > int(max_rows):
        rng = np.random.default_rng(np.random.SeedSequence([int(seed), 7919]))
        ds = ds.subset(np.sort(rng.choice(ds.n_samples, int(max_rows), replace=False)))
    D, small = ds.split((2 / 3, 1 / 3), seed=seed)
    if small.groups is None or small.n_groups != 2:
        raise ValueError(f"{dataset}: the objective part needs two sensitive groups, has {small.n_groups}")
    p, u = small.subset(small.groups == 1), small.subset(small.groups == 0)
    return D, p, u, n_all, small.group_names


def build(dataset, options, data_home=None, seed=0, erm=None, download=True) -> dict:
    """The ROC-fairness problem of one dataset: ``{"problem", "erm", "meta"}`` (meta is JSON-able)."""
    D, p, u, n_all, names = load_split(dataset, data_home, seed, options.get("max_rows"), download=download)
    if erm is None:
        erm = erm_optimum(D)
    scores = np.asarray(D.X @ erm.w).ravel()
    objective = roc_fairness(p, u, int(options["n_thresholds"]), erm_scores=scores)
    problem = hinge_constrained_problem(objective, D, relative_bound=options["kappa_rel"],
                                        radius_factor=options["radius_factor"], erm=erm,
                                        name=f"roc_fairness({dataset})")
    rho = _row_norm_mean(D.X)
    rho_bound = objective.weak_convexity_bound()
    rho_hat = 2.0 * max(rho, 1.0)
    mu = rho_hat - rho_bound if rho_hat > rho_bound else 0.5 * rho_hat
    meta = {
        "n_rows": int(n_all), "n_used": int(D.n_samples + p.n_samples + u.n_samples), "n_constraint": int(D.n_samples),
        "n_p": int(p.n_samples), "n_u": int(u.n_samples), "n_features": int(D.n_features),
        "group_p": names[1], "group_u": names[0], "L_star": float(problem.info["L_star"]),
        "kappa": float(problem.info["bound"]), "radius": float(problem.info["radius"]),
        "norm_w_erm": float(np.linalg.norm(erm.w)), "erm_status": erm.status,
        "initial_objective": float(problem.f(problem.x0)), "initial_constraint": float(problem.g(problem.x0)[0]),
        "rho_heuristic": rho, "rho_ipp_base": max(rho, 1.0), "weak_convexity_bound": rho_bound,
        "stationarity_rho_hat": rho_hat, "stationarity_mu": mu, "n_thresholds": int(options["n_thresholds"]),
    }
    return {"problem": problem, "erm": erm, "meta": meta}


def data_needed(cfg) -> list:
    """``(dataset, subset)`` pairs the configuration ``cfg`` loads (checked before computing)."""
    return [(d, "all") for d in cfg["datasets"]]


def run(quick=False, out_dir=None, data_home=None, seed=0, jobs=1, verbose=True, download=True, **overrides):
    """Run the experiment (see the module docstring); returns the results.json dict.

    ``download`` is passed to `fastcon.datasets.load`; the other arguments are those of
    `fastcon.experiments.run_experiment`.
    """
    return drive(sys.modules[__name__], quick=quick, out_dir=out_dir, data_home=data_home, seed=seed, jobs=jobs,
                 verbose=verbose, download=download, **overrides)
