"""Build script: the only compiled extension is the LIBSVM/svmlight parser.

Everything else that is hot is numba-jitted at import (``cache=True``), so this file stays small.
"""
import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

extensions = [
    Extension(
        "fastcon.datasets._libsvm",
        ["fastcon/datasets/_libsvm.pyx"],
        include_dirs=[np.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=["-O3"],
    )
]

setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives={"language_level": "3", "boundscheck": False, "wraparound": False},
    )
)
