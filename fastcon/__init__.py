"""fastcon: fast solvers for constrained learning.

The layers (docs/design.md) are sub-packages: `fastcon.datasets` → `fastcon.problems` →
`fastcon.solvers` → `fastcon.metrics`; the names most users need are re-exported here.
"""
import os as _os

# fastcon's parallel kernels are short (ms) and Python runs between them. Spinning OpenMP workers
# (the default wait policy) then keep the second core busy and slow the interpreter's NumPy work
# between kernels: an IPP-ConEx run on german took 4.1 s instead of 0.2 s. Read by libgomp when
# numba first starts its thread pool; a value the user set is kept.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from . import datasets, metrics, problems, solvers  # noqa: E402
from ._results import SolveResult  # noqa: E402
from ._version import __version__  # noqa: E402
from .datasets import Dataset, load, load_libsvm  # noqa: E402
from .metrics import near_stationarity  # noqa: E402
from .problems import (  # noqa: E402
    ConstrainedProblem, custom_term, erm_optimum, hinge_risk, less_equal, roc_fairness, wasserstein_fairness,
)
from .solvers import conex, proximal_point, switching_subgradient  # noqa: E402

#: Estimators live in `fastcon.estimators`, which needs scikit-learn (the ``sklearn`` extra); they are
#: imported on first access so that ``import fastcon`` works without it.
_ESTIMATORS = ("FairClassifier", "NeymanPearsonClassifier", "MultiClassNeymanPearsonClassifier")


def __getattr__(name):
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
    return sorted(set(globals()) | set(_ESTIMATORS) | {"estimators"})


__all__ = [
    "__version__", "Dataset", "SolveResult", "load", "load_libsvm", "ConstrainedProblem", "custom_term",
    "erm_optimum", "hinge_risk", "less_equal", "roc_fairness", "wasserstein_fairness", "switching_subgradient",
    "conex", "proximal_point", "near_stationarity", "datasets", "problems", "solvers", "metrics",
    "estimators", *_ESTIMATORS,
]
