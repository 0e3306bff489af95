"""fastcon inside someone else's program (issue 33, item 2): what ``import fastcon`` and a fit leave behind.

* ``import fastcon`` changes no environment variable and imports neither ``scipy.stats``,
  ``scipy.optimize``, ``scipy.special``, ``scipy.linalg`` nor ``threadpoolctl``; nor the paper reproductions (``fastcon.experiments``),
  the command line or an optional dependency (scikit-learn, matplotlib, dask, xgboost, ...);
* numba's threading layer is fork-safe unless the user chose one (tbb, whose wheel fastcon depends
  on for x86-64 Linux, else workqueue): a ``fork`` pool after a fit completes under both (it hung
  with GNU OpenMP, numba's default on Linux without tbb);
* two Python threads fitting at once do not abort the process (numba's workqueue layer is not
  thread-safe; fastcon serializes its parallel launches while that layer is in use);
* the umbrella rank's binomial tail is ``scipy.stats.binom.sf`` to the bit without importing it;
* no test asserts a wall-clock bound (speed lives in ``bench/``).

The checks that need a fresh interpreter, or could hang or abort it, run in a subprocess with a
timeout.
"""
import ast
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO

TIMEOUT = 120  # s: a hang must fail the test, not stall the session


def _run(code, *args, timeout=TIMEOUT, **env):
    """Run ``code`` in a fresh interpreter (its own process group); returns the CompletedProcess.

    A timeout fails the test after killing the group: the interpreter and any pool workers it forked.
    """
    environ = {k: v for k, v in os.environ.items() if k not in ("NUMBA_THREADING_LAYER", "OMP_WAIT_POLICY")}
    environ.update(env)
    cmd = [sys.executable, "-c", textwrap.dedent(code), *map(str, args)]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environ,
                          cwd=str(REPO), start_new_session=True) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            pytest.fail(f"no answer within {timeout} s (hung); stderr:\n{err[-2000:]}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _ok(proc):
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout[-2000:]}\nstderr:\n{proc.stderr[-3000:]}"
    return proc.stdout


# ------------------------------------------------------------------------------- import fastcon
def test_import_leaves_environment_and_heavy_modules_alone():
    out = _ok(_run("""
        import os, sys
        before = dict(os.environ)
        import fastcon
        import numba
        changed = sorted(k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k))
        heavy = sorted(m for m in sys.modules if m.split(".")[0] == "threadpoolctl"
                       or m.startswith(("scipy.stats", "scipy.optimize", "scipy.special", "scipy.linalg")))
        print(changed, heavy, numba.config.THREADING_LAYER)
    """))
    assert out.split() == ["[]", "[]", "forksafe"], out


#: What ``import fastcon`` must not load: the command line and the paper reproductions, and the optional
#: dependencies (the extras; fastcon imports each inside the function that needs it).
_NOT_ON_IMPORT = """
    import sys
    {before}
    ours = sorted(m for m in sys.modules if m.startswith("fastcon.experiments")
                  or m in ("fastcon.cli", "fastcon.demo", "fastcon.__main__"))
    optional = sorted({{m.split(".")[0] for m in sys.modules}}
                      & {{"sklearn", "matplotlib", "dask", "distributed", "xgboost", "lightgbm", "pandas", "tqdm"}})
    print(ours, optional)
"""


def test_import_loads_neither_the_experiments_nor_the_command_line_nor_optional_dependencies():
    """The static contracts (tests/test_import_contracts.py) checked at run time, where a lazy or dynamic import shows."""
    assert _ok(_run(_NOT_ON_IMPORT.format(before="import fastcon"))).split() == ["[]", "[]"]
    # the check sees them when they are loaded
    out = _ok(_run(_NOT_ON_IMPORT.format(before="import fastcon.cli, fastcon.experiments, sklearn")))
    assert "'fastcon.cli'" in out and "'fastcon.experiments'" in out and "'sklearn'" in out, out


