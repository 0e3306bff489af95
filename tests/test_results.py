"""SolveResult, History, Counters and the progress display."""
import io
import json
import math

import numpy as np
import pytest

from fastcon import SolveResult
from fastcon._progress import Progress
from fastcon._results import Counters, History


def _history():
    h = History(record_every=2)
    for it in range(7):
        h.record(it, objective=1.0 / (it + 1), max_violation=max(0.0, 0.5 - 0.1 * it), step_kind="f")
    h.record(6, force=True, objective=0.0)  # same iteration again: ignored
    h.record(7, force=True, objective=0.1, max_violation=0.0, step_kind="g", extra=3.0)
    return h


def test_history_sampling_and_late_columns():
    arrays = _history().as_arrays()
    np.testing.assert_array_equal(arrays["iteration"], [0, 2, 4, 6, 7])
    np.testing.assert_allclose(arrays["objective"], [1, 1 / 3, 1 / 5, 1 / 7, 0.1])
    assert list(arrays["step_kind"]) == ["f", "f", "f", "f", "g"]
    assert np.isnan(arrays["extra"][:4]).all() and arrays["extra"][4] == 3.0
    assert np.all(np.diff(arrays["time"]) >= 0)
    for bad in (0, 2.5, True, -1):
        with pytest.raises(ValueError, match="record_every"):
            History(record_every=bad)
    assert History(record_every=np.int64(3)).record_every == 3


def test_statuses():
    from fastcon._results import STATUSES

    assert "no_feasible_iterate" in STATUSES and "max_iter" in STATUSES
    r = SolveResult(np.zeros(1), "no_feasible_iterate", "g = 0.1")
    assert not r.success
    with pytest.raises(ValueError, match="status"):
        SolveResult(np.zeros(1), "infeasible_start")  # retired: a failed feasibility search is no_feasible_iterate


def test_counters_data_passes():
    c = Counters(n_samples_f=100, n_samples_g=50)
    c.add("rows_f", 250)
    c.add("rows_g", 50)
    c.add("objective_steps")
    d = c.as_dict()
    assert d["data_passes_f"] == 2.5 and d["data_passes_g"] == 1.0 and d["objective_steps"] == 1


def test_result_json_roundtrip(tmp_path):
    r = SolveResult(np.array([1.0, -2.0]), "max_iter", "done", n_iter=7, objective=0.1,
                    max_violation=math.inf, history=_history(), counters=Counters(10, 10), solver="toy")
    d = json.loads(r.to_json(tmp_path / "r.json"))
    assert d["x"] == [1.0, -2.0] and d["status"] == "max_iter" and d["max_violation"] is None
    assert d["history"]["extra"][:4] == [None] * 4  # NaN -> null, JSON stays valid
    assert json.loads((tmp_path / "r.json").read_text()) == d
    r.history_csv(tmp_path / "h.csv")
    lines = (tmp_path / "h.csv").read_text().splitlines()
    assert lines[0].startswith("iteration,time,objective") and len(lines) == 6
    assert r.success and "toy" in repr(r)
    with pytest.raises(ValueError, match="status"):
        SolveResult([0.0], "fine")


def test_plot_writes_png(tmp_path):
    pytest.importorskip("matplotlib")
    r = SolveResult(np.zeros(2), "converged", history=_history(), solver="toy")
    fig = r.plot()
    fig.savefig(tmp_path / "h.png")
    assert (tmp_path / "h.png").stat().st_size > 1000
    with pytest.raises(ValueError, match="keys"):
        r.plot(keys=("nothing",))


def test_plot_without_matplotlib_says_how_to_install(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("no matplotlib")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    r = SolveResult(np.zeros(2), "converged", history=_history())
    with pytest.raises(ImportError, match=r"pip install 'fastcon\[plot\]'"):
        r.plot()


def test_progress_lines():
    out = io.StringIO()
    with Progress(100, verbose="lines", desc="ssg", stream=out) as p:
        for it in range(100):
            p.update(it, objective=1.0 / (it + 1))
    text = out.getvalue().splitlines()
    assert len(text) == 20 and text[-1].startswith("ssg it 100/100")
    silent = io.StringIO()
    p = Progress(10, verbose=False, stream=silent)
    p.update(3, objective=1.0)
    assert not p.active and silent.getvalue() == ""
