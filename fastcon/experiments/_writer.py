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

import csv
import errno
import json
import math
import os
import tempfile
from pathlib import Path

import numpy as np

from .._results import _jsonable

__all__ = ["RUN_SCHEMA", "TOP_SCHEMA", "history_csv_name", "output_folder", "pyplot", "read_history_csv",
           "ruled_table", "save_figure", "validate_results", "writable_folder", "write_csv", "write_history_csv",
           "write_results_json"]

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


def output_folder(name, quick, out_dir=None) -> Path:
    """``out_dir`` or ``fastcon-results/NAME[-quick]``, created and checked writable (`writable_folder`).

    Raises ValueError naming ``out_dir`` when the folder cannot be written.
    """
    out = Path(out_dir if out_dir is not None else f"fastcon-results/{name}{'-quick' if quick else ''}")
    try:
        return writable_folder(out)
    except OSError as exc:
        raise ValueError(f"out_dir: cannot write to {out}: {exc.strerror or exc}") from exc


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