def test_star_import_works_without_scikit_learn():
    """``from fastcon import *`` on a core install: the names that need scikit-learn are left out of
    ``__all__`` when it is not installed (here: made unimportable), present when it is."""
    hide = """
        import sys
        sys.modules["sklearn"] = None  # import sklearn raises ImportError, find_spec answers None
    """
    star = """
        from fastcon import *
        import fastcon
        print(sorted({"FairClassifier", "load_model", "estimators"} & set(fastcon.__all__)), switching_subgradient.__name__)
    """
    assert _ok(_run(hide + star)).split() == ["[]", "switching_subgradient"]
    assert _ok(_run(star)).split() == ["['FairClassifier',", "'estimators',", "'load_model']", "switching_subgradient"]


def test_heavy_modules_still_load_when_needed():
    # the solvers that use them import them at call time
    out = _ok(_run("""
        import sys
        import numpy as np
        import fastcon
        from fastcon.datasets import make_fair_classification
        from fastcon.problems import erm_optimum
        from fastcon.solvers.augmented_lagrangian import augmented_lagrangian
        erm = erm_optimum(make_fair_classification(n_samples=60, n_features=3, seed=0))
        print(erm.status, "scipy.optimize" in sys.modules)
    """))
    assert out.split() == ["optimal", "True"], out


@pytest.mark.parametrize("how", ["environment", "config"])
def test_a_threading_layer_the_user_chose_is_kept(how):
    set_config = "numba.config.THREADING_LAYER = 'omp'" if how == "config" else ""
    env = {"NUMBA_THREADING_LAYER": "omp"} if how == "environment" else {}
    out = _ok(_run(f"""
        import numba
        {set_config}
        import numpy as np
        import fastcon
        from fastcon._kernels import _linalg
        print(numba.config.THREADING_LAYER)
        X = np.ones((4000, 80)); w = np.ones(80); out = np.empty(4000)
        _linalg.dense_matvec(X, None, w, out)   # 320k entries: two chunks, a parallel launch
        print(numba.threading_layer(), out[0])
    """, **env))
    assert out.split() == ["omp", "omp", "80.0"], out


def test_choice_survives_a_numba_environment_change_after_import():
    # numba re-reads NUMBA_* variables at the next compilation, which would reset the layer
    out = _ok(_run("""
        import os
        import numba
        import numpy as np
        import fastcon
        from fastcon._kernels import _linalg
        os.environ["NUMBA_DEBUG_CACHE"] = "0"
        X = np.ones((4000, 80)); w = np.ones(80); out = np.empty(4000)
        _linalg.dense_matvec(X, None, w, out)
        print(numba.threading_layer())
    """))
    assert out.split()[-1] in ("workqueue", "tbb"), out


# ------------------------------------------------------------------------------- fork after a fit
_FORK_AFTER_FIT = """
    import multiprocessing
    import sys
    import numba
    import numpy as np
    import fastcon
    from fastcon.problems import hinge_risk

    train = fastcon.load("a9a", subset="train", data_home=sys.argv[1])
    clf = fastcon.FairClassifier("demographic_parity", bound=0.05).fit(
        train.X, train.y, sensitive_features=train.groups)
    risk = hinge_risk(train)
    w = np.asarray(clf.coef_, dtype=np.float64).ravel()

    def child(k):
        grad = np.empty_like(w)
        value = risk.value_and_subgradient(w * (1 + k), grad)   # a parallel kernel (a9a: 2 chunks)
        return value, float(clf.predict(train.X[:500]).sum())

    expected = [child(k) for k in range(4)]
    with multiprocessing.get_context("fork").Pool(2) as pool:
        got = pool.map(child, range(4))
    assert got == expected, (got, expected)
    print("layer", numba.threading_layer(), "forked", len(got))
"""


