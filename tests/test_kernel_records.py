"""Kernels that take module-level NamedTuple records (`_spider`, `_transport`): numba's on-disk cache.

numba keys a cached specialization by its argument types; a record's type holds its class, which
the cache pickles by reference to its module. The check that matters is the one a user sees: a
second process loads `spider_loop` and `transport_solve` from the cache instead of compiling them
again. Each run gets a fresh cache folder, so the first process must compile and the second must
not (neither half can pass on a cache that does not work).
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from fastcon._kernels._datafit import DatafitBundle
from fastcon._kernels._spider import SpiderBatches, SpiderParameters, SpiderState
from fastcon._kernels._transport import (
    TransportParameters, TransportScratch, TransportWorkspace, _scratch, project_transport, transport_workspace,
)

_CHILD = """
import json
import numpy as np
from fastcon._kernels._spider import spider_loop
from fastcon._kernels._transport import project_transport, transport_solve
from fastcon.datasets import make_fair_classification
from fastcon.problems import ConstrainedProblem, Whole, hinge_risk, less_equal, smoothed_demographic_parity
from fastcon.solvers import spider

D = make_fair_classification(200, 4, seed=0)
G = make_fair_classification(100, 4, seed=1)
p, u = G.subset(G.groups == 1), G.subset(G.groups == 0)
prob = ConstrainedProblem(hinge_risk(D), [less_equal(smoothed_demographic_parity(p, u), 0.02)], Whole(),
                          x0=np.zeros(4))
res = spider(prob, max_iter=20, seed=0)
P = project_transport(np.random.default_rng(0).uniform(size=(6, 6))).P
out = {"x": res.x.tolist(), "P": P.ravel().tolist()}
for name, kernel in (("spider_loop", spider_loop), ("transport_solve", transport_solve)):
    out[name] = {"hits": sum(kernel.stats.cache_hits.values()), "misses": sum(kernel.stats.cache_misses.values()),
                 "signatures": [str(s) for s in kernel.signatures]}
print(json.dumps(out))
"""


def _run(cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))
    env.pop("NUMBA_DISABLE_JIT", None)
    proc = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_second_process_loads_the_record_kernels_from_the_cache(tmp_path):
    first, second = _run(tmp_path), _run(tmp_path)
    for name, record in (("spider_loop", "SpiderState"), ("transport_solve", "TransportParameters")):
        assert first[name]["misses"] >= 1 and first[name]["hits"] == 0, first[name]   # a fresh folder: compiled
        assert second[name]["misses"] == 0 and second[name]["hits"] >= 1, second[name]  # loaded, not compiled
        assert second[name]["signatures"] == first[name]["signatures"]
        assert any(record in s for s in second[name]["signatures"])   # the records are the argument types
    assert second["x"] == first["x"] and second["P"] == first["P"]


def test_records_have_named_documented_fields():
    # the layout the kernels read by name; a field added, removed or reordered shows up here
    assert DatafitBundle._fields == ("kind", "loss", "indptr", "indices", "data", "y", "scale", "n_split", "starts",
                                     "anchors", "tops", "factors", "thresholds")
    assert SpiderState._fields == ("x", "x_prev", "est", "grad", "rng", "counters")
    assert SpiderParameters._fields == ("q", "step_size", "decay", "beta", "nu", "radius", "penalty", "lam", "g_abs",
                                        "level")
    assert SpiderBatches._fields == ("datafit", "sizes", "perm_a", "perm_b", "rows", "all_rows", "bufs")
    assert TransportParameters._fields == ("row_marginal", "column_marginal", "tol", "max_newton", "max_sweeps", "cold", "ray", "retry")
    assert TransportWorkspace._fields == ("work", "idx")
    for cls in (DatafitBundle, SpiderState, SpiderParameters, SpiderBatches, TransportParameters, TransportWorkspace,
                TransportScratch):
        assert cls.__doc__ and cls.__module__.startswith("fastcon._kernels.")


def test_transport_scratch_fields_are_views_of_the_workspace():
    m, n = 3, 5
    ws = transport_workspace(m, n)
    sc = _scratch(ws, m, n)
    assert isinstance(sc, TransportScratch)
    for i, name in enumerate(sc._fields[:18]):
        a = getattr(sc, name)
        assert a.shape == ((m,) if i % 2 == 0 else (n,)) and np.shares_memory(a, ws.work), name
    assert all(getattr(sc, name).shape == (m + n,) for name in ("t", "s", "cnt", "prev"))
    assert np.shares_memory(sc.idx, ws.idx)
    # block ascent reuses the CG residual's memory (it never runs inside CG); nothing else overlaps
    assert np.shares_memory(sc.prev, sc.ru) and np.shares_memory(sc.prev, sc.rv)
    halves = [getattr(sc, name) for name in sc._fields[:18]]
    assert not any(np.shares_memory(a, b) for i, a in enumerate(halves) for b in halves[i + 1:])


def test_transport_workspace_check_names_the_field():
    work, idx = transport_workspace(2, 2)
    with pytest.raises(ValueError, match="workspace: field idx"):
        project_transport(np.zeros((2, 2)), workspace=TransportWorkspace(work, idx[:-1]))
    with pytest.raises(ValueError, match="workspace: field work"):
        project_transport(np.zeros((2, 2)), workspace=TransportWorkspace(work[:, :3], idx))
    with pytest.raises(ValueError, match="workspace: expected transport_workspace"):
        project_transport(np.zeros((2, 2)), workspace=work)
    # the pair form gives the same projection as the record
    C = np.random.default_rng(0).uniform(size=(2, 2))
    assert np.array_equal(project_transport(C, workspace=(work, idx)).P, project_transport(C).P)
