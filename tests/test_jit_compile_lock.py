"""The kernel cache's lock between processes (`fastcon._kernels._jit`, module notes "Processes").

numba's cache is not safe for processes that compile the same kernels at once (numba #4807,
#10128): a cache written so crashed every later process. These tests check the lock's behaviour
as another process meets it: a lookup waits while some process compiles, and a failed compilation
gives the lock back.
"""
import os
import subprocess
import sys
import time

import numpy as np
import pytest

fcntl = pytest.importorskip("fcntl")

from numba.core import caching  # noqa: E402

from fastcon._kernels import _jit  # noqa: E402

_CHILD = """
import numpy as np
from fastcon._kernels._group_rates import cell_step_sums
sums = np.empty((2, 1))
cell_step_sums(np.array([0.5, -1.0, 2.0]), np.array([0, 1, 0]), np.ones(3), np.zeros(1), sums)
assert sums.tolist() == [[2.0], [0.0]], sums
print("done")
"""


def _lock_path(cache_root):
    return os.path.join(cache_root, caching._CacheLocator.get_suitable_cache_subpath(_jit._KERNEL_FILE),
                        ".compile.lock")


def _child(cache_root):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_root))
    return subprocess.Popen([sys.executable, "-c", _CHILD], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


@pytest.mark.parametrize("warm", [False, True], ids=["cold cache", "warm cache"])
def test_a_kernel_lookup_waits_while_another_process_holds_the_lock(tmp_path, warm):
    if warm:   # the entry exists: even a load waits, so it never reads an entry half written
        out, err = _child(tmp_path).communicate(timeout=300)
        assert out.strip() == "done", err
    path = _lock_path(tmp_path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a+b") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        child = _child(tmp_path)
        try:
            time.sleep(4.0)   # the import takes about 1 s; the lookup then blocks on the lock
            assert child.poll() is None, child.communicate()
        finally:
            fcntl.flock(held.fileno(), fcntl.LOCK_UN)
    out, err = child.communicate(timeout=300)
    assert child.returncode == 0 and out.strip() == "done", err


def test_a_failed_compilation_gives_the_lock_back():
    from numba.core.errors import TypingError

    from fastcon._kernels._group_rates import cell_step_sums

    assert _jit._compile_lock._depth == 0
    with pytest.raises(TypingError):   # a string has no > with a float: typing fails in compilation
        cell_step_sums(np.array(["a"]), np.zeros(1, dtype=np.int64), np.ones(1), np.zeros(1), np.empty((1, 1)))
    assert _jit._compile_lock._depth == 0
    assert _jit._compile_lock._file is None
    sums = np.empty((1, 1))   # and the next kernel call in this process still works
    cell_step_sums(np.array([1.0]), np.zeros(1, dtype=np.int64), np.ones(1), np.zeros(1), sums)
    assert sums[0, 0] == 1.0
