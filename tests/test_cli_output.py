"""Output folders (issue 33): a run writes into a new folder beside ``--out`` and moves it into place
only when complete, so an interrupted run never leaves a half-written folder behind "nothing
saved", and a re-run into an earlier run's folder never mixes the two; ``--out ""`` is refused.

Interruptions are simulated by raising KeyboardInterrupt from inside a run (monkeypatch): the demo's
``run_demo``, and the ``write`` hook of a tiny experiment module run by the real driver.
"""
import json
import types

import pytest

import fastcon.demo
from fastcon.cli import main
from fastcon.experiments import ExperimentInterrupted
from fastcon.experiments import _runner
from fastcon.experiments._writer import MARKER, output_folder, write_csv


def _leftovers(parent):
    """Folders a run left beside its output folder."""
    return sorted(p.name for p in parent.iterdir() if ".partial-" in p.name or ".old-" in p.name)


def _fake_demo(files, interrupt=False, calls=None):
    def run_demo(out_dir, seed=0, verbose=True):
        if calls is not None:
            calls.append(out_dir)
        for name, text in files.items():
            (out_dir / name).write_text(text)
        if interrupt:
            raise KeyboardInterrupt
        return {}
    return run_demo


def _contents(folder):
    return {p.name: p.read_text() for p in folder.iterdir() if p.name != MARKER}


@pytest.mark.parametrize("command", [["demo"], ["reproduce", "iqrc-mnpc", "--quick"]])
def test_empty_out_is_rejected_naming_the_option(command, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    calls = []
    monkeypatch.setattr(fastcon.demo, "run_demo", _fake_demo({"table.csv": "x"}, calls=calls))
    monkeypatch.setattr("fastcon.experiments.run_experiment", lambda *a, **k: calls.append(k))
    monkeypatch.setattr("fastcon.experiments.check_data", lambda *a, **k: [])
    for empty in ("", "  "):
        with pytest.raises(SystemExit) as info:
            main(command + ["--out", empty, "--quiet"])
        assert info.value.code == 2
        assert "argument --out: must be a folder path" in capsys.readouterr().err
    assert calls == [] and list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="^out_dir: "):
        output_folder("x", False, "")


def test_interrupted_demo_leaves_no_folder(tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    monkeypatch.setattr(fastcon.demo, "run_demo", _fake_demo({"table.csv": "half"}, interrupt=True))
    assert main(["demo", "--out", str(out), "--quiet"]) == 130
    assert capsys.readouterr().err == "fastcon demo: interrupted: nothing saved\n"
    assert not out.exists() and _leftovers(tmp_path) == []


def test_rerun_replaces_an_earlier_run_only_when_complete(tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    monkeypatch.setattr(fastcon.demo, "run_demo", _fake_demo({"table.csv": "one", "results.json": "{}",
                                                              "demo.png": "one"}))
    assert main(["demo", "--out", str(out), "--quiet"]) == 0
    first = _contents(out)
    assert first == {"table.csv": "one", "results.json": "{}", "demo.png": "one"}
    assert json.loads((out / MARKER).read_text())["files"] == ["demo.png", "results.json", "table.csv"]
    # interrupted re-run: the earlier outputs stay as they were, nothing of the new run among them
    monkeypatch.setattr(fastcon.demo, "run_demo", _fake_demo({"table.csv": "two"}, interrupt=True))
    assert main(["demo", "--out", str(out), "--quiet"]) == 130
    assert _contents(out) == first and _leftovers(tmp_path) == []
    # a completed re-run replaces them as a whole: no file of the first run is left
    monkeypatch.setattr(fastcon.demo, "run_demo", _fake_demo({"table.csv": "three"}))
    assert main(["demo", "--out", str(out), "--quiet"]) == 0
    assert _contents(out) == {"table.csv": "three"} and _leftovers(tmp_path) == []
    capsys.readouterr()


def test_folder_with_other_files_is_refused_before_running(tmp_path, monkeypatch, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("my notes")
    calls = []
    monkeypatch.setattr(fastcon.demo, "run_demo", _fake_demo({"table.csv": "x"}, calls=calls))
    assert main(["demo", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fastcon demo: error: argument --out: ") and "notes.txt" in err
    assert calls == [] and _contents(out) == {"notes.txt": "my notes"}
    with pytest.raises(ValueError, match="^out_dir: .*notes.txt"):
        output_folder("x", False, out)
    # an empty folder, or a folder written before the marker existed (results.json, CSVs), is fine
    (out / "notes.txt").unlink()
    assert main(["demo", "--out", str(out), "--quiet"]) == 0
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / "results.json").write_text("{}")
    (legacy / "a9a_x.csv").write_text("1")
    assert output_folder("x", False, legacy) == legacy


# ------------------------------------------------------------------------------- the experiment driver
def _execute(task):
    return {"value": task["k"] * 2}


def _spec(interrupt_in_write):
    """A tiny checkpointed experiment: three tasks; ``write`` writes two files, then maybe raises Ctrl-C."""
    def write(session, tasks, records):
        write_csv(session.out / "summary.csv", ["k", "value"], [[t["k"], r["value"]] for t, r in zip(tasks, records)])
        if interrupt_in_write:
            raise KeyboardInterrupt
        (session.out / "results.json").write_text(json.dumps({"runs": records}))
        return {"runs": records}

    return types.SimpleNamespace(NAME="tiny", RESUMABLE=True, config=lambda quick: {},
                                 tasks=lambda session: [{"k": k} for k in range(3)], execute=_execute, write=write)


def test_interrupted_write_keeps_the_checkpoints_and_no_half_outputs(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(ExperimentInterrupted) as info:
        _runner.drive(_spec(interrupt_in_write=True), out_dir=out, verbose=False)
    assert info.value.message == (f"interrupted: 3 runs saved in {out / 'checkpoints'}; run the same command with "
                                  "--resume to continue")
    assert sorted(p.name for p in out.iterdir()) == ["checkpoints"]   # no summary.csv of the cut write
    assert len(list((out / "checkpoints").glob("*.json"))) == 3 and _leftovers(tmp_path) == []
    doc = _runner.drive(_spec(interrupt_in_write=False), out_dir=out, verbose=False, resume=True)
    assert doc == {"runs": [{"value": 0}, {"value": 2}, {"value": 4}]}
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "results.json", "summary.csv"]
    assert _leftovers(tmp_path) == []


def test_interrupted_rerun_of_an_experiment_keeps_the_earlier_outputs(tmp_path):
    out = tmp_path / "out"
    _runner.drive(_spec(interrupt_in_write=False), out_dir=out, verbose=False)
    before = _contents(out)
    with pytest.raises(ExperimentInterrupted):
        _runner.drive(_spec(interrupt_in_write=True), out_dir=out, verbose=False)
    # the earlier outputs as they were, beside this run's checkpoints (for --resume)
    assert {p.name for p in out.iterdir()} == {MARKER, "results.json", "summary.csv", "checkpoints"}
    assert {n: (out / n).read_text() for n in before} == before and _leftovers(tmp_path) == []
    _runner.drive(_spec(interrupt_in_write=False), out_dir=out, verbose=False, resume=True)
    assert {p.name for p in out.iterdir()} == {MARKER, "results.json", "summary.csv"}