# fastcon's default (tbb where the wheel is installed, as on x86-64 Linux) and numba's fallback
LAYERS = [pytest.param({}, id="default"), pytest.param({"NUMBA_THREADING_LAYER": "workqueue"}, id="workqueue")]


@pytest.mark.datasets("a9a")
@pytest.mark.parametrize("layer", LAYERS)
def test_fork_pool_after_a_fit_on_a9a(data_home, layer):
    """With GNU OpenMP (``NUMBA_THREADING_LAYER=omp``, the old layer) the children print
    "fork() called from a process already using GNU OpenMP" and this test times out."""
    out = _ok(_run(_FORK_AFTER_FIT, data_home, **layer))
    assert "forked 4" in out, out
    assert out.split()[1] == layer.get("NUMBA_THREADING_LAYER", out.split()[1]), out


@pytest.mark.skipif(not sys.platform.startswith("linux") or sys.maxsize < 2**32,
                    reason="the tbb wheel fastcon depends on is for x86-64 Linux")
def test_default_layer_is_tbb_where_its_wheel_is_installed():
    """pip's tbb puts libtbb.so.12 in <venv>/lib, outside the loader's path: fastcon loads it so
    that numba's fork-safe choice is tbb (thread-safe, OpenMP's speed), not workqueue."""
    import platform
    if platform.machine() != "x86_64":
        pytest.skip("tbb is a dependency on x86-64 Linux only")
    out = _ok(_run("""
        import numba, numpy as np, fastcon
        from fastcon._kernels import _linalg
        X = np.ones((4000, 80)); out = np.empty(4000)
        _linalg.dense_matvec(X, None, np.ones(80), out)
        print(numba.threading_layer())
    """))
    assert out.split()[-1] == "tbb", out


@pytest.mark.datasets("a9a")
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="GNU OpenMP's fork check is Linux's")
def test_the_same_fork_pool_hangs_with_gnu_openmp(data_home):
    """The old behaviour, to show the test above can fail: with numba's omp layer (what numba picks
    on Linux without tbb, and what fastcon used) a child prints libgomp's complaint and never
    answers. Stops as soon as the complaint appears, instead of waiting for the timeout."""
    import selectors
    import time

    environ = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    environ["NUMBA_THREADING_LAYER"] = "omp"
    cmd = [sys.executable, "-c", textwrap.dedent(_FORK_AFTER_FIT), str(data_home)]
    seen, deadline = "", time.monotonic() + TIMEOUT
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environ,
                          cwd=str(REPO), start_new_session=True) as proc:
        try:
            with selectors.DefaultSelector() as sel:
                sel.register(proc.stderr, selectors.EVENT_READ)
                while "already using GNU OpenMP" not in seen and proc.poll() is None:
                    if time.monotonic() > deadline:
                        break
                    if sel.select(timeout=1.0):
                        seen += proc.stderr.readline()
            finished = proc.poll()
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)   # the interpreter and its forked children
            except ProcessLookupError:
                pass
            proc.communicate()
    if finished == 0:
        pytest.skip("the omp layer here is fork-safe (not GNU OpenMP)")
    assert "fork() called from a process already using GNU OpenMP" in seen, seen[-2000:]


# ------------------------------------------------------------------------------- threads
_THREADS = """
    import sys
    from concurrent.futures import ThreadPoolExecutor
    import numba
    import numpy as np
    import fastcon
    from fastcon._kernels import _threading
    from fastcon.datasets import make_fair_classification

    if sys.argv[1] == "unlocked":   # the behaviour before the lock, to show the test can fail
        _threading._serialize[0] = False
        _threading._state["settled"] = True
    # 24,000 x 12 dense entries: 288k, two chunks per pass, so every pass is a parallel launch
    data = [make_fair_classification(n_samples=24000, n_features=12, seed=s) for s in (0, 1)]

    def fit(d):
        clf = fastcon.FairClassifier("demographic_parity", bound=0.05, max_iter=40)
        return clf.fit(d.X, d.y, sensitive_features=d.groups).coef_.copy()

    alone = [fit(d) for d in data]
    with ThreadPoolExecutor(2) as pool:
        for _ in range(3):
            together = list(pool.map(fit, data))
            # equal up to BLAS round-off (threadpoolctl's limits are process-wide, not per thread)
            assert all(np.allclose(a, b, rtol=1e-6, atol=1e-9) for a, b in zip(alone, together))
    print("layer", numba.threading_layer(), "ok")
"""


