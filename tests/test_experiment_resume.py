"""Checkpoints of the grid experiments: an interrupted run resumes where it stopped, with the same numbers."""
import json

import pytest

from fastcon.cli import main
from fastcon.experiments import _tuning, is_resumable, run_experiment
from fastcon.experiments._checkpoint import TaskCheckpoints, task_key
from test_experiments import TINY, _strip_times

KW = dict(quick=True, seed=1, verbose=False, datasets=("compas",), **TINY)


class Interrupt(Exception):
    pass


def test_interrupted_run_resumes_with_identical_results(tmp_path, data_home, monkeypatch):
    real = _tuning.execute_task
    calls = []

    def counting(task):
        calls.append(task)
        return real(task)

    def failing_after(n):
        def run(task):
            if len(calls) == n:
                raise Interrupt  # the machine stops after n finished runs
            return counting(task)
        return run

    # Reference: one uninterrupted run.
    monkeypatch.setattr(_tuning, "execute_task", counting)
    ref = run_experiment("ssg-roc", out_dir=tmp_path / "ref", data_home=data_home, **KW)
    n_tasks = len(calls)
    assert not (tmp_path / "ref" / "checkpoints").exists()  # removed once the outputs are written
    assert ref["timing"]["resumed_runs"] == 0

    # Interrupted after 3 runs: 3 checkpoints, no results.
    calls.clear()
    monkeypatch.setattr(_tuning, "execute_task", failing_after(3))
    with pytest.raises(Interrupt):
        run_experiment("ssg-roc", out_dir=tmp_path / "cut", data_home=data_home, **KW)
    assert len(list((tmp_path / "cut" / "checkpoints").glob("*.json"))) == 3
    assert not (tmp_path / "cut" / "results.json").exists()

    # Without resume the checkpoints are ignored: interrupt again after one run.
    calls.clear()
    monkeypatch.setattr(_tuning, "execute_task", failing_after(1))
    with pytest.raises(Interrupt):
        run_experiment("ssg-roc", out_dir=tmp_path / "cut", data_home=data_home, **KW)

    # Resumed: only the missing runs execute, and the numbers equal the uninterrupted run's.
    calls.clear()
    monkeypatch.setattr(_tuning, "execute_task", counting)
    doc = run_experiment("ssg-roc", out_dir=tmp_path / "cut", data_home=data_home, resume=True, **KW)
    assert len(calls) == n_tasks - 3 and doc["timing"]["resumed_runs"] == 3
    resumed, fresh = (json.loads((tmp_path / f / "results.json").read_text()) for f in ("cut", "ref"))
    assert resumed.pop("timing")["resumed_runs"] == 3 and fresh.pop("timing")["resumed_runs"] == 0
    assert _strip_times(resumed) == _strip_times(fresh)
    assert not (tmp_path / "cut" / "checkpoints").exists()


def test_task_key_tracks_everything_that_changes_the_numbers(tmp_path):
    task = {"module": "m", "dataset": "compas", "build": {"max_rows": None}, "seed": 0, "method": "conex",
            "params": {"c1": 0.01}, "grid_index": 0, "run_seed": 5, "run": {"max_iter": 100}, "stationarity": None,
            "data_home": "/a", "erm": object()}
    key = task_key(task)
    assert key == task_key(dict(task, data_home="/b", erm=object()))  # where the data lives changes no number
    for field, value in [("seed", 1), ("params", {"c1": 0.02}), ("run", {"max_iter": 200}), ("run_seed", 6),
                         ("stationarity", {"n_points": 3}), ("dataset", "german"), ("build", {"max_rows": 10})]:
        assert task_key(dict(task, **{field: value})) != key, field
    # A truncated file (interrupted while writing) is treated as missing.
    ck = TaskCheckpoints(tmp_path / "ck", resume=True)
    ck.save(task, {"objective": float("nan"), "x": [1.0, float("inf")]})
    loaded = ck.load(task)
    assert loaded["x"] == [1.0, float("inf")] and loaded["objective"] != loaded["objective"]
    (tmp_path / "ck" / f"{key}.json").write_text('{"objective": 1.')
    assert ck.load(task) is None


def test_resume_is_refused_where_runs_are_not_checkpointed(tmp_path, capsys):
    assert is_resumable("ssg-roc") and is_resumable("ssg-wasserstein")
    assert not is_resumable("iqrc-mnpc")
    with pytest.raises(ValueError, match="resume: iqrc-mnpc"):
        run_experiment("iqrc-mnpc", quick=True, out_dir=tmp_path, resume=True)
    assert main(["reproduce", "iqrc-mnpc", "--quick", "--resume", "--out", str(tmp_path)]) == 2
    assert "does not checkpoint" in capsys.readouterr().err


def test_follow_up_tasks_overtake_the_waiting_ones(monkeypatch, tmp_path):
    order = []
    monkeypatch.setattr(_tuning, "execute_task", lambda task: order.append(task["dataset"]) or {"name": task["dataset"]})

    def follow_up(task, record):  # every task but "c" gets one follow-up (a winner's re-run)
        return [] if task["dataset"] in ("c", "a'", "b'") else [{"dataset": task["dataset"] + "'"}]

    tasks = [{"dataset": n} for n in "abc"]
    all_tasks, records = _tuning.run_tasks(tasks, 1, follow_up=follow_up)
    assert order == ["a", "a'", "b", "b'", "c"]  # each follow-up runs before the tasks still waiting
    assert [t["dataset"] for t in all_tasks] == [r["name"] for r in records] == ["a", "b", "c", "a'", "b'"]
    # Loaded records trigger their follow-ups too (a resumed run re-creates the re-run tasks).
    ck = TaskCheckpoints(tmp_path / "ck", resume=True)
    ck.save({"dataset": "a"}, {"name": "a"})
    order.clear()
    _, records = _tuning.run_tasks(tasks, 1, checkpoints=ck, follow_up=follow_up)
    assert order == ["a'", "b", "b'", "c"] and ck.loaded == 1
