r"""The outputs every experiment writes: results.json, CSVs, the printed table, figures.

``results.json`` has one schema for every experiment (``TOP_SCHEMA``, ``RUN_SCHEMA``; checked by
`validate_results` before it is written, atomically), so results compare across experiments and
fastcon versions: one run entry per (dataset, method) with at least its parameters, status,
iteration count, final objective and violation, stationarity (or null), data passes and the name
of its history CSV; an experiment adds keys of its own. Keys holding wall-clock times contain
``time`` in their name (``wall_time_s``, ``timing``), so two runs with the same seed can be compared
on everything else. NaN and infinities are written as ``null`` (JSON has neither).

History CSVs (`write_history_csv`): one per run, its recorded columns in a canonical order plus
``stationarity``. Figures: `pyplot` (matplotlib on the Agg backend, which needs no display) and
`save_figure`.

This module imports nothing else of `fastcon.experiments`, so every other module can use it.
"""
from __future__ import annotations

import contextlib
import csv
import datetime
import errno
import json
import math
import os
import re
import shutil
import signal
import tempfile
import threading
import warnings
from pathlib import Path

import numpy as np

from .._results import _jsonable

__all__ = ["MARKER", "RUN_SCHEMA", "TOP_SCHEMA", "check_output_target", "history_csv_name", "output_folder",
           "pyplot", "read_history_csv", "ruled_table", "save_figure", "sigint_ignored", "staged_output",
           "validate_results", "writable_folder", "write_csv", "write_history_csv", "write_results_json"]

_NUM = (int, float)
#: Required top-level keys of results.json and their types.
TOP_SCHEMA = {"experiment": str, "quick": bool, "fastcon_version": str, "created": str, "runs": list}
#: Required keys of a run entry; ``None`` allowed where the tuple contains ``type(None)``.
RUN_SCHEMA = {
    "dataset": str, "problem": str, "method": str, "params": dict, "status": str, "n_iter": int,
    "wall_time_s": _NUM, "initial_objective": _NUM, "objective": _NUM, "max_violation": _NUM,
    "stationarity": _NUM + (type(None),), "data_passes_f": _NUM, "data_passes_g": _NUM, "history_csv": str,
}


# ------------------------------------------------------------------------------- the output folder
def writable_folder(path) -> Path:
    """``path`` as a folder that can be written: created if needed, then a probe file written and deleted.

    Checked before an experiment computes anything, so that an unwritable output folder fails at
    once rather than after hours of runs.

    Raises
    ------
    OSError
        The folder cannot be created (a parent is a file, no permission, read-only file system),
        is not a folder, or a file cannot be written in it.
    """
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "exists and is not a folder", str(folder))
    folder.mkdir(parents=True, exist_ok=True)
    fd, probe = tempfile.mkstemp(dir=folder, prefix=".fastcon-write-test-")
    try:
        os.write(fd, b"fastcon")
    finally:
        os.close(fd)
        os.unlink(probe)
    return folder


#: File naming what a completed run wrote into its output folder (JSON: fastcon version, time, entries).
MARKER = ".fastcon-output.json"
#: Sub-folder of the per-run checkpoints (`._runner.TaskCheckpoints`), kept across interruptions.
CHECKPOINTS = "checkpoints"
#: The files `._runner.TaskCheckpoints` writes: ``<task_key>.json`` (20 hex digits), and
#: ``<task_key>.tmp<pid>`` while one is being written (an interruption can leave it behind).
CHECKPOINT_FILE = re.compile(r"[0-9a-f]{20}\.(?:json|tmp[0-9]+)")
#: What each experiment writes besides results.json and the history CSVs its runs name
#: (``runs[i].history_csv``): how an output folder written before `MARKER` existed is recognised.
_EXPERIMENT_FILES = {
    "gbm-bregman": {"runs.csv", "table1.csv", "table2.csv", "tables.txt", "figure1_np.png", "figure2_fairness.png",
                    "figure3_xgb_fair_adult.png"},
    "iqrc-mnpc": {"summary.csv", "summary.txt", "figure1_iqrc.png"},
    "partial-fairness": {"runs.csv", "frontier.csv", "summary.txt", "figure1_frontiers.png", "figure2_ccdf.png",
                         "figure9_10_idca_vs_ssg.png"},
    "spider-table2": {"table2.csv", "table2.txt", "figure1_spider.png", "figure2_spider.png"},
    "ssg-roc": {"summary.csv", "summary.txt", "figure1_roc.png"},
    "ssg-wasserstein": {"summary.csv", "summary.txt", "figure1_wasserstein.png"},
}
#: What `fastcon.demo.run_demo` writes (its results.json has its own keys, not ``TOP_SCHEMA``).
_DEMO_FILES = {"table.csv", "demo.png"}


