"""[HL23] experiments: the quick grids select feasible picks by the full run's rule; the notes and
the Wasserstein claim check that the output prints (issue 18 items 2 and 3)."""
import math

import pytest

from fastcon.experiments import _tuning, ssg_roc, ssg_wasserstein
from fastcon.experiments._hl23 import method_grids, selection_notes
from fastcon.experiments._runner import apply_overrides
from fastcon.experiments._tuning import METHODS, feasibility_threshold, select_config


def test_quick_grids_are_small_subgrids_of_the_paper_grids():
    for method in METHODS:
        quick, paper = ssg_roc.QUICK_GRIDS[method], ssg_roc.GRIDS[method]
        assert set(quick) == set(paper), method
        for name, values in quick.items():
            assert 2 <= len(values) <= 3 and set(values) <= set(paper[name]), (method, name)
    grids = method_grids(ssg_roc, "quick", METHODS)
    assert [len(grids[m]) for m in METHODS] == [4, 4, 4, 8, 8]
    assert method_grids(ssg_roc, "middle", ("conex",)) == {"conex": [{"c1": 0.02, "c2": 50.0}]}
    with pytest.raises(ValueError, match="^grid: ssg-wasserstein has no quick grids"):
        method_grids(ssg_wasserstein, "quick", METHODS)


@pytest.mark.datasets("compas")
def test_quick_roc_picks_are_feasible_on_compas(data_home):
    """The quick configuration's grids on COMPAS: every method's pick passes the full run's filter.

    The old quick mode (one middle point, T = 300) picked ConEx at g = 1.2e-3, 58x the threshold.
    """
    cfg = ssg_roc.config(quick=True)
    assert cfg["grid"] == "quick"
    run = ssg_roc.run_options(cfg)
    bundle = ssg_roc.build("compas", ssg_roc.build_options(cfg), str(data_home), 0)
    kappa = bundle["meta"]["kappa"]
    for method, points in method_grids(ssg_roc, cfg["grid"], METHODS).items():
        records = []
        for gi, params in enumerate(points):
            task = {"module": ssg_roc.__name__, "builder": ssg_roc.build, "dataset": "compas",
                    "build": ssg_roc.build_options(cfg), "data_home": str(data_home), "seed": 0,
                    "erm": bundle["erm"], "method": method, "params": params, "grid_index": gi,
                    "run_seed": _tuning.method_seed(0, 2, method), "run": run, "stationarity": None}
            _tuning.register_bundle(task, bundle)
            records.append(_tuning.execute_task(task))
        idx, reason = select_config(records, kappa, cfg["feasibility_factor"])
        pick = records[idx]
        threshold = feasibility_threshold(pick["epsilon_final"], kappa, cfg["feasibility_factor"])
        assert reason == "min_objective_feasible" and pick["constraint"] <= threshold, (method, pick["constraint"])
        assert pick["objective"] < bundle["meta"]["initial_objective"], method


def _run(dataset, method, params, objective, constraint, feasible, epsilon=1e-5, kappa=1e-3):
    return {"dataset": dataset, "method": method, "params": params, "objective": objective,
            "constraint": constraint, "feasible": feasible, "epsilon": epsilon, "kappa": kappa, "grid_size": 4}


def test_selection_notes_explain_infeasible_picks_only():
    doc = {"config": {"feasibility_factor": 2.0, "run": {"max_iter": 1000}},
           "runs": [_run("bank", "conex", {"c1": 0.05, "c2": 100.0}, 0.169, 1.56e-4, False),
                    _run("bank", "ssg_static", {"switching_level": 2e-5, "step_size": 2e-3}, 0.184, 2.2e-5, True)]}
    notes = selection_notes(doc)
    assert notes == ["note: bank conex: none of the 4 grid points ended with g <= 2e-05 within T = 1000 "
                     "iterations; the pick is the least violation (g = 1.56e-04, c1=0.05, c2=100)."]


def _wdoc(static_f, static_ok, dim_f, dim_ok=True):
    meta = {"initial_objective": 1.3842, "w1_at_w_erm": 0.2025, "m": 111}
    return {"datasets": {"german": meta},
            "runs": [_run("german", "ssg_static", {"switching_level": 1e-5, "step_size": 0.01}, static_f, 0.0, static_ok),
                     _run("german", "ssg_diminishing", {"E1": 0.05, "E2": 5e-4}, dim_f, 0.0, dim_ok)]}


def test_wasserstein_claim_line_states_the_outcome_with_numbers():
    (lost,) = ssg_wasserstein.paper_claims(_wdoc(1.2297, True, 0.3210))
    assert lost.startswith("paper claim 'static SSG beats diminishing SSG' on german: does NOT hold")
    assert "static 1.23, diminishing 0.321" in lost and "W1(w_ERM) = 0.2025" in lost
    # eta * H(x0) * m^2 = 0.01 * 1.3842 * 111^2 = 170.5
    assert f"about {0.01 * 1.3842 * 111 ** 2:.0f}x its initial size" in lost and "about 171x" in lost
    (won,) = ssg_wasserstein.paper_claims(_wdoc(0.30, True, 0.3210))
    assert ": holds (" in won and "x its initial size" not in won
    # An infeasible static pick cannot support the claim, whatever its objective; an infeasible
    # diminishing pick loses to a feasible static one.
    assert "does NOT hold" in ssg_wasserstein.paper_claims(_wdoc(0.10, False, 0.3210))[0]
    assert ": holds (" in ssg_wasserstein.paper_claims(_wdoc(1.2, True, 0.3210, dim_ok=False))[0]
    assert math.isclose(0.01 * 1.3842 * 111 ** 2, 170.55, rel_tol=1e-3)


def test_tiny_wasserstein_writes_the_claim_into_summary_txt(tmp_path, data_home):
    out = tmp_path / "w"
    cfg = apply_overrides(ssg_wasserstein.config(True), dict(datasets=("german",), max_iter=40, inner_iter=20,
                                                              record_points=20, n_stationarity=0))
    from fastcon.experiments import run_experiment
    doc = run_experiment("ssg-wasserstein", quick=True, out_dir=out, data_home=data_home, verbose=False,
                         methods=("ssg_static", "ssg_diminishing"),
                         **{k: cfg[k] for k in ("datasets", "max_iter", "inner_iter", "record_points", "n_stationarity")})
    text = (out / "summary.txt").read_text()
    assert "paper claim 'static SSG beats diminishing SSG' on german: " in text
    st = next(r for r in doc["runs"] if r["method"] == "ssg_static")
    assert f"static {st['objective']:.4g}" in text
