"""What every solver returns: `SolveResult`, and the `History`/`Counters` it is built from.

A solver creates one `History` and one `Counters`, records into them as it runs, and hands them to
`SolveResult`. Keeping this in one place means every solver's output plots, serialises and compares
the same way.
"""
from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np

__all__ = ["SolveResult", "History", "Counters", "STATUSES", "FEASIBILITY_STATUSES", "PHASE_ONE_STATUSES"]

#: Statuses a solver may report, one meaning each. Failing to meet a constraint is a status, never an
#: exception.
STATUSES = (
    "converged",              # a stopping rule of the algorithm was met
    "max_iter",               # the iteration budget ran out; x obeys the algorithm's output rule
    "no_feasible_iterate",    # no iterate met the solver's feasibility tolerance (the message gives the best
                              # violation; fastcon.solvers.check_feasibility can certify infeasibility)
    "infeasible_stationary",  # stopped at an infeasible stationary point of the violation: the violated
                              # constraint has a zero subgradient, or its linearisation cannot decrease
    "penalty_limit",          # the penalty reached its cap while the iterate was still infeasible
    "radius_limit",           # the trust-region radius fell below its minimum at an infeasible iterate
    "callback_stop",          # the user's callback asked to stop
    "time_limit",             # the wall-clock budget ran out (the reproductions' budgets, kept by a callback)
    "data_pass_limit",        # the data-pass budget ran out (the DP(g) cap of [LX25] §4.3)
)

#: Statuses of `fastcon.solvers.check_feasibility` (a search for a point with g <= its tolerance).
FEASIBILITY_STATUSES = (
    "feasible",               # an iterate met g <= the tolerance
    "certified_infeasible",   # a lower bound on min g exceeds the tolerance (convex constraints only)
    "undecided",              # the budget ran out, or a non-convex g had a zero subgradient, first
)

#: Statuses of IQRC's Phase I (``info["phase_one"]["status"]``), the same words where the meaning is
#: the same as in `FEASIBILITY_STATUSES` and `STATUSES`.
PHASE_ONE_STATUSES = (
    "not_needed",             # the start already met g <= the threshold
    "skipped",                # the start did not, and phase_one=False
    "feasible",               # an iterate met g <= the threshold
    "undecided",              # the budget ran out first
    "infeasible_stationary",  # a zero subgradient at g > the threshold
)


class History:
    """Per-iteration trace sampled every ``record_every`` iterations.

    Values are appended as Python scalars (cheap at the sampling rates used) and frozen into NumPy
    arrays by `as_arrays`. Elapsed time is measured from construction, or from `restart_clock`.

    Parameters
    ----------
    record_every : int
        Sampling period in iterations (iteration 0 and the last one are always recordable by
        calling `record` with ``force=True``).
    """

    def __init__(self, record_every: int = 1):
        # Solvers check their arguments with fastcon.solvers._validation (a layer above); this guard
        # keeps direct users from a silently truncated 2.5 or a bool.
        if (isinstance(record_every, (bool, np.bool_)) or not isinstance(record_every, (int, np.integer))
                or record_every < 1):
            raise ValueError(f"record_every: must be a positive integer, got {record_every!r}")
        self.record_every = int(record_every)
        self._columns: dict[str, list] = {}
        self._n_rows = 0
        self._last_iteration = None
        self._t0 = time.perf_counter()

    def restart_clock(self):
        self._t0 = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self._t0

    def due(self, iteration: int) -> bool:
        """Whether `record` should be called at this iteration."""
        return iteration % self.record_every == 0

    def record(self, iteration: int, force: bool = False, **values):
        """Append one row. Columns may appear late; missing earlier entries are NaN.

        Returns True when a row was written. Recording the same iteration twice is ignored, so a
        solver can unconditionally ``force``-record its final iterate.
        """
        if not (force or self.due(iteration)) or iteration == self._last_iteration:
            return False
        row = {"iteration": int(iteration), "time": self.elapsed(), **values}
        for key, value in row.items():
            column = self._columns.get(key)
            if column is None:
                column = self._columns[key] = [math.nan] * self._n_rows
            column.append(value)
        self._n_rows += 1
        for key, column in self._columns.items():
            if len(column) < self._n_rows:
                column.append(math.nan)
        self._last_iteration = iteration
        return True

    def __len__(self):
        return self._n_rows

    def as_arrays(self) -> dict:
        return {key: np.asarray(column) for key, column in self._columns.items()}


class Counters:
    """Oracle and data-access counters of one solve.

    ``rows_f`` / ``rows_g`` count rows read by objective and constraint oracles; divided by the
    terms' full-pass sizes they give data passes as the papers count them (a two-point evaluation
    on one batch reads each row once).
    """

    def __init__(self, n_samples_f: int = 0, n_samples_g: int = 0):
        self.n_samples_f = int(n_samples_f)
        self.n_samples_g = int(n_samples_g)
        self.values: dict[str, float] = {"rows_f": 0, "rows_g": 0}

    def add(self, name: str, amount=1):
        self.values[name] = self.values.get(name, 0) + amount

    def __getitem__(self, name):
        return self.values[name]

    @property
    def data_passes_f(self) -> float:
        return self.values["rows_f"] / self.n_samples_f if self.n_samples_f else 0.0

    @property
    def data_passes_g(self) -> float:
        return self.values["rows_g"] / self.n_samples_g if self.n_samples_g else 0.0

    def as_dict(self) -> dict:
        out = dict(self.values)
        out["data_passes_f"] = self.data_passes_f
        out["data_passes_g"] = self.data_passes_g
        return out


