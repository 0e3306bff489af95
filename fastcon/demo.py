r"""``fastcon demo``: a fairness-constrained linear classifier on synthetic data, end to end.

The problem is the ROC-fairness problem (12) of Huang & Lin [HL23] §6.1 (see docs/references.md) on
data where the unconstrained classifier is unfair by construction (`make_fair_classification`, a
group-dependent score shift):

.. math::

    \min_{\|w\| \le r} R(w) \quad\text{s.t.}\quad L(w) \le L^* + \kappa,

with :math:`R` the smoothed ROC gap between the groups (eq. 11), :math:`L` the hinge risk and
:math:`L^*` its exact minimum (an LP). The paper uses :math:`\kappa = 10^{-3} L^*`; the demo allows
:math:`\kappa = 0.05 L^*` so the accuracy/fairness trade-off is visible. It is solved with the
switching subgradient method (Algorithm 1), and the before/after table compares ERM with the
constrained solution on held-out data.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from .datasets import make_fair_classification
from .metrics import accuracy, demographic_parity_gap, roc_gap, smoothed_roc_gap
from .problems import erm_optimum, hinge_constrained_problem, hinge_risk, roc_fairness_from_dataset
from .solvers import switching_subgradient

__all__ = ["run_demo"]


def _evaluate(w, data, thresholds):
    scores = data.X @ w
    return {
        "hinge_risk": hinge_risk(data).value(w),
        "accuracy": accuracy(scores, data.y),
        "smoothed_roc_gap": smoothed_roc_gap(scores, data.groups, thresholds),
        "roc_gap": roc_gap(scores, data.groups),
        "dp_gap": demographic_parity_gap(scores, data.groups),
    }


def run_demo(out_dir="fastcon-results/demo", seed=0, n_samples=20_000, max_iter=2000, kappa_rel=0.1, step_size=0.1,
             verbose=True) -> dict:
    """Run the demo; write ``table.csv``, ``results.json``, ``history.csv`` and ``demo.png``.

    Returns the dict written to ``results.json`` (before/after metrics on train and test). The
    output folder is created and checked writable first (ValueError naming ``out_dir`` if not),
    so nothing is computed for outputs that could not be saved.
    """
    from .experiments._writer import writable_folder

    t0 = time.perf_counter()
    out = Path(out_dir)
    try:
        writable_folder(out)
    except OSError as exc:
        raise ValueError(f"out_dir: cannot write to {out}: {exc.strerror or exc}") from exc
    say = print if verbose else (lambda *a, **k: None)
    data = make_fair_classification(n_samples=n_samples, n_features=20, shift=1.5, seed=seed)
    train, test = data.split((0.75, 0.25), seed=seed)
    # [HL23]'s 2:1 split of the training part: constraint data D, objective data by group.
    constraint_data, objective_data = train.split((2 / 3, 1 / 3), seed=seed + 1)
    say(f"data: {data.n_samples} rows x {data.n_features} features, groups "
        f"{dict(zip(data.group_names, np.bincount(data.groups).tolist()))}")

    erm = erm_optimum(constraint_data)
    objective = roc_fairness_from_dataset(objective_data, erm.w)
    problem = hinge_constrained_problem(objective, constraint_data, kappa_rel=kappa_rel, erm=erm)
    L_star, kappa = problem.info["L_star"], problem.info["kappa"]
    say(f"ERM (exact LP): L* = {L_star:.4f}; constraint L(w) <= L* + {kappa:.4f}; "
        f"ball radius {problem.info['radius']:.2f}")

    # Static SSG (Algorithm 1): eta and eps on the scale of the paper's grids for unit-scale data.
    result = switching_subgradient(problem, max_iter=max_iter, step_size=step_size, tolerance=1e-3 * kappa,
                                   output="best", record_every=max(max_iter // 300, 1), seed=seed,
                                   verbose="lines" if verbose else False)
    thresholds = objective.thresholds
    rows = []
    for split_name, part in (("train", train), ("test", test)):
        for model, w in (("ERM", erm.w), ("fastcon SSG", result.x)):
            rows.append({"data": split_name, "model": model, **_evaluate(w, part, thresholds)})
    g_erm, g_out = problem.g(erm.w)[0], problem.g(result.x)[0]

    header = ["data", "model", "hinge_risk", "accuracy", "smoothed_roc_gap", "roc_gap", "dp_gap"]
    with open(out / "table.csv", "w") as fh:
        fh.write(",".join(header) + "\n")
        for r in rows:
            fh.write(",".join(str(r[h]) for h in header) + "\n")
    say("")
    say(f"solver: {result.status}, {result.n_iter} iterations; constraint g(w) = L(w) - L* - kappa on D: "
        f"ERM {g_erm:.2e}, fastcon {g_out:.2e} (feasible iff <= 0)")
    say(f"{'data':<6} {'model':<12} {'hinge L':>8} {'accuracy':>9} {'ROC gap (smooth)':>17} {'ROC gap':>8} {'DP gap':>7}")
    for r in rows:
        say(f"{r['data']:<6} {r['model']:<12} {r['hinge_risk']:8.4f} {r['accuracy']:9.4f} "
            f"{r['smoothed_roc_gap']:17.4f} {r['roc_gap']:8.4f} {r['dp_gap']:7.4f}")

    result.history_csv(out / "history.csv")
    summary = {"seed": seed, "n_samples": n_samples, "L_star": L_star, "kappa": kappa,
               "constraint_g": {"ERM": g_erm, "fastcon SSG": g_out},
               "solver": result.to_dict(include_x=True, include_history=False), "table": rows,
               "wall_time_s": time.perf_counter() - t0}
    (out / "results.json").write_text(json.dumps(summary, indent=1, default=float))
    try:
        _plot(out / "demo.png", result, erm.w, test, thresholds)
        say(f"\nwrote {out / 'demo.png'}, {out / 'table.csv'}, {out / 'results.json'}, {out / 'history.csv'}")
    except ImportError as exc:  # matplotlib is optional: the tables are still written
        say(f"\n(no plot: {exc})\nwrote {out / 'table.csv'}, {out / 'results.json'}, {out / 'history.csv'}")
    say(f"done in {summary['wall_time_s']:.1f} s")
    return summary


def _plot(path, result, w_erm, test, thresholds):
    from ._results import _pyplot

    plt = _pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    result.plot(keys=("objective", "constraint"), axes=axes[:2], label="SSG (static)")
    axes[0].set_ylabel("ROC-fairness objective R(w)")
    axes[1].set_ylabel("constraint g(w) = L(w) - L* - kappa")
    axes[1].axhline(0.0, color="k", lw=0.8)
    # The paper's "ROC curve": positive rate of group u against group p as the threshold sweeps.
    ax = axes[2]
    grid = np.linspace(thresholds.min(), thresholds.max(), 400)
    for w, label in ((w_erm, "ERM"), (result.x, "fastcon SSG")):
        s = test.X @ w
        rates = [(np.mean(s[test.groups == 1] >= t), np.mean(s[test.groups == 0] >= t)) for t in grid]
        p, u = np.array(rates).T
        ax.plot(u, p, label=label)
    ax.plot([0, 1], [0, 1], "k:", lw=0.8)
    ax.set_xlabel(f"positive rate, group {test.group_names[0]}")
    ax.set_ylabel(f"positive rate, group {test.group_names[1]}")
    ax.set_title("threshold sweep on test data (diagonal = fair)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
