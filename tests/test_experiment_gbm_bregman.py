"""`fastcon reproduce gbm-bregman` (Lin & Deng [LD23]) on tiny sizes, its metrics, draws and COMPAS loader."""
import itertools
import json

import numpy as np
import pytest

pytest.importorskip("xgboost")
pytest.importorskip("lightgbm")

from fastcon.experiments import EXPERIMENTS, run_experiment, validate_results
from fastcon.experiments import gbm_bregman as E

FIG3 = dict(E.CONFIG["figure3"], alpha_max=(0.05,), outer=2, inner=3, rounds=2)
#: one dataset per task type (binary NP, binary fairness with FairGBM), one draw, tiny sizes
TINY = dict(datasets=("a9a", "adult"), n_draws=1, max_train_rows=400, max_test_rows=300, np_iter=(4, 6),
            fair_outer=(2, 3), fair_inner=(2, 4), rounds=(2, 3), figure3=FIG3)


def _strip(doc):
    """results.json runs without clock readings."""
    runs = [{k: v for k, v in r.items() if "time" not in k} for r in doc["runs"]]
    return json.dumps(runs, sort_keys=True)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, data_home):
    out = tmp_path_factory.mktemp("gbm_tiny")
    doc = run_experiment("gbm-bregman", quick=True, out_dir=out, data_home=data_home, verbose=False, **TINY)
    return out, doc


def test_registered_and_resumable():
    assert "gbm-bregman" in EXPERIMENTS
    assert E.RESUMABLE and set(E.CHECKPOINT_FIELDS) >= {"dataset", "backend", "draw", "seed", "cfg"}


def test_outputs_and_schema(tiny_run):
    out, doc = tiny_run
    on_disk = json.loads((out / "results.json").read_text())
    assert validate_results(on_disk) == []
    for name in ("runs.csv", "table1.csv", "table2.csv", "tables.txt", "figure1_np.png", "figure2_fairness.png",
                 "figure3_xgb_fair_adult.png", "figure3_adult_xgboost_alpha0.05.csv"):
        assert (out / name).stat().st_size > 0, name
    # one run per (dataset, backend, draw) and one per Figure 3 alpha
    draws = [r for r in doc["runs"] if r["kind"] == "draw"]
    assert sorted((r["dataset"], r["backend"]) for r in draws) == [
        ("a9a", "lightgbm"), ("a9a", "xgboost"), ("adult", "lightgbm"), ("adult", "xgboost")]
    assert [r["alpha"] for r in doc["runs"] if r["kind"] == "figure3"] == [0.05]
    for r in draws:
        assert {"ours", "baseline"} <= set(r["metrics"])
        measure = "violation" if r["dataset"] == "a9a" else "fairness"
        for m in r["metrics"].values():
            assert 0.0 <= m["test"]["accuracy"] <= 1.0 and m["test"][measure] >= 0.0
        # the baseline has as many boosting rounds as our ensemble (at most steps x rounds per step:
        # LightGBM ends a step whose trees cannot split)
        assert 0 < r["n_rounds"] <= r["n_steps"] * r["params"]["rounds"]
        lo, hi = TINY["np_iter"] if r["dataset"] == "a9a" else TINY["fair_outer"]
        assert lo <= r["n_iter"] <= hi
    adult_lgb = next(r for r in draws if r["dataset"] == "adult" and r["backend"] == "lightgbm")
    assert adult_lgb["fairgbm"] == "run" if E.fairgbm_available() else adult_lgb["fairgbm"].startswith("skipped")
    assert ("fairgbm" in adult_lgb["metrics"]) == E.fairgbm_available()
    table = (out / "tables.txt").read_text()
    assert "LGBMNP(O)" in table and "XGBFair(O)" in table and "99.92" in table  # paper's Credit number beside ours
    assert "tau0 sigma0 L_g^2 <= 1" in table
    rows = {(r["dataset"], r["backend"]): r for r in draws}
    conditions = {(d, b, r["draw"]): r["step_condition"] for (d, b), r in rows.items()}
    for line in E.step_condition_lines(draws, conditions):
        left, right = line.split("|")
        meets = int(left.split()[3])          # one draw per cell: it meets the condition or not
        assert meets + int(right.split()[0]) == 1


def test_step_condition_of_every_draw(tiny_run, data_home):
    """tau0 sigma0 L_g^2 with L_g written out: sqrt(n_1) for a9a's bounded class-1 sum, beta sqrt(2(1/n_0 + 1/n_1))
    for Adult's two group-loss gaps (beta = the draw's scale, else the smaller group)."""
    _, doc = tiny_run
    for r in (r for r in doc["runs"] if r["kind"] == "draw"):
        data = E.task_data(r["dataset"], doc["config"], data_home, doc["seed"])
        p = r["params"]
        if r["dataset"] == "a9a":
            Lg = np.sqrt(np.count_nonzero(data.y_train == 1))
        else:
            n0, n1 = np.bincount(data.g_train)
            beta = p["scale"] if p["scale"] is not None else min(n0, n1)
            Lg = beta * np.sqrt(2 * (1 / n0 + 1 / n1))
        assert r["step_condition"] == pytest.approx(p["primal_step"] * p["dual_step"] * Lg ** 2, rel=1e-12)


def test_figure3_curve_starts_at_zero_scores(tiny_run):
    _, doc = tiny_run
    run = next(r for r in doc["runs"] if r["kind"] == "figure3")
    from fastcon.experiments._writer import read_history_csv

    curve = read_history_csv(tiny_run[0] / run["history_csv"])
    assert curve["iteration"].tolist() == list(range(run["n_iter"] + 1))
    # zero scores: every loss is log 2, so the groups have equal mean losses
    assert curve["objective"][0] == pytest.approx(np.log(2.0))
    assert curve["group_gap"][0] == pytest.approx(0.0, abs=1e-12)
    assert curve["objective"][-1] < curve["objective"][0]


