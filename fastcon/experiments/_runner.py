"""The one driver of every paper experiment: tasks, worker processes, checkpoints, threads, Ctrl-C.

An experiment module describes *what* to compute; `drive` runs it (see the package docstring for
the hooks a module defines). This module holds everything that is the same for every experiment:

* **Tasks.** A task is a picklable dict; ``execute(task)`` (a module-level function of the
  experiment, so that worker processes find it by reference) turns it into a record, a plain dict.
  Every task carries its own seed, so the order in which tasks run changes no number.
* **Processes** (`WorkerPool`, `run_tasks`). ``jobs`` > 1 runs the tasks in that many ``spawn``
  processes. A terminal sends Ctrl-C (SIGINT) to the whole foreground process group, so with a
  plain `concurrent.futures.ProcessPoolExecutor` every worker raises `KeyboardInterrupt` too: busy
  workers report it as the task's result, idle ones die printing a traceback each, and the
  parent's ``shutdown(wait=True)`` then waits for tasks that may run for minutes. Here workers
  ignore SIGINT (they are started inside `WorkerPool.submit` while the parent ignores it, and an
  ignored signal stays ignored across ``exec``, POSIX, before the child runs any Python); only the
  parent sees the `KeyboardInterrupt`, and leaving the pool by an exception terminates the workers
  (SIGTERM) and cancels what is still queued.
* **Threads** (`pinned_threads`). Every solve runs with one numba thread and one BLAS thread, in
  the workers and in the parent alike; parallelism comes from ``jobs``. Measured on the 2-core
  machine under load: with numba's OpenMP layer and 2 threads the idle worker thread spin-waits
  between the many small parallel kernels of an iteration and starves the NumPy work of the main
  thread (german IPP-ConEx, 500 iterations: 4.1 s with 2 threads, 0.2 s with 1); a
  multi-threaded BLAS was 25x slower on the multi-class Neyman-Pearson sizes. The numba kernels are
  bit-identical for any thread count, so workers compute exactly what the parent would.
* **Checkpoints** (`TaskCheckpoints`, ``--resume``). A full reproduction runs hundreds of solver
  runs (ssg-wasserstein on COMPAS: 81 grid points of 15,000 iterations, about 3.3 CPU-hours). For
  an experiment with ``RESUMABLE = True`` every finished task's record is saved at once as
  ``<out>/checkpoints/<key>.json``; ``resume=True`` loads the records whose key matches and runs
  only the rest; the folder is removed once the outputs are written. The key is a hash of the
  task fields named by the module's ``CHECKPOINT_FIELDS`` (everything that determines the
  record: never the data folder nor ``jobs``), so a changed configuration never picks up a stale
  record; the *code* version does not enter the key, so resume with the fastcon that started the
  run. Records are JSON; Python's ``json`` writes floats with ``repr``, so they load back
  bit-identical, NaN and infinities included.
* **The output folder** (`._writer.staged_output`). The outputs are written to a new folder beside
  ``<out>`` and moved into place only when complete, replacing an earlier run's outputs then and
  not before; an interrupted run leaves ``<out>`` as it was, plus its checkpoints.
* **Ctrl-C** raises `ExperimentInterrupted`, a `KeyboardInterrupt` whose ``message`` says how many
  runs are saved and how to resume; the command line prints that line instead of a traceback.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import multiprocessing as mp
import os
import shutil
import sys
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from ._time_left import TimeLeft
from ._writer import output_folder, sigint_ignored, staged_output

__all__ = ["ExperimentInterrupted", "Session", "TaskCheckpoints", "WorkerPool", "apply_overrides", "drive",
           "pinned_threads", "run_tasks", "sigint_ignored", "task_key"]


# ------------------------------------------------------------------------------- Ctrl-C and the pool
class ExperimentInterrupted(KeyboardInterrupt):
    """Ctrl-C during an experiment, carrying a one-line account of what was saved.

    A subclass of `KeyboardInterrupt`, so code that handles Ctrl-C keeps working; ``message`` is
    what the command line prints (e.g. "interrupted: 12 of 40 runs saved in OUT/checkpoints; run
    the same command with --resume to continue").
    """

    def __init__(self, message):
        super().__init__(message)
        self.message = str(message)


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


# ------------------------------------------------------------------------------- threads
@contextlib.contextmanager
def pinned_threads():
    """One numba thread and one BLAS thread inside the block (both restored afterwards)."""
    import numba
    from threadpoolctl import threadpool_limits

    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        with threadpool_limits(limits=1):
            yield
    finally:
        numba.set_num_threads(before)


def _init_worker():
    """Worker start-up: one numba and one BLAS thread for the worker's lifetime."""
    import numba
    from threadpoolctl import threadpool_limits

    numba.set_num_threads(1)
    threadpool_limits(limits=1)  # not a context: the limit stays until the worker exits


# ------------------------------------------------------------------------------- checkpoints
def task_key(task, fields=None) -> str:
    """A 20-hex-digit digest of the fields of ``task`` that determine its record.

    Parameters
    ----------
    task : dict
    fields : sequence of str, optional
        The fields to hash (missing ones count as None); default every field of ``task``.
    """
    names = sorted(task) if fields is None else fields
    blob = json.dumps({k: task.get(k) for k in names}, sort_keys=True, default=repr)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


class TaskCheckpoints:
    """The checkpoint folder of one run.

    Parameters
    ----------
    folder : path-like
        Where the records go (created on the first save).
    resume : bool
        Load matching records instead of re-running their tasks. Without it, records already in
        the folder are ignored (and overwritten as tasks finish).
    fields : sequence of str, optional
        The task fields that make up a record's key (`task_key`).

    Attributes
    ----------
    loaded, saved : int
        Records loaded (``resume``) and saved by this invocation.
    total : int or None
        Number of runs of the experiment, set by the experiment once its tasks are known (for
        `interrupted_message`).
    """

    def __init__(self, folder, resume=False, fields=None):
        self.folder = Path(folder)
        self.resume = bool(resume)
        self.fields = None if fields is None else tuple(fields)
        self.loaded = 0
        self.saved = 0
        self.cleared = False
        self.total = None

    def _path(self, task) -> Path:
        return self.folder / f"{task_key(task, self.fields)}.json"

    def load(self, task):
        """The saved record of ``task``, or None (not resuming, none saved, or unreadable)."""
        if not self.resume:
            return None
        try:
            record = json.loads(self._path(task).read_text())
        except (OSError, ValueError):  # missing, or cut short by the interruption
            return None
        self.loaded += 1
        return record

    def save(self, task, record) -> None:
        """Write ``record`` atomically (a temporary file, then a rename)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self._path(task)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(record))
        os.replace(tmp, path)
        self.saved += 1

    def interrupted_message(self) -> str:
        """The one line to print when the run is interrupted: what is saved and how to continue."""
        if self.cleared:
            return "interrupted: the outputs were already written"
        done = self.loaded + self.saved
        hint = "run the same command with --resume to continue"
        if done:
            of = "" if self.total is None else f" of {self.total}"
            return f"interrupted: {done}{of} runs saved in {self.folder}; {hint}"
        # Nothing of this invocation is saved; records of an earlier one may still be there.
        earlier = len(list(self.folder.glob("*.json"))) if self.folder.is_dir() else 0
        if earlier:
            return (f"interrupted: no new run saved; the {earlier} runs saved earlier in {self.folder} are kept "
                    f"({hint})")
        return "interrupted: nothing saved"

    def clear(self) -> None:
        """Remove the folder (the run's outputs are written)."""
        shutil.rmtree(self.folder, ignore_errors=True)
        self.cleared = True


# ------------------------------------------------------------------------------- running tasks
def run_tasks(tasks, execute, jobs=1, on_done=None, checkpoints=None, follow_up=None, progress=None, timer=None):
    """Run ``execute(task)`` for every task, in this process (``jobs`` = 1) or in ``jobs`` workers.

    Parameters
    ----------
    tasks : sequence of dict
        Picklable tasks, in the order they should start.
    execute : callable
        ``execute(task) -> record``; a module-level function (workers import it by reference).
    jobs : int
        Worker processes; 1 runs every task in this process.
    on_done : callable, optional
        ``on_done(task, record)`` in this process as each task finishes (progress lines); not
        called for records loaded from ``checkpoints``.
    checkpoints : TaskCheckpoints, optional
        Every finished record is saved at once, and records it loads (``resume``) replace their
        tasks' runs.
    follow_up : callable, optional
        ``follow_up(task, record)``, called for every record (run or loaded), returns tasks to add;
        they go to the **front** of the queue. The grid experiments use it to start a winner's
        near-stationarity re-run as soon as its method's grid is complete, instead of after the
        whole grid (the re-runs are the longest single tasks: COMPAS static SSG 881 s against a
        36 s grid point; started last they ran with one core idle). At most ``jobs`` tasks are in
        the pool at a time, so that an added task overtakes the waiting ones.
    progress : callable, optional
        ``progress(done, total, fresh)`` before ``on_done`` for every record (run or loaded):
        records so far, tasks known so far, and how many of the records were run here.
    timer : TimeLeft, optional
        Told of every task as it is added, started and finished (before ``progress``), for the
        time left.

    Returns
    -------
    (list, list)
        ``tasks`` followed by the tasks ``follow_up`` added, and their records in that order.

    Ctrl-C (or any error) stops the workers at once; the records finished before it are in
    ``checkpoints``.
    """
    all_tasks, results, queue = [], [], deque()
    counts = {"done": 0, "fresh": 0}

    def completed(i, record, fresh):
        results[i] = record
        if timer is not None:
            timer.finish(i, record, fresh)
        counts["done"] += 1
        counts["fresh"] += int(fresh)
        if progress is not None:
            progress(counts["done"], len(all_tasks), counts["fresh"])
        if fresh and checkpoints is not None:
            checkpoints.save(all_tasks[i], record)
        if fresh and on_done is not None:
            on_done(all_tasks[i], record)
        if follow_up is not None:
            add(follow_up(all_tasks[i], record) or [], front=True)

    def add(new_tasks, front=False):
        fresh = []
        for task in new_tasks:
            all_tasks.append(task)
            results.append(None)
            fresh.append(len(all_tasks) - 1)
            if timer is not None:
                timer.add(fresh[-1], task)
        waiting = []
        for i in fresh:
            record = None if checkpoints is None else checkpoints.load(all_tasks[i])
            if record is None:
                waiting.append(i)
            else:
                completed(i, record, fresh=False)
        if front:
            queue.extendleft(reversed(waiting))
        else:
            queue.extend(waiting)

    add(tasks)
    if int(jobs) <= 1:
        while queue:
            i = queue.popleft()
            if timer is not None:
                timer.start(i)
            completed(i, execute(all_tasks[i]), fresh=True)
        return all_tasks, results
    with WorkerPool(jobs, initializer=_init_worker) as pool:
        running = {}
        while queue or running:
            while queue and len(running) < int(jobs):
                i = queue.popleft()
                running[pool.submit(execute, all_tasks[i])] = i
                if timer is not None:
                    timer.start(i)
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in done:
                completed(running.pop(fut), fut.result(), fresh=True)
    return all_tasks, results


# ------------------------------------------------------------------------------- the driver
def apply_overrides(cfg, overrides) -> dict:
    """``cfg`` updated with ``overrides`` (ValueError naming any key the configuration does not have)."""
    unknown = set(overrides) - set(cfg)
    if unknown:
        raise ValueError(f"overrides: unknown configuration keys {sorted(unknown)}; known: {sorted(cfg)}")
    cfg.update(overrides)
    return cfg


@dataclass
class Session:
    """What an experiment's hooks see of one run (see the package docstring).

    Attributes
    ----------
    spec : module
        The experiment module.
    cfg : dict
        Its configuration, overrides applied.
    quick : bool
    out : Path
        The folder to write the outputs to: a new folder beside the output folder, moved into place
        (replacing an earlier run's outputs) once ``write`` returns (`._writer.staged_output`).
    data_home : str or None
    seed, jobs : int
        ``jobs`` as requested (results.json records it; the tasks may run in fewer processes).
    verbose : bool
    download : bool or None
    checkpoints : TaskCheckpoints or None
        None unless the module is ``RESUMABLE``.
    t_start : float
        `time.perf_counter` at the start of the run.
    runs_wall_time_s : float
        Seconds spent in `run_tasks` (set before ``write``).
    runs_progress : str
        ``"done/total"`` runs and, once a run has finished here, the estimated time left
        (`._time_left.TimeLeft`); prefixes `log` lines while the tasks run.
    state : dict
        Free for the hooks (e.g. problem metadata built by ``tasks`` and read by ``write``).
    """

    spec: object
    cfg: dict
    quick: bool
    out: Path
    data_home: str | None
    seed: int
    jobs: int
    verbose: bool
    download: object
    checkpoints: TaskCheckpoints | None
    t_start: float
    runs_wall_time_s: float = 0.0
    runs_progress: str = ""
    state: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.spec.NAME

    def log(self, msg) -> None:
        """A progress line on stderr, prefixed with the experiment's name (only when ``verbose``)."""
        if self.verbose:
            where = f"{self.name} {self.runs_progress}" if self.runs_progress else self.name
            print(f"[{where}] {msg}", file=sys.stderr, flush=True)

    def elapsed(self) -> float:
        return time.perf_counter() - self.t_start


def _duration(seconds) -> str:
    """``"3 h 05 min"``, ``"12 min"`` or ``"40 s"``: a time left, as a person reads it."""
    seconds = round(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"
    if seconds >= 60:
        return f"{seconds // 60} min"
    return f"{seconds} s"


def drive(spec, *, quick=False, out_dir=None, data_home=None, seed=0, jobs=1, verbose=True, resume=False,
          download=None, **overrides):
    """Run experiment module ``spec`` end to end and write its outputs; returns the results.json dict.

    The configuration is ``spec.config(quick)`` updated with ``overrides`` (and checked by
    ``spec.check_config`` when the module has one); then, with one numba and one BLAS thread,
    ``spec.tasks(session)`` gives the tasks, `run_tasks` runs them with ``spec.execute`` in
    ``min(jobs, spec.MAX_JOBS)`` processes (``spec.on_done`` and ``spec.follow_up`` as its callbacks),
    and ``spec.write(session, tasks, records)`` writes the outputs. The other arguments are those
    of `fastcon.experiments.run_experiment`.

    Raises
    ------
    ExperimentInterrupted
        On Ctrl-C, saying how many runs are checkpointed.
    ValueError
        ``resume`` for a module that is not ``RESUMABLE``, an unknown override, or an output
        folder that cannot be written.
    """
    t_start = time.perf_counter()
    resumable = bool(getattr(spec, "RESUMABLE", False))
    if resume and not resumable:
        raise ValueError(f"resume: {spec.NAME} does not checkpoint its runs")
    cfg = apply_overrides(spec.config(quick), overrides)
    check = getattr(spec, "check_config", None)
    if check is not None:
        check(cfg)
    out = output_folder(spec.NAME, quick, out_dir, checkpoints=resumable)
    checkpoints = (TaskCheckpoints(out / "checkpoints", resume=resume, fields=getattr(spec, "CHECKPOINT_FIELDS", None))
                   if resumable else None)
    try:
        # The outputs go to a new folder beside ``out``, moved into place once complete (`staged_output`);
        # the checkpoints go to ``out/checkpoints`` at once, so that an interruption keeps them.
        with staged_output(out, checkpoints=resumable) as stage:
            session = Session(spec=spec, cfg=cfg, quick=bool(quick), out=stage,
                              data_home=None if data_home is None else str(data_home), seed=int(seed),
                              jobs=int(jobs), verbose=bool(verbose), download=download, checkpoints=checkpoints,
                              t_start=t_start)
            with pinned_threads():
                tasks = spec.tasks(session)
                on_done, follow_up = getattr(spec, "on_done", None), getattr(spec, "follow_up", None)
                t_run = time.perf_counter()
                timer = TimeLeft(getattr(spec, "task_kinds", None), getattr(spec, "record_seconds", None))

                def progress(done, total, fresh):
                    seconds = timer.seconds_left() if done < total else None
                    left = "" if seconds is None else f", {_duration(seconds)} left"
                    session.runs_progress = f"{done}/{total}{left}"

                all_tasks, records = run_tasks(
                    tasks, spec.execute, min(int(jobs), int(getattr(spec, "MAX_JOBS", jobs))),
                    on_done=None if on_done is None else (lambda task, rec: on_done(session, task, rec)),
                    checkpoints=checkpoints,
                    follow_up=None if follow_up is None else (lambda task, rec: follow_up(session, task, rec)),
                    progress=progress, timer=timer)
                session.runs_wall_time_s = time.perf_counter() - t_run
                session.runs_progress = ""
                doc = spec.write(session, all_tasks, records)
    except ExperimentInterrupted:
        raise
    except KeyboardInterrupt:
        # One line for the user instead of a traceback: what is saved and how to go on. The
        # half-written outputs are gone (`staged_output`); ``out`` is as it was, checkpoints included.
        message = checkpoints.interrupted_message() if checkpoints is not None else "interrupted: nothing saved"
        raise ExperimentInterrupted(message) from None
    if checkpoints is not None:
        checkpoints.clear()   # moving the outputs into place removed them; this records it
    session.out = out
    session.log(f"outputs in {out}")
    return doc
