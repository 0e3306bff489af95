"""The driver hooks shared by the Huang & Lin [HL23] Figure 1 experiments (`ssg_roc`, `ssg_wasserstein`).

An experiment module of this family defines ``NAME``, ``PROBLEM``, ``PAPER``, ``FIGURE``, ``TITLE``,
``GRIDS`` (optionally ``QUICK_GRIDS``, the sub-grids of ``grid="quick"``), ``config(quick)``,
``data_needed(cfg)``, ``build(dataset, options, data_home, seed, erm, download)``,
``build_options(cfg)``, ``run_options(cfg)`` and optionally ``relative_cost(meta, method)`` and
``paper_claims(doc)`` (lines stating whether the paper's claims hold on the results); it takes
``tasks``, ``on_done``, ``follow_up`` and ``write`` from here and ``execute`` from
`fastcon.experiments._tuning`. The run (`fastcon.experiments._runner.drive`):

1. ``tasks`` builds each dataset's problem once in the parent and makes one task per grid point
   of every method, longest first when the module defines ``relative_cost`` (so that the last to
   finish are short ones);
2. ``follow_up`` applies the tuning rule (`fastcon.experiments._tuning.select_config`) as soon
   as a method's grid is complete and returns the winner's re-run with the near-stationarity
   tracker, which the runner starts before the waiting grid points;
3. ``write`` writes results.json, the CSVs (`fastcon.experiments._report`) and the figure
   (`fastcon.experiments._figure`), prints the table followed by the notes (`selection_notes`: why a
   pick is infeasible; ``paper_claims``) and writes both to ``summary.txt``.

Every grid point and re-run is checkpointed (``RESUMABLE``): the key fields are
`fastcon.experiments._tuning.CHECKPOINT_FIELDS`.
"""
from __future__ import annotations

import time

from ._figure import plot_figure
from ._report import build_results, format_table, write_outputs
from ._tuning import METHODS, expand_grid, feasibility_threshold, method_seed, register_bundle, select_config
from ._writer import write_results_json

__all__ = ["tasks", "on_done", "follow_up", "write", "method_grids", "selection_notes"]


def _fmt_params(params):
    return ", ".join(f"{k}={v:g}" if isinstance(v, (int, float)) else f"{k}={v}" for k, v in params.items())


def method_grids(spec, mode, methods) -> dict:
    """Grid points of every method in ``methods``: ``mode`` ``"paper"``/``"middle"`` read ``spec.GRIDS``
    (`fastcon.experiments._tuning.expand_grid`), ``"quick"`` the full product of ``spec.QUICK_GRIDS``."""
    if mode == "quick":
        quick = getattr(spec, "QUICK_GRIDS", None)
        if quick is None:
            raise ValueError(f"grid: {spec.NAME} has no quick grids; expected 'paper' or 'middle'")
        return {m: expand_grid(quick[m], "paper") for m in spec.GRIDS if m in methods}
    return {m: expand_grid(g, mode) for m, g in spec.GRIDS.items() if m in methods}


def selection_notes(doc) -> list:
    """One line per selected run that is not feasible: why (no grid point passed the filter within T)."""
    T = doc["config"]["run"]["max_iter"]
    factor = doc["config"].get("feasibility_factor", 1.0)
    lines = []
    for r in doc["runs"]:
        if r["feasible"]:
            continue
        thr = feasibility_threshold(r["epsilon"], r["kappa"], factor)
        lines.append(f"note: {r['dataset']} {r['method']}: none of the {r['grid_size']} grid points ended with "
                     f"g <= {thr:.2g} within T = {T} iterations; the pick is the least violation "
                     f"(g = {r['constraint']:.2e}, {_fmt_params(r['params'])}).")
    return lines


def tasks(session) -> list:
    """Build every dataset's problem (in this process) and return the grid tasks."""
    spec, cfg, st = session.spec, session.cfg, session.state
    run_cfg = spec.run_options(cfg)
    grids = method_grids(spec, cfg["grid"], cfg["methods"])
    session.log(f"{'quick' if session.quick else 'full'} run: datasets {', '.join(cfg['datasets'])}; "
                f"T = {run_cfg['max_iter']}; {sum(len(g) for g in grids.values())} configurations per dataset; "
                f"jobs = {session.jobs}; output {session.out}")
    datasets_meta, grid_tasks = {}, []
    for di, name in enumerate(cfg["datasets"]):
        t0 = time.perf_counter()
        bundle = spec.build(name, spec.build_options(cfg), session.data_home, session.seed, download=session.download)
        meta = bundle["meta"]
        datasets_meta[name] = meta
        session.log(f"{name}: problem built in {time.perf_counter() - t0:.1f} s (L* = {meta['L_star']:.5g}, "
                    f"kappa = {meta['kappa']:.3g}, f(x0) = {meta['initial_objective']:.5g})")
        for method, points in grids.items():
            for gi, params in enumerate(points):
                task = {"module": spec.__name__, "builder": spec.build, "dataset": name, "build": spec.build_options(cfg),
                        "data_home": session.data_home, "download": session.download, "seed": session.seed,
                        "erm": bundle["erm"], "method": method, "params": params, "grid_index": gi,
                        "run_seed": method_seed(session.seed, di, method), "run": run_cfg, "stationarity": None}
                register_bundle(task, bundle)
                grid_tasks.append(task)
    n_rerun = len(cfg["datasets"]) * len(grids) if cfg["n_stationarity"] > 0 else 0
    if session.checkpoints is not None:
        session.checkpoints.total = len(grid_tasks) + n_rerun
    group_tasks = {}
    for task in grid_tasks:
        group_tasks.setdefault((task["dataset"], task["method"]), []).append(task)
    st.update(run_cfg=run_cfg, grids=grids, datasets_meta=datasets_meta, n_grid=len(grid_tasks), n_rerun=n_rerun,
              group_tasks=group_tasks, group_records={}, selection={}, curves={})
    cost = getattr(spec, "relative_cost", None)
    if cost is not None:
        order = {name: i for i, name in enumerate(cfg["datasets"])}
        grid_tasks.sort(key=lambda t: (-cost(datasets_meta[t["dataset"]], t["method"]), order[t["dataset"]],
                                       METHODS.index(t["method"]), t["grid_index"]))
    return grid_tasks