class OutputFolderError(OSError):
    """``--out`` names a folder that holds files no fastcon run wrote, or is a symbolic link (refused)."""


def _marked_files(folder):
    """The names `MARKER` says a completed run wrote into ``folder``; None if it is not a marker fastcon wrote."""
    try:
        doc = json.loads((folder / MARKER).read_text())
    except (OSError, ValueError):
        return None
    if not (isinstance(doc, dict) and isinstance(doc.get("fastcon_version"), str)
            and isinstance(doc.get("files"), list) and all(isinstance(n, str) for n in doc["files"])):
        return None
    return set(doc["files"]) - {MARKER, CHECKPOINTS}


def _plain_name(name) -> bool:
    return isinstance(name, str) and name not in ("", ".", "..") and "/" not in name and os.sep not in name


def _unmarked_files(folder):
    """The names fastcon wrote into ``folder``, written before `MARKER` existed; None if not fastcon's.

    Only a results.json that fastcon wrote counts: an experiment's (``TOP_SCHEMA`` and ``RUN_SCHEMA``,
    a known experiment name) or the demo's; the names are then those that experiment (or the demo)
    writes, never "every CSV and PNG".
    """
    try:
        doc = json.loads((folder / "results.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict):
        return None
    if "experiment" in doc:
        if validate_results(doc) or doc["experiment"] not in _EXPERIMENT_FILES:
            return None
        history = {run["history_csv"] for run in doc["runs"]}
        return ({"results.json"} | _EXPERIMENT_FILES[doc["experiment"]]
                | {n for n in history if _plain_name(n) and n.endswith(".csv")})
    versions = doc.get("versions")
    if (isinstance(versions, dict) and isinstance(versions.get("fastcon"), str) and isinstance(doc.get("table"), list)
            and isinstance(doc.get("sweeps"), dict)):
        return {"results.json"} | _DEMO_FILES
    return None


def _fastcon_checkpoints(path) -> bool:
    """Whether folder ``path`` holds nothing but files `._runner.TaskCheckpoints` writes (`CHECKPOINT_FILE`)."""
    try:
        with os.scandir(path) as entries:
            return all(e.is_file(follow_symlinks=False) and CHECKPOINT_FILE.fullmatch(e.name) for e in entries)
    except OSError:
        return False


def _owned_entries(folder, checkpoints=False):
    """``(owned, foreign)``: the entries of ``folder`` an earlier fastcon run wrote, and the others (sorted).

    Owned: the entries `MARKER` lists (regular files) and the marker itself; in a folder without
    the marker, the files its experiment writes if its results.json is fastcon's (`_unmarked_files`);
    ``checkpoints`` when ``checkpoints`` is true (the experiment checkpoints its runs) and the folder
    holds only checkpoint files. Everything else is foreign, the marker too when fastcon did not write it.
    """
    folder = Path(folder)
    with os.scandir(folder) as it:
        entries = {e.name: e for e in it}
    owned = set()
    if MARKER in entries:
        written = _marked_files(folder) if entries[MARKER].is_file(follow_symlinks=False) else None
        if written is not None:
            owned.add(MARKER)
    else:
        written = _unmarked_files(folder) if "results.json" in entries else None
    owned |= {n for n in (written or ()) if n in entries and entries[n].is_file(follow_symlinks=False)}
    ckpt = entries.get(CHECKPOINTS)
    if checkpoints and ckpt is not None and ckpt.is_dir(follow_symlinks=False) and _fastcon_checkpoints(ckpt.path):
        owned.add(CHECKPOINTS)
    return owned, sorted(set(entries) - owned)


def _foreign_entries(folder, checkpoints=False) -> list:
    """The entries of an existing output folder that no earlier fastcon run wrote (sorted)."""
    return _owned_entries(folder, checkpoints)[1]


def _shown(names) -> str:
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def _refuse_symlink(folder) -> None:
    if folder.is_symlink():
        raise OutputFolderError(errno.EEXIST, f"is a symbolic link (to {os.readlink(folder)}); give the folder itself, "
                                "or a new folder (the outputs replace the output folder as a whole, which would "
                                "replace the link, not write where it points)", str(folder))


def check_output_target(path, checkpoints=False) -> Path:
    """Check that a run may write its outputs to folder ``path``, before anything is computed.

    A run writes into a new folder beside ``path`` (`staged_output`) and moves it into place once
    complete, so ``path`` may be missing, empty, hold the fastcon-written ``checkpoints`` of an
    interrupted run (only when ``checkpoints``: the experiment checkpoints its runs), or hold the
    outputs of an earlier completed run (replaced as a whole when the new run completes, never
    mixed with it). Nothing is created except ``path``'s parent folders.

    Raises
    ------
    ValueError
        ``path`` is empty.
    OutputFolderError
        ``path`` holds files that no fastcon run wrote (the message names them): replacing the folder
        would delete them, writing into it would mix them with the outputs. Or ``path`` is a
        symbolic link (refused, not followed: see `_refuse_symlink`).
    OSError
        ``path`` is a file, or its parent cannot be created or written.
    """
    if not str(path).strip():
        raise ValueError("the output folder is an empty path")
    folder = Path(path)
    _refuse_symlink(folder)
    if folder.exists() and not folder.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "exists and is not a folder", str(folder))
    if folder.is_dir():
        foreign = _foreign_entries(folder, checkpoints)
        if foreign:
            raise OutputFolderError(errno.EEXIST, f"holds files no fastcon run wrote ({_shown(foreign)}); choose a new "
                                    "or empty folder (a folder an earlier fastcon run wrote is replaced when the new "
                                    "run completes)", str(folder))
        writable_folder(folder)   # the checkpoints go there
    writable_folder(Path(os.path.abspath(folder)).parent)
    return folder


def output_folder(name, quick, out_dir=None, checkpoints=False) -> Path:
    """``out_dir`` or ``fastcon-results/NAME[-quick]``, checked by `check_output_target` (not created).

    Raises ValueError naming ``out_dir`` when the folder cannot be written or holds other files.
    """
    if out_dir is not None and not os.fspath(out_dir).strip():   # Path("") would be the current folder
        raise ValueError(f"out_dir: must be a folder path, got {os.fspath(out_dir)!r}")
    out = Path(out_dir if out_dir is not None else f"fastcon-results/{name}{'-quick' if quick else ''}")
    try:
        return check_output_target(out, checkpoints)
    except ValueError as exc:
        raise ValueError(f"out_dir: {exc}") from None
    except OSError as exc:
        raise ValueError(f"out_dir: cannot write to {out}: {exc.strerror or exc}") from exc


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


def _remove_owned(old, checkpoints) -> None:
    """Delete what an earlier fastcon run wrote in ``old`` (the output folder just moved aside), then ``old``.

    Only the entries `_owned_entries` counts as fastcon's; should anything else be there (written in
    the instant between the last check and the move), ``old`` is kept with it and a warning names it.
    """
    owned, foreign = _owned_entries(old, checkpoints)
    for name in owned:
        path = old / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    if foreign:
        warnings.warn(f"{old}: kept, it holds files no fastcon run wrote ({_shown(foreign)})", stacklevel=3)
        return
    try:
        old.rmdir()
    except OSError as exc:
        warnings.warn(f"{old}: could not be removed ({exc.strerror or exc})", stacklevel=3)


def _publish(stage, out, checkpoints=False) -> None:
    """Move the complete folder ``stage`` to ``out``, replacing what ``out`` held (`staged_output`).

    ``out`` is checked again (`check_output_target`'s rules) immediately before it is moved aside:
    when it is now a symbolic link or holds files no fastcon run wrote, OutputFolderError is raised
    and ``stage`` and ``out`` are left as they are. Of the old ``out``, only what fastcon wrote is deleted.
    """
    files = sorted(p.name for p in stage.iterdir())
    from .._version import __version__

    (stage / MARKER).write_text(json.dumps({
        "fastcon_version": __version__, "files": files,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}, indent=1))
    with sigint_ignored():   # a Ctrl-C now must not leave the outputs half moved
        _refuse_symlink(out)
        if not out.exists():
            os.rename(stage, out)
            return
        foreign = _foreign_entries(out, checkpoints)
        if foreign:
            raise OutputFolderError(errno.EEXIST, f"holds files no fastcon run wrote ({_shown(foreign)}), added "
                                    "during the run", str(out))
        old = Path(tempfile.mkdtemp(dir=out.parent, prefix=f"{out.name}.old-"))
        try:
            os.rename(out, old)   # onto the empty folder just made: same file system, atomic
        except OSError:
            old.rmdir()   # never leave an empty .old- folder behind
            raise
        try:
            os.rename(stage, out)
        except OSError:
            os.rename(old, out)
            raise
        _remove_owned(old, checkpoints)


@contextlib.contextmanager
def staged_output(out, checkpoints=False):
    """Write a run's outputs into a new folder beside ``out``; move it to ``out`` only once complete.

    Yields the folder to write into (``<out>.partial-XXXXXXXX``, in ``out``'s parent so that the
    final move is a rename on one file system). When the block completes, the folder gets a
    `MARKER` listing its files and replaces ``out``: an earlier completed run's outputs (and the
    ``checkpoints`` this run read or wrote, when ``checkpoints``) are removed only then, so ``out``
    always holds one complete run, never two mixed. When the block raises (Ctrl-C included) the new
    folder is deleted, ``out`` is left as it was (its ``checkpoints`` kept for ``--resume``), and
    ``out`` is removed if this call found it missing and it is still empty.

    Nothing fastcon did not write is deleted: should ``out`` hold such files when the block completes
    (added during the run) or have become a symbolic link, OutputFolderError says so, naming both
    folders; ``out`` is left untouched and the outputs stay in the new folder.

    Check ``out`` with `check_output_target` first (with the same ``checkpoints``).
    """
    out = Path(os.path.abspath(out))   # "." and ".." resolved: the parent is where the new folder goes
    existed = out.exists()
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(dir=out.parent, prefix=f"{out.name}.partial-"))
    try:
        yield stage
    except BaseException:
        with sigint_ignored():
            shutil.rmtree(stage, ignore_errors=True)
            if not existed:
                with contextlib.suppress(OSError):
                    out.rmdir()   # only when empty
        raise
    try:
        _publish(stage, out, checkpoints)
    except OutputFolderError as exc:
        raise OutputFolderError(exc.errno, f"the outputs are complete in {stage} but were not moved to {out}: {out} "
                                f"{exc.strerror}; {out} is left as it was (move the outputs yourself)") from None
    except OSError as exc:
        raise OSError(exc.errno, f"the outputs are complete in {stage} but could not replace {out}: "
                      f"{exc.strerror or exc}") from exc


