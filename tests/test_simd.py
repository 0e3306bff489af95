"""The explicit 4-wide vector kernels of `fastcon._kernels._simd` against the scalar code they replace."""
import numpy as np
import pytest
from numba import njit

from fastcon._kernels._simd import add_scaled_4, add_tree8_4


@njit
def _vector_rows(S, M, cols, vals):
    """Row r of S += the tree of eight entries (cols[r], vals[r]), four classes at a time."""
    for r in range(S.shape[0]):
        c, v = cols[r], vals[r]
        for l in range(0, S.shape[1] - S.shape[1] % 4, 4):
            add_tree8_4(S, np.uint64(r), M, np.uint64(l), (c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]),
                        (v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]))


@njit
def _vector_rows_width(S, M, cols, vals, width):
    """As `_vector_rows`, over the first ``width`` (a multiple of 4) columns."""
    for r in range(S.shape[0]):
        c, v = cols[r], vals[r]
        for l in range(0, width, 4):
            add_tree8_4(S, np.uint64(r), M, np.uint64(l), (c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]),
                        (v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]))


def _scalar_tree(S, M, cols, vals):
    """The scalar kernels' formula, in NumPy (same products, same summation tree)."""
    out = S.copy()
    for r in range(S.shape[0]):
        p = [vals[r, q] * M[cols[r, q], :S.shape[1]] for q in range(8)]
        out[r] += ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]))
    return out


@pytest.mark.parametrize("width", [4, 8, 20])
@pytest.mark.parametrize("index_type", [np.uint32, np.uint64, np.int64])
def test_add_tree8_4_is_bit_identical_to_the_scalar_tree(width, index_type):
    rng = np.random.default_rng(width)
    n_rows, m_rows = 37, 53
    M = rng.standard_normal((m_rows, width)) * np.exp(rng.uniform(-20, 20, (m_rows, width)))
    S = rng.standard_normal((n_rows, width))
    cols = rng.integers(0, m_rows, size=(n_rows, 8)).astype(index_type)
    vals = rng.standard_normal((n_rows, 8)) * np.exp(rng.uniform(-5, 5, (n_rows, 8)))
    expected = _scalar_tree(S, M, cols, vals)
    _vector_rows(S, M, cols, vals)
    np.testing.assert_array_equal(S, expected)


def test_add_tree8_4_reads_rows_of_a_wider_matrix_and_leaves_the_rest_alone():
    """S and M of different widths (the CSC gradient accumulates into a row of a (chunks, C + 1) array)."""
    rng = np.random.default_rng(0)
    M = rng.standard_normal((10, 8))
    S = rng.standard_normal((3, 9))
    cols = rng.integers(0, 10, size=(3, 8)).astype(np.uint32)
    vals = rng.standard_normal((3, 8))
    expected = S.copy()
    expected[:, :8] = _scalar_tree(S[:, :8], M, cols, vals)
    _vector_rows_width(S, M, cols, vals, 8)  # columns 0..7 of S only
    np.testing.assert_array_equal(S, expected)


def test_add_tree8_4_rejects_non_contiguous_arrays():
    from numba.core.errors import TypingError

    M = np.zeros((8, 8))
    with pytest.raises(TypingError):
        _vector_rows(np.zeros((4, 8))[:, ::2], M, np.zeros((4, 8), np.uint32), np.zeros((4, 8)))


@njit
def _scaled_rows(S, M, cols, vals, width):
    """Row r of S += vals[r] * M[cols[r]] over the first ``width`` (a multiple of 4) columns, 4 at a time."""
    for r in range(S.shape[0]):
        for l in range(0, width, 4):
            add_scaled_4(S, np.uint64(r), M, np.uint64(l), cols[r], vals[r])


@pytest.mark.parametrize("width", [4, 8, 20])
@pytest.mark.parametrize("index_type", [np.uint16, np.uint64, np.int64])
def test_add_scaled_4_is_bit_identical_to_the_scalar_loop(width, index_type):
    rng = np.random.default_rng(width + 1)
    M = rng.standard_normal((53, width + 1)) * np.exp(rng.uniform(-20, 20, (53, width + 1)))
    S = rng.standard_normal((37, width + 2))
    cols = rng.integers(0, 53, size=37).astype(index_type)
    vals = rng.standard_normal(37) * np.exp(rng.uniform(-5, 5, 37))
    expected = S.copy()
    for r in range(37):
        for l in range(width):  # the scalar loop of the kernels' tail entries, one product and one sum each
            expected[r, l] = expected[r, l] + vals[r] * M[cols[r], l]
    _scaled_rows(S, M, cols, vals, width)
    np.testing.assert_array_equal(S, expected)  # the columns past `width` are untouched as well


def test_add_tree8_4_rejects_tuples_not_of_eight():
    from numba.core.errors import TypingError

    @njit
    def seven(S, M):
        add_tree8_4(S, np.uint64(0), M, np.uint64(0), (0, 1, 2, 3, 4, 5, 6), (1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0))

    with pytest.raises(TypingError):
        seven(np.zeros((1, 4)), np.zeros((8, 4)))
