"""The experiment driver (`fastcon.experiments._runner` + `._writer`): golden outputs, no import cycle.

Golden files
    ``tests/data/experiments/<name>.json`` hold what each of the four registered experiments reports,
    run with a configuration as small as the other experiment tests use (``GOLDEN``):

    * ``results``: its ``results.json``;
    * ``histories``: per history CSV, its number of rows and, per column, the number of recorded
      (non-empty) cells and the last recorded value: the numbers of the final iterate and of the last
      stationarity measurement, from which the results are built. Whole histories are not stored (a
      change in a solver's iterates shows in its final values).

    Numbers are compared to ``RTOL = 1e-10`` relative (``ATOL = 1e-13`` absolute), integers and text
    exactly. The tolerance is for other machines: OpenBLAS picks its kernels by CPU model, and an
    iterative method carries a one-ulp difference along (on an AMD EPYC host the values differed by at
    most 1.5e-12 relative). The runner pins BLAS and numba to one thread, so the number of cores does
    not change the numbers.

    Left out, because they are not computed results: ``timing`` and every key or history column whose
    name contains ``time`` (clock readings); ``created``, ``fastcon_version``, ``jobs`` (the jobs=2 run
    must equal the jobs=1 run); ``paper_claim`` and ``paper_claim_holds`` (verdicts decided by
    wall-clock time to a level). The iqrc-mnpc configuration stops the exact-penalty baseline by
    ``baseline_max_iter`` under a time budget it never reaches (``baseline_time_factor=1e6``): under
    the default rule its iteration count depends on the machine's speed.

Regenerate (only when a change of the numbers is intended) with
``python tests/test_experiment_driver.py OUT_FOLDER [NAME ...]`` and copy the files into tests/data/experiments.
"""
import ast
import csv
import json
import math
import sys
from pathlib import Path

import pytest

from fastcon.experiments import run_experiment

HERE = Path(__file__).resolve().parent
GOLDEN_DIR = HERE / "data" / "experiments"
PACKAGE = HERE.parent / "fastcon" / "experiments"

TINY = dict(max_iter=60, inner_iter=20, record_points=30, n_stationarity=3, stationarity_iter=20)
#: name -> keyword arguments of `run_experiment` (besides out_dir, data_home, verbose).
GOLDEN = {
    "ssg-roc": dict(quick=True, seed=3, datasets=("compas",), grid="middle", **TINY),
    "ssg-wasserstein": dict(quick=True, seed=0, datasets=("german",), **TINY),
    "spider-table2": dict(quick=True, seed=0, datasets=("compas",), cap_p1=200.0, cap_p2=200.0, max_iter_sto=400,
                          svio_every=50, svio_iter=30, beta_sweep=(10.0, 1000.0)),
    "iqrc-mnpc": dict(quick=True, seed=0, datasets=("segment",), max_rows=600, inner_iter=2000, outer_iter=2,
                      record_every=100, baseline_time_factor=1e6, baseline_max_iter=25),
}
#: Fields that differ between runs: timings, and verdicts decided by wall-clock time to a level.
_DROP = ("timing", "created", "fastcon_version", "jobs", "paper_claim", "paper_claim_holds")


