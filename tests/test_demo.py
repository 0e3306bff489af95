"""``fastcon demo`` end to end on a small configuration, and once through the command line."""
import json

import numpy as np
import pytest

from fastcon.cli import main
from fastcon.demo import run_demo


def test_demo_improves_fairness_within_the_constraint(tmp_path):
    summary = run_demo(out_dir=tmp_path, n_samples=6000, max_iter=400, verbose=False)
    table = {(r["data"], r["model"]): r for r in summary["table"]}
    erm, ours = table[("train", "ERM")], table[("train", "fastcon SSG")]
    assert ours["smoothed_roc_gap"] < erm["smoothed_roc_gap"]
    # The output is the best nearly-feasible iterate: constraint g <= the switching tolerance.
    assert summary["constraint_g"]["fastcon SSG"] <= 1e-3 * summary["kappa"] + 1e-12
    assert summary["constraint_g"]["ERM"] == -summary["kappa"] or np.isclose(
        summary["constraint_g"]["ERM"], -summary["kappa"], rtol=1e-9)
    for name in ("table.csv", "results.json", "history.csv", "demo.png"):
        assert (tmp_path / name).stat().st_size > 100
    assert (tmp_path / "demo.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((tmp_path / "results.json").read_text())["solver"]["status"] == "max_iter"


def test_demo_is_reproducible(tmp_path):
    a = run_demo(out_dir=tmp_path / "a", n_samples=3000, max_iter=100, verbose=False)
    b = run_demo(out_dir=tmp_path / "b", n_samples=3000, max_iter=100, verbose=False)
    assert a["table"] == b["table"]


def test_demo_command(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path), "--quiet"]) == 0
    assert (tmp_path / "demo.png").exists() and (tmp_path / "table.csv").exists()


def test_demo_ctrl_c_prints_one_line(tmp_path, monkeypatch, capsys):
    import fastcon.demo

    def interrupted(**kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(fastcon.demo, "run_demo", interrupted)
    assert main(["demo", "--out", str(tmp_path), "--quiet"]) == 130
    assert capsys.readouterr().err == "fastcon demo: interrupted: nothing saved\n"


def test_demo_checks_out_dir_before_computing(tmp_path, monkeypatch):
    import fastcon.demo

    monkeypatch.setattr(fastcon.demo, "make_fair_classification", lambda **kw: pytest.fail("computed first"))
    (tmp_path / "afile").write_text("")
    with pytest.raises(ValueError, match="^out_dir: cannot write to .*afile/out: Not a directory"):
        run_demo(out_dir=tmp_path / "afile" / "out", verbose=False)
