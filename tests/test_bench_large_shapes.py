"""bench/large_shapes.py's pure parts: the chunked generator and the vectorised LIBSVM writer (issue 35).

The benchmark itself (timings, memory) is run by hand; these check that what it writes is the data
it generated, exactly, whatever the chunking.
"""

import numpy as np
import pytest

from conftest import REPO, bench_module

from fastcon.datasets import read_libsvm




synthetic = bench_module("synthetic_sparse")
shapes = bench_module("large_shapes")


def _stack(chunks):
    import scipy.sparse as sp

    Xs, ys = zip(*chunks)
    return sp.vstack(Xs, format="csr"), np.concatenate(ys)


def test_chunks_are_canonical_real_columns_first_and_do_not_depend_on_the_row_count():
    kwargs = dict(per_row=12, real_columns=5, chunk_rows=300, seed=3)
    X, y = _stack(synthetic.iter_sparse_chunks(1000, 4000, **kwargs))
    assert X.shape == (1000, 4000) and X.has_canonical_format
    real = X[:, :5]
    assert np.all((real.data > 0) & (real.data < 1)) and np.all(X[:, 5:].data == 1.0)
    assert 0.05 * 5 * 1000 < real.nnz < 0.35 * 5 * 1000
    assert 0.4 < y.mean() < 0.6
    # the first 600 rows of a 1000-row draw are those of a 600-row draw (chunks seeded by index)
    X6, y6 = _stack(synthetic.iter_sparse_chunks(600, 4000, **kwargs))
    assert (X6 != X[:600]).nnz == 0 and np.array_equal(y6, y[:600])


def test_libsvm_text_reads_back_exactly():
    X, y = next(synthetic.iter_sparse_chunks(400, 3000, per_row=10, real_columns=8, chunk_rows=400, seed=1))
    X.data[:3] = [1e-6, 0.5, 0.999999]   # the shortest and longest six-decimal values
    text = shapes.libsvm_text(X, y)
    X2, labels = read_libsvm(text, n_features=X.shape[1], zero_based=False)
    assert np.array_equal(X2.indptr, X.indptr) and np.array_equal(X2.indices, X.indices)
    assert np.array_equal(X2.data, X.data)
    assert np.array_equal(labels, 2.0 * y - 1)
    assert text.startswith((b"1 ", b"-1 ")) and text.endswith(b"\n")


def test_libsvm_text_refuses_values_it_cannot_write_exactly():
    X, y = next(synthetic.iter_sparse_chunks(10, 100, per_row=3, chunk_rows=10))
    X.data[0] = 0.1234567
    with pytest.raises(ValueError, match="six-decimal"):
        shapes.libsvm_text(X, y)