def _strip(obj):
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if "time" not in k and k not in _DROP}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def _cell_value(text):
    """A history cell as JSON: an int for an integer cell, a float for another number, else the text."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def history_summary(path) -> dict:
    """Of the history CSV ``path``: its row count and, per column but the timings, the number of
    non-empty cells and the last non-empty one (a float, an int or text)."""
    with open(path, newline="") as fh:
        header, *rows = list(csv.reader(fh))
    count, last = {}, {}
    for j, name in enumerate(header):
        if "time" in name:
            continue
        cells = [row[j] for row in rows if row[j] != ""]
        count[name] = len(cells)
        if cells:
            last[name] = _cell_value(cells[-1])
    return {"rows": len(rows), "count": count, "last": last}


def comparable(out) -> dict:
    """results.json of folder ``out`` and the summaries of its history CSVs, without the timing fields."""
    out = Path(out)
    doc = json.loads((out / "results.json").read_text())
    histories = {run["history_csv"]: history_summary(out / run["history_csv"]) for run in doc["runs"]}
    return {"results": _strip(doc), "histories": histories}


def _run(name, out, data_home, **extra):
    run_experiment(name, out_dir=out, data_home=data_home, verbose=False, **dict(GOLDEN[name], **extra))
    return comparable(out)


def _golden(name):
    path = GOLDEN_DIR / f"{name}.json"
    return json.loads(path.read_text())


#: Round-off allowed between machines (see the module notes): relative, and absolute for values near 0.
RTOL, ATOL = 1e-10, 1e-13


def _assert_equal(got, want, where="outputs"):
    """``got == want`` up to `RTOL`/`ATOL` for floats, exactly for the rest, naming the first differing entry."""
    if got == want:
        return
    if isinstance(got, float) and isinstance(want, float) and (
            math.isclose(got, want, rel_tol=RTOL, abs_tol=ATOL) or (math.isnan(got) and math.isnan(want))):
        return
    if isinstance(got, dict) and isinstance(want, dict):
        assert set(got) == set(want), f"{where}: keys differ: {sorted(set(got) ^ set(want))}"
        for k in want:
            _assert_equal(got[k], want[k], f"{where}.{k}")
        return
    if isinstance(got, list) and isinstance(want, list):
        assert len(got) == len(want), f"{where}: {len(got)} entries, golden {len(want)}"
        for i, (x, y) in enumerate(zip(got, want)):
            _assert_equal(x, y, f"{where}[{i}]")
        return
    raise AssertionError(f"{where}: {got!r} != golden {want!r}")


def test_golden_comparison_allows_round_off_only():
    _assert_equal({"a": [0.1 + 0.2, 1e-14, math.nan]}, {"a": [0.3, 0.0, math.nan]})        # ulps, near 0, NaN
    for got, want in ((1.0 + 1e-9, 1.0), (1e-12, 0.0), (3, 4), ("0.30000000000000004", "0.3"), ("a", "b"),
                      ([1.0], [1.0, 2.0]), ({"a": 1.0}, {"b": 1.0})):
        with pytest.raises(AssertionError):
            _assert_equal({"x": got}, {"x": want})


def test_history_summary_keeps_the_last_recorded_cell_of_each_column(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("iteration,time,objective,step_kind,stationarity\r\n"
                    "0,0.1,1.5,g,\r\n2,0.2,1.25,f,0.5\r\n3,,,,0.25\r\n")
    assert history_summary(path) == {
        "rows": 3, "count": {"iteration": 3, "objective": 2, "step_kind": 2, "stationarity": 2},
        "last": {"iteration": 3, "objective": 1.25, "step_kind": "f", "stationarity": 0.25}}


@pytest.mark.parametrize("name", list(GOLDEN))
def test_outputs_equal_the_golden_files(name, tmp_path, data_home):
    _assert_equal(_run(name, tmp_path / "out", data_home), _golden(name))


def test_two_jobs_equal_one_job(tmp_path, data_home):
    """jobs=2 (spawned workers, each with its own problem instances) gives the golden numbers too."""
    _assert_equal(_run("ssg-wasserstein", tmp_path / "out", data_home, jobs=2), _golden("ssg-wasserstein"))


def test_spider_two_jobs_equal_one_job(tmp_path, data_home):
    _assert_equal(_run("spider-table2", tmp_path / "out", data_home, jobs=2), _golden("spider-table2"))


def _threads(task):
    """A task that reports the numba and BLAS thread counts it runs with (module level: workers import it)."""
    import numba
    from threadpoolctl import threadpool_info

    return {"numba": numba.get_num_threads(), "blas": sorted({i["num_threads"] for i in threadpool_info()})}


def test_one_numba_and_one_blas_thread_in_workers_and_in_the_serial_path():
    import numba

    from fastcon.experiments._runner import pinned_threads, run_tasks

    before = numba.get_num_threads()
    with pinned_threads():
        _, serial = run_tasks([{}], _threads, jobs=1)
    assert numba.get_num_threads() == before  # restored
    _, pooled = run_tasks([{"a": 0}, {"a": 1}], _threads, jobs=2)
    assert serial + pooled == [{"numba": 1, "blas": [1]}] * 3


# ------------------------------------------------------------------------------- import graph
def _module_name(path):
    return "fastcon.experiments" + ("" if path.stem == "__init__" else "." + path.stem)


def _resolve(module, node, is_package, modules):
    """The modules of ``modules`` that ``node`` (an Import/ImportFrom inside ``module``) imports.

    ``from . import _writer`` imports the submodule ``_writer``; ``from ._writer import x`` the
    module ``_writer``. The parent package that every submodule import loads first is not counted
    (it is an edge of every import, and __init__ is always loaded before its submodules).
    """
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name in modules]
    if node.level == 0:
        base = node.module
    else:
        parts = module.split(".")
        if not is_package:
            parts = parts[:-1]
        parts = parts[:len(parts) - (node.level - 1)]
        base = ".".join(parts + ([node.module] if node.module else []))
    found = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in modules]
    if len(found) < len(node.names) and base in modules:
        found.append(base)  # some names are attributes of ``base``: it is imported
    return found


def import_graph():
    """``{module: set of modules of fastcon.experiments it imports}``, function-level imports included."""
    modules = {_module_name(p): p for p in sorted(PACKAGE.glob("*.py"))}
    graph = {}
    for name, path in modules.items():
        edges = set()
        for node in ast.walk(ast.parse(path.read_text())):  # every import, at any depth
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges.update(t for t in _resolve(name, node, path.stem == "__init__", modules) if t != name)
        graph[name] = edges
    return graph


def _cycle(graph):
    """One import cycle of ``graph`` as a list of modules, or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_import_graph_of_the_experiments_package_is_acyclic():
    graph = import_graph()
    assert "fastcon.experiments._runner" in graph and "fastcon.experiments._writer" in graph
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))
    # The shared modules sit at the bottom: the writer and the time-left bookkeeping import nothing
    # of the package, the runner only those two.
    assert graph["fastcon.experiments._writer"] == set()
    assert graph["fastcon.experiments._time_left"] == set()
    assert graph["fastcon.experiments._runner"] == {"fastcon.experiments._writer", "fastcon.experiments._time_left"}
    assert "fastcon.experiments._tuning" in graph["fastcon.experiments._figure"]  # the graph sees the edges


