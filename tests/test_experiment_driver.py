"""The experiment driver (`fastcon.experiments._runner` + `._writer`): outputs as golden files, no import cycle.

Golden files
    ``tests/data/experiments/<name>.json`` hold the outputs of the four registered experiments, each
    with a configuration as small as the other experiment tests use (``GOLDEN``), as computed by
    the three drivers that `_runner` replaced (fastcon at commit 41ebbfb, before the refactoring,
    run with ``OPENBLAS_NUM_THREADS=1``). On the machine that wrote them every value stayed *equal*
    (``==``): the refactoring moved code, it changed no arithmetic. Other CPUs round differently
    (OpenBLAS picks its kernels by CPU model): on an AMD EPYC (AVX2) host 245 of the values differ
    in the last digits, at most 2.8e-15 relative in the JSON and 1.5e-12 relative (9e-16 absolute
    for values near 1e-7) in the iqrc histories, where an iterative method carries a one-ulp
    difference along. Numbers are therefore compared to ``RTOL = 1e-10`` relative (``ATOL = 1e-13``
    absolute), text and integers exactly. Why one BLAS thread: the runner now pins BLAS to one
    thread in every experiment, where the old grid driver left OpenBLAS at its default (2 threads
    here), and the near-stationarity solves of the Wasserstein problem reduce vectors long enough
    for OpenBLAS to split them: 37 cells of the 41ebbfb ssg-wasserstein outputs (the
    ``multiplier_norm`` column among them) differ by one ulp between 2 threads and 1; the other
    three experiments give the same bits under both. The ssg-wasserstein file was regenerated
    three times since, each time by a change of the transport projection's iterations (same solution
    to the tolerance 1e-10; every value within 1e-12 relative of the former file).

    Left out (`comparable`), because they are not computed results:

    * ``timing`` and every key whose name contains ``time`` (``wall_time_s``, ``cpu_time_s``,
      ``algorithm_time_s``, ``svio_time_s``, ``stationarity_time_s``, ``time_s``, ``time_to_target_s``,
      ``time_budget_s``, ``wall_time_ratio``, and the constant text ``time_axis``): clock readings;
    * ``created`` (the date), ``fastcon_version`` (changes with every release, not with the numbers)
      and ``jobs`` (the jobs=2 run must equal the jobs=1 run);
    * the history CSV columns whose name contains ``time`` (``time``, iqrc's ``wall_time``); every
      other cell is compared as written, text for text.

    The iqrc-mnpc configuration gives the exact-penalty baseline a time budget it never reaches
    (``baseline_time_factor=1e6``) and stops it by ``baseline_max_iter`` instead: under the default
    rule (as long as IQRC ran) its iteration count depends on the machine's speed.

Regenerate (only when a change of the numbers is intended) with
``python tests/test_experiment_driver.py OUT_FOLDER`` and copy the files into tests/data/experiments.
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


def comparable(out) -> dict:
    """results.json of folder ``out`` and its history CSVs (as text), without the timing fields."""
    out = Path(out)
    doc = json.loads((out / "results.json").read_text())
    histories = {}
    for run in doc["runs"]:
        with open(out / run["history_csv"], newline="") as fh:
            rows = list(csv.reader(fh))
        keep = [i for i, name in enumerate(rows[0]) if "time" not in name]
        histories[run["history_csv"]] = [[row[i] for i in keep] for row in rows]
    return {"results": _strip(doc), "histories": histories}


def _run(name, out, data_home, **extra):
    run_experiment(name, out_dir=out, data_home=data_home, verbose=False, **dict(GOLDEN[name], **extra))
    return comparable(out)


def _golden(name):
    path = GOLDEN_DIR / f"{name}.json"
    return json.loads(path.read_text())


#: Round-off allowed between machines (see the module notes): relative, and absolute for values near 0.
RTOL, ATOL = 1e-10, 1e-13


def _as_number(value):
    """A float for a JSON float or a non-integer numeric CSV cell; None for anything else (compared as is)."""
    if isinstance(value, float):
        return value
    if isinstance(value, str) and not value.lstrip("-").isdigit():   # integer cells stay exact
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _assert_equal(got, want, where="outputs"):
    """``got == want`` up to `RTOL`/`ATOL` for numbers, exactly for the rest, naming the first differing entry."""
    if got == want:
        return
    a, b = _as_number(got), _as_number(want)
    if a is not None and b is not None and (math.isclose(a, b, rel_tol=RTOL, abs_tol=ATOL)
                                            or (math.isnan(a) and math.isnan(b))):
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
    _assert_equal({"a": [0.1 + 0.2, "0.30000000000000004"]}, {"a": [0.3, "0.3"]})        # ulps
    for got, want in ((1.0 + 1e-9, 1.0), ("1.000000001", "1.0"), (3, 4), ("24", "25"), ("a", "b"), ([1.0], [1.0, 2.0])):
        with pytest.raises(AssertionError):
            _assert_equal({"x": got}, {"x": want})


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
        (target / f"{experiment}.json").write_text(json.dumps(snapshot, indent=0, sort_keys=True) + "\n")
        print(f"{experiment}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