@pytest.mark.parametrize("layer", LAYERS)
def test_two_threads_fitting_at_once(layer):
    out = _ok(_run(_THREADS, "locked", **layer))
    assert out.strip().endswith("ok"), out


def test_two_threads_abort_without_the_lock_on_workqueue():
    """Why the lock exists: without it, the same run aborts the process under workqueue.
    (If numba's workqueue ever becomes thread-safe, this fails and the lock can go.)"""
    proc = _run(_THREADS, "unlocked", NUMBA_THREADING_LAYER="workqueue")
    assert proc.returncode == -signal.SIGABRT, (proc.returncode, proc.stderr[-2000:])
    assert "Concurrent access has been detected" in proc.stderr


def test_jitted_callers_of_parallel_kernels_are_serialized():
    """A jitted function that calls a parallel kernel launches parallel regions as well, so it
    must hold the lock too; `njit` wraps those it can see when decorating: check them all now."""
    import importlib
    import pkgutil

    import numba

    import fastcon._kernels
    from fastcon._kernels._threading import SerializedKernel, calls_serialized

    wrapped, plain = [], []
    for info in pkgutil.iter_modules(fastcon._kernels.__path__):
        module = importlib.import_module(f"fastcon._kernels.{info.name}")
        for name, obj in vars(module).items():
            if isinstance(obj, SerializedKernel):
                wrapped.append(name)
            elif isinstance(obj, numba.core.dispatcher.Dispatcher):
                assert not obj.targetoptions.get("parallel"), f"{info.name}.{name} is parallel but not wrapped"
                assert not calls_serialized(obj.py_func), f"{info.name}.{name} calls a parallel kernel unwrapped"
                plain.append(name)
    assert len(wrapped) >= 17 and len(plain) > 30
    assert {"csr_matvec", "sigmoid_sweep", "datafit_value_grad"} <= set(wrapped)


def test_parallel_options_reach_every_kernel():
    """numba empties a ``parallel=dict(...)`` at the first compilation; the kernels share one such
    dict (``JIT_PARALLEL``), so later kernels used to compile with every option on (array
    statements such as ``out[:] = 0.0`` became parallel regions). `njit` hands numba a copy."""
    import numpy as np
    from numba import prange
    from numba.core.cpu_options import ParallelOptions

    from fastcon._kernels import _linalg
    from fastcon._kernels._jit import njit

    def body(x, out):
        out[:] = 0.0
        for i in prange(2):
            out[i] += x[i]
        return out

    shared = dict(_linalg.JIT_PARALLEL, cache=False)
    shared["parallel"] = dict(shared["parallel"])
    first, second = njit(**shared)(body), njit(**shared)(body)
    first(np.ones(3), np.zeros(3))
    assert second(np.ones(3), np.zeros(3)).tolist() == [1.0, 1.0, 0.0]
    assert len(shared["parallel"]) == 8 and len(_linalg.JIT_PARALLEL["parallel"]) == 8
    for kernel in (first, second, _linalg.csr_matvec, _linalg.dense_rmatvec):
        options = kernel.targetoptions["parallel"]
        assert isinstance(options, ParallelOptions)
        assert options.prange and options.reduction
        assert not (options.setitem or options.numpy or options.fusion or options.comprehension)