_IMPORT_EACH_FIRST = """
import importlib, sys
names = sys.argv[1:]
for first in names:
    for loaded in [m for m in sys.modules if m == "fastcon.experiments" or m.startswith("fastcon.experiments.")]:
        del sys.modules[loaded]
    importlib.import_module(first)  # an import cycle fails here when `first` starts it
    for other in names:
        importlib.import_module(other)
"""


def test_every_module_imports_first_in_a_fresh_package():
    """Each module imported before the others (a cycle of module-level imports fails in some order)."""
    import subprocess

    names = sorted(import_graph())
    proc = subprocess.run([sys.executable, "-c", _IMPORT_EACH_FIRST, *names], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr


def test_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
    # a function-level import is an edge too, in both spellings
    modules = {"fastcon.experiments", "fastcon.experiments._writer", "fastcon.experiments.x"}
    for source in ("def f():\n    from . import _writer\n", "def f():\n    from ._writer import pyplot\n",
                   "def f():\n    import fastcon.experiments._writer\n"):
        node = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, (ast.Import, ast.ImportFrom)))
        assert _resolve("fastcon.experiments.x", node, False, modules) == ["fastcon.experiments._writer"], source


if __name__ == "__main__":  # regenerate the golden files into the folder given on the command line
    target = Path(sys.argv[1])
    target.mkdir(parents=True, exist_ok=True)
    for experiment in sys.argv[2:] or GOLDEN:
        import time

        t0 = time.perf_counter()
        snapshot = _run(experiment, target / f"{experiment}-out", None)
        (target / f"{experiment}.json").write_text(json.dumps(snapshot, indent=1, sort_keys=True) + "\n")
        print(f"{experiment}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