# ------------------------------------------------------------------------------- results.json
def validate_results(doc) -> list:
    """Problems of a results.json dict against ``TOP_SCHEMA`` and ``RUN_SCHEMA`` (empty list: valid)."""
    errors = []
    for key, typ in TOP_SCHEMA.items():
        if key not in doc:
            errors.append(f"missing top-level key {key!r}")
        elif not isinstance(doc[key], typ) or (typ is not bool and isinstance(doc[key], bool)):
            errors.append(f"{key!r}: expected {typ}, got {type(doc[key]).__name__}")
    for i, run in enumerate(doc.get("runs", []) or []):
        if not isinstance(run, dict):
            errors.append(f"runs[{i}]: not an object")
            continue
        for key, typ in RUN_SCHEMA.items():
            if key not in run:
                errors.append(f"runs[{i}]: missing key {key!r}")
            elif isinstance(run[key], bool) or not isinstance(run[key], typ):
                errors.append(f"runs[{i}].{key}: expected {typ}, got {type(run[key]).__name__}")
    return errors


def write_results_json(doc, out_dir) -> Path:
    """Validate ``doc`` and write it as ``out_dir/results.json`` (a temporary file, then a rename).

    A reader (or a Ctrl-C) never sees half a file. Raises RuntimeError when ``doc`` does not match
    the schema: a bug of the experiment, never a user error.
    """
    doc = _jsonable(doc)
    errors = validate_results(doc)
    if errors:
        raise RuntimeError("results.json does not match the schema: " + "; ".join(errors))
    path = Path(out_dir, "results.json")
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(doc, indent=1))
    os.replace(tmp, path)
    return path


