"""``njit`` for fastcon's kernels: numba's decorator with the on-disk cache kept out of the package.

With ``cache=True`` numba would store an installed fastcon's compiled code in
``site-packages/fastcon/_kernels/__pycache__``, which pip never records and which shadows a later
install. `njit` caches fastcon's kernels in ``$NUMBA_CACHE_DIR`` when set, else in
``$XDG_CACHE_HOME/fastcon/numba``; it hands numba a copy of the parallel options, keys each cache
entry by the compile options and a hash of every kernel source file, serialises compilation across
processes with an ``fcntl`` lock, and wraps parallel kernels in
`fastcon._kernels._threading.SerializedKernel`.
Design notes: docs/design.md, 'Module notes'.
"""
import glob
import hashlib
import os
import sys
import tempfile
import warnings

try:
    import fcntl
except ImportError:   # Windows: no lock between processes (numba's behaviour)
    fcntl = None

import numba
from numba.core import caching, config, event
from numba.core.cpu_options import ParallelOptions

from ._threading import calls_serialized, choose_threading_layer, serialized

__all__ = ["njit", "cache_root", "kernel_cache_dir", "cache_is_cold"]

_KERNEL_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_linalg.py")
_state = {"root": None, "checked": False, "cold": None, "sources": None}
_cached_kernels = set()  # id() of every dispatcher decorated here with the cache on


def cache_root() -> str:
    """The folder numba caches fastcon's kernels under.

    ``$NUMBA_CACHE_DIR`` (or ``numba.config.CACHE_DIR``, e.g. from ``.numba_config.yaml``) when
    set, else ``$XDG_CACHE_HOME/fastcon/numba``, else ``~/.cache/fastcon/numba``.
    """
    user = os.environ.get("NUMBA_CACHE_DIR") or config.CACHE_DIR
    if user:
        return os.path.abspath(os.path.expanduser(user))
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    # The XDG specification ignores relative values.
    base = xdg if os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "fastcon", "numba")


def kernel_cache_dir() -> str:
    """The folder holding the cache files of fastcon's kernels: numba adds one sub-folder per
    source folder (named after it plus a hash of its path) under `cache_root`."""
    return os.path.join(cache_root(), caching._CacheLocator.get_suitable_cache_subpath(_KERNEL_FILE))


def cache_is_cold() -> bool:
    """True when `kernel_cache_dir` holds no compiled kernel for this Python version."""
    tag = "py%d%d%s" % (sys.version_info[0], sys.version_info[1], getattr(sys, "abiflags", ""))
    return not glob.glob(os.path.join(glob.escape(kernel_cache_dir()), f"*.{tag}.nbi"))


def _writable_root():
    """`cache_root` if it can be created and written, else None (warned about once)."""
    if not _state["checked"]:
        _state["checked"] = True
        root = cache_root()
        try:
            os.makedirs(root, exist_ok=True)
            tempfile.TemporaryFile(dir=root).close()
        except OSError as exc:
            warnings.warn(f"fastcon: numba cache folder {root} is not writable ({exc.strerror or exc}); "
                          "kernels are compiled again in every process. Set NUMBA_CACHE_DIR to a "
                          "writable folder to cache them.", RuntimeWarning, stacklevel=3)
        else:
            _state["root"] = root
            _state["cold"] = cache_is_cold()
    return _state["root"]


def _options_tag(options) -> str:
    """A short, stable name of the compile options, for the cache index key."""
    text = repr(sorted((k, sorted(v.items()) if isinstance(v, dict) else v) for k, v in options.items()))
    return "fastcon-options-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def _sources_tag() -> str:
    """A hash of every ``.py`` file of `fastcon._kernels` (read once per process, a few ms)."""
    if _state.get("sources") is None:
        digest = hashlib.sha256()
        for path in sorted(glob.glob(os.path.join(glob.escape(os.path.dirname(_KERNEL_FILE)), "*.py"))):
            digest.update(os.path.basename(path).encode())
            with open(path, "rb") as fh:
                digest.update(fh.read())
        _state["sources"] = "fastcon-sources-" + digest.hexdigest()[:16]
    return _state["sources"]


