"""Checkpoints of the grid experiments: an interrupted run resumes where it stopped, with the same numbers."""
import json

import pytest

from fastcon.cli import main
from fastcon.experiments import _runner, _tuning, is_resumable, run_experiment, ssg_roc
from fastcon.experiments._runner import TaskCheckpoints, task_key
from test_experiments import TINY, _strip_times

KW = dict(quick=True, seed=1, verbose=False, datasets=("compas",), **TINY)


class Interrupt(Exception):
    pass


def test_interrupted_run_resumes_with_identical_results(tmp_path, data_home, monkeypatch):
    real = ssg_roc.execute
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
    monkeypatch.setattr(ssg_roc, "execute", counting)
    ref = run_experiment("ssg-roc", out_dir=tmp_path / "ref", data_home=data_home, **KW)
    n_tasks = len(calls)
    assert not (tmp_path / "ref" / "checkpoints").exists()  # removed once the outputs are written
    assert ref["timing"]["resumed_runs"] == 0

    # Interrupted after 3 runs: 3 checkpoints, no results.
    calls.clear()
    monkeypatch.setattr(ssg_roc, "execute", failing_after(3))
    with pytest.raises(Interrupt):
        run_experiment("ssg-roc", out_dir=tmp_path / "cut", data_home=data_home, **KW)
    assert len(list((tmp_path / "cut" / "checkpoints").glob("*.json"))) == 3
    assert not (tmp_path / "cut" / "results.json").exists()

    # Without resume the checkpoints are ignored: interrupt again after one run.
    calls.clear()
    monkeypatch.setattr(ssg_roc, "execute", failing_after(1))
    with pytest.raises(Interrupt):
        run_experiment("ssg-roc", out_dir=tmp_path / "cut", data_home=data_home, **KW)

    # Resumed: only the missing runs execute, and the numbers equal the uninterrupted run's.
    calls.clear()
    monkeypatch.setattr(ssg_roc, "execute", counting)
    doc = run_experiment("ssg-roc", out_dir=tmp_path / "cut", data_home=data_home, resume=True, **KW)
    assert len(calls) == n_tasks - 3 and doc["timing"]["resumed_runs"] == 3
    resumed, fresh = (json.loads((tmp_path / f / "results.json").read_text()) for f in ("cut", "ref"))
    assert resumed.pop("timing")["resumed_runs"] == 3 and fresh.pop("timing")["resumed_runs"] == 0
    assert _strip_times(resumed) == _strip_times(fresh)
    assert not (tmp_path / "cut" / "checkpoints").exists()


def test_task_key_tracks_everything_that_changes_the_numbers(tmp_path):
    task = {"module": "m", "dataset": "compas", "build": {"max_rows": None}, "seed": 0, "method": "conex",
            "params": {"c1": 0.01}, "grid_index": 0, "run_seed": 5, "run": {"max_iter": 100}, "stationarity": None,
            "data_home": "/a", "erm": object(), "builder": ssg_roc.build, "download": None}
    fields = _tuning.CHECKPOINT_FIELDS
    assert ssg_roc.CHECKPOINT_FIELDS == fields
    key = task_key(task, fields)
    # where the data lives, the ERM object and the builder change no number
    assert key == task_key(dict(task, data_home="/b", erm=object(), builder=None, download=False), fields)
    for field, value in [("seed", 1), ("params", {"c1": 0.02}), ("run", {"max_iter": 200}), ("run_seed", 6),
                         ("stationarity", {"n_points": 3}), ("dataset", "german"), ("build", {"max_rows": 10})]:
        assert task_key(dict(task, **{field: value}), fields) != key, field
    # Without fields every field counts.
    plain = {"dataset": "a", "kappa": 0.1}
    assert task_key(plain) != task_key(dict(plain, kappa=0.2)) and task_key(plain) == task_key(dict(plain))
    # A truncated file (interrupted while writing) is treated as missing.
    ck = TaskCheckpoints(tmp_path / "ck", resume=True, fields=fields)
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


