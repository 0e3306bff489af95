"""numba's threading layer for fastcon: fork-safe by default, and parallel launches serialized where the layer needs it.

numba's default layer on Linux without tbb is GNU OpenMP, which hangs a ``fork``-started child that
runs a fastcon kernel. `choose_threading_layer` (run by ``import fastcon``) sets
``numba.config.THREADING_LAYER = "forksafe"`` unless the user chose a layer (tbb, which fastcon
loads on x86-64 Linux, else a fork-safe OpenMP, else workqueue). workqueue is not thread-safe, so
`SerializedKernel` holds a process-wide lock around parallel kernels while that layer is (or may
be) in use.
Design notes: docs/design.md, 'Module notes'.
"""
import ctypes
import functools
import os
import site
import sys
import threading

import numba
from numba.core import config

__all__ = ["choose_threading_layer", "threading_layer_in_use", "SerializedKernel", "serialized",
           "calls_serialized"]

#: The layer fastcon asks numba for when the user did not choose one.
FORKSAFE = "forksafe"
_TBB_SONAME = "libtbb.so.12"
#: Layer choices under which numba may load tbb: only then is its library loaded for it.
_TBB_LAYERS = ("forksafe", "tbb", "safe", "threadsafe")
_ENV = "NUMBA_THREADING_LAYER"

_state = {"ours": False, "settled": False}
# True while fastcon's parallel launches must hold _LOCK: the layer in use is workqueue or unknown.
_serialize = [True]
_LOCK = threading.Lock()


def threading_layer_in_use():
    """numba's threading layer in this process (``"tbb"``, ``"omp"``, ``"workqueue"``), or None
    before the first parallel launch."""
    try:
        return numba.threading_layer()
    except ValueError:
        return None


def _user_chose() -> bool:
    return _ENV in os.environ or str(config.THREADING_LAYER).lower() != "default"


def choose_threading_layer() -> str:
    """Ask numba for a fork-safe threading layer unless the user chose one (module notes).

    Returns
    -------
    str
        The value of ``numba.config.THREADING_LAYER`` afterwards, or the layer already in use.
    """
    used = threading_layer_in_use()
    if used is not None:
        return used
    if not _user_chose():
        config.THREADING_LAYER = FORKSAFE
        _state["ours"] = True
    if str(config.THREADING_LAYER).lower() in _TBB_LAYERS:
        _preload_tbb()      # also for a user's own choice of "tbb" or "safe", which need it just as well
    return config.THREADING_LAYER


def _tbb_library():
    """Path of the ``libtbb.so.12`` that pip's ``tbb`` wheel puts in ``<prefix>/lib``, or None."""
    if not sys.platform.startswith("linux"):
        return None
    for prefix in dict.fromkeys((sys.prefix, sys.base_prefix, site.getuserbase())):
        path = os.path.join(prefix, "lib", _TBB_SONAME)
        if os.path.exists(path):
            return path
    return None


def _preload_tbb():
    """Load pip's TBB so that numba's ``forksafe`` choice finds it (True if loaded).

    numba's tbb layer (``numba.np.ufunc.tbbpool``) links to ``libtbb.so.12`` by name; the ``tbb``
    wheel (a dependency of fastcon on Linux x86-64) installs it in ``<venv>/lib``, which the
    dynamic loader does not search, so numba would fall back to workqueue, 10-25 % slower per
    parallel pass (docs/benchmarks.md, Embedding). Loading the library by path first makes the
    loader find it by its soname. Nothing runs in it until numba starts its pool.
    """
    path = _tbb_library()
    if path is None:
        return False
    try:
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    except OSError:
        return False
    return True


def _before_first_launch():
    """Apply fastcon's choice again if numba re-read its environment since import (called under _LOCK)."""
    if _state["ours"] and threading_layer_in_use() is None:
        config.reload_config()  # what numba's compiler does first: absorb NUMBA_* changes now, not after us
        if _ENV not in os.environ and str(config.THREADING_LAYER).lower() == "default":
            config.THREADING_LAYER = FORKSAFE


def _settle():
    """Once a layer is in use: keep serializing only if it is workqueue."""
    used = threading_layer_in_use()
    if used is not None:
        _serialize[0] = used == "workqueue"
        _state["settled"] = True


class SerializedKernel:
    """A numba dispatcher whose calls from Python hold fastcon's launch lock while needed.

    Everything else is the dispatcher's: attributes are forwarded, and numba types the wrapper as
    the dispatcher itself (``_numba_type_``), so jitted code calls the kernel directly.
    """

    def __init__(self, dispatcher):
        self._dispatcher = dispatcher
        functools.update_wrapper(self, dispatcher.py_func, updated=())

    def __call__(self, *args, **kwargs):
        if not _serialize[0]:
            return self._dispatcher(*args, **kwargs)
        with _LOCK:
            if not _state["settled"]:
                _before_first_launch()
            result = self._dispatcher(*args, **kwargs)
            if not _state["settled"]:
                _settle()
        return result

    def __getattr__(self, name):
        if name == "_dispatcher":  # not set yet (e.g. during unpickling): no recursion
            raise AttributeError(name)
        return getattr(self._dispatcher, name)

    def __repr__(self):
        return f"SerializedKernel({self._dispatcher!r})"


def serialized(dispatcher):
    """``dispatcher`` wrapped in a `SerializedKernel` (itself if it is one already)."""
    return dispatcher if isinstance(dispatcher, SerializedKernel) else SerializedKernel(dispatcher)


def calls_serialized(py_func) -> bool:
    """True when ``py_func``'s code names a global that is a `SerializedKernel` (a jitted caller
    of a parallel kernel launches parallel regions too)."""
    names, stack = set(), [py_func.__code__]
    while stack:
        code = stack.pop()
        names.update(code.co_names)
        stack.extend(c for c in code.co_consts if hasattr(c, "co_names"))
    g = getattr(py_func, "__globals__", {})
    return any(isinstance(g.get(name), SerializedKernel) for name in names)


def _reset_after_fork():
    # a lock held by another thread at fork() stays held in the child: start with a fresh one
    global _LOCK
    _LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)
