"""The process pool of the experiment grids, made to stop cleanly on Ctrl-C.

A terminal sends Ctrl-C (SIGINT) to the whole foreground process group, so with a plain
`concurrent.futures.ProcessPoolExecutor` every worker raises `KeyboardInterrupt` too: busy workers
report it as the task's result, idle ones die printing a traceback each, and the parent's
``shutdown(wait=True)`` then waits for tasks that may run for minutes. Here

* workers ignore SIGINT: they are started (inside `WorkerPool.submit`) while the parent ignores it,
  and an ignored signal stays ignored across ``exec`` (POSIX), before the child runs any Python;
* only the parent sees the `KeyboardInterrupt`, and leaving the ``with`` block by an exception
  terminates the workers (SIGTERM) and cancels what is still queued, so nothing keeps computing.
"""
from __future__ import annotations

import contextlib
import multiprocessing as mp
import signal
import threading
from concurrent.futures import ProcessPoolExecutor

__all__ = ["WorkerPool", "sigint_ignored"]


@contextlib.contextmanager
def sigint_ignored():
    """Ignore SIGINT inside the block (main thread only: signal handlers cannot be set elsewhere)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class WorkerPool:
    """A ``spawn`` process pool whose workers ignore SIGINT and are terminated on any error.

    Parameters
    ----------
    jobs : int
        Number of worker processes.
    initializer : callable, optional
        Run once in every worker at start-up.

    Use it as a context manager: a normal exit waits for the submitted tasks; an exception
    (Ctrl-C included) terminates the workers at once and is re-raised.
    """

    def __init__(self, jobs, initializer=None):
        self._pool = ProcessPoolExecutor(max_workers=int(jobs), mp_context=mp.get_context("spawn"),
                                         initializer=initializer)

    def submit(self, fn, *args):
        """Schedule ``fn(*args)``; returns its future."""
        # The executor starts worker processes inside submit(); starting them with SIGINT ignored
        # makes them inherit SIG_IGN (see the module docstring).
        with sigint_ignored():
            return self._pool.submit(fn, *args)

    def terminate(self):
        """Stop every worker now (running tasks are lost) and cancel the queued tasks."""
        with sigint_ignored():  # a second Ctrl-C must not interrupt the clean-up half-way
            # ProcessPoolExecutor has no public way to stop a running task; its process table is
            # the only handle on the workers (present since Python 3.2).
            processes = list((getattr(self._pool, "_processes", None) or {}).values())
            for proc in processes:
                if proc.is_alive():
                    proc.terminate()
            self._pool.shutdown(wait=True, cancel_futures=True)
            for proc in processes:
                proc.join()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self._pool.shutdown(wait=True)
        else:
            self.terminate()
        return False
