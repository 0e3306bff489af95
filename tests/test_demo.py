"""``fastcon demo``: the estimators against scikit-learn's LogisticRegression on synthetic data, held-out rows."""
import csv
import json
import sys

import pytest

import fastcon.demo
from fastcon.cli import main
from fastcon.demo import run_demo

SMALL = {"n_samples": 4000, "fair_bounds": (0.05, 0.2), "np_bounds": (0.05, 0.2)}


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    return out, run_demo(out_dir=out, verbose=False, **SMALL)


def _rows(summary):
    return {r["model"]: r for r in summary["table"]}


def test_demo_bounds_the_gaps_and_the_type_one_error(small):
    _, summary = small
    rows = _rows(summary)
    assert [r["model"] for r in summary["table"]] == [
        "LogisticRegression()", 'FairClassifier("demographic_parity", bound=0.05)',
        'FairClassifier("equalized_odds", bound=0.05)', "LogisticRegression()",
        "NeymanPearsonClassifier(bound=0.05, delta=None)", "NeymanPearsonClassifier(bound=0.05, delta=0.05)"]
    fair_base = summary["table"][0]
    np_base = summary["table"][3]
    dp = rows['FairClassifier("demographic_parity", bound=0.05)']
    eo = rows['FairClassifier("equalized_odds", bound=0.05)']
    # The data are unfair by construction: the unconstrained model is far above the bound.
    assert fair_base["dp_gap"] > 0.2 and fair_base["eo_gap"] > 0.06 and fair_base["accuracy"] > 0.85
    # The bound holds on the training rows (where it is enforced) and the held-out gap falls.
    assert dp["train_value"] <= 0.05 and eo["train_value"] <= 0.05
    assert dp["dp_gap"] < fair_base["dp_gap"] / 3 and eo["eo_gap"] < fair_base["eo_gap"] / 1.5
    # Neyman-Pearson: the unconstrained model's type-I error is above the bound; the estimators' is not on training rows.
    assert np_base["type_one_error"] > 0.05
    for name in ("NeymanPearsonClassifier(bound=0.05, delta=None)", "NeymanPearsonClassifier(bound=0.05, delta=0.05)"):
        assert rows[name]["train_value"] <= 0.05
        assert rows[name]["type_one_error"] < np_base["type_one_error"]
        assert rows[name]["type_two_error"] > np_base["type_two_error"]   # the price of the bound
    # The sweeps of the figure hold the table's bound and the sweep's.
    assert [r["bound"] for r in summary["sweeps"]["demographic_parity"]] == [0.05, 0.2]
    assert [r["bound"] for r in summary["sweeps"]["neyman_pearson"]] == [0.05, 0.2]
    assert summary["sweeps"]["demographic_parity"][0] == dp


def test_demo_writes_table_results_and_figure(small):
    out, summary = small
    for name in ("table.csv", "results.json", "demo.png"):
        assert (out / name).stat().st_size > 100
    assert (out / "demo.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with open(out / "table.csv", newline="") as fh:
        table = list(csv.DictReader(fh))
    assert [r["model"] for r in table] == [r["model"] for r in summary["table"]]
    assert float(table[1]["dp_gap"]) == summary["table"][1]["dp_gap"] and table[0]["bound"] == ""
    written = json.loads((out / "results.json").read_text())
    assert written["table"] == summary["table"] and written["seed"] == 0
    assert written["fairness_data"]["n_test"] + written["fairness_data"]["n_train"] == SMALL["n_samples"]


def test_demo_prints_the_same_tables_for_the_same_seed(tmp_path, capsys):
    outputs = []
    for _ in range(2):
        run_demo(out_dir=tmp_path, **SMALL)
        captured = capsys.readouterr()
        outputs.append(captured.out)
        assert captured.err.startswith("fastcon demo: done in ")   # the wall time: stderr only
    assert outputs[0] == outputs[1]
    text = outputs[0]
    assert "LogisticRegression()" in text and "demographic_parity: DP gap " in text
    assert "NeymanPearsonClassifier(bound=0.05, delta=0.05): type-I " in text
    assert text.endswith("\nwrote demo.png, table.csv, results.json\n")


def test_demo_command(tmp_path, capsys):
    # the default configuration, as `fastcon demo` runs it
    tmp_path = tmp_path / "out"
    assert main(["demo", "--out", str(tmp_path), "--quiet"]) == 0
    assert capsys.readouterr().out == ""
    summary = json.loads((tmp_path / "results.json").read_text())
    assert summary["n_samples"] == 20_000 and (tmp_path / "demo.png").exists()
    rows = {r["model"]: r for r in summary["table"]}
    assert rows['FairClassifier("demographic_parity", bound=0.05)']["dp_gap"] <= 0.05   # held-out, seed 0
    assert rows["NeymanPearsonClassifier(bound=0.05, delta=0.05)"]["type_one_error"] <= 0.05


def test_demo_ctrl_c_prints_one_line(tmp_path, monkeypatch, capsys):
    def interrupted(**kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(fastcon.demo, "run_demo", interrupted)
    assert main(["demo", "--out", str(tmp_path), "--quiet"]) == 130
    assert capsys.readouterr().err == "fastcon demo: interrupted: nothing saved\n"


def test_demo_checks_out_dir_before_computing(tmp_path, monkeypatch):
    monkeypatch.setattr(fastcon.demo, "make_fair_classification", lambda **kw: pytest.fail("computed first"))
    (tmp_path / "afile").write_text("")
    with pytest.raises(ValueError, match="^out_dir: cannot write to .*afile/out: Not a directory"):
        run_demo(out_dir=tmp_path / "afile" / "out", verbose=False)


def test_demo_without_scikit_learn_says_which_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)   # import sklearn -> ImportError
    with pytest.raises(ImportError, match=r"pip install 'fastcon\[sklearn,plot\]'"):
        run_demo(out_dir=tmp_path / "out", verbose=False)
    assert not (tmp_path / "out").exists()


def test_demo_without_matplotlib_writes_the_tables(tmp_path, monkeypatch, capsys):
    import fastcon._results

    def no_pyplot():
        raise ImportError("plotting needs matplotlib")

    monkeypatch.setattr(fastcon._results, "_pyplot", no_pyplot)
    run_demo(out_dir=tmp_path, n_samples=2000, fair_bounds=(0.1,), np_bounds=(0.1,))
    assert "(no figure: plotting needs matplotlib)" in capsys.readouterr().out
    assert (tmp_path / "table.csv").exists() and (tmp_path / "results.json").exists()
    assert not (tmp_path / "demo.png").exists()
