# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""One-pass LIBSVM/svmlight parser over an in-memory buffer.

The whole file is held as bytes; a first sweep counts ``\\n`` and ``:`` to bound the outputs
(every stored feature consumes one ``:`` and every row ends at a ``\\n`` or at the end), then a
second sweep parses with the GIL released. Numbers are parsed by hand: a decimal with at most 15
significant digits and a power-of-ten exponent within +-22 is converted with one exact
multiplication or division (Clinger's fast path, correctly rounded, hence equal to ``float()``;
``quick_double`` is the inlined common case without exponent, ``parse_double`` the general one);
anything else that matches the strict number grammar goes to CPython's ``PyOS_string_to_double``
(correctly rounded, locale independent). The parser never reads past ``n`` bytes and never writes
past the sized outputs, whatever the input; errors are reported as a code plus the line and byte
span of the offending token, and the Python side (``_libsvm_io``) turns them into messages.
"""
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t

import numpy as np
cimport numpy as cnp

cnp.import_array()

cdef extern from "Python.h":
    ctypedef struct PyObject
    # With overflow_exception NULL an overflow returns +-HUGE_VAL instead of raising.
    double PyOS_string_to_double(const char *s, char **endptr, PyObject *overflow_exception) except? -1.0

# Error codes; keep in sync with _libsvm_io._MESSAGES.
cdef enum:
    OK = 0
    E_BAD_LABEL = 1
    E_NONFINITE_LABEL = 2
    E_MISSING_LABEL = 3
    E_BAD_INDEX = 4
    E_NEGATIVE_INDEX = 5
    E_INDEX_TOO_LARGE = 6
    E_MISSING_COLON = 7
    E_BAD_VALUE = 8
    E_NONFINITE_VALUE = 9
    E_NOT_INCREASING = 10
    E_ZERO_INDEX = 11
    E_ABOVE_N_FEATURES = 12
    E_BAD_QID = 13
    E_INTERNAL = 14

cdef enum:
    # Indices are stored as int32 (the kernels use uint32 columns), so a raw
    # index may not exceed this; later digits are consumed without accumulating, so huge indices
    # cannot overflow.
    INDEX_LIMIT = 2147483646
    # Number-parse outcomes.
    NUM_OK = 0
    NUM_BAD = 1
    NUM_NONFINITE = 2

cdef double POW10[23]
POW10[:] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
            1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22]


cdef struct ParseError:
    int code
    int64_t line
    int64_t start
    int64_t stop
    int64_t index
    int64_t previous


cdef inline bint is_blank(unsigned char c) noexcept nogil:
    # '\r' counts as blank so CRLF files parse; '\n' is the only line terminator.
    return c == 32 or c == 9 or c == 13 or c == 11 or c == 12


cdef inline bint is_digit(unsigned char c) noexcept nogil:
    return c >= 48 and c <= 57


cdef inline bint ends_token(const unsigned char *s, Py_ssize_t pos, Py_ssize_t n) noexcept nogil:
    return pos >= n or is_blank(s[pos]) or s[pos] == 10 or s[pos] == 35


cdef inline Py_ssize_t token_end(const unsigned char *s, Py_ssize_t pos, Py_ssize_t n) noexcept nogil:
    while pos < n and not is_blank(s[pos]) and s[pos] != 10:
        pos += 1
    return pos


cdef inline bint starts_nonfinite(const unsigned char *s, Py_ssize_t pos, Py_ssize_t n) noexcept nogil:
    """True at 'inf' or 'nan' (any case): the spellings float() would accept as non-finite."""
    if pos + 3 > n:
        return False
    if (s[pos] | 32) == 105 and (s[pos + 1] | 32) == 110 and (s[pos + 2] | 32) == 102:
        return True
    return (s[pos] | 32) == 110 and (s[pos + 1] | 32) == 97 and (s[pos + 2] | 32) == 110


cdef double slow_double(const unsigned char *s, Py_ssize_t a, Py_ssize_t b, int *status) noexcept nogil:
    """Correctly rounded conversion of s[a:b], already checked against the number grammar."""
    cdef char *tmp = <char *> malloc(b - a + 1)
    cdef char *endp = NULL
    cdef double v = 0.0
    if tmp == NULL:
        status[0] = NUM_BAD
        return 0.0
    memcpy(tmp, s + a, b - a)
    tmp[b - a] = 0
    with gil:
        try:
            v = PyOS_string_to_double(tmp, &endp, NULL)
        except Exception:
            status[0] = NUM_BAD
    if status[0] == NUM_OK and endp != tmp + (b - a):
        status[0] = NUM_BAD
    free(tmp)
    if status[0] == NUM_OK and not (v - v == 0.0):
        status[0] = NUM_NONFINITE  # overflow to +-inf
    return v


cdef inline double parse_double(const unsigned char *s, Py_ssize_t *ppos, Py_ssize_t n,
                                int *status) noexcept nogil:
    """Parse ``[+-]digits[.digits][(e|E)[+-]digits]`` at s[*ppos]; stop at the first other byte."""
    cdef Py_ssize_t pos = ppos[0]
    cdef Py_ssize_t start = pos
    cdef bint negative = False
    cdef uint64_t mant = 0
    cdef int n_sig = 0, n_digits = 0, exp10 = 0, exp_part = 0
    cdef bint exp_negative = False
    cdef double v
    status[0] = NUM_OK
    if pos < n and (s[pos] == 43 or s[pos] == 45):  # '+' '-'
        negative = s[pos] == 45
        pos += 1
    while pos < n and is_digit(s[pos]):
        if n_sig < 19:
            mant = mant * 10 + (s[pos] - 48)
            if mant:
                n_sig += 1
        else:
            exp10 += 1
            n_sig += 1  # only the count matters now: > 15 forces the slow path
        n_digits += 1
        pos += 1
    if pos < n and s[pos] == 46:  # '.'
        pos += 1
        while pos < n and is_digit(s[pos]):
            if n_sig < 19:
                mant = mant * 10 + (s[pos] - 48)
                exp10 -= 1
                if mant:
                    n_sig += 1
            n_digits += 1
            pos += 1
    if n_digits == 0:
        # Name the non-finite spellings (inf, nan, infinity) so the message can say why.
        if starts_nonfinite(s, pos, n):
            status[0] = NUM_NONFINITE
        else:
            status[0] = NUM_BAD
        ppos[0] = pos
        return 0.0
    if pos < n and (s[pos] | 32) == 101:  # 'e'
        pos += 1
        if pos < n and (s[pos] == 43 or s[pos] == 45):
            exp_negative = s[pos] == 45
            pos += 1
        if pos >= n or not is_digit(s[pos]):
            status[0] = NUM_BAD
            ppos[0] = pos
            return 0.0
        while pos < n and is_digit(s[pos]):
            if exp_part < 100000:  # clamp: beyond this the value is 0 or inf anyway
                exp_part = exp_part * 10 + (s[pos] - 48)
            pos += 1
        exp10 += -exp_part if exp_negative else exp_part
    ppos[0] = pos
    if mant == 0:
        v = 0.0
    elif n_sig <= 15 and -22 <= exp10 <= 22:
        v = <double> mant  # < 10**15 < 2**53: exact
        if exp10 >= 0:
            v = v * POW10[exp10]
        else:
            v = v / POW10[-exp10]
    else:
        return slow_double(s, start, pos, status)
    return -v if negative else v


cdef inline bint quick_double(const unsigned char *s, Py_ssize_t *ppos, Py_ssize_t n,
                              double *out) noexcept nogil:
    """Fast path for the common ``[+-]digits[.digits]`` with at most 15 digits; False if not that.

    Small on purpose so the compiler inlines it at both call sites (parse_double is too big).
    """
    cdef Py_ssize_t pos = ppos[0]
    cdef bint negative = False
    cdef uint64_t mant = 0
    cdef int n_digits = 0, n_frac = 0
    cdef double v
    if pos < n and (s[pos] == 45 or s[pos] == 43):
        negative = s[pos] == 45
        pos += 1
    while pos < n and is_digit(s[pos]) and n_digits < 16:
        mant = mant * 10 + (s[pos] - 48)
        n_digits += 1
        pos += 1
    if pos < n and s[pos] == 46:
        pos += 1
        while pos < n and is_digit(s[pos]) and n_digits < 16:
            mant = mant * 10 + (s[pos] - 48)
            n_digits += 1
            n_frac += 1
            pos += 1
    if n_digits == 0 or n_digits > 15 or (pos < n and (is_digit(s[pos]) or (s[pos] | 32) == 101)):
        return False
    v = <double> mant  # < 10**15: exact, and one correctly rounded division below
    if n_frac:
        v = v / POW10[n_frac]
    out[0] = -v if negative else v
    ppos[0] = pos
    return True


def count_bytes(const unsigned char[::1] buf):
    """Return (number of '\\n', number of ':') in buf."""
    cdef Py_ssize_t i, j, stop, n = buf.shape[0]
    cdef int64_t lines = 0, colons = 0
    cdef uint32_t block_lines, block_colons
    cdef const unsigned char *s = &buf[0] if n else NULL
    with nogil:
        # 32-bit block counters let the compiler vectorise the comparisons.
        i = 0
        while i < n:
            stop = min(i + 65536, n)
            block_lines = 0
            block_colons = 0
            for j in range(i, stop):
                block_lines += s[j] == 10
                block_colons += s[j] == 58
            lines += block_lines
            colons += block_colons
            i = stop
    return lines, colons


def parse(const unsigned char[::1] buf, int mode, int64_t n_features):
    """Parse a LIBSVM buffer.

    Parameters
    ----------
    buf : bytes-like
        The whole (decompressed) file.
    mode : int
        0: indices are zero-based; 1: one-based (stored minus one); 2: "auto" (stored raw, the
        caller shifts them once the smallest index is known).
    n_features : int
        Upper bound for the column count, or -1 for none (not checked in mode 2).

    Returns
    -------
    tuple
        ``(error, labels, indptr, indices, data, n_rows, nnz, min_index, max_index)``; ``error``
        is None or ``(code, line, start, stop, index, previous)`` with 1-based ``line`` and the
        byte span ``[start, stop)`` of the offending token. Arrays are sized to capacity; the
        first ``n_rows`` / ``nnz`` entries are filled.
    """
    cdef Py_ssize_t n = buf.shape[0]
    cdef const unsigned char *s = &buf[0] if n else NULL
    cdef int64_t n_lines, n_colons
    n_lines, n_colons = count_bytes(buf)
    cdef int64_t row_cap = n_lines + 1, nnz_cap = n_colons
    labels_arr = np.empty(row_cap, dtype=np.float64)
    indptr_arr = np.empty(row_cap + 1, dtype=np.int64)
    indices_arr = np.empty(max(nnz_cap, 1), dtype=np.int32)
    data_arr = np.empty(max(nnz_cap, 1), dtype=np.float64)
    cdef double *labels = <double *> cnp.PyArray_DATA(labels_arr)
    cdef int64_t *indptr = <int64_t *> cnp.PyArray_DATA(indptr_arr)
    cdef int32_t *indices = <int32_t *> cnp.PyArray_DATA(indices_arr)
    cdef double *data = <double *> cnp.PyArray_DATA(data_arr)

    cdef ParseError err
    err.code = OK
    err.line = 0
    err.start = err.stop = err.index = err.previous = 0
    cdef Py_ssize_t pos = 0, tok
    cdef int64_t line = 0, row = 0, k = 0, idx, prev
    cdef int64_t min_index = INDEX_LIMIT + 1, max_index = -1
    cdef int64_t offset = 1 if mode == 1 else 0
    cdef int status
    cdef double v = 0.0
    cdef unsigned char c

    with nogil:
        indptr[0] = 0
        while pos < n:
            line += 1
            while pos < n and is_blank(s[pos]):
                pos += 1
            if pos >= n:
                break
            c = s[pos]
            if c == 10:  # blank line
                pos += 1
                continue
            if c == 35:  # '#': comment line
                while pos < n and s[pos] != 10:
                    pos += 1
                pos += 1
                continue

            # --- label
            tok = pos
            status = NUM_OK
            if not quick_double(s, &pos, n, &v):
                v = parse_double(s, &pos, n, &status)
            if status == NUM_OK and not ends_token(s, pos, n):
                status = NUM_BAD
            if status != NUM_OK:
                if status == NUM_BAD and pos < n and s[pos] == 58:  # ':' -> "idx:val" with no label
                    err.code = E_MISSING_LABEL
                else:
                    err.code = E_NONFINITE_LABEL if status == NUM_NONFINITE else E_BAD_LABEL
                err.line = line; err.start = tok; err.stop = token_end(s, tok, n)
                break
            if row >= row_cap:
                err.code = E_INTERNAL; err.line = line
                break
            labels[row] = v

            # --- optional qid:N right after the label (read and ignored)
            while pos < n and is_blank(s[pos]):
                pos += 1
            if pos + 4 <= n and s[pos] == 113 and s[pos + 1] == 105 and s[pos + 2] == 100 and s[pos + 3] == 58:
                tok = pos
                pos += 4
                if pos >= n or not is_digit(s[pos]):
                    err.code = E_BAD_QID
                while pos < n and is_digit(s[pos]):
                    pos += 1
                if not ends_token(s, pos, n):
                    err.code = E_BAD_QID
                if err.code != OK:
                    err.line = line; err.start = tok; err.stop = token_end(s, tok, n)
                    break

            # --- features
            prev = -1
            while True:
                while pos < n and is_blank(s[pos]):
                    pos += 1
                if pos >= n or s[pos] == 10 or s[pos] == 35:
                    break
                tok = pos
                if s[pos] == 45:  # '-'
                    err.code = E_NEGATIVE_INDEX
                    break
                if not is_digit(s[pos]):
                    err.code = E_BAD_INDEX
                    break
                idx = 0
                while pos < n and is_digit(s[pos]):
                    if idx <= INDEX_LIMIT:
                        idx = idx * 10 + (s[pos] - 48)
                    pos += 1
                if pos >= n or s[pos] != 58:
                    err.code = E_MISSING_COLON if ends_token(s, pos, n) else E_BAD_INDEX
                    break
                if idx > INDEX_LIMIT:
                    err.code = E_INDEX_TOO_LARGE
                    break
                pos += 1
                status = NUM_OK
                if not quick_double(s, &pos, n, &v):
                    v = parse_double(s, &pos, n, &status)
                if status == NUM_OK and not ends_token(s, pos, n):
                    status = NUM_BAD
                if status != NUM_OK:
                    err.code = E_NONFINITE_VALUE if status == NUM_NONFINITE else E_BAD_VALUE
                    break
                if idx <= prev:
                    err.code = E_NOT_INCREASING; err.index = idx; err.previous = prev
                    break
                if mode == 1 and idx == 0:
                    err.code = E_ZERO_INDEX
                    break
                if n_features >= 0 and mode != 2 and idx - offset >= n_features:
                    err.code = E_ABOVE_N_FEATURES; err.index = idx; err.previous = n_features
                    break
                if k >= nnz_cap:
                    err.code = E_INTERNAL
                    break
                indices[k] = <int32_t> (idx - offset)
                data[k] = v
                k += 1
                if prev < 0 and idx < min_index:  # indices increase along a row: first is least
                    min_index = idx
                prev = idx
            if err.code != OK:
                err.line = line; err.start = tok; err.stop = token_end(s, tok, n)
                break
            if prev > max_index:
                max_index = prev
            # Skip a trailing comment, then the newline.
            while pos < n and s[pos] != 10:
                pos += 1
            pos += 1
            row += 1
            indptr[row] = k

    error = None
    if err.code != OK:
        error = (err.code, err.line, err.start, err.stop, err.index, err.previous)
    return (error, labels_arr, indptr_arr, indices_arr, data_arr, row, k,
            min_index if k else -1, max_index)