def test_follow_up_tasks_overtake_the_waiting_ones(tmp_path):
    order = []
    def execute(task):
        order.append(task["dataset"])
        return {"name": task["dataset"]}

    def follow_up(task, record):  # every task but "c" gets one follow-up (a winner's re-run)
        return [] if task["dataset"] in ("c", "a'", "b'") else [{"dataset": task["dataset"] + "'"}]

    tasks = [{"dataset": n} for n in "abc"]
    all_tasks, records = _runner.run_tasks(tasks, execute, 1, follow_up=follow_up)
    assert order == ["a", "a'", "b", "b'", "c"]  # each follow-up runs before the tasks still waiting
    assert [t["dataset"] for t in all_tasks] == [r["name"] for r in records] == ["a", "b", "c", "a'", "b'"]
    # Loaded records trigger their follow-ups too (a resumed run re-creates the re-run tasks).
    ck = TaskCheckpoints(tmp_path / "ck", resume=True)
    ck.save({"dataset": "a"}, {"name": "a"})
    order.clear()
    _, records = _runner.run_tasks(tasks, execute, 1, checkpoints=ck, follow_up=follow_up)
    assert order == ["a'", "b", "b'", "c"] and ck.loaded == 1


def test_progress_counts_loaded_and_run_records(tmp_path):
    seen = []
    ck = TaskCheckpoints(tmp_path / "ck", resume=True)
    ck.save({"dataset": "b"}, {"name": "b"})
    tasks = [{"dataset": n} for n in "abc"]
    _runner.run_tasks(tasks, lambda task: {"name": task["dataset"]}, 1, checkpoints=ck,
                      progress=lambda done, total, fresh: seen.append((done, total, fresh)))
    # "b" is loaded while the tasks are queued, then "a" and "c" run
    assert seen == [(1, 3, 0), (2, 3, 1), (3, 3, 2)]


def test_duration_reads_as_a_person_would_say_it():
    assert [_runner._duration(s) for s in (0.4, 40, 59.6, 60, 754, 3600, 11_130)] == [
        "0 s", "40 s", "1 min", "1 min", "12 min", "1 h 00 min", "3 h 05 min"]


def _tiny_compas_config(monkeypatch):
    """`fastcon reproduce ssg-roc --quick` on COMPAS alone with TINY budgets and the middle grid point of every
    method: 5 grid runs + 5 re-runs."""
    from fastcon.experiments import ssg_roc

    quick_config = ssg_roc.config
    monkeypatch.setattr(ssg_roc, "config", lambda quick=False: dict(quick_config(quick), datasets=("compas",),
                                                                    grid="middle", **TINY))


@pytest.mark.datasets("compas")
def test_ctrl_c_says_what_is_saved_and_resume_continues(tmp_path, data_home, monkeypatch, capsys):
    _tiny_compas_config(monkeypatch)
    real, calls = ssg_roc.execute, []

    def ctrl_c_after_3(task):
        if len(calls) == 3:
            raise KeyboardInterrupt
        calls.append(task)
        return real(task)

    monkeypatch.setattr(ssg_roc, "execute", ctrl_c_after_3)
    out = tmp_path / "out"
    argv = ["reproduce", "ssg-roc", "--quick", "--quiet", "--out", str(out), "--data-home", str(data_home)]
    assert main(argv) == 130
    assert capsys.readouterr().err == (f"fastcon reproduce: interrupted: 3 of 10 runs saved in {out / 'checkpoints'}; "
                                       "run the same command with --resume to continue\n")
    assert len(list((out / "checkpoints").glob("*.json"))) == 3

    # Interrupted again before a new run finishes: the earlier records are still there for --resume.
    calls[:] = [None] * 3
    assert main(argv) == 130
    err = capsys.readouterr().err
    assert err.startswith("fastcon reproduce: interrupted: no new run saved; the 3 runs saved earlier in ")

    calls.clear()
    monkeypatch.setattr(ssg_roc, "execute", lambda task: calls.append(task) or real(task))
    assert main(argv + ["--resume"]) == 0
    assert len(calls) == 7 and (out / "results.json").exists() and not (out / "checkpoints").exists()