# ------------------------------------------------------------------------------- CSV
def history_csv_name(dataset, problem, method) -> str:
    return f"{dataset}_{problem}_{method}.csv"


def _cell(v):
    if v is None:
        return ""
    if isinstance(v, float) and not math.isfinite(v):
        return "" if math.isnan(v) else repr(v)
    return v


def write_history_csv(path, history, curve=None) -> None:
    """History columns in recording order plus ``stationarity`` (empty where not measured).

    Rows are the recorded iterations; a stationarity iteration that the history did not record (the
    final :math:`x_T`) gets its own row with only ``iteration`` and ``stationarity``. NaN cells are
    empty.
    """
    first = ["iteration", "time", "objective", "constraint", "max_violation"]
    # Canonical order (IPP histories come with their columns in set order, which varies by process).
    columns = [c for c in first if c in history] + sorted(c for c in history if c not in first and c != "stationarity")
    rows = {int(it): i for i, it in enumerate(history.get("iteration", []))}
    stat = {} if not curve else dict(zip(curve["iteration"], curve["value"]))
    iters = sorted(set(rows) | set(stat))
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(columns + ["stationarity"])
        for it in iters:
            i = rows.get(it)
            vals = [_cell(history[c][i]) if i is not None else "" for c in columns]
            if i is None:
                vals[columns.index("iteration")] = it
            w.writerow(vals + [_cell(stat.get(it))])