def test_launch_lock_is_fresh_in_a_forked_child():
    from fastcon._kernels import _threading

    _threading._LOCK.acquire()   # as if another thread were inside a kernel at fork()
    try:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - child
            os._exit(0 if _threading._LOCK.acquire(timeout=5) else 1)
        _, status = os.waitpid(pid, 0)
    finally:
        _threading._LOCK.release()
    assert os.waitstatus_to_exitcode(status) == 0


# ------------------------------------------------------------------------------- binomial tail
def test_binomial_tail_is_scipy_stats_binom_sf_to_the_bit():
    from scipy.stats import binom

    from fastcon.metrics._neyman_pearson import _binom_sf

    rng = np.random.default_rng(0)
    for n in [1, 2, 3, 7, 59, 100, 1000, 12345]:
        for p in [1e-6, 0.01, 0.5, 0.8, 0.9, 0.95, 0.99, 0.999]:
            ks = np.unique(np.r_[0, 1, n - 2, n - 1, rng.integers(0, n, 40)].clip(0, n - 1))
            for k in ks:
                assert _binom_sf(int(k), n, p) == binom.sf(k, n, p), (k, n, p)
            # outside 0 <= k < n: exact values (binom.sf agrees; scipy.special.bdtrc gives nan for k > n)
            for k in (-3, -1):
                assert _binom_sf(k, n, p) == 1.0 == binom.sf(k, n, p)
            for k in (n, n + 1, n + 10):
                assert _binom_sf(k, n, p) == 0.0 == binom.sf(k, n, p)


def test_umbrella_rank_unchanged():
    from scipy.stats import binom

    from fastcon.metrics import np_umbrella_min_samples, np_umbrella_rank

    def rank_with_binom(n, alpha, delta):
        lo, hi = 1, n
        while lo < hi:
            mid = (lo + hi) // 2
            if binom.sf(mid - 1, n, 1 - alpha) <= delta:
                hi = mid
            else:
                lo = mid + 1
        return lo

    for alpha in (0.01, 0.05, 0.1, 0.25, 0.5):
        for delta in (0.01, 0.05, 0.1, 0.5):
            n0 = np_umbrella_min_samples(alpha, delta)
            assert binom.sf(n0 - 1, n0, 1 - alpha) <= delta and (
                n0 == 1 or binom.sf(n0 - 2, n0 - 1, 1 - alpha) > delta)
            for n in (n0, n0 + 1, 2 * n0 + 3, 500, 3889):
                if n >= n0:
                    assert np_umbrella_rank(n, alpha, delta) == rank_with_binom(n, alpha, delta)


# ------------------------------------------------------------------------------- no wall-clock asserts
_CLOCKS = ("perf_counter", "monotonic", "process_time", "time_s", "wall_time", "elapsed", "seconds")


def _clock_bound(test: ast.Assert) -> bool:
    """An ``assert <time> < <number>`` (or ``<=``, or ``<number> > <time>``)."""
    node = test.test
    if not isinstance(node, ast.Compare) or len(node.ops) != 1:
        return False
    left, right, op = node.left, node.comparators[0], node.ops[0]
    if isinstance(op, (ast.Gt, ast.GtE)):
        left, right = right, left
    elif not isinstance(op, (ast.Lt, ast.LtE)):
        return False
    return isinstance(right, ast.Constant) and any(c in ast.unparse(left) for c in _CLOCKS)


def test_no_test_asserts_a_wall_clock_bound():
    found = []
    for path in sorted(Path(__file__).parent.rglob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Assert) and _clock_bound(node):
                found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    assert not found, "wall-clock bounds belong in bench/:\n" + "\n".join(found)


def test_tbb_is_not_loaded_when_the_user_chose_another_layer():
    """A process-wide library load only where numba may use it: not under a chosen omp/workqueue."""
    out = _ok(_run("""
        import fastcon
        print(any("libtbb" in line for line in open("/proc/self/maps")))
    """, NUMBA_THREADING_LAYER="workqueue"))
    assert out.split()[-1] == "False", out