def test_ctrl_c_while_the_problems_are_built(tmp_path, data_home, monkeypatch):
    from fastcon.experiments import ExperimentInterrupted, ssg_roc

    _tiny_compas_config(monkeypatch)

    def build(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(ssg_roc, "build", build)
    with pytest.raises(ExperimentInterrupted) as info:
        run_experiment("ssg-roc", quick=True, out_dir=tmp_path, data_home=data_home, verbose=False)
    assert info.value.message == "interrupted: nothing saved" and isinstance(info.value, KeyboardInterrupt)


# Run by test_sigint_stops_parent_and_workers as a script, so that the spawned workers import it too
# (the experiment's `execute` is pickled by reference): every run but the static SSG grid point sleeps.
_SIGINT_DRIVER = '''
import signal
import sys
import time

from fastcon.experiments import ssg_roc

_real = ssg_roc.execute


def slow_but_one(task):
    if task["method"] != "ssg_static" or task.get("stationarity"):
        time.sleep(120)
    return _real(task)


if __name__ == "__main__":
    # A terminal's foreground job has SIGINT's default handler. A process started from a background
    # job of a non-interactive shell (`cmd &`, as a CI script may start pytest) inherits SIGINT
    # ignored, and Python then installs no handler: the Ctrl-C sent here would be ignored, as the
    # shell intends for background jobs. (Not at import: the spawned workers import this file.)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    _quick = ssg_roc.config
    ssg_roc.config = lambda quick=False: dict(_quick(quick), datasets=("compas",), grid="middle", **%r)
    ssg_roc.execute = slow_but_one
    from fastcon.cli import main
    sys.exit(main(sys.argv[1:]))
''' % (TINY,)


def _processes():
    """``(pid, state, ppid, pgid, command line)`` of every process (Linux /proc)."""
    import os

    rows = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    state, ppid, pgid = fh.read().rsplit(")", 1)[1].split()[:3]
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:  # gone meanwhile
                continue
            rows.append((int(entry), state, int(ppid), int(pgid), cmd))
    return rows


def _live_processes_in_group(pgid):
    """PIDs of the processes of group ``pgid`` that are not zombies."""
    return [pid for pid, state, _, group, _ in _processes() if group == pgid and state != "Z"]


@pytest.mark.skipif(not __import__("os").path.isdir("/proc"), reason="reads /proc to find the worker processes")
@pytest.mark.datasets("compas")
def test_sigint_stops_parent_and_workers(tmp_path, data_home):
    """A real Ctrl-C (SIGINT to the process group, as a terminal sends it) during a 2-process grid."""
    import os
    import signal
    import subprocess
    import sys
    import time

    driver = tmp_path / "driver.py"
    driver.write_text(_SIGINT_DRIVER)
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, str(driver), "reproduce", "ssg-roc", "--quick", "--quiet", "--jobs", "2",
                             "--out", str(out), "--data-home", str(data_home)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 180  # on a cold numba cache and a loaded 2-core host, over 60 s
        while not list(out.glob("checkpoints/*.json")):  # the one fast run is saved; the others sleep
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no run finished in 180 s"
            time.sleep(0.05)
        workers = [pid for pid, _, ppid, _, cmd in _processes() if ppid == proc.pid and "spawn_main" in cmd]
        assert len(workers) == 2
        # Workers ignore SIGINT: one sent to them alone changes nothing (a worker that took it
        # would hand a KeyboardInterrupt back to the parent, which would then stop).
        for pid in workers:
            os.kill(pid, signal.SIGINT)
        time.sleep(1.0)
        assert proc.poll() is None and set(workers) <= set(_live_processes_in_group(proc.pid))
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130
    assert "Traceback" not in stderr and stdout == ""
    assert stderr == (f"fastcon reproduce: interrupted: 1 of 10 runs saved in {out / 'checkpoints'}; "
                      "run the same command with --resume to continue\n")
    deadline = time.monotonic() + 10
    while _live_processes_in_group(proc.pid) and time.monotonic() < deadline:  # the workers were terminated
        time.sleep(0.05)
    assert _live_processes_in_group(proc.pid) == []


def test_interrupted_message_variants(tmp_path):
    ck = TaskCheckpoints(tmp_path / "ck")
    assert ck.interrupted_message() == "interrupted: nothing saved"
    ck.save({"dataset": "a"}, {"x": 1})
    assert ck.interrupted_message().startswith("interrupted: 1 runs saved in ")  # the number of runs is not known
    ck.total = 4
    assert ck.interrupted_message() == (f"interrupted: 1 of 4 runs saved in {tmp_path / 'ck'}; run the same command "
                                        "with --resume to continue")
    again = TaskCheckpoints(tmp_path / "ck")
    again.total = 4
    assert again.interrupted_message().startswith("interrupted: no new run saved; the 1 runs saved earlier in ")
    ck.clear()
    assert ck.interrupted_message() == "interrupted: the outputs were already written"
