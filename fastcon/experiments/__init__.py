"""Paper experiments, runnable as ``fastcon reproduce NAME [--quick] [--out DIR]``.

The papers are cited by the keys of docs/references.md.

Each experiment is a module (dataset preparation, problem, methods, grids, budgets; its docstring
states exactly what ``--quick`` changes) run by the one driver of `._runner`. Every run writes
into its output folder:

* ``results.json``: one schema for every experiment, one entry per (dataset, method) for the
  selected configuration (`._writer.validate_results`), written atomically;
* a summary (``summary.csv`` or the paper's table) and a printed table;
* one history CSV per run (``<dataset>_<problem>_<method>.csv``);
* the figures, laid out like the paper's (e.g. ``figure1_roc.png``); `combine_figure` joins the
  ssg-roc and ssg-wasserstein folders into the full 3 x 5 Figure 1 of Huang & Lin [HL23].

Before anything is computed, `run_experiment` checks every data file the configuration reads
(`check_data`: all missing files reported at once) and that the output folder can be written. Ctrl-C
raises `ExperimentInterrupted` (a `KeyboardInterrupt`) saying how many runs are checkpointed; worker
processes ignore SIGINT and are terminated by the parent.

Writing a new experiment
------------------------
Add a module ``fastcon/experiments/<name>.py`` and an entry of `EXPERIMENTS`. The module defines
the hooks below; `._runner.drive` calls them in this order (``session`` is a `._runner.Session`:
``cfg``, ``quick``, ``out``, ``data_home``, ``seed``, ``jobs``, ``download``, ``verbose``,
``checkpoints``, ``log(msg)``, ``elapsed()``, and ``state``, a dict the hooks share):

``NAME``
    The experiment's name (output folder ``fastcon-results/NAME[-quick]``, log prefix).
``config(quick) -> dict``
    The full or quick configuration. Every key can be overridden (``run_experiment(..., key=value)``,
    tests use this for smaller-than-quick runs); unknown keys are a ValueError.
``data_needed(cfg) -> list``
    The ``(dataset, subset)`` pairs the configuration loads (`check_data` looks them up first).
``check_config(cfg)`` (optional)
    Raise ValueError naming a bad entry, before the output folder is created.
``tasks(session) -> list``
    The tasks: picklable dicts, each with everything its run needs (its own seed included, so that
    the order of execution changes no number). Work shared by the tasks (loading, a reference
    solve) can run here, in the parent, with its results kept in ``session.state``.
``execute(task) -> dict``
    One task's record, a plain dict. A module-level function: with ``jobs`` > 1 it runs in a
    ``spawn`` worker that imports it by reference, so it must not rely on the parent's state
    (cache what it builds per process in a module dict, as `._tuning` does).
``on_done(session, task, record)`` (optional)
    A progress line (``session.log``) as each task finishes, in the parent.
``follow_up(session, task, record) -> list`` (optional)
    Tasks to add when a record arrives (run or loaded); they start before the waiting ones (the
    next phase of a tuning, a winner's re-run).
``write(session, tasks, records) -> dict``
    The outputs, with the helpers of `._writer` (`write_results_json`, `write_history_csv`,
    `write_csv`, `ruled_table`, `pyplot`, `save_figure`); returns the results.json dict. ``tasks``
    are the initial tasks followed by those ``follow_up`` added, ``records`` theirs, in that order.
``run(quick=False, out_dir=None, data_home=None, seed=0, jobs=1, verbose=True, download=None, **overrides)``
    ``return _runner.drive(sys.modules[__name__], ...)`` with the same arguments.
``task_kinds(task) -> list``, ``record_seconds(record)`` (optional)
    For the time left printed while the tasks run (`._time_left.TimeLeft`): a task's kinds, most
    specific first, whose finished tasks' mean duration estimates it; a loaded record's duration.
``RESUMABLE``, ``CHECKPOINT_FIELDS`` (optional)
    With ``RESUMABLE = True`` every record is checkpointed (it must then be JSON-able) and
    ``--resume`` reuses them; ``CHECKPOINT_FIELDS`` names the task fields that determine a record
    (default: all of them; leave out paths and anything that changes no number).
``MAX_JOBS`` (optional)
    At most this many processes whatever ``jobs`` (iqrc-mnpc: 1, its runs are timed against each
    other).

The driver runs everything (the parent's ``tasks`` and ``write`` too) with one numba thread and one
BLAS thread; parallelism comes from ``jobs`` processes, and results do not depend on ``jobs``.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

from ..datasets import ChecksumError, DatasetFileError
from ..datasets import data_home as resolve_home
from ..datasets._registry import fetch_file, get_spec
from ..solvers._validation import check_count
from ._figure import combine_figure, plot_figure
from ._runner import ExperimentInterrupted, apply_overrides
from ._tuning import select_config
from ._writer import validate_results

__all__ = ["EXPERIMENTS", "Experiment", "run_experiment", "is_resumable", "data_needed", "check_data",
           "ExperimentInterrupted", "combine_figure", "plot_figure", "select_config", "validate_results"]


@dataclass(frozen=True)
class Experiment:
    """A registered experiment: its module (imported on use) and a one-line description."""

    name: str
    module: str
    description: str

    def load(self):
        return importlib.import_module(f"{__name__}.{self.module}")

    def run(self, **kwargs):
        return self.load().run(**kwargs)


#: Registered experiments, by the name used on the command line.
EXPERIMENTS = {
    "ssg-roc": Experiment("ssg-roc", "ssg_roc",
                          "Huang & Lin [HL23] Figure 1, ROC fairness on a9a/bank/COMPAS: SSG static/diminishing, "
                          "ConEx, IPP-SSG, IPP-ConEx"),
    "ssg-wasserstein": Experiment("ssg-wasserstein", "ssg_wasserstein",
                                  "Huang & Lin [HL23] Figure 1, Wasserstein fairness on german/COMPAS: "
                                  "the same five methods"),
    "spider-table2": Experiment("spider-table2", "spider_table2",
                                "Liu & Xu [LX25] Table 2 and Figures 1-2: 3S-Econ-D/S vs SSG, IPP-SSG, IPP-ConEx, "
                                "SSG-S on ROC-fairness and demographic-parity problems, a9a and COMPAS"),
    "iqrc-mnpc": Experiment("iqrc-mnpc", "iqrc_mnpc",
                            "Ma, Lin & Yang [MLY20] Figure 1, multi-class Neyman-Pearson on pendigits/segment/usps: "
                            "IQRC outer and inner iterates vs the exact-penalty baseline"),
    "partial-fairness": Experiment("partial-fairness", "partial_fairness",
                                   "He, Huang, Yao & Lin [HHYL25] Figures 1, 2, 9, 10, partial fairness on "
                                   "a9a/bank/law school: IDCA vs pairwise quadratic baselines, penalty, direct SSG"),
    "gbm-bregman": Experiment("gbm-bregman", "gbm_bregman",
                              "Lin & Deng [LD23] Tables 1-2, Figures 1-3, constrained boosting on a9a/Dry Bean (NP) "
                              "and Adult/COMPAS (fairness): ABPP/CBPR vs vanilla LightGBM/XGBoost and FairGBM"),
}


def is_resumable(name) -> bool:
    """Whether experiment ``name`` checkpoints its runs (``run_experiment(..., resume=True)``)."""
    return bool(getattr(EXPERIMENTS[name].load(), "RESUMABLE", False))


def _known(name):
    if name not in EXPERIMENTS:
        raise ValueError(f"name: unknown experiment {name!r}; known: {', '.join(sorted(EXPERIMENTS))}")
    return EXPERIMENTS[name]


def data_needed(name, quick=False, **overrides) -> list:
    """The ``(dataset, subset)`` pairs experiment ``name`` loads with this configuration.

    ``overrides`` are configuration entries as in `run_experiment` (e.g. ``datasets=("compas",)``).
    """
    module = _known(name).load()
    return list(module.data_needed(apply_overrides(module.config(quick), dict(overrides))))


def _files_of(spec, subset):
    """The registry files that loading ``subset`` of ``spec`` reads (as `fastcon.datasets.load` does)."""
    if subset == "test" and not spec.test_needs_train:
        roles = {"test"}
    elif subset == "train" or not spec.has_test:
        roles = {"train"}
    else:
        roles = {"train", "test"}
    return [f for f in spec.files if f.role in roles]


def check_data(name, quick=False, data_home=None, download=None, **overrides) -> list:
    """Make sure every data file experiment ``name`` reads is there, before anything is computed.

    Every file is looked up (and its sha256 checked, as `fastcon.datasets.load` would), so that a
    run needing three datasets fails at once when the third is missing, not after computing the
    first two; with ``download=True`` the missing files are downloaded first.

    Parameters
    ----------
    name : str
        A key of `EXPERIMENTS`.
    quick : bool
    data_home : path-like, optional
        As in `fastcon.datasets.load`.
    download : bool or None
        Fetch missing files from their official sources (else a missing file is an error); None:
        the library's default (download unless ``FASTCON_OFFLINE=1``).
    **overrides
        Configuration entries (`run_experiment`), e.g. ``datasets=("compas",)``.

    Returns
    -------
    list of str
        The datasets checked, in the order the experiment uses them.

    Raises
    ------
    fastcon.datasets.DatasetFileError
        Some files are missing (and could not be downloaded); the message lists every one of them,
        where to put it and where to get it.
    fastcon.datasets.ChecksumError
        Every file is there but some differ from the registry's version.
    """
    home = resolve_home(data_home)
    datasets, problems, first_missing = [], [], None
    for dataset, subset in data_needed(name, quick, **overrides):
        spec = get_spec(dataset)
        if spec.name not in datasets:
            datasets.append(spec.name)
        for spec_file in _files_of(spec, subset):
            try:
                fetch_file(spec_file, home / spec.folder, download, dataset=spec.name)
            except (DatasetFileError, ChecksumError) as exc:
                if str(exc) not in problems:  # a file read by two subsets is reported once
                    problems.append(str(exc))
                    if first_missing is None and isinstance(exc, DatasetFileError):
                        first_missing = exc
    if problems:
        message = f"experiment {name!r} cannot read its data in {home}:\n" + "\n".join(problems)
        if first_missing is None:
            raise ChecksumError(message)
        raise DatasetFileError(message, dataset=first_missing.dataset, path=first_missing.path)
    return datasets


def run_experiment(name, quick=False, out_dir=None, data_home=None, seed=0, jobs=1, verbose=True, resume=False,
                   download=None, **overrides):
    """Run experiment ``name`` and write its outputs to ``out_dir``; returns the results.json dict.

    Parameters
    ----------
    name : str
        A key of `EXPERIMENTS`.
    quick : bool
        The reduced CI variant (each module's docstring lists what changes).
    out_dir : path-like, optional
        Output folder (default ``fastcon-results/NAME[-quick]``), created if needed.
    data_home : path-like, optional
        Dataset folder (default ``$FASTCON_DATA``, then ``~/.cache/fastcon``).
    seed : int
        Seed of the data split, subsampling and the stochastic oracles, at least 0; the same seed
        gives the same numbers (everything but wall times), whatever ``jobs``.
    jobs : int
        Processes for the tuning grid and the stationarity re-runs, at least 1.
    verbose : bool
        Progress lines (stderr) and the summary table (stdout).
    resume : bool
        Reuse the per-run checkpoints that an interrupted run left in ``out_dir/checkpoints``
        (same settings only; `fastcon.experiments._runner`). The grid experiments ssg-roc and
        ssg-wasserstein checkpoint every run; the others do not support it (ValueError).
    download : bool or None
        Download missing data files from their official sources (as `fastcon.datasets.load`);
        with False a missing file is an error; None (default) downloads unless
        ``FASTCON_OFFLINE=1``. Either way the data is checked (`check_data`)
        before anything is computed.
    **overrides
        Entries of the experiment's configuration (``module.config(quick)``), e.g.
        ``datasets=("compas",)``, ``max_iter=60``: for tests and partial runs.

    Raises
    ------
    fastcon.experiments.ExperimentInterrupted
        On Ctrl-C during a checkpointed experiment (a `KeyboardInterrupt` whose ``message`` says how
        many runs are saved and how to resume).
    fastcon.datasets.DatasetFileError
        A data file is missing (`check_data`), before any computation.
    """
    experiment = _known(name)
    seed = check_count("seed", seed, 0)
    jobs = check_count("jobs", jobs, 1)
    if resume:
        if not is_resumable(name):
            resumable = sorted(k for k in EXPERIMENTS if is_resumable(k))
            raise ValueError(f"resume: {name} does not checkpoint its runs; resumable: {', '.join(resumable)}")
    check_data(name, quick, data_home, download, **overrides)
    if resume:
        overrides["resume"] = True
    return experiment.run(quick=quick, out_dir=out_dir, data_home=data_home, seed=seed, jobs=jobs, verbose=verbose,
                          download=download, **overrides)