def read_history_csv(path) -> dict:
    """Columns of a history CSV as float arrays (non-numeric columns, e.g. ``step_kind``, as strings)."""
    with open(path, newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        cols = [[] for _ in header]
        for row in reader:
            for c, v in zip(cols, row):
                c.append(v)
    out = {}
    for name, values in zip(header, cols):
        try:
            out[name] = np.array([float(v) if v != "" else np.nan for v in values])
        except ValueError:
            out[name] = np.array(values)
    return out


def write_csv(path, columns, rows, lineterminator="\r\n") -> None:
    """A CSV with header ``columns``; ``rows`` are dicts (missing keys and None: empty cells) or sequences."""
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh, lineterminator=lineterminator)
        w.writerow(columns)
        for row in rows:
            if isinstance(row, dict):
                row = [row.get(c) for c in columns]
            w.writerow(["" if v is None else v for v in row])


# ------------------------------------------------------------------------------- printed table
def ruled_table(title, head, lines, footer=None) -> str:
    """``title``, the column header ``head``, a rule as wide as it, the ``lines``, then ``footer`` lines."""
    out = [title, head, "-" * len(head), *lines]
    if footer:
        out.extend([footer] if isinstance(footer, str) else footer)
    return "\n".join(out)


# ------------------------------------------------------------------------------- figures
def pyplot(required=True):
    """``matplotlib.pyplot`` on the Agg backend (no display needed).

    Parameters
    ----------
    required : bool
        Without matplotlib: raise ImportError (True) or return None (False: the experiment skips
        its figures; matplotlib is an optional dependency).
    """
    try:
        import matplotlib
    except ImportError:
        if required:
            raise ImportError("matplotlib: needed to draw the experiment's figure (pip install matplotlib)") from None
        return None
    # force=False: keep a backend the caller already chose (an interactive session).
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path, dpi) -> Path:
    """Save ``fig`` as PNG at ``path`` (parent folders created) and close it; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path
