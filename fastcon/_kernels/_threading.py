"""numba's threading layer for fastcon: fork-safe by default, and parallel launches serialized where the layer needs it.

Why
    numba picks its threading layer once per process, at the first parallel launch (or the first
    ``numba.get_num_threads``), by default in the order tbb, omp, workqueue. Without tbb, on Linux
    that is GNU OpenMP (libgomp), which is not fork-safe: after any fit, a ``multiprocessing``
    child started with ``fork`` (Linux's default start method up to Python 3.13; PyTorch's
    DataLoader forks) that runs a fastcon kernel prints "Terminating: fork() called from a process
    already using GNU OpenMP, this is unsafe." and the pool waits forever. A library that others
    embed must not do that.

What
    `choose_threading_layer` (run when `fastcon._kernels` is imported, i.e. by ``import fastcon``)
    sets ``numba.config.THREADING_LAYER = "forksafe"`` unless the user chose a layer
    (``$NUMBA_THREADING_LAYER``, ``.numba_config.yaml``, or ``numba.config.THREADING_LAYER`` set
    to anything but ``"default"`` before importing fastcon) or a parallel function has already
    run. numba then loads tbb where it is installed, else OpenMP where it is fork-safe (not GNU
    OpenMP on Linux; macOS and Windows keep it), else its own ``workqueue`` layer. fastcon
    depends on pip's ``tbb`` wheel on x86-64 Linux and loads its library (`_preload_tbb`: the
    wheel puts it where the dynamic loader does not look), because tbb is fork- and thread-safe
    and fast: on a9a's kernels 10-30 % faster than GNU OpenMP, while workqueue took up to twice
    OpenMP's time (docs/benchmarks.md, Embedding).

    It sets ``numba.config`` and not ``os.environ``: an environment variable would reach child
    processes and every library that reads it, while this is one attribute of numba in this
    process, the documented way for any numba user to pick a layer. The layer is per process, so
    the user's own ``parallel=True`` functions get it too; set ``NUMBA_THREADING_LAYER`` (e.g.
    ``omp``) to choose otherwise, fastcon keeps the choice. If a ``NUMBA_*`` variable changes
    after ``import fastcon``, numba re-reads its environment at the next compilation and forgets
    the setting, so it is applied again just before fastcon's first parallel launch.

    workqueue is not thread-safe: two Python threads in parallel regions at once abort the process
    ("Concurrent access has been detected"). fastcon's kernels release the GIL, so two fits in
    threads (e.g. ``GridSearchCV`` with a threading backend) would do exactly that. Every parallel
    kernel is therefore wrapped (`SerializedKernel`): while the layer in use is workqueue (or not
    yet known), a call from Python holds one process-wide lock; once another layer is known to be
    in use, calls go straight to the kernel. Jitted callers of a parallel kernel are wrapped too
    (`fastcon._kernels._jit.njit` does both). The lock costs about a microsecond per call
    (docs/benchmarks.md); the kernels it guards read whole data sets or batches of rows.

    OpenMP's wait policy: fastcon used to set ``OMP_WAIT_POLICY=PASSIVE`` in ``os.environ`` at
    import, because spinning OpenMP workers slowed the interpreter between short kernels. workqueue
    and tbb workers block instead of spinning, so nothing replaces it; a user who picks the omp
    layer should set ``OMP_WAIT_POLICY=PASSIVE`` in the environment before starting Python for the
    same effect (README).
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