def _jsonable(value):
    if isinstance(value, np.ndarray):
        return [_jsonable(v) for v in value.tolist()] if value.dtype.kind == "f" else value.tolist()
    if isinstance(value, (np.floating, float)):
        value = float(value)
        return value if math.isfinite(value) else None  # JSON has no NaN/inf
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (np.bool_,)):
        return bool(value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


class SolveResult:
    """Outcome of a solver run.

    Attributes
    ----------
    x : ndarray
        The output point, chosen by the solver's output rule.
    status : str
        One of `STATUSES`.
    message : str
        Human-readable explanation of the status.
    n_iter : int
        Iterations performed.
    objective, max_violation : float
        f(x) and max(0, max_i g_i(x)) at the output point.
    multipliers : ndarray or None
        Lagrange-multiplier estimates, where the method produces them.
    history : dict of ndarray
        Sampled traces (``iteration``, ``time``, ``objective``, ``max_violation``, ...).
    counters : dict
        Oracle counts and data passes (see `Counters`).
    info : dict
        Solver-specific extras (parameters used, output-rule details).
    solver : str
        Name of the solver that produced the result.
    state : object or None
        The solver's model state when ``x`` alone does not describe the model (a boosting ensemble
        of `fastcon.solvers.abpp` / `cbpr`); not serialised by `to_dict`.
    """

    def __init__(self, x, status, message="", n_iter=0, objective=math.nan, max_violation=math.nan,
                 multipliers=None, history=None, counters=None, info=None, solver="", state=None):
        if status not in STATUSES:
            raise ValueError(f"status: {status!r} is not one of {STATUSES}")
        self.x = np.asarray(x)
        self.status = status
        self.message = message
        self.n_iter = int(n_iter)
        self.objective = float(objective)
        self.max_violation = float(max_violation)
        self.multipliers = None if multipliers is None else np.asarray(multipliers, dtype=np.float64)
        if isinstance(history, History):
            history = history.as_arrays()
        self.history = dict(history or {})
        if isinstance(counters, Counters):
            counters = counters.as_dict()
        self.counters = dict(counters or {})
        self.info = dict(info or {})
        self.solver = solver
        self.state = state

    @property
    def success(self) -> bool:
        return self.status in ("converged", "max_iter")

    def __repr__(self):
        return (f"SolveResult(solver={self.solver!r}, status={self.status!r}, n_iter={self.n_iter}, "
                f"objective={self.objective:.6g}, max_violation={self.max_violation:.3g})")

    def to_dict(self, include_x=True, include_history=True) -> dict:
        """A JSON-ready dict (NaN and inf become null)."""
        out = {
            "solver": self.solver, "status": self.status, "message": self.message, "n_iter": self.n_iter,
            "objective": self.objective, "max_violation": self.max_violation,
            "multipliers": self.multipliers, "counters": self.counters, "info": self.info,
        }
        if include_x:
            out["x"] = self.x
        if include_history:
            out["history"] = self.history
        return _jsonable(out)

    def to_json(self, path=None, **kwargs) -> str:
        """Serialise `to_dict` as JSON; also write it to ``path`` when given."""
        text = json.dumps(self.to_dict(**kwargs), indent=1)
        if path is not None:
            Path(path).write_text(text)
        return text

    def history_csv(self, path):
        """Write the history as CSV, one row per recorded iteration, columns in recording order."""
        import csv

        columns = list(self.history)
        with open(path, "w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(columns)
            for row in zip(*(self.history[c].tolist() for c in columns)):
                writer.writerow(row)

    def plot(self, x_axis="iteration", keys=("objective", "max_violation"), axes=None, label=None):
        """Plot history columns against ``x_axis`` (one panel per key); returns the figure.

        ``max_violation`` is drawn on a symmetric-log scale so that feasible (0) and tiny
        violations are both visible.
        """
        plt = _pyplot()
        keys = [k for k in keys if k in self.history]
        if not keys:
            raise ValueError(f"keys: none of the requested columns is in the history ({sorted(self.history)})")
        if x_axis not in self.history:
            raise ValueError(f"x_axis: {x_axis!r} not in history ({sorted(self.history)})")
        if axes is None:
            fig, axes = plt.subplots(1, len(keys), figsize=(4.2 * len(keys), 3.4), squeeze=False)
            axes = axes[0]
        else:
            axes = np.atleast_1d(axes)
            fig = axes[0].figure
        for ax, key in zip(axes, keys):
            ax.plot(self.history[x_axis], self.history[key], label=label or self.solver or None)
            ax.set_xlabel(x_axis.replace("_", " "))
            ax.set_ylabel(key.replace("_", " "))
            if key == "max_violation":
                ax.set_yscale("symlog", linthresh=1e-6)
            ax.grid(alpha=0.3)
        if label or self.solver:
            axes[0].legend()
        fig.tight_layout()
        return fig


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError(
            "plotting needs matplotlib, which is an optional dependency of fastcon: "
            "pip install 'fastcon[plot]'"
        ) from None
    return plt
