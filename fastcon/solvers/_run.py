r"""The bookkeeping every solver loop shares, in one object: `SolverRun`.

A solver states its algorithm; the run checks the common keywords (``max_iter``, ``record_every``,
``callback``, ``feasibility_tolerance``, ``seed``), keeps the `History`, meters data passes and time
without the history-only evaluations (`PassMeter`), shows the `Progress`, calls the callback
(``"callback_stop"``), tracks the best feasible iterate, decides ``"no_feasible_iterate"`` and
assembles the `SolveResult`. A solver loop written with it: docs/design.md, 'Module notes'.
"""
from __future__ import annotations

import math

import numpy as np

from .._progress import Progress
from .._results import Counters, History, SolveResult
from ._common import default_record_every, no_feasible_message, PassMeter
from ._validation import check_callback, check_count, check_optional_count, check_real, check_seed

__all__ = ["SolverRun"]

_UNSET = object()


class SolverRun:
    r"""History, progress, callback, best-feasible tracking and result assembly of one solve.

    Parameters
    ----------
    solver : str
        ``SolveResult.solver`` and the progress label.
    max_iter : int
        :math:`T \ge 1` (checked by `check_count` under the name ``count_name``).
    record_every : int, optional
        History period, checked here; None applies the shared rule in `start`.
    callback : callable ``(t, x, info) -> bool``, optional
        Checked here; called by `tick`. True stops the run with status ``"callback_stop"``.
    verbose : bool, int or str
        See `fastcon._progress.Progress`.
    feasibility_tolerance : float, optional
        :math:`\ge 0`: an iterate with constraint value at most this is feasible (`offer`), and a run
        that offered none ends with ``"no_feasible_iterate"`` (`finish`). None: no such status.
    seed : int >= 0, SeedSequence, Generator or None, optional
        Checked by `check_seed` when given.
    count_name : str
        The argument that holds ``max_iter`` (e.g. ``"outer_iter"``), for its error message.

    Attributes
    ----------
    max_iter : int
    status : str
        ``"max_iter"`` until the solver or `tick` sets another one of `fastcon._results.STATUSES`.
    n_iter : int
        Iterations done: ``t + 1`` after ``tick(t, ...)``.
    history : History
        Created by `start`.
    meter : PassMeter or None
        Created by `start` from its ``problem``; ``with run.meter:`` excludes an evaluation.
    counters : Counters
        Created by `start`; the solver adds its own counts, `finish` fills the metered rows.
    best_constraint : float
        Smallest constraint value offered.
    best_x : ndarray or None
        Copy of the feasible offered iterate of lowest objective (first one on ties).
    best_objective : float
    best_iteration : int
        Its ``t`` (-1 while none).
    """

    def __init__(self, solver, max_iter, *, record_every=None, callback=None, verbose=False,
                 feasibility_tolerance=None, seed=_UNSET, count_name="max_iter"):
        self.solver = solver
        self.max_iter = check_count(count_name, max_iter)
        self.record_every = check_optional_count("record_every", record_every)
        self.callback = check_callback("callback", callback)
        self.feasibility_tolerance = (None if feasibility_tolerance is None
                                      else check_real("feasibility_tolerance", feasibility_tolerance))
        if seed is not _UNSET:
            check_seed("seed", seed)
        self.verbose = verbose
        self.status = "max_iter"
        self.n_iter = 0
        self.history = self.meter = self.progress = self.counters = None
        self.best_constraint = math.inf
        self.best_x, self.best_objective, self.best_iteration = None, math.inf, -1

    # ------------------------------------------------------------------ set-up
    def start(self, problem=None, *, record_rows=0, iteration_rows=1, default_every=None, counters=None,
              progress_total=None):
        r"""Create the history, the data-pass meter, the counters and the progress display.

        Parameters
        ----------
        problem : ConstrainedProblem, optional
            Metered from now on (`PassMeter`): history rows get ``time`` and ``data_passes_f/g``
            of the algorithm alone, and `finish` its ``rows_f``/``rows_g``. None: no meter.
        record_rows, iteration_rows : float
            Arguments of `default_record_every` when ``record_every`` is None: rows one record
            reads beyond the iteration's, and rows one iteration reads.
        default_every : int, optional
            The period ``record_every=None`` stands for, instead of that rule.
        counters : Counters, optional
            Default: ``Counters(n_samples_f, n_samples_g)`` of ``problem`` (empty without one).
        progress_total : int, optional
            Steps of the progress display (default ``max_iter``).

        Returns
        -------
        SolverRun
            ``self``, for ``with run.start(...):``.
        """
        if self.record_every is None:
            self.record_every = (default_every if default_every is not None
                                 else default_record_every(self.max_iter, record_rows, iteration_rows))
        if problem is not None:
            self.meter = PassMeter(problem)
        if counters is None:
            counters = Counters(problem.n_samples_f, problem.n_samples_g) if problem is not None else Counters()
        self.counters = counters
        self.history = History(self.record_every)
        self.progress = Progress(self.max_iter if progress_total is None else progress_total, self.verbose,
                                 desc=self.solver)
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Close the progress display (idempotent)."""
        if self.progress is not None:
            self.progress.close()

    # ------------------------------------------------------------------ per iteration
    def due(self, t, final=None):
        """Whether row ``t`` is recorded: ``t`` is a multiple of ``record_every`` or the last one.

        ``final`` says whether ``t`` is the last row (default ``t == max_iter - 1``).
        """
        return self.history.due(t) or (t == self.max_iter - 1 if final is None else final)

    def record(self, t, force=False, extra=None, passes=None, **values):
        """Append history row ``t`` if due (`History.record`, its ``force`` and repeat rule).

        With a meter the row is ``iteration, time, *values, data_passes_f, data_passes_g, *extra``,
        ``time`` and the passes being the algorithm's alone, now or as ``passes`` =
        ``(passes_f, passes_g, seconds)`` taken earlier; without one, ``iteration, time, *values,
        *extra``. Returns True when a row was written.
        """
        if not (force or self.history.due(t)):
            return False
        extra = extra or {}
        if self.meter is None:
            return self.history.record(t, force=True, **values, **extra)
        pf, pg, elapsed = passes if passes is not None else self.passes()
        return self.history.record(t, force=True, time=elapsed, **values, data_passes_f=pf, data_passes_g=pg,
                                   **extra)

    def passes(self):
        """``(data passes of f, data passes of g, seconds)`` of the algorithm so far (metered runs)."""
        return (*self.meter.passes(), self.meter.elapsed())

    def offer(self, t, constraint, x=None, objective=math.nan):
        r"""Track the smallest constraint value and, when ``x`` is given, the best feasible iterate.

        ``x`` is kept (copied) when ``constraint`` is at most ``feasibility_tolerance`` and
        ``objective`` is below every earlier feasible offer's.
        """
        if constraint < self.best_constraint:
            self.best_constraint = float(constraint)
        if (x is not None and self.feasibility_tolerance is not None and constraint <= self.feasibility_tolerance
                and objective < self.best_objective):
            self.best_x, self.best_objective, self.best_iteration = np.array(x, copy=True), objective, t
        return self.best_constraint

    def tick(self, t, x, info=None, **progress_values) -> bool:
        """End iteration ``t``: update the progress display, then call ``callback(t, x, info)``.

        A progress value may be a callable of no argument, called only when the display is active
        (a silent run's loop then does not compute it). Returns True when the callback asks to stop;
        the status becomes ``"callback_stop"`` unless the solver already set another one (a
        convergence test met in the same iteration).
        """
        self.n_iter = t + 1
        if self.progress.active:
            self.progress.update(t, **{key: value() if callable(value) else value
                                       for key, value in progress_values.items()})
        if self.callback is not None and self.callback(t, x, {} if info is None else info):
            if self.status == "max_iter":
                self.status = "callback_stop"
            return True
        return False

    # ------------------------------------------------------------------ result
    def finish(self, x, *, objective=math.nan, max_violation=math.nan, message="", n_iter=None, multipliers=None,
               info=None, history=None, state=None, solver=None, no_feasible_from=("max_iter",),
               subject="no iterate", feasibility_tolerance=None) -> SolveResult:
        r"""The `SolveResult`, with status ``"no_feasible_iterate"`` where it applies.

        The status becomes ``"no_feasible_iterate"`` when it is one of ``no_feasible_from`` and no
        offered constraint value was at most ``feasibility_tolerance`` (the argument, else the
        run's; neither: no such status); ``message`` then gets `no_feasible_message` (best value,
        that tolerance, ``subject``) appended after ``"; "``.

        Parameters
        ----------
        x : ndarray
            The output point.
        objective, max_violation : float
            At ``x``.
        message : str
        n_iter : int, optional
            Default `n_iter`.
        multipliers : ndarray, optional
        info : dict, optional
        history : dict, optional
            Instead of the run's `History` (a history assembled from inner runs).
        state : object, optional
            ``SolveResult.state``.
        solver : str, optional
            Default the run's name.
        no_feasible_from : tuple of str
            Statuses that a never-feasible run replaces.
        subject : str
            What was never feasible, for the message.
        feasibility_tolerance : float, optional
            Instead of the run's ``feasibility_tolerance`` for this verdict.

        Returns
        -------
        SolveResult
        """
        self.close()
        status = self.status
        tolerance = (self.feasibility_tolerance if feasibility_tolerance is None
                     else check_real("feasibility_tolerance", feasibility_tolerance))
        if tolerance is not None and self.best_constraint > tolerance and status in no_feasible_from:
            status = "no_feasible_iterate"
            text = no_feasible_message(self.best_constraint, tolerance, subject)
            message = f"{message}; {text}" if message else text
        counters = self.counters if self.counters is not None else Counters()
        if self.meter is not None:
            counters.values["rows_f"], counters.values["rows_g"] = self.meter.rows_f, self.meter.rows_g
        return SolveResult(x, status, message, n_iter=self.n_iter if n_iter is None else n_iter, objective=objective,
                           max_violation=max_violation, multipliers=multipliers,
                           history=self.history if history is None else history, counters=counters, info=info,
                           solver=self.solver if solver is None else solver, state=state)
