"""fastcon: fast solvers for constrained learning.

The layers (docs/design.md; checked by the import-linter contracts in pyproject.toml) are
sub-packages, each importing only those below it: `fastcon.estimators` and `fastcon.boosting` →
`fastcon.solvers` → `fastcon.problems` → `fastcon.metrics` → `fastcon.datasets` → the kernels. The
names most users need are re-exported here.
"""
# Importing fastcon changes no environment variable. It asks numba for a fork-safe threading layer
# (numba.config, this process only; a layer the user chose is kept) so that multiprocessing with
# 'fork' works after a fit: see fastcon/_kernels/_threading.py. The workqueue and tbb layers do not
# spin; a user who picks the omp layer can set OMP_WAIT_POLICY themselves.
from importlib.util import find_spec as _find_spec

from . import datasets, metrics, problems, solvers
from ._results import SolveResult
from ._version import __version__
from .datasets import Dataset, load, load_libsvm, read_fcsr
from .problems import (
    ConstrainedProblem, custom_term, erm_optimum, hinge_risk, less_equal, roc_fairness, wasserstein_fairness,
)
from .solvers import conex, near_stationarity, proximal_point, switching_subgradient

#: Estimators live in `fastcon.estimators`, which needs scikit-learn (the ``sklearn`` extra); they are
#: imported on first access so that ``import fastcon`` works without it.
_ESTIMATORS = ("FairClassifier", "NeymanPearsonClassifier", "MultiClassNeymanPearsonClassifier")


def __getattr__(name):
    if name == "load_model":   # reads linear and boosted models: fastcon.boosting._persist, which needs scikit-learn
        try:
            from .boosting._persist import load_model
        except ImportError as exc:
            raise ImportError(f"fastcon.load_model needs scikit-learn: pip install 'fastcon[sklearn]' ({exc})") from exc
        return load_model
    if name in _ESTIMATORS or name == "estimators":
        import importlib

        try:
            # not "from . import estimators": that asks this module for the attribute first -> recursion
            estimators = importlib.import_module(f"{__name__}.estimators")
        except ImportError as exc:
            raise ImportError(f"fastcon.{name} needs scikit-learn: pip install 'fastcon[sklearn]' ({exc})") from exc
        return estimators if name == "estimators" else getattr(estimators, name)
    raise AttributeError(f"module 'fastcon' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_ESTIMATORS) | {"estimators", "load_model"})


# The names that need scikit-learn are in __all__ only where it is installed, so that
# ``from fastcon import *`` works on a core install (find_spec does not import the package).
__all__ = [
    "__version__", "Dataset", "SolveResult", "load", "load_libsvm", "read_fcsr", "ConstrainedProblem",
    "custom_term", "erm_optimum", "hinge_risk", "less_equal", "roc_fairness", "wasserstein_fairness",
    "switching_subgradient", "conex", "proximal_point", "near_stationarity", "datasets", "problems", "solvers",
    "metrics", *(("load_model", "estimators", *_ESTIMATORS) if _find_spec("sklearn") is not None else ()),
]