def on_done(session, task, rec) -> None:
    """One progress line per finished run (resumed runs are counted by `follow_up`, not logged)."""
    st = session.state
    if task.get("stationarity"):
        curve = rec["stationarity_curve"]["value"]
        session.log(f"stationarity {len(st['curves']) + 1}/{st['n_rerun']} {rec['dataset']} {rec['method']}: "
                    f"{len(curve)} points, final {curve[-1] if curve else float('nan'):.3g} "
                    f"({rec['stationarity_time_s']:.1f} s)")
    else:
        done = sum(len(group) for group in st["group_records"].values()) + 1
        session.log(f"{done}/{st['n_grid']} {rec['dataset']} {rec['method']} ({_fmt_params(rec['params'])}): "
                    f"f = {rec['objective']:.5g}, g = {rec['constraint']:.3g}, {rec['wall_time_s']:.1f} s")


def follow_up(session, task, rec) -> list:
    """Selection as soon as a (dataset, method) grid is complete, then its winner's stationarity re-run."""
    st, cfg = session.state, session.cfg
    key = (task["dataset"], task["method"])
    if task.get("stationarity"):
        st["curves"][key] = rec
        return []
    group = st["group_records"].setdefault(key, [])
    group.append(rec)
    if len(group) < len(st["group_tasks"][key]):
        return []
    group.sort(key=lambda r: r["grid_index"])  # ties go to the first in grid order
    idx, reason = select_config(group, st["datasets_meta"][key[0]]["kappa"], cfg["feasibility_factor"])
    st["selection"][key] = (group, idx, reason)
    if cfg["n_stationarity"] <= 0:
        return []
    winner = next(t for t in st["group_tasks"][key] if t["grid_index"] == group[idx]["grid_index"])
    return [dict(winner, stationarity={"n_points": cfg["n_stationarity"], "max_iter": cfg["stationarity_iter"],
                                       "tol": cfg["stationarity_tol"]})]


def write(session, all_tasks, records) -> dict:
    """results.json, summary.csv, the history CSVs and the figure; prints the table; returns the doc."""
    spec, cfg, st, out = session.spec, session.cfg, session.state, session.out
    loaded = session.checkpoints.loaded if session.checkpoints is not None else 0
    if loaded:
        session.log(f"resumed {loaded} of {st['n_grid'] + st['n_rerun']} runs from {session.checkpoints.folder}")
    selected = [(name, method) + st["selection"][(name, method)] for name in cfg["datasets"] for method in st["grids"]]
    doc = build_results(spec, cfg, st["run_cfg"], quick=session.quick, seed=session.seed, jobs=session.jobs,
                        datasets_meta=st["datasets_meta"], selected=selected, reruns=st["curves"])
    # With resumed runs the wall times cover this invocation only; each run's own time is in its record.
    doc["timing"] = {"runs_wall_time_s": session.runs_wall_time_s, "total_wall_time_s": session.elapsed(),
                     "resumed_runs": loaded}
    write_outputs(doc, out, {(n, m): group[idx] for n, m, group, idx, _ in selected})
    plot_figure([out], out / spec.FIGURE, title=spec.TITLE)  # reads the results.json just written
    doc["timing"]["total_wall_time_s"] = session.elapsed()
    write_results_json(doc, out)
    claims = getattr(spec, "paper_claims", None)
    notes = selection_notes(doc) + (claims(doc) if claims is not None else [])
    text = "\n".join([format_table(doc)] + notes)
    (out / "summary.txt").write_text(text + "\n")
    if session.verbose:
        print(text, flush=True)
    session.log(f"wrote {out / 'results.json'}, {out / 'summary.csv'}, summary.txt, {out / spec.FIGURE} "
                f"in {doc['timing']['total_wall_time_s']:.1f} s")
    return doc
