r"""The results of the Huang & Lin [HL23] experiments: their ``results.json`` entries, ``summary.csv``
and the printed table, on the common helpers of `fastcon.experiments._writer`.

``results.json`` (the common schema, `fastcon.experiments._writer.RUN_SCHEMA`) holds one run entry
per (dataset, method): the configuration selected by the tuning rule
(`fastcon.experiments._tuning.select_config`) with its final values, plus extra keys:

* ``constraint``: the raw final :math:`g(x_T)` (``max_violation`` is :math:`[g(x_T)]_+`);
* ``epsilon``: :math:`\epsilon_{final}` of the feasibility filter, ``feasible`` whether the run
  passed it, ``selection`` the rule's reason;
* ``meets_paper_claim``: :math:`f(x_T) < f(x_0)` (the objective went below its value at
  :math:`w_{ERM}`) **and** :math:`g(x_T) \le` ``CLAIM_FACTOR`` :math:`\cdot\max(\epsilon,
  10^{-4}\kappa)` (a testable reading of the claim of Huang & Lin [HL23] §6.1 that the methods reduce the
  objective "while keeping the solutions nearly feasible");
* ``stationarity_curve`` (iterations and values of :math:`\|\hat x_{\hat\rho}(x_t) - x_t\|`),
  ``stationarity`` its value at the last iterate; ``stationarity_rho_hat`` the fixed
  :math:`\hat\rho`;
* ``tuning``: every grid point's params, final objective and constraint, feasibility, wall time.
"""
from __future__ import annotations

import datetime as _dt
from pathlib import Path

import numpy as np

from .._results import _jsonable
from .._version import __version__
from ._tuning import METHODS, feasibility_threshold
from ._writer import history_csv_name, ruled_table, write_csv, write_history_csv, write_results_json

__all__ = ["build_results", "write_outputs", "format_table", "summary_rows",
           "CLAIM_FACTOR", "SUMMARY_COLUMNS"]

#: "A small multiple of epsilon" in the paper-claim check.
CLAIM_FACTOR = 10.0


def _claim(objective, initial, constraint, epsilon, kappa):
    if not (np.isfinite(objective) and np.isfinite(constraint)):
        return False
    return bool(objective < initial and constraint <= CLAIM_FACTOR * feasibility_threshold(epsilon, kappa))


def build_results(spec, cfg, run_cfg, *, quick, seed, jobs, datasets_meta, selected, reruns):
    """The results.json dict (times included; see the module docstring for the extra keys)."""
    runs = []
    for name, method, group, idx, reason in selected:
        rec, meta = group[idx], datasets_meta[name]
        rerun = reruns.get((name, method))
        curve = rerun["stationarity_curve"] if rerun is not None else None
        stationarity = float(curve["value"][-1]) if curve and curve["value"] else None
        factor = cfg.get("feasibility_factor", 1.0)
        feasible = rec["constraint"] <= feasibility_threshold(rec["epsilon_final"], meta["kappa"], factor)
        runs.append({
            "dataset": name, "problem": spec.PROBLEM, "method": method, "params": rec["params"],
            "status": rec["status"], "n_iter": rec["n_iter"], "wall_time_s": rec["wall_time_s"],
            "initial_objective": meta["initial_objective"], "objective": rec["objective"],
            "max_violation": rec["max_violation"], "stationarity": stationarity,
            "data_passes_f": rec["data_passes_f"], "data_passes_g": rec["data_passes_g"],
            "history_csv": history_csv_name(name, spec.PROBLEM, method),
            "constraint": rec["constraint"], "epsilon": rec["epsilon_final"], "kappa": meta["kappa"],
            "feasible": bool(feasible), "selection": reason,
            "meets_paper_claim": _claim(rec["objective"], meta["initial_objective"], rec["constraint"],
                                        rec["epsilon_final"], meta["kappa"]),
            "stationarity_rho_hat": meta["stationarity_rho_hat"], "stationarity_curve": curve,
            "seed": rec["run_seed"], "message": rec["message"], "grid_size": len(group),
            "tuning": [{"params": r["params"], "objective": r["objective"], "constraint": r["constraint"],
                        "feasible": bool(r["constraint"] <= feasibility_threshold(r["epsilon_final"], meta["kappa"], factor)),
                        "status": r["status"], "wall_time_s": r["wall_time_s"]} for r in group],
        })
    order = {m: i for i, m in enumerate(METHODS)}
    dorder = {d: i for i, d in enumerate(cfg["datasets"])}
    runs.sort(key=lambda r: (dorder[r["dataset"]], order[r["method"]]))
    doc = {
        "experiment": spec.NAME, "quick": bool(quick), "fastcon_version": __version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "runs": runs, "seed": int(seed), "jobs": int(jobs), "paper": spec.PAPER, "problem": spec.PROBLEM,
        "config": {**cfg, "run": run_cfg}, "datasets": datasets_meta, "selection_rule": spec_selection_text(cfg.get("feasibility_factor", 1.0)),
        "claim_rule": f"objective < initial_objective and constraint <= {CLAIM_FACTOR:g} * max(epsilon, 1e-4 kappa)",
    }
    return _jsonable(doc)


