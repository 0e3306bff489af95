"""Datasets: the `Dataset` container, LIBSVM I/O, the memory-mapped ``.fcsr`` format, the registry of named
datasets, generators."""
from ._convert import convert_libsvm
from ._dataset import Dataset
from ._fcsr import read_fcsr, write_fcsr
from ._groups import GroupEncoding, encode_groups
from ._libsvm_io import dump_libsvm, load_libsvm, read_libsvm
from ._registry import ChecksumError, DatasetFileError, data_home, dataset_info, list_datasets, load
from ._synthetic import make_fair_classification, make_multiclass, make_neyman_pearson

__all__ = [
    "Dataset", "load_libsvm", "read_libsvm", "dump_libsvm", "load", "list_datasets", "dataset_info",
    "data_home", "DatasetFileError", "ChecksumError", "make_fair_classification", "make_multiclass",
    "make_neyman_pearson",
]
__all__ += ["encode_groups", "GroupEncoding"]
__all__ += ["read_fcsr", "write_fcsr", "convert_libsvm"]
