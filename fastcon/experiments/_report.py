r"""Outputs of a paper experiment: ``results.json`` (one schema for every experiment), history CSVs,
``summary.csv`` and the printed table.

``results.json`` holds one run entry per (dataset, method): the configuration selected by the
tuning rule (`fastcon.experiments._tuning.select_config`) with its final values, plus extra keys:

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

Keys holding wall-clock times contain ``time`` in their name (``wall_time_s``, ``timing``), so two
runs with the same seed can be compared on everything else.
"""
from __future__ import annotations

import csv
import datetime as _dt
import errno
import json
import math
import os
import tempfile
from pathlib import Path

import numpy as np

from .._results import _jsonable
from .._version import __version__
from ._tuning import METHODS, feasibility_threshold

__all__ = ["build_results", "output_folder", "writable_folder", "write_outputs", "write_results_json", "format_table",
           "validate_results", "summary_rows", "CLAIM_FACTOR", "RUN_SCHEMA", "TOP_SCHEMA"]

#: "A small multiple of epsilon" in the paper-claim check.
CLAIM_FACTOR = 10.0

_NUM = (int, float)
#: Required top-level keys of results.json and their types (the same for every experiment, so results compare
#: across experiments and fastcon versions).
TOP_SCHEMA = {"experiment": str, "quick": bool, "fastcon_version": str, "created": str, "runs": list}
#: Required keys of a run entry; ``None`` allowed where the tuple contains ``type(None)``.
RUN_SCHEMA = {
    "dataset": str, "problem": str, "method": str, "params": dict, "status": str, "n_iter": int,
    "wall_time_s": _NUM, "initial_objective": _NUM, "objective": _NUM, "max_violation": _NUM,
    "stationarity": _NUM + (type(None),), "data_passes_f": _NUM, "data_passes_g": _NUM, "history_csv": str,
}


def apply_overrides(cfg, overrides) -> dict:
    """``cfg`` updated with ``overrides`` (ValueError naming any key the configuration does not have)."""
    unknown = set(overrides) - set(cfg)
    if unknown:
        raise ValueError(f"overrides: unknown configuration keys {sorted(unknown)}; known: {sorted(cfg)}")
    cfg.update(overrides)
    return cfg


def writable_folder(path) -> Path:
    """``path`` as a folder that can be written: created if needed, then a probe file written and deleted.

    Checked before an experiment computes anything, so that an unwritable output folder fails at
    once rather than after hours of runs.

    Raises
    ------
    OSError
        The folder cannot be created (a parent is a file, no permission, read-only file system),
        is not a folder, or a file cannot be written in it.
    """
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "exists and is not a folder", str(folder))
    folder.mkdir(parents=True, exist_ok=True)
    fd, probe = tempfile.mkstemp(dir=folder, prefix=".fastcon-write-test-")
    try:
        os.write(fd, b"fastcon")
    finally:
        os.close(fd)
        os.unlink(probe)
    return folder


def output_folder(name, quick, out_dir=None) -> Path:
    """``out_dir`` or ``fastcon-results/NAME[-quick]``, created and checked writable (`writable_folder`).

    Raises ValueError naming ``out_dir`` when the folder cannot be written.
    """
    out = Path(out_dir if out_dir is not None else f"fastcon-results/{name}{'-quick' if quick else ''}")
    try:
        return writable_folder(out)
    except OSError as exc:
        raise ValueError(f"out_dir: cannot write to {out}: {exc.strerror or exc}") from exc


def validate_results(doc) -> list:
    """Problems of a results.json dict against ``TOP_SCHEMA`` and ``RUN_SCHEMA`` (empty list: valid)."""
    errors = []
    for key, typ in TOP_SCHEMA.items():
        if key not in doc:
            errors.append(f"missing top-level key {key!r}")
        elif not isinstance(doc[key], typ) or (typ is not bool and isinstance(doc[key], bool)):
            errors.append(f"{key!r}: expected {typ}, got {type(doc[key]).__name__}")
    for i, run in enumerate(doc.get("runs", []) or []):
        if not isinstance(run, dict):
            errors.append(f"runs[{i}]: not an object")
            continue
        for key, typ in RUN_SCHEMA.items():
            if key not in run:
                errors.append(f"runs[{i}]: missing key {key!r}")
            elif isinstance(run[key], bool) or not isinstance(run[key], typ):
                errors.append(f"runs[{i}].{key}: expected {typ}, got {type(run[key]).__name__}")
    return errors


def history_csv_name(dataset, problem, method):
    return f"{dataset}_{problem}_{method}.csv"


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


