"""The time left of a run: the unfinished tasks' estimated cost, each from finished tasks of its kind.

A reproduction's tasks differ in cost by orders of magnitude (partial-fairness: a pairwise
baseline 2 s, an IDCA run 200-600 s) and run roughly expensive-first, so the mean time per task
times the tasks left misleads: it swung between 17 and 41 hours while 8 were left. Here each
unfinished task is estimated by the mean duration of finished tasks of its kind, and the sum is
converted to wall time by the run's own parallelism so far.

*Kinds* come from the experiment's optional ``task_kinds(task)`` hook: keys from the most to the
least specific (partial-fairness: ``(dataset, method, model)``, ``(dataset, method)``,
``(method,)``). A task is estimated at its most specific key that has a finished task, durations
measured in this invocation before those of loaded records (the optional ``record_seconds(record)``
hook reads a loaded record's duration; it may come from another machine). Without hooks every task
is one kind: the mean duration of the tasks run here.

Wall time: with :math:`W` the wall time since the first task started and :math:`B` the busy time
of the tasks run here (finished ones' durations plus the running ones' elapsed time), the left
estimate is :math:`W/B \\cdot` (the estimates of the waiting tasks plus the unelapsed part of the
running ones'): :math:`W/B` is :math:`1/\\text{jobs}` while every worker is busy.
"""
from __future__ import annotations

import time
from collections import defaultdict

__all__ = ["TimeLeft"]


class TimeLeft:
    """Bookkeeping of a run's tasks for `seconds_left`.

    Parameters
    ----------
    kinds : callable ``task -> sequence of hashable``, optional
        The task's kinds, most specific first.
    record_seconds : callable ``record -> float or None``, optional
        A loaded record's duration, if it holds one.
    clock : callable, optional
        Seconds (default `time.perf_counter`); tests pass a fake one.
    """

    def __init__(self, kinds=None, record_seconds=None, clock=time.perf_counter):
        self._kinds = kinds
        self._record_seconds = record_seconds
        self._clock = clock
        self._tasks = {}
        self._started = {}
        self._pending = set()
        self._fresh = defaultdict(list)    # kind -> durations measured here
        self._loaded = defaultdict(list)   # kind -> durations read from loaded records
        self._first_start = None
        self._busy = 0.0

    def _keys(self, task):
        return [tuple(k) if isinstance(k, list) else k for k in (self._kinds(task) if self._kinds else ())]

    def add(self, key, task):
        """Task ``key`` (any hashable) is known and not finished."""
        self._tasks[key] = task
        self._pending.add(key)

    def start(self, key):
        """Task ``key`` starts running now."""
        now = self._clock()
        self._started[key] = now
        if self._first_start is None:
            self._first_start = now

    def finish(self, key, record, fresh):
        """Task ``key`` has its record: run here (``fresh``, timed since `start`) or loaded."""
        self._pending.discard(key)
        task = self._tasks[key]
        if fresh:
            seconds = self._clock() - self._started.pop(key)
            self._busy += seconds
            store = self._fresh
        else:
            seconds = None if self._record_seconds is None else self._record_seconds(record)
            store = self._loaded
        if seconds is not None:
            for kind in [*self._keys(task), None]:    # None: every task
                store[kind].append(float(seconds))

    def estimate(self, task):
        """The expected duration of ``task``, or None before any duration is known."""
        for kind in [*self._keys(task), None]:
            for store in (self._fresh, self._loaded):
                if store.get(kind):
                    return sum(store[kind]) / len(store[kind])
        return None

    def seconds_left(self):
        """Estimated wall seconds until every known task is finished; None before a task ran here."""
        if not self._fresh.get(None):
            return None
        now = self._clock()
        running = {key: now - t for key, t in self._started.items()}
        busy = self._busy + sum(running.values())
        per_busy_second = (now - self._first_start) / busy if busy > 0 else 1.0
        work = 0.0
        for key in self._pending:
            expected = self.estimate(self._tasks[key])
            work += max(expected - running.get(key, 0.0), 0.0)
        return per_busy_second * work