def test_same_seed_same_numbers(tiny_run, tmp_path, data_home):
    _, doc = tiny_run
    again = run_experiment("gbm-bregman", quick=True, out_dir=tmp_path, data_home=data_home, verbose=False, **TINY)
    assert _strip(again) == _strip(doc)


def test_np_violation_and_class_errors():
    y = np.array([0, 0, 1, 1, 1, 1, 2, 2])
    p = np.array([0, 1, 1, 1, 1, 0, 0, 0])
    err = E.class_error_rates(y, p, 4)
    assert err[:3].tolist() == [0.5, 0.25, 1.0] and np.isnan(err[3])
    # [0.25 - 0.1]_+ + [1.0 - 0.5]_+; an unbounded class (0) and an absent one (3) add nothing
    assert E.np_violation(y, p, {1: 0.1, 2: 0.5, 3: 0.01}, 4) == pytest.approx(0.65)
    assert E.np_violation(y, p, {1: 0.3}, 4) == 0.0
    with pytest.raises(ValueError, match="^y_pred"):
        E.class_error_rates(y, p[:-1], 3)


def test_error_rate_gap_two_and_more_groups():
    y = np.array([1, 1, 0, 0, 1, 0, 1, 0])
    p = np.array([1, 0, 0, 0, 1, 1, 1, 0])
    g2 = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    # group 0: 1 error in 4, group 1: 1 in 4 -> 0; flip one more in group 1
    assert E.error_rate_gap(y, p, g2) == 0.0
    p2 = p.copy()
    p2[7] = 1
    assert E.error_rate_gap(y, p2, g2) == pytest.approx(0.25)
    g3 = np.array([0, 0, 0, 1, 1, 1, 2, 2])
    r = E.group_error_rates(y, p2, g3)
    assert r.tolist() == pytest.approx([1 / 3, 1 / 3, 0.5])
    assert E.error_rate_gap(y, p2, g3) == pytest.approx(np.std([1 / 3, 1 / 3, 0.5]))
    with pytest.raises(ValueError, match="^groups"):
        E.error_rate_gap(y, p, np.zeros(8, dtype=int))


def test_evaluate_uses_the_tasks_measure():
    F = np.array([2.0, -1.0, 0.5, -0.2])
    y = np.array([1, 0, 0, 1])
    m = E.evaluate("a9a", F, y, None)
    assert m["accuracy"] == 0.5 and m["violation"] == pytest.approx(0.45)  # class 1 error 0.5 vs e = 0.05
    F3 = np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 1.0], [3.0, 0.0, 0.0]])
    m = E.evaluate("compas", F3, np.array([0, 1, 1, 2]), np.array([0, 0, 1, 1]))
    assert m["accuracy"] == 0.5 and m["fairness"] == pytest.approx(1.0)


def test_draws_follow_the_paper_and_are_seeded():
    cfg = E.config(quick=False)
    a = E.draw_params("compas", "xgboost", 3, 0, cfg)
    assert a == E.draw_params("compas", "xgboost", 3, 0, cfg)
    assert a != E.draw_params("compas", "xgboost", 4, 0, cfg)
    assert 0.1 <= a["tree"]["learning_rate"] <= 0.3 and 0.001 <= a["dual_step"] <= 0.2 and "gamma" in a["tree"]
    b = E.draw_params("adult", "lightgbm", 0, 0, cfg)
    assert 0.1 <= b["dual_step"] <= 0.3 and "gamma" not in b["tree"]
    assert 20 <= b["outer_iter"] < 40 and 30 <= b["inner_iter"] < 50 and 0.001 <= b["alpha_max"] <= 0.2
    c = E.draw_params("drybean", "lightgbm", 0, 0, cfg)
    assert 30 <= c["max_iter"] < 100 and 5 <= c["rounds"] < 20 and 7 <= c["outlier_threshold"] < 30
    assert 30 <= c["tree"]["num_leaves"] < 100 and 4 <= c["tree"]["max_depth"] < 30


def test_alpha_schedule_tends_to_seventy_percent():
    s = E.alpha_schedule(1.0, 40)
    assert s[0] == pytest.approx(0.5 + E.FAIR_ALPHA_START / 2)
    assert s[4] == pytest.approx(0.65, abs=0.01) and s[-1] == pytest.approx(0.696, abs=0.002)
    assert all(b > a for a, b in itertools.pairwise(s))


def test_compas_score_text_loader(data_home):
    ds = E.load_compas_score_text(data_home)
    assert ds.n_samples == 6172  # ProPublica's filter
    assert np.bincount(ds.y).tolist() == [3421, 1607, 1144]  # Low, Medium, High
    assert ds.group_names == ["African-American", "Caucasian", "Hispanic", "Other", "Asian", "Native American"]
    assert np.bincount(ds.groups).tolist() == [3175, 2103, 509, 343, 31, 11]
    assert ds.n_features == 13
    assert "priors_count" in ds.feature_names and "two_year_recid" in ds.feature_names
    assert not any(name.startswith(("decile", "score_text", "v_")) for name in ds.feature_names)


def test_bad_config_is_rejected(tmp_path, data_home):
    with pytest.raises(ValueError, match="^datasets"):
        run_experiment("gbm-bregman", quick=True, out_dir=tmp_path, data_home=data_home, verbose=False,
                       datasets=("credit",))
    with pytest.raises(ValueError, match="^rounds"):
        run_experiment("gbm-bregman", quick=True, out_dir=tmp_path, data_home=data_home, verbose=False,
                       rounds=(5, 5))
