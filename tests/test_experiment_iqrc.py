"""`fastcon reproduce iqrc-mnpc --quick` end to end (Ma, Lin & Yang [MLY20] Figure 1) through the CLI.

One quick run (about 30 s) is shared by the tests of this module; the helpers of the experiment
module (time to target, level, claim, subsampling) are checked on small hand-made inputs.
"""
import contextlib
import csv
import io
import json

import numpy as np
import pytest

from fastcon.cli import main
from fastcon.experiments import EXPERIMENTS, validate_results
from fastcon.experiments import iqrc_mnpc as E

DATASETS = ("pendigits", "segment", "usps")
METHODS = ("iqrc_outer", "iqrc_inner", "exact_penalty")


def _read_csv(path):
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    return rows


def _column(rows, name):
    return np.array([float(r[name]) if r[name] != "" else np.nan for r in rows])


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory, data_home):
    out = tmp_path_factory.mktemp("iqrc_quick")
    capture = {}
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(["reproduce", "iqrc-mnpc", "--quick", "--out", str(out), "--data-home", str(data_home)])
    capture["code"], capture["stdout"] = code, buffer.getvalue()
    doc = json.loads((out / "results.json").read_text())
    return out, doc, capture


def test_registered():
    assert EXPERIMENTS["iqrc-mnpc"].module == "iqrc_mnpc"
    assert "[MLY20]" in EXPERIMENTS["iqrc-mnpc"].description