class _CompileLock:
    """An exclusive lock on the kernel cache folder, held by one process from a cache lookup that
    misses to the save of what it compiled (module notes, Processes). Re-entrant within a process
    (a kernel's compilation compiles the kernels it calls); a no-op where ``fcntl`` is missing."""

    def __init__(self):
        self._depth = 0
        self._file = None

    def acquire(self):
        if self._depth == 0 and fcntl is not None:
            try:
                self._file = open(os.path.join(kernel_cache_dir(), ".compile.lock"), "a+b")
                fcntl.flock(self._file.fileno(), fcntl.LOCK_EX)
            except OSError:   # no lock rather than no kernel: numba's own behaviour
                self._file = None
        self._depth += 1

    def release(self):
        if self._depth == 0:
            return
        self._depth -= 1
        if self._depth == 0 and self._file is not None:
            try:
                fcntl.flock(self._file.fileno(), fcntl.LOCK_UN)
            finally:
                self._file.close()
                self._file = None


_compile_lock = _CompileLock()


class _OptionsKeyedCache(caching.FunctionCache):
    """numba's function cache, with the compile options and the kernels' sources in the index key (module notes),
    read and written under `_compile_lock`."""

    def __init__(self, py_func, tag):
        super().__init__(py_func)
        self._fastcon_options_tag = tag

    def _index_key(self, sig, codegen):
        return super()._index_key(sig, codegen) + (self._fastcon_options_tag, _sources_tag())

    def load_overload(self, sig, target_context):
        _compile_lock.acquire()
        found = None
        try:
            found = super().load_overload(sig, target_context)
        finally:
            if found is not None:   # a miss keeps the lock: the compilation and its save follow
                _compile_lock.release()
        return found

    def save_overload(self, sig, data):
        try:
            super().save_overload(sig, data)
        finally:
            _compile_lock.release()


def njit(*args, **options):
    """`numba.njit`, with ``cache=True`` kernels cached under `cache_root` (see the module notes).

    Used exactly like `numba.njit` (``@njit``, ``@njit(**options)``, ``@njit(signature, ...)``).
    A ``parallel=True`` kernel, or one whose code calls such a kernel, comes back wrapped in a
    `SerializedKernel` (module notes, Threads); any other is a numba dispatcher.
    """
    func = args[0] if len(args) == 1 and callable(args[0]) and not isinstance(args[0], str) else None
    cache = bool(options.get("cache"))
    root = _writable_root() if cache else None
    if cache and root is None:
        options = dict(options, cache=False)
    tag = _options_tag(options)
    parallel = options.get("parallel")
    if isinstance(parallel, dict):  # numba would empty the dict at the first compilation (module notes)
        options = dict(options, parallel=ParallelOptions(dict(parallel)))
    decorator = numba.njit(**options) if func is not None else numba.njit(*args, **options)

    def decorate(py_func):
        if root is None:
            dispatcher = decorator(py_func)
        else:
            saved = config.CACHE_DIR
            config.CACHE_DIR = root  # read by numba's locator while the dispatcher is built
            try:
                dispatcher = decorator(py_func)
                dispatcher._cache = _OptionsKeyedCache(py_func, tag)  # built here: same folder
            finally:
                config.CACHE_DIR = saved
            _cached_kernels.add(id(dispatcher))
        if options.get("parallel") or calls_serialized(py_func):
            return serialized(dispatcher)
        return dispatcher

    return decorate(func) if func is not None else decorate


class _ColdCacheNotice(event.Listener):
    """Prints one line when the first fastcon kernel is compiled into an empty cache.

    numba fires ``numba:compile`` only on a cache miss, so a warm cache prints nothing.
    """

    def on_start(self, ev):
        if _state["cold"] and id(ev.data["dispatcher"]) in _cached_kernels:
            _state["cold"] = False  # once per process
            print(f"fastcon: compiling numba kernels into {kernel_cache_dir()} (first use only, a few minutes)",
                  file=sys.stderr, flush=True)

    def on_end(self, ev):
        # a failed compilation is never saved: give back the lock its cache lookup took. Failure is
        # read from the dispatcher (a success adds the overload before the event ends), not from
        # `Event.is_failed`, which numba 0.6x returns inverted
        dispatcher = ev.data["dispatcher"]
        if id(dispatcher) in _cached_kernels and tuple(ev.data["args"]) not in dispatcher.overloads:
            _compile_lock.release()


event.register("numba:compile", _ColdCacheNotice())
choose_threading_layer()
