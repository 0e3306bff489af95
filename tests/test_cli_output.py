"""Output folders (issue 33): a run writes into a new folder beside ``--out`` and moves it into place
only when complete, so an interrupted run never leaves a half-written folder behind "nothing
saved", and a re-run into an earlier run's folder never mixes the two; ``--out ""`` is refused.

Interruptions are simulated by raising KeyboardInterrupt from inside a run (monkeypatch): the demo's
``run_demo``, and the ``write`` hook of a tiny experiment module run by the real driver.
"""
import json
import os
import types
import warnings

import pytest

import fastcon.demo
from fastcon.cli import main
from fastcon.experiments import ExperimentInterrupted
from fastcon.experiments import _runner
from fastcon.experiments._writer import (CHECKPOINT_FILE, MARKER, OutputFolderError, output_folder, staged_output,
                                         write_csv)


def _leftovers(parent):
    """Folders a run left beside its output folder."""
    return sorted(p.name for p in parent.iterdir() if ".partial-" in p.name or ".old-" in p.name)


def _legacy_doc(experiment="ssg-roc", history="a9a_x.csv"):
    """A results.json an experiment wrote before the marker existed (fastcon's schema, one run)."""
    run = {"dataset": "a9a", "problem": "roc", "method": "x", "params": {}, "status": "ok", "n_iter": 1,
           "wall_time_s": 0.1, "initial_objective": 1.0, "objective": 0.5, "max_violation": 0.0, "stationarity": None,
           "data_passes_f": 1.0, "data_passes_g": 1.0, "history_csv": history}
    return {"experiment": experiment, "quick": True, "fastcon_version": "0.1.0", "created": "2026-11-27T16:28:52+00:00",
            "runs": [run]}


def _fake_demo(files, interrupt=False, calls=None, during=None):
    def run_demo(out_dir, seed=0, verbose=True):
        if calls is not None:
            calls.append(out_dir)
        if during is not None:
            during()
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
    # an empty folder, or a folder an experiment wrote before the marker existed, is fine
    (out / "notes.txt").unlink()
    assert main(["demo", "--out", str(out), "--quiet"]) == 0
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / "results.json").write_text(json.dumps(_legacy_doc()))
    (legacy / "a9a_x.csv").write_text("1")
    (legacy / "summary.txt").write_text("table")
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


