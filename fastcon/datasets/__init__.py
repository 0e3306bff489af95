"""Datasets: the `Dataset` container, LIBSVM I/O, the registry of named datasets, generators."""
from ._dataset import Dataset

__all__ = ["Dataset"]
