"""Per-task checkpoints of a paper experiment, so that an interrupted full run can be resumed.

A full reproduction runs hundreds of solver runs (ssg-wasserstein on COMPAS: 81 grid points of
15,000 iterations, about 3.3 CPU-hours). The driver (`fastcon.experiments._tuning`) saves every
finished task's record as ``<out>/checkpoints/<key>.json`` at once; ``resume=True`` loads the
records whose key matches and runs only the rest. When the outputs are written the folder is
removed: a finished run starts afresh.

The key is a hash of everything that determines a task's numbers: experiment module, dataset,
build options, seed, method, grid point, run seed, run options and the stationarity settings (not
the data folder, nor ``jobs``, which change no number). A changed configuration therefore never
picks up a stale record; a changed *code* version does not enter the key, so resume with the
fastcon that started the run (or one whose numbers for these settings are unchanged). Records are stored as JSON; Python's ``json`` writes floats with
``repr``, so they load back bit-identical, NaN and infinities included.

Ctrl-C during a checkpointed run raises `ExperimentInterrupted`, a `KeyboardInterrupt` that says
how many runs are saved and how to resume (`TaskCheckpoints.interrupted_message`); the command line
prints that line instead of a traceback.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

__all__ = ["TaskCheckpoints", "task_key", "ExperimentInterrupted"]

_KEY_FIELDS = ("module", "dataset", "build", "seed", "method", "params", "grid_index", "run_seed", "run",
               "stationarity")


def task_key(task) -> str:
    """A 20-hex-digit digest of the fields of ``task`` that determine its record."""
    fields = {k: task.get(k) for k in _KEY_FIELDS}
    blob = json.dumps(fields, sort_keys=True, default=repr)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


class ExperimentInterrupted(KeyboardInterrupt):
    """Ctrl-C during an experiment, carrying a one-line account of what was saved.

    A subclass of `KeyboardInterrupt`, so code that handles Ctrl-C keeps working; ``message`` is
    what the command line prints (e.g. "interrupted: 12 of 40 runs saved in OUT/checkpoints; run
    the same command with --resume to continue").
    """

    def __init__(self, message):
        super().__init__(message)
        self.message = str(message)


class TaskCheckpoints:
    """The checkpoint folder of one run.

    Parameters
    ----------
    folder : path-like
        Where the records go (created on the first save).
    resume : bool
        Load matching records instead of re-running their tasks. Without it, records already in
        the folder are ignored (and overwritten as tasks finish).

    Attributes
    ----------
    loaded, saved : int
        Records loaded (``resume``) and saved by this invocation.
    total : int or None
        Number of runs of the experiment, set by the driver once its tasks are known (for
        `interrupted_message`).
    """

    def __init__(self, folder, resume=False):
        self.folder = Path(folder)
        self.resume = bool(resume)
        self.loaded = 0
        self.saved = 0
        self.cleared = False
        self.total = None

    def _path(self, task) -> Path:
        return self.folder / f"{task_key(task)}.json"

    def load(self, task):
        """The saved record of ``task``, or None (not resuming, none saved, or unreadable)."""
        if not self.resume:
            return None
        path = self._path(task)
        try:
            record = json.loads(path.read_text())
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
