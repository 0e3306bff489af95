"""bench/boosting_fairness.py's parts that can fail without the peers installed (issue 36).

The benchmark itself (timings against FairGBM and OxonFair on Adult, COMPAS, bank) is run by hand;
these check its metrics against hand-computed values, the resumable JSON-lines file, the rows that
must say "not available" (no FairGBM interpreter, a fastcon without the rate-constrained boosted
estimator), and one unconstrained LightGBM row end to end on a tiny synthetic split.
"""
import importlib.util
import json
import math
import os
import sys

import numpy as np
import pytest

from conftest import REPO, bench_module




bf = bench_module("boosting_fairness")


# --------------------------------------------------------------------------------- metrics
# Two groups of four rows. Group 0: labels 1 1 0 0, predictions 1 0 1 0 -> selection 2/4, TPR 1/2,
# FPR 1/2. Group 1: labels 1 1 0 0, predictions 1 1 1 0 -> selection 3/4, TPR 2/2, FPR 1/2.
G = np.array([0, 0, 0, 0, 1, 1, 1, 1])
Y = np.array([1, 1, 0, 0, 1, 1, 0, 0])
P = np.array([1, 0, 1, 0, 1, 1, 1, 0])


def test_rate_gaps_match_hand_computed_values():
    gaps = bf.rate_gaps(P, Y, G)
    assert gaps == pytest.approx({"dp": 0.25, "tpr": 0.5, "fpr": 0.0})
    assert bf.accuracy(P, Y) == pytest.approx(5 / 8)   # wrong: rows 2, 3 (group 0) and 7 (group 1)


def test_constrained_gap_picks_the_bounded_rate():
    assert bf.constrained_gap("demographic_parity", P, Y, G) == pytest.approx(0.25)
    assert bf.constrained_gap("equal_opportunity", P, Y, G) == pytest.approx(0.5)
    assert bf.constrained_gap("false_positive_parity", P, Y, G) == pytest.approx(0.0)
    assert bf.constrained_gap("equalized_odds", P, Y, G) == pytest.approx(0.5)
    assert math.isnan(bf.constrained_gap(None, P, Y, G))


def test_rate_gaps_undefined_rate_is_nan_and_bad_predictions_raise():
    y = np.array([1, 1, 0, 0, 0, 0, 0, 0])        # group 1 has no positives: its TPR is undefined
    gaps = bf.rate_gaps(P, y, G)
    assert math.isnan(gaps["tpr"]) and gaps["dp"] == pytest.approx(0.25)
    with pytest.raises(ValueError, match="0/1"):
        bf.rate_gaps(np.array([0, 2, 1, 0, 1, 1, 1, 0]), Y, G)


# ----------------------------------------------------------------------------- tiny split
def _tiny_split(n_train=400, n_test=200, seed=0):
    """Five informative columns and a sixth equal to the group (the sensitive column)."""
    rng = np.random.default_rng(seed)
    n = n_train + n_test
    g = (rng.random(n) < 0.4).astype(np.int64)
    Z = rng.normal(size=(n, 5))
    y = ((Z[:, 0] + 0.8 * g + 0.5 * rng.normal(size=n)) > 0.3).astype(np.int64)
    X = np.column_stack([Z, g.astype(np.float64)])
    return bf._peers.Split(name="tiny", X_train=X[:n_train], y_train=y[:n_train], g_train=g[:n_train],
                           X_test=X[n_train:], y_test=y[n_train:], g_test=g[n_train:],
                           group_names=["a", "b"], sensitive_columns=np.array([5]))


def test_views_drop_exactly_the_group_columns():
    split = _tiny_split()
    views = bf.Views.of(split)
    assert views.train["all"].shape == (400, 6) and views.train["group-blind"].shape == (400, 5)
    assert np.array_equal(views.test["group-blind"], split.X_test[:, :5])


def _counting_method(name="fake", constraint="demographic_parity"):
    calls = []

    def run(views, bound, repeats, threads):
        calls.append((bound, repeats))
        split = views.split
        return bf.Outcome(0.01, split.y_train.copy(), split.y_test.copy())   # the labels: accuracy 1
    method = bf.Method(name, "fake", constraint, "group-blind", False, None, run, lambda: None)
    return method, calls


# ------------------------------------------------------------------------------- resuming
def test_rows_already_recorded_are_skipped_and_more_repeats_rerun(tmp_path):
    out = tmp_path / "rows.jsonl"
    split = _tiny_split()
    method, calls = _counting_method()
    first = bf.run_rows(split, [(method, 0.02)], out, repeats=2, context={"commit": "abc"})
    assert len(calls) == 1 and first[0]["status"] == "ok" and first[0]["commit"] == "abc"
    assert first[0]["test_accuracy"] == 1.0 and first[0]["train_gap"] == pytest.approx(first[0]["train_dp_gap"])
    again = bf.run_rows(split, [(method, 0.02)], out, repeats=1)          # fewer repeats: the record serves
    assert len(calls) == 1 and again[0] == first[0]
    assert len(out.read_text().splitlines()) == 1
    bf.run_rows(split, [(method, 0.04)], out, repeats=2)                  # another bound: a new row
    bf.run_rows(split, [(method, 0.02)], out, repeats=3)                  # more repeats: run again
    assert calls == [(0.02, 2), (0.04, 2), (0.02, 3)]
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["bound"] for r in records] == [0.02, 0.04, 0.02]
    # NaN is written as null, so every line is strict JSON
    assert all(r["fit_gap"] is None for r in records)