# ------------------------------------------------------------------------------- never delete a user's files
def _tree(folder):
    """Every file under ``folder`` (relative path: text), to check that nothing was touched."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _run_spec(write_hook=None):
    """A tiny checkpointed experiment whose ``write`` calls ``write_hook()`` first (a change to --out mid-run)."""
    spec = _spec(interrupt_in_write=False)
    inner = spec.write

    def write(session, tasks, records):
        if write_hook is not None:
            write_hook()
        return inner(session, tasks, records)

    spec.write = write
    return spec


def test_checkpoint_file_pattern_matches_the_runner(tmp_path):
    ckpt = _runner.TaskCheckpoints(tmp_path / "checkpoints", fields=("k",))
    ckpt.save({"k": 1}, {"value": 2})
    assert [CHECKPOINT_FILE.fullmatch(p.name) is not None for p in (tmp_path / "checkpoints").iterdir()] == [True]
    assert CHECKPOINT_FILE.fullmatch(f"{_runner.task_key({'k': 1})[:20]}.tmp123")
    assert not CHECKPOINT_FILE.fullmatch("model.pt")


def test_a_users_checkpoints_folder_is_never_taken_for_fastcons(tmp_path, monkeypatch, capsys):
    # (a) proj/checkpoints/model.pt: a PyTorch checkpoint, not fastcon's
    proj = tmp_path / "proj"
    (proj / "checkpoints").mkdir(parents=True)
    (proj / "checkpoints" / "model.pt").write_bytes(b"weights")
    before = _tree(proj)
    calls = []
    monkeypatch.setattr(fastcon.demo, "run_demo", _fake_demo({"table.csv": "x"}, calls=calls))
    assert main(["demo", "--out", str(proj), "--quiet"]) == 2
    assert "checkpoints" in capsys.readouterr().err and calls == []
    with pytest.raises(ValueError, match="^out_dir: .*checkpoints"):   # an experiment that checkpoints: refused too
        _runner.drive(_run_spec(), out_dir=proj, verbose=False)
    # fastcon's own checkpoint files beside model.pt do not make the folder fastcon's
    (proj / "checkpoints" / ("0" * 20 + ".json")).write_text("{}")
    with pytest.raises(ValueError, match="^out_dir: .*checkpoints"):
        _runner.drive(_run_spec(), out_dir=proj, verbose=False)
    (proj / "checkpoints" / ("0" * 20 + ".json")).unlink()
    assert _tree(proj) == before and _leftovers(tmp_path) == []
    # the demo never checkpoints: even a checkpoints folder fastcon wrote is not the demo's
    (proj / "checkpoints" / "model.pt").unlink()
    (proj / "checkpoints" / ("0" * 20 + ".json")).write_text("{}")
    assert main(["demo", "--out", str(proj), "--quiet"]) == 2
    assert calls == [] and (proj / "checkpoints" / ("0" * 20 + ".json")).exists()
    # ... while an experiment that checkpoints takes its own checkpoints folder (and clears it when done)
    _runner.drive(_run_spec(), out_dir=proj, verbose=False)
    assert {p.name for p in proj.iterdir()} == {MARKER, "results.json", "summary.csv"}
    capsys.readouterr()


def test_a_results_json_of_another_tool_does_not_make_a_folder_fastcons(tmp_path, monkeypatch, capsys):
    # (b) analysis/ with some tool's results.json and the user's data, notes, figure
    analysis = tmp_path / "analysis"
    analysis.mkdir()
    (analysis / "results.json").write_text(json.dumps({"accuracy": 0.9, "runs": []}))
    (analysis / "survey_data.csv").write_text("a,b\n1,2\n")
    (analysis / "notes.txt").write_text("my notes")
    (analysis / "figure.png").write_bytes(b"\x89PNG")
    before = _tree(analysis)
    calls = []
    monkeypatch.setattr(fastcon.demo, "run_demo", _fake_demo({"table.csv": "x"}, calls=calls))
    assert main(["demo", "--out", str(analysis), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "(figure.png, notes.txt, results.json and 1 more)" in err and calls == []
    with pytest.raises(ValueError, match="^out_dir: .*holds files no fastcon run wrote"):
        _runner.drive(_run_spec(), out_dir=analysis, verbose=False)
    assert _tree(analysis) == before
    # a results.json fastcon wrote, but beside files its experiment never writes: refused as well
    (analysis / "results.json").write_text(json.dumps(_legacy_doc()))
    before = _tree(analysis)
    assert main(["demo", "--out", str(analysis), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "survey_data.csv" in err and "figure.png" in err and "notes.txt" in err and "results.json" not in err
    assert calls == [] and _tree(analysis) == before and _leftovers(tmp_path) == []
    # a schema-like results.json of an experiment fastcon does not have: not fastcon's
    other = tmp_path / "other"
    other.mkdir()
    (other / "results.json").write_text(json.dumps(_legacy_doc(experiment="someone-else")))
    with pytest.raises(ValueError, match="^out_dir: .*results.json"):
        output_folder("x", False, other)


def test_an_unmarked_fastcon_folder_is_replaced_deleting_only_what_fastcon_wrote(tmp_path, monkeypatch, capsys):
    for doc, names in ((_legacy_doc(), {"a9a_x.csv", "summary.txt", "summary.csv", "figure1_roc.png"}),
                       ({"seed": 0, "table": [], "sweeps": {}, "versions": {"fastcon": "0.1.0"}},
                        {"table.csv", "demo.png"})):
        out = tmp_path / "old"
        out.mkdir()
        (out / "results.json").write_text(json.dumps(doc))
        for n in names:
            (out / n).write_text("old")
        monkeypatch.setattr(fastcon.demo, "run_demo", _fake_demo({"table.csv": "new"}))
        assert main(["demo", "--out", str(out), "--quiet"]) == 0
        assert _contents(out) == {"table.csv": "new"} and _leftovers(tmp_path) == []
        for p in out.iterdir():
            p.unlink()
        out.rmdir()
    capsys.readouterr()


def test_files_added_to_out_during_the_run_stop_the_move(tmp_path, monkeypatch, capsys):
    # (c) a file added to --out while the run computes is not deleted when the outputs move in
    out = tmp_path / "out"
    monkeypatch.setattr(fastcon.demo, "run_demo", _fake_demo({"table.csv": "one"}))
    assert main(["demo", "--out", str(out), "--quiet"]) == 0
    first = _tree(out)

    def add_notes():
        (out / "notes.txt").write_text("written during the run")

    monkeypatch.setattr(fastcon.demo, "run_demo", _fake_demo({"table.csv": "two"}, during=add_notes))
    assert main(["demo", "--out", str(out), "--quiet"]) == 1
    err = capsys.readouterr().err
    [partial] = [p for p in tmp_path.iterdir() if ".partial-" in p.name]
    assert err.startswith("fastcon demo: error: ") and "notes.txt" in err
    assert str(partial) in err and str(out) in err
    assert _tree(out) == {**first, "notes.txt": b"written during the run"}   # --out untouched
    assert _contents(partial) == {"table.csv": "two"}                        # the new outputs kept
    assert not [p for p in tmp_path.iterdir() if ".old-" in p.name]


def test_files_added_during_an_experiment_stop_the_move_and_keep_the_checkpoints(tmp_path):
    out = tmp_path / "out"
    _runner.drive(_run_spec(), out_dir=out, verbose=False)
    first = _tree(out)

    def add_notes():
        (out / "notes.txt").write_text("mine")

    with pytest.raises(OutputFolderError) as info:
        _runner.drive(_run_spec(write_hook=add_notes), out_dir=out, verbose=False)
    [partial] = [p for p in tmp_path.iterdir() if ".partial-" in p.name]
    assert "notes.txt" in info.value.strerror and str(partial) in info.value.strerror
    assert (out / "notes.txt").read_text() == "mine"
    assert {k: v for k, v in _tree(out).items() if not k.startswith("checkpoints")} == {**first, "notes.txt": b"mine"}
    assert len(list((out / "checkpoints").glob("*.json"))) == 3   # the runs stay saved for --resume
    assert {p.name for p in partial.iterdir()} == {MARKER, "results.json", "summary.csv"}


def test_files_appearing_after_the_last_check_are_kept(tmp_path, monkeypatch):
    # the old folder is emptied of fastcon's files only; anything else keeps it (with a warning)
    import fastcon.experiments._writer as writer

    out = tmp_path / "out"
    with staged_output(out) as stage:
        (stage / "table.csv").write_text("one")
    real = writer._owned_entries

    def racing(folder, checkpoints=False):
        if ".old-" in folder.name and not (folder / "late.txt").exists():
            (folder / "late.txt").write_text("late")
        return real(folder, checkpoints)

    monkeypatch.setattr(writer, "_owned_entries", racing)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with staged_output(out) as stage:
            (stage / "table.csv").write_text("two")
    [old] = [p for p in tmp_path.iterdir() if ".old-" in p.name]
    assert sorted(p.name for p in old.iterdir()) == ["late.txt"] and (out / "table.csv").read_text() == "two"
    assert any("late.txt" in str(w.message) for w in caught)


def test_a_symlinked_out_is_refused_and_leaves_no_old_folder(tmp_path, monkeypatch, capsys):
    # (d) --out a symbolic link: refused up front, nothing created beside it
    target = tmp_path / "target"
    target.mkdir()
    (target / "mine.txt").write_text("mine")
    link = tmp_path / "link"
    os.symlink(target, link)
    calls = []
    monkeypatch.setattr(fastcon.demo, "run_demo", _fake_demo({"table.csv": "x"}, calls=calls))
    assert main(["demo", "--out", str(link), "--quiet"]) == 2
    assert "is a symbolic link" in capsys.readouterr().err and calls == []
    with pytest.raises(ValueError, match="^out_dir: .*symbolic link"):
        _runner.drive(_run_spec(), out_dir=link, verbose=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "target"] and _tree(target) == {"mine.txt": b"mine"}
    # a link to an empty folder, or to nothing: refused too
    (target / "mine.txt").unlink()
    assert main(["demo", "--out", str(link), "--quiet"]) == 2
    dangling = tmp_path / "dangling"
    os.symlink(tmp_path / "nowhere", dangling)
    assert main(["demo", "--out", str(dangling), "--quiet"]) == 2
    capsys.readouterr()
    # --out replaced by a link during the run: the move stops, no empty .old- folder is left
    out = tmp_path / "out"
    monkeypatch.setattr(fastcon.demo, "run_demo", _fake_demo({"table.csv": "one"}))
    assert main(["demo", "--out", str(out), "--quiet"]) == 0

    def swap():
        os.rename(out, tmp_path / "moved")
        os.symlink(tmp_path / "moved", out)

    monkeypatch.setattr(fastcon.demo, "run_demo", _fake_demo({"table.csv": "two"}, during=swap))
    assert main(["demo", "--out", str(out), "--quiet"]) == 1
    assert "symbolic link" in capsys.readouterr().err
    assert out.is_symlink() and not [p for p in tmp_path.iterdir() if ".old-" in p.name]
    assert (tmp_path / "moved" / "table.csv").read_text() == "one"
