"""fastcon: fast solvers for constrained learning.

The layers (ARCHITECTURE.md §1) are sub-packages: `fastcon.datasets` → `fastcon.problems` →
`fastcon.solvers` → `fastcon.metrics`; the names most users need are re-exported here.
"""
from . import datasets, metrics, problems, solvers
from ._results import SolveResult
from ._version import __version__
from .datasets import Dataset, load, load_libsvm
from .metrics import near_stationarity
from .problems import (
    ConstrainedProblem, custom_term, erm_optimum, hinge_risk, less_equal, roc_fairness, wasserstein_fairness,
)
from .solvers import conex, proximal_point, switching_subgradient

__all__ = [
    "__version__", "Dataset", "SolveResult", "load", "load_libsvm", "ConstrainedProblem", "custom_term",
    "erm_optimum", "hinge_risk", "less_equal", "roc_fairness", "wasserstein_fairness", "switching_subgradient",
    "conex", "proximal_point", "near_stationarity", "datasets", "problems", "solvers", "metrics",
]