def test_not_available_and_failed_rows_are_recorded_and_tried_again(tmp_path):
    out = tmp_path / "rows.jsonl"
    split = _tiny_split()
    method, calls = _counting_method()
    missing = bf.Method("fake", "fake", "demographic_parity", "group-blind", False, None, method.run,
                        lambda: "not available (test)")
    row = bf.run_rows(split, [(missing, 0.02)], out, repeats=1)[0]
    assert row["status"] == "not available (test)" and row["test_accuracy"] is None and not calls

    def broken(views, bound, repeats, threads):
        raise RuntimeError("boom")
    failing = bf.Method("fake", "fake", "demographic_parity", "group-blind", False, None, broken, lambda: None)
    assert bf.run_rows(split, [(failing, 0.02)], out, repeats=1)[0]["status"] == "failed: RuntimeError: boom"
    # the same row, now runnable: neither earlier record counts as done
    assert bf.run_rows(split, [(method, 0.02)], out, repeats=1)[0]["status"] == "ok" and len(calls) == 1
    assert len(out.read_text().splitlines()) == 3


def test_records_written_before_issue_37_resume_under_their_tolerance_key(tmp_path):
    out = tmp_path / "rows.jsonl"
    split = _tiny_split()
    method, calls = _counting_method()
    first = bf.run_rows(split, [(method, 0.02)], out, repeats=1)[0]
    old = {("tolerance" if k == "bound" else k): v for k, v in first.items()}
    out.write_text(json.dumps(old) + "\n")
    assert bf.run_rows(split, [(method, 0.02)], out, repeats=1)[0] == old and len(calls) == 1
    assert bf.run_rows(split, [(method, 0.04)], out, repeats=1)[0]["bound"] == 0.04 and len(calls) == 2
    assert "| 0.02 |" in bf.format_table([old])


# ------------------------------------------------------------------------ not available
def test_fairgbm_without_an_interpreter_is_not_available(tmp_path):
    assert bf.fairgbm_unavailable(None).startswith("not available (no FairGBM interpreter")
    assert "no such executable" in bf.fairgbm_unavailable(str(tmp_path / "python"))
    if importlib.util.find_spec("fairgbm") is None:   # this interpreter has no fairgbm: the probe says so
        assert "fairgbm does not import" in bf.fairgbm_unavailable(sys.executable)
    method = bf._fairgbm("FNR", None, 200)
    assert method.constraint == "equal_opportunity" and method.features == "group-blind"
    row = bf.run_rows(_tiny_split(), [(method, 0.02)], tmp_path / "rows.jsonl", repeats=1)[0]
    assert row["status"].startswith("not available") and row["fit_s"] is None


def test_boosted_estimator_without_constraint_parameter_is_not_available():
    class MeanLossGap:   # the signature of the boosted estimator before issue 36
        def __init__(self, backend="lightgbm", tolerance=0.05, *, rounds=10):
            pass

    class RateConstrained:
        def __init__(self, constraint="demographic_parity", bound=0.02, *, backend="lightgbm"):
            pass

    assert "no `constraint` parameter" in bf.boosted_unavailable(MeanLossGap)
    assert bf.boosted_unavailable(RateConstrained) is None
    # whatever the installed fastcon has, the answer is a reason or None, never an exception
    assert bf.boosted_unavailable() is None or bf.boosted_unavailable().startswith("not available")


# ------------------------------------------------------------------------------ end to end
def test_unconstrained_lightgbm_row_end_to_end(tmp_path):
    pytest.importorskip("lightgbm")
    out = tmp_path / "rows.jsonl"
    split = _tiny_split()
    jobs = [(bf._unconstrained("lightgbm", 10, features), 0.02) for features in bf.FEATURES]
    rows = bf.run_rows(split, jobs, out, repeats=1, threads=1)
    assert [r["features"] for r in rows] == ["all", "group-blind"]
    for row in rows:
        assert row["status"] == "ok" and row["bound"] is None and row["rounds"] == 10
        assert 0.7 < row["test_accuracy"] <= 1 and row["fit_s"] > 0
        for key in ("test_dp_gap", "test_tpr_gap", "test_fpr_gap"):
            assert 0 <= row[key] <= 1
        assert row["train_gap"] is None          # nothing bounded
    assert len(out.read_text().splitlines()) == 2
    table = bf.format_table(rows)
    assert "LightGBM, unconstrained, group-blind" in table and table.count("\n") == 3


def test_tradeoff_figure_is_written(tmp_path):
    pytest.importorskip("matplotlib")
    rows = [dict(status="ok", constraint="demographic_parity", bound=t, test_dp_gap=t, test_accuracy=0.8 + t)
            for t in (0.01, 0.02)]
    rows.append(dict(status="ok", constraint="demographic_parity", tolerance=0.04, test_dp_gap=0.04,
                     test_accuracy=0.84))                 # a record written before issue 37
    ref = dict(status="ok", constraint=None, bound=None, test_dp_gap=0.2, test_accuracy=0.85)
    path = bf.plot_tradeoff({("demographic_parity", "adult"): {"fastcon": rows, "LightGBM": [ref]}},
                            tmp_path / "fig.png")
    assert path.stat().st_size > 1000


def test_fairgbm_child_when_an_interpreter_is_configured(tmp_path):
    python = os.environ.get("FASTCON_FAIRGBM_PYTHON")
    if bf.fairgbm_unavailable(python):
        pytest.skip("no FairGBM interpreter (FASTCON_FAIRGBM_PYTHON)")
    row = bf.run_rows(_tiny_split(), [(bf._fairgbm("FNR", python, 10), 0.05)], tmp_path / "rows.jsonl", repeats=1)[0]
    assert row["status"] == "ok" and row["versions"]["fairgbm"] and 0.6 < row["test_accuracy"] <= 1