@pytest.mark.datasets("pendigits", "segment", "usps")
def test_quick_results_schema_and_files(quick_run):
    out, doc, capture = quick_run
    assert capture["code"] == 0
    assert validate_results(doc) == [] and doc["quick"] is True and doc["experiment"] == "iqrc-mnpc"
    runs = doc["runs"]
    assert [(r["dataset"], r["method"]) for r in runs] == [(d, m) for d in DATASETS for m in METHODS]
    for r in runs:
        assert r["problem"] == "mnpc" and r["stationarity"] is None
        assert r["n_iter"] >= 1 and r["wall_time_s"] > 0 and r["data_passes_g"] > 0
        rows = _read_csv(out / r["history_csv"])
        assert len(rows) >= 3
        # the CSV's last row is the run's final point
        assert _column(rows, "objective")[-1] == pytest.approx(r["objective"], rel=1e-12, abs=1e-15)
        assert _column(rows, "max_violation")[-1] == pytest.approx(r["max_violation"], rel=1e-12, abs=1e-15)
        times = _column(rows, "time")
        assert times[0] >= 0.0 and np.all(np.diff(times) >= 0), r["history_csv"]  # one clock from the start
        if r["method"] != "iqrc_inner":
            assert times[0] == 0.0  # x_0 at time 0
    # paper settings kept in quick mode: lambda = 0.1, r_k = (C-1)/2, rho_hat = 1, tolerance 1e-3 (eps_hat reading)
    meta = doc["datasets"]
    assert {d: meta[d]["r"] for d in DATASETS} == {"pendigits": 4.5, "segment": 3.0, "usps": 4.5}
    assert all(meta[d]["radius"] == 0.1 and meta[d]["initial_constraint"] == 0.0 for d in DATASETS)
    assert all(meta[d]["initial_objective"] == meta[d]["r"] for d in DATASETS)  # L_p(0) = (C-1)/2
    assert all(meta[d]["n"] <= 2002 for d in DATASETS)  # quick: subsampled to ~2,000 rows
    iq = next(r for r in runs if r["method"] == "iqrc_outer")
    assert iq["params"]["rho_hat"] == 1.0 and iq["params"]["switching_level"] == 1e-3
    assert iq["params"]["switching_threshold"] == pytest.approx(1e-6)
    assert iq["params"]["inner_iter"] == 2000 and iq["n_iter"] == 2
    for name in ("figure1_iqrc.png", "summary.csv", "summary.txt"):
        assert (out / name).stat().st_size > 0
    assert (out / "figure1_iqrc.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.datasets("pendigits", "segment", "usps")
def test_quick_iqrc_outer_iterates_feasible_in_domain_and_decreasing(quick_run):
    out, doc, _ = quick_run
    for r in doc["runs"]:
        if r["method"] != "iqrc_outer":
            continue
        rows = _read_csv(out / r["history_csv"])
        constraint, objective = _column(rows, "constraint"), _column(rows, "objective")
        norms = _column(rows, "max_row_norm")
        assert len(rows) == r["n_iter"] + 1  # x_0 .. x_T
        threshold = r["params"]["switching_threshold"]
        assert np.all(constraint <= threshold), (r["dataset"], constraint)
        assert np.all(norms <= 0.1 * (1 + 1e-12)), (r["dataset"], norms)
        assert objective[0] == r["initial_objective"]
        assert r["objective"] < r["initial_objective"] and np.all(objective[1:] < objective[0]), r["dataset"]
        assert r["all_outer_feasible"] and r["all_outer_in_domain"] and r["objective_decreased"]
        assert doc["iqrc_claim"][r["dataset"]]["claim"] is True


@pytest.mark.datasets("pendigits", "segment", "usps")
def test_quick_summary_table_printed_and_saved(quick_run):
    out, doc, capture = quick_run
    printed = capture["stdout"]
    assert "level L" in printed and "t(L) s" in printed
    for d in DATASETS:
        for m in METHODS:
            assert any(line.startswith(d) and m in line for line in printed.splitlines()), (d, m)
    assert "IQRC below f(x0) with every outer iterate" in printed
    rows = _read_csv(out / "summary.csv")
    assert [(r["dataset"], r["method"]) for r in rows] == [(d, m) for d in DATASETS for m in METHODS]
    for d in DATASETS:
        mine = {r["method"]: r for r in rows if r["dataset"] == d}
        finals = {m: (float(mine[m]["objective"]), float(mine[m]["infeasibility"]))
                  for m in ("iqrc_outer", "exact_penalty")}
        level = E.target_level(finals, 1e-3)
        assert float(mine["iqrc_outer"]["target_level"]) == level
        # both compared methods end feasible here, so both reach the level (the worse one at its end)
        for m in ("iqrc_outer", "exact_penalty"):
            assert mine[m]["time_to_target_s"] != ""
            assert float(mine[m]["time_to_target_s"]) <= float(mine[m]["time_s"]) + 1e-12
        assert mine["iqrc_outer"]["iqrc_claim"] == "yes"
        # the verdict on the paper's claim is the comparison of the two times to L
        t_iqrc, t_ep = (float(mine[m]["time_to_target_s"]) for m in ("iqrc_outer", "exact_penalty"))
        verdict = doc["paper_claim"]["datasets"][d]
        assert mine["iqrc_outer"]["paper_claim_holds"] == ("yes" if t_iqrc < t_ep else "no")
        assert verdict["holds"] is (t_iqrc < t_ep) and verdict["level"] == level
        assert verdict["time_to_level_iqrc"] == pytest.approx(t_iqrc)
        assert mine["exact_penalty"]["paper_claim_holds"] == ""
    holds = [d for d in DATASETS if doc["paper_claim"]["datasets"][d]["holds"]]
    assert doc["paper_claim"]["holds"] is (len(holds) == 3)
    # the summary states the verdict plainly, with both times to L per dataset
    text = (out / "summary.txt").read_text()
    assert doc["paper_claim"]["verdict"] in text and doc["paper_claim"]["verdict"] in printed
    assert text.count("Verdict: [MLY20]'s claim") == 1
    assert ("does NOT hold on our data" in doc["paper_claim"]["verdict"]) is (len(holds) < 3)
    for d in DATASETS:
        line = next(line for line in text.splitlines() if line.startswith(f"  {d}: "))
        assert "time to L" in line and "IQRC" in line and "exact penalty" in line
        assert line.split(";")[0].endswith("does NOT hold") is (d not in holds)


def test_time_to_target_and_level():
    curve = {"time": np.array([0.0, 1.0, 2.0, 3.0]), "objective": np.array([4.0, 2.0, 1.0, 0.5]),
             "max_violation": np.array([0.0, 0.5, 0.0, 0.0])}
    assert E.time_to_target(curve, 2.0, 1e-3) == 2.0  # t = 1 reaches 2.0 but is infeasible
    assert E.time_to_target(curve, 0.1, 1e-3) is None
    assert E.time_to_target(curve, None, 1e-3) is None
    assert E.target_level({"a": (1.0, 0.0), "b": (2.0, 1e-4)}, 1e-3) == 2.0
    assert E.target_level({"a": (1.0, 0.0), "b": (0.5, 1e-2)}, 1e-3) == 1.0  # b ends infeasible
    assert E.target_level({"a": (1.0, 1.0)}, 1e-3) is None


def test_paper_claim_verdict():
    iq = {"time": np.array([0.0, 2.0, 4.0]), "objective": np.array([3.0, 1.0, 0.5]),
          "max_violation": np.array([0.0, 0.0, 0.0])}
    fast = {"time": np.array([0.0, 0.1, 0.2]), "objective": np.array([3.0, 0.4, 0.2]),
            "max_violation": np.array([0.0, 1e-9, 2e-5])}
    c = E.paper_claim(iq, fast, 0.5, 1e-3)  # the baseline reaches L = 0.5 at 0.1 s, IQRC at 4 s
    assert c["holds"] is False and c["time_to_level_iqrc"] == 4.0 and c["time_to_level_exact_penalty"] == 0.1
    assert c["ratio"] == pytest.approx(40.0) and c["max_infeasibility_exact_penalty"] == 2e-5
    assert c["final_objective_iqrc"] == 0.5 and c["final_objective_exact_penalty"] == 0.2
    slow = dict(fast, time=np.array([0.0, 5.0, 6.0]))
    assert E.paper_claim(iq, slow, 0.5, 1e-3)["holds"] is True  # IQRC first
    infeasible = dict(fast, max_violation=np.array([0.0, 0.1, 0.06]))
    c = E.paper_claim(iq, infeasible, 0.5, 1e-3)  # the baseline never gets within the tolerance
    assert c["holds"] is True and c["time_to_level_exact_penalty"] is None and c["ratio"] is None
    assert E.paper_claim(iq, fast, None, 1e-3)["holds"] is False
    lines = E.verdict_lines({"a": E.paper_claim(iq, fast, 0.5, 1e-3), "b": E.paper_claim(iq, slow, 0.5, 1e-3)})
    assert lines[0].startswith("Verdict: [MLY20]'s claim")
    assert "does NOT hold on our data: it holds on 1 of 2" in lines[0]
    assert lines[1].startswith("  a: does NOT hold; time to L = 0.5: IQRC 4 s, exact penalty 0.1 s; IQRC 40x")
    assert lines[2].startswith("  b: holds;")
    assert "holds on all 1 datasets run" in E.verdict_lines({"b": E.paper_claim(iq, slow, 0.5, 1e-3)})[0]


def test_iqrc_claim_detects_violations():
    outer = {"objective": np.array([3.0, 2.0, 1.5]), "constraint": np.array([0.0, -0.1, -0.2]),
             "max_row_norm": np.array([0.0, 0.1, 0.1])}
    assert E.iqrc_claim(outer, 3.0, 1e-6, 0.1)["claim"] is True
    bad_g = dict(outer, constraint=np.array([0.0, 2e-6, -0.2]))
    assert E.iqrc_claim(bad_g, 3.0, 1e-6, 0.1)["all_outer_feasible"] is False
    bad_x = dict(outer, max_row_norm=np.array([0.0, 0.1 + 1e-9, 0.1]))
    assert E.iqrc_claim(bad_x, 3.0, 1e-6, 0.1)["all_outer_in_domain"] is False
    up = dict(outer, objective=np.array([3.0, 2.0, 3.5]))
    assert E.iqrc_claim(up, 3.0, 1e-6, 0.1)["claim"] is False


def test_stratified_rows_keeps_every_class():
    y = np.repeat(np.arange(5), [100, 50, 10, 3, 1000])
    rows = E.stratified_rows(y, 200, seed=3)
    assert np.all(np.diff(rows) > 0) and abs(rows.size - 200) <= 5
    assert set(np.unique(y[rows])) == set(range(5))
    assert np.array_equal(rows, E.stratified_rows(y, 200, seed=3))
    assert np.array_equal(E.stratified_rows(y, None, seed=0), np.arange(y.size))


def test_bad_overrides(tmp_path):
    with pytest.raises(ValueError, match="unknown configuration"):
        E.run(quick=True, out_dir=tmp_path, verbose=False, not_a_key=1)
    with pytest.raises(ValueError, match="level_reading"):
        E.run(quick=True, out_dir=tmp_path, verbose=False, level_reading="eps")
    with pytest.raises(ValueError, match="datasets"):
        E.run(quick=True, out_dir=tmp_path, verbose=False, datasets=("a9a",))
