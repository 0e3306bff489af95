"""fastcon: fast solvers for constrained learning."""
from ._version import __version__
from ._results import SolveResult
from .datasets import Dataset

__all__ = ["__version__", "Dataset", "SolveResult"]