def write_history_csv(path, history, curve=None):
    """History columns in recording order plus ``stationarity`` (empty where not measured).

    Rows are the recorded iterations; a stationarity iteration that the history did not record (the
    final :math:`x_T`) gets its own row with only ``iteration`` and ``stationarity``.
    """
    first = ["iteration", "time", "objective", "constraint", "max_violation"]
    # Canonical order (IPP histories come with their columns in set order, which varies by process).
    columns = [c for c in first if c in history] + sorted(c for c in history if c not in first and c != "stationarity")
    rows = {int(it): i for i, it in enumerate(history.get("iteration", []))}
    stat = {} if not curve else dict(zip(curve["iteration"], curve["value"]))
    iters = sorted(set(rows) | set(stat))

    def cell(v):
        if v is None:
            return ""
        if isinstance(v, float) and not math.isfinite(v):
            return "" if math.isnan(v) else repr(v)
        return v

    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(columns + ["stationarity"])
        for it in iters:
            i = rows.get(it)
            vals = [cell(history[c][i]) if i is not None else "" for c in columns]
            if i is None:
                vals[columns.index("iteration")] = it
            w.writerow(vals + [cell(stat.get(it))])


def read_history_csv(path) -> dict:
    """Columns of a history CSV as float arrays (non-numeric columns, e.g. ``step_kind``, as strings)."""
    with open(path, newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        cols = [[] for _ in header]
        for row in reader:
            for c, v in zip(cols, row):
                c.append(v)
    out = {}
    for name, values in zip(header, cols):
        try:
            out[name] = np.array([float(v) if v != "" else np.nan for v in values])
        except ValueError:
            out[name] = np.array(values)
    return out


SUMMARY_COLUMNS = ["dataset", "method", "params", "initial_objective", "objective", "constraint", "epsilon",
                   "stationarity", "wall_time_s", "n_iter", "status", "feasible", "selection", "meets_paper_claim"]


def _params_text(params):
    return " ".join(f"{k}={v:g}" if isinstance(v, (int, float)) else f"{k}={v}" for k, v in params.items())


def summary_rows(doc) -> list:
    return [{c: (_params_text(r["params"]) if c == "params" else r.get(c)) for c in SUMMARY_COLUMNS} for r in doc["runs"]]


def write_outputs(doc, out_dir, winners, reruns):
    """History CSVs (one per run), summary.csv and results.json into ``out_dir``."""
    out = Path(out_dir)
    for run in doc["runs"]:
        rec = winners[(run["dataset"], run["method"])]
        write_history_csv(out / run["history_csv"], rec["history"], run.get("stationarity_curve"))
    with open(out / "summary.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=SUMMARY_COLUMNS)
        w.writeheader()
        for row in summary_rows(doc):
            w.writerow({k: ("" if v is None else v) for k, v in row.items()})
    write_results_json(doc, out)


def write_results_json(doc, out_dir):
    errors = validate_results(doc)
    if errors:  # a bug of this module, never a user error
        raise RuntimeError("results.json does not match the schema: " + "; ".join(errors))
    Path(out_dir, "results.json").write_text(json.dumps(_jsonable(doc), indent=1))


def format_table(doc) -> str:
    """The printed table: dataset, method, selected params, f(x0) -> f(x_T), g(x_T), epsilon, stationarity, time."""
    def g(v, fmt):
        return "-" if v is None else format(v, fmt)

    head = (f"{'dataset':<8} {'method':<16} {'selected params':<38} {'f(w_ERM) -> f(x_T)':>20} {'g(x_T)':>10} "
            f"{'eps':>8} {'stat.':>8} {'time s':>7} claim")
    lines = [f"{doc['experiment']} ({'quick' if doc['quick'] else 'full'}; seed {doc.get('seed')})", head, "-" * len(head)]
    for r in doc["runs"]:
        params = _params_text(r["params"])
        lines.append(f"{r['dataset']:<8} {r['method']:<16} {params[:38]:<38} "
                     f"{r['initial_objective']:>8.5f} -> {r['objective']:>8.5f} {g(r['constraint'], '10.2e')} "
                     f"{g(r['epsilon'], '8.1e')} {g(r['stationarity'], '8.2e')} {r['wall_time_s']:>7.1f} "
                     f"{'yes' if r['meets_paper_claim'] else 'NO'}{'' if r['feasible'] else ' (infeasible pick)'}")
    n_ok = sum(r["meets_paper_claim"] for r in doc["runs"])
    lines.append(f"{n_ok}/{len(doc['runs'])} runs meet the paper's claim ({doc.get('claim_rule', '')})")
    return "\n".join(lines)
