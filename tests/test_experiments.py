"""Paper experiments (`fastcon reproduce`): outputs, schema, figure, reproducibility, tuning rule.

The slowest file of the suite, kept lean: the real ``--quick`` ROC path runs once through the CLI;
reproducibility and the Wasserstein experiment use a smaller-than-quick configuration (overrides of
`run_experiment`): COMPAS/german only, few iterations, few stationarity points.
"""
import csv
import json
import math
import struct

import numpy as np
import pytest

from fastcon.cli import main
from fastcon.experiments import EXPERIMENTS, combine_figure, run_experiment, select_config, validate_results
from fastcon.experiments._tuning import METHODS, expand_grid
from fastcon.experiments._writer import RUN_SCHEMA, read_history_csv

TINY = dict(max_iter=60, inner_iter=20, record_points=30, n_stationarity=3, stationarity_iter=20)


def _png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def _check_outputs(out, doc, experiment, figure, datasets):
    on_disk = json.loads((out / "results.json").read_text())
    assert validate_results(on_disk) == []
    assert on_disk["experiment"] == experiment
    assert {(r["dataset"], r["method"]) for r in on_disk["runs"]} == {(d, m) for d in datasets for m in METHODS}
    for run in on_disk["runs"]:
        for key in RUN_SCHEMA:
            assert key in run
        assert run["n_iter"] > 0 and run["wall_time_s"] >= 0
        assert math.isfinite(run["objective"]) and math.isfinite(run["initial_objective"])
        assert run["stationarity"] is None or run["stationarity"] >= 0
        hist = read_history_csv(out / run["history_csv"])
        it = hist["iteration"]
        assert it.size >= 3 and np.all(np.diff(it) > 0), "history iterations must increase"
        assert it[0] == 0 and it[-1] == run["n_iter"]  # the last row is the final stationarity point
        assert np.isfinite(hist["objective"][:-1]).all()
        curve = run["stationarity_curve"]
        assert curve["iteration"] == sorted(curve["iteration"]) and curve["iteration"][-1] == run["n_iter"]
    with open(out / "summary.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(on_disk["runs"])
    assert {"meets_paper_claim", "objective", "initial_objective", "constraint"} <= set(rows[0])
    w, h = _png_size(out / figure)
    assert 600 <= w <= 4000 and 400 <= h <= 3000
    return on_disk


def _strip_times(obj):
    if isinstance(obj, dict):
        return {k: _strip_times(v) for k, v in obj.items() if "time" not in k and k not in ("created", "jobs")}
    if isinstance(obj, list):
        return [_strip_times(v) for v in obj]
    return obj


def test_registry_lists_both_experiments():
    assert {"ssg-roc", "ssg-wasserstein"} <= set(EXPERIMENTS)
    with pytest.raises(ValueError, match="unknown experiment"):
        run_experiment("nope", out_dir="unused")


@pytest.mark.datasets("a9a", "bank", "compas")
def test_quick_roc_through_cli(tmp_path, data_home, capsys):
    out = tmp_path / "roc"
    # two processes: the quick grids are 28 points per dataset (CI has two cores)
    assert main(["reproduce", "ssg-roc", "--quick", "--jobs", "2", "--out", str(out), "--data-home", str(data_home)]) == 0
    table = capsys.readouterr().out
    assert "ssg_static" in table and "meet the paper's claim" in table
    doc = _check_outputs(out, None, "ssg-roc", "figure1_roc.png", ("a9a", "bank", "compas"))
    assert doc["quick"] is True and doc["config"]["max_iter"] == 1000 and doc["config"]["grid"] == "quick"
    # Every pick passes the selection rule's filter, or the printed notes (and summary.txt) say why.
    summary = (out / "summary.txt").read_text()
    for r in doc["runs"]:
        assert r["feasible"] or f"note: {r['dataset']} {r['method']}: none of the" in summary
    assert summary.strip() in table
    # The tuned static SSG lowers the fairness objective below R(w_ERM) on at least one dataset.
    static = [r for r in doc["runs"] if r["method"] == "ssg_static"]
    assert any(r["objective"] < r["initial_objective"] for r in static)


def test_tiny_roc_is_reproducible_and_independent_of_jobs(tmp_path, data_home):
    kw = dict(data_home=data_home, seed=3, verbose=False, datasets=("compas",), **TINY)
    a = run_experiment("ssg-roc", quick=True, out_dir=tmp_path / "a", jobs=1, **kw)
    b = run_experiment("ssg-roc", quick=True, out_dir=tmp_path / "b", jobs=2, **kw)
    _check_outputs(tmp_path / "a", a, "ssg-roc", "figure1_roc.png", ("compas",))
    ja = json.loads((tmp_path / "a" / "results.json").read_text())
    jb = json.loads((tmp_path / "b" / "results.json").read_text())
    assert _strip_times(ja) == _strip_times(jb)
    for run in ja["runs"]:  # the history CSVs agree too (except the time column)
        ha, hb = read_history_csv(tmp_path / "a" / run["history_csv"]), read_history_csv(tmp_path / "b" / run["history_csv"])
        assert set(ha) == set(hb)
        for col in ha:
            if col != "time":
                np.testing.assert_array_equal(ha[col], hb[col])


def test_tiny_wasserstein_and_combined_figure(tmp_path, data_home):
    out = tmp_path / "w"
    doc = run_experiment("ssg-wasserstein", quick=True, out_dir=out, data_home=data_home, verbose=False,
                         datasets=("german",), **TINY)
    _check_outputs(out, doc, "ssg-wasserstein", "figure1_wasserstein.png", ("german",))
    assert doc["datasets"]["german"]["m"] >= 2
    # Same seed, same numbers, also in two processes (longest grid points first, each re-run started
    # as soon as its method's grid is complete).
    again = run_experiment("ssg-wasserstein", quick=True, out_dir=tmp_path / "w2", data_home=data_home, verbose=False,
                           datasets=("german",), jobs=2, **TINY)
    assert _strip_times(json.loads((out / "results.json").read_text())) == \
        _strip_times(json.loads((tmp_path / "w2" / "results.json").read_text()))
    # A ROC folder next to it gives the combined figure, one column per (problem, dataset).
    run_experiment("ssg-roc", quick=True, out_dir=tmp_path / "r", data_home=data_home, verbose=False,
                   datasets=("compas",), **TINY)
    png = combine_figure([tmp_path / "r", out, tmp_path / "missing"], tmp_path / "figure1.png")
    w2, _ = _png_size(png)
    w1, _ = _png_size(out / "figure1_wasserstein.png")
    assert w2 > w1


# ------------------------------------------------------------------------------- tuning rule
def _rec(objective, constraint, eps=1e-5):
    return {"objective": objective, "constraint": constraint, "epsilon_final": eps}


def test_select_config_prefers_smallest_feasible_objective():
    kappa = 1e-3  # floor 1e-4 * kappa = 1e-7 < eps
    records = [
        _rec(0.10, 2e-5),             # best objective but infeasible (g > eps)
        _rec(0.20, -1e-4),            # feasible
        _rec(0.15, 1e-5),             # feasible (g == eps): the answer
        _rec(0.15, 0.0),              # tie on objective: the first in grid order wins
        _rec(float("nan"), -1.0),     # NaN objective never wins
    ]
    assert select_config(records, kappa) == (2, "min_objective_feasible")
    # With the slack factor 2, the run at g = 2 eps counts as feasible and wins.
    assert select_config(records, kappa, factor=2.0) == (0, "min_objective_feasible")


def test_select_config_uses_kappa_floor_and_falls_back_to_least_violation():
    # epsilon 0 (e.g. a method without tolerance): the 1e-4 kappa floor decides feasibility.
    assert select_config([_rec(0.3, 5e-8, 0.0), _rec(0.1, 2e-7, 0.0)], kappa=1e-3) == (0, "min_objective_feasible")
    # Nothing feasible: least violation, ties broken by the objective.
    records = [_rec(0.1, 3e-3), _rec(0.4, 1e-3), _rec(0.2, 1e-3), _rec(0.0, float("nan"))]
    assert select_config(records, kappa=1e-3) == (2, "least_violation")
    with pytest.raises(ValueError):
        select_config([], kappa=1.0)


def test_expand_grid_paper_and_middle():
    grid = {"a": [1, 2, 3], "b": [10, 20, 30]}
    assert len(expand_grid(grid)) == 9 and expand_grid(grid)[1] == {"a": 1, "b": 20}
    assert expand_grid(grid, "middle") == [{"a": 2, "b": 20}]
    with pytest.raises(ValueError):
        expand_grid(grid, "nope")


def test_stationarity_rerun_follows_its_grid_run(data_home):
    """The tracker measures on its own problem: the re-run's trajectory is the grid run's, bit for bit."""
    from fastcon.experiments import _tuning, ssg_wasserstein as S
    from fastcon.experiments._runner import apply_overrides

    cfg = apply_overrides(S.config(True), TINY)
    bundle = S.build("german", S.build_options(cfg), str(data_home), 0)
    for method, params in [("ssg_static", {"switching_level": 1e-5, "step_size": 0.015}),
                           ("ipp_conex", {"rho_hat_factor": 5e-4, "c1": 200.0, "c2": 0.01})]:
        task = {"module": S.__name__, "builder": S.build, "dataset": "german", "build": S.build_options(cfg), "data_home": str(data_home),
                "seed": 0, "erm": bundle["erm"], "method": method, "params": params, "grid_index": 0, "run_seed": 7,
                "run": S.run_options(cfg), "stationarity": None}
        _tuning.register_bundle(task, bundle)
        grid = _tuning.execute_task(task)
        rerun = _tuning.execute_task(dict(task, stationarity={"n_points": 3, "max_iter": 20, "tol": 1e-6}))
        assert len(rerun["stationarity_curve"]["value"]) == 4
        assert rerun["objective"] == grid["objective"] and rerun["constraint"] == grid["constraint"]
        assert rerun["history"]["objective"] == grid["history"]["objective"]
