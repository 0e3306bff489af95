"""Paper experiments, runnable as ``fastcon reproduce NAME [--quick] [--out DIR]`` (ARCHITECTURE.md §7).

Each experiment is a module (dataset preparation, problem, methods, grids, budgets; its docstring
states exactly what ``--quick`` changes) run by the shared driver in `._tuning`. Every run writes
into its output folder:

* ``results.json``: the §7 schema, one entry per (dataset, method) for the selected configuration
  (validated by `._report.validate_results`);
* ``summary.csv`` and a printed table (with ``meets_paper_claim``);
* one history CSV per run (``<dataset>_<problem>_<method>.csv``, with a ``stationarity`` column);
* the figure PNG, laid out like the paper's (``figure1_roc.png`` / ``figure1_wasserstein.png``);
  `combine_figure` joins the folders into the paper's full 3 x 5 Figure 1.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

from ._figure import combine_figure, plot_figure
from ._report import validate_results
from ._tuning import select_config

__all__ = ["EXPERIMENTS", "Experiment", "run_experiment", "is_resumable", "combine_figure", "plot_figure", "select_config",
           "validate_results"]


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
                          "paper 002 Figure 1, ROC fairness on a9a/bank/COMPAS: SSG static/diminishing, ConEx, "
                          "IPP-SSG, IPP-ConEx"),
    "ssg-wasserstein": Experiment("ssg-wasserstein", "ssg_wasserstein",
                                  "paper 002 Figure 1, Wasserstein fairness on german/COMPAS: the same five methods"),
    "spider-table2": Experiment("spider-table2", "spider_table2",
                                "paper 004 Table 2 and Figures 1-2: 3S-Econ-D/S vs SSG, IPP-SSG, IPP-ConEx, SSG-S on "
                                "ROC-fairness and demographic-parity problems, a9a and COMPAS"),
    "iqrc-mnpc": Experiment("iqrc-mnpc", "iqrc_mnpc",
                            "paper 001 Figure 1, multi-class Neyman-Pearson on pendigits/segment/usps: IQRC outer "
                            "and inner iterates vs the exact-penalty baseline"),
}


def is_resumable(name) -> bool:
    """Whether experiment ``name`` checkpoints its runs (``run_experiment(..., resume=True)``)."""
    return bool(getattr(EXPERIMENTS[name].load(), "RESUMABLE", False))


def run_experiment(name, quick=False, out_dir=None, data_home=None, seed=0, jobs=1, verbose=True, resume=False,
                   **overrides):
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
        Seed of the data split, subsampling and the stochastic oracles; the same seed gives the same
        numbers (everything but wall times), whatever ``jobs``.
    jobs : int
        Processes for the tuning grid and the stationarity re-runs.
    verbose : bool
        Progress lines (stderr) and the summary table (stdout).
    resume : bool
        Reuse the per-run checkpoints that an interrupted run left in ``out_dir/checkpoints``
        (same settings only; `fastcon.experiments._checkpoint`). The grid experiments ssg-roc and
        ssg-wasserstein checkpoint every run; the others do not support it (ValueError).
    **overrides
        Entries of the experiment's configuration (``module.config(quick)``), e.g.
        ``datasets=("compas",)``, ``max_iter=60``: for tests and partial runs.
    """
    if name not in EXPERIMENTS:
        raise ValueError(f"name: unknown experiment {name!r}; known: {', '.join(sorted(EXPERIMENTS))}")
    if resume:
        if not is_resumable(name):
            resumable = sorted(k for k in EXPERIMENTS if is_resumable(k))
            raise ValueError(f"resume: {name} does not checkpoint its runs; resumable: {', '.join(resumable)}")
        overrides["resume"] = True
    return EXPERIMENTS[name].run(quick=quick, out_dir=out_dir, data_home=data_home, seed=seed, jobs=jobs,
                                 verbose=verbose, **overrides)