def spec_selection_text(factor=1.0):
    return (f"per (dataset, method): among grid points with final g <= {factor:g} * max(epsilon_final, 1e-4 kappa) the smallest "
            "final objective; if none, the least final g. epsilon_final: SSG static / IPP-SSG tolerance, "
            "diminishing E1/sqrt(T), ConEx / IPP-ConEx 1e-5")


SUMMARY_COLUMNS = ["dataset", "method", "params", "initial_objective", "objective", "constraint", "epsilon",
                   "stationarity", "wall_time_s", "n_iter", "status", "feasible", "selection", "meets_paper_claim"]


def _params_text(params):
    return " ".join(f"{k}={v:g}" if isinstance(v, (int, float)) else f"{k}={v}" for k, v in params.items())


def summary_rows(doc) -> list:
    return [{c: (_params_text(r["params"]) if c == "params" else r.get(c)) for c in SUMMARY_COLUMNS} for r in doc["runs"]]


def write_outputs(doc, out_dir, winners):
    """History CSVs (one per run), ``summary.csv`` and ``results.json`` into ``out_dir``.

    ``winners`` maps (dataset, method) to the selected grid point's record (its history).
    """
    out = Path(out_dir)
    for run in doc["runs"]:
        rec = winners[(run["dataset"], run["method"])]
        write_history_csv(out / run["history_csv"], rec["history"], run.get("stationarity_curve"))
    write_csv(out / "summary.csv", SUMMARY_COLUMNS, summary_rows(doc))
    write_results_json(doc, out)


def format_table(doc) -> str:
    """The printed table: dataset, method, selected params, f(x0) -> f(x_T), g(x_T), epsilon, stationarity, time."""
    def g(v, fmt):
        return "-" if v is None else format(v, fmt)

    head = (f"{'dataset':<8} {'method':<16} {'selected params':<38} {'f(w_ERM) -> f(x_T)':>20} {'g(x_T)':>10} "
            f"{'eps':>8} {'stat.':>8} {'time s':>7} claim")
    lines = []
    for r in doc["runs"]:
        params = _params_text(r["params"])
        lines.append(f"{r['dataset']:<8} {r['method']:<16} {params[:38]:<38} "
                     f"{r['initial_objective']:>8.5f} -> {r['objective']:>8.5f} {g(r['constraint'], '10.2e')} "
                     f"{g(r['epsilon'], '8.1e')} {g(r['stationarity'], '8.2e')} {r['wall_time_s']:>7.1f} "
                     f"{'yes' if r['meets_paper_claim'] else 'NO'}{'' if r['feasible'] else ' (infeasible pick)'}")
    n_ok = sum(r["meets_paper_claim"] for r in doc["runs"])
    return ruled_table(f"{doc['experiment']} ({'quick' if doc['quick'] else 'full'}; seed {doc.get('seed')})", head,
                       lines, f"{n_ok}/{len(doc['runs'])} runs meet the paper's claim ({doc.get('claim_rule', '')})")
