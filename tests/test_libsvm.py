"""LIBSVM reader/writer: agreement with scikit-learn, exact numbers, round trips, errors, fuzzing.

The fuzz tests use a slow pure-Python parser of the same grammar (``reference_parse``) as the oracle:
on any input both must agree on the arrays, or both must fail at the same line.
"""
import bz2
import gzip
import lzma
import math
import re

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import dataset_bytes, dataset_file
from fastcon.datasets._dataset import Dataset
from fastcon.datasets._libsvm_io import dump_libsvm, load_libsvm, read_libsvm

# --------------------------------------------------------------------------- reference parser
_BLANK = re.compile(rb"[ \t\r\x0b\x0c]+")
_NUMBER = re.compile(rb"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_DIGITS = re.compile(rb"\d+")


class RefError(Exception):
    def __init__(self, line):
        self.line = line


def reference_parse(data, zero_based="auto", n_features=None):
    """Obviously-right (and slow) parser of the documented grammar; raises RefError(line)."""
    labels, indptr, raw, values, lines = [], [0], [], [], []

    def number(tok, lineno):
        if not _NUMBER.fullmatch(tok) or not math.isfinite(float(tok)):
            raise RefError(lineno)
        return float(tok)

    for lineno, line in enumerate(data.split(b"\n"), 1):
        toks = [t for t in _BLANK.split(line.split(b"#", 1)[0]) if t]
        if not toks:
            continue
        labels.append(number(toks[0], lineno))
        toks = toks[1:]
        if toks and toks[0].startswith(b"qid:"):
            if not _DIGITS.fullmatch(toks[0][4:]):
                raise RefError(lineno)
            toks = toks[1:]
        prev = -1
        for tok in toks:
            idx, colon, val = tok.partition(b":")
            if not colon or not _DIGITS.fullmatch(idx) or int(idx) > 2147483646:
                raise RefError(lineno)
            v = number(val, lineno)
            if int(idx) <= prev or (zero_based is False and int(idx) == 0):
                raise RefError(lineno)
            if zero_based != "auto" and n_features is not None and int(idx) - (not zero_based) >= n_features:
                raise RefError(lineno)  # explicit modes check the range as they go
            prev = int(idx)
            raw.append(prev)
            values.append(v)
            lines.append(lineno)
        indptr.append(len(raw))
    raw = np.array(raw, dtype=np.int64)
    shift = int(zero_based is False or (zero_based == "auto" and raw.size and raw.min() > 0))
    cols = raw - shift
    if n_features is not None and cols.size and cols.max() >= n_features:
        raise RefError(lines[int(np.argmax(cols >= n_features))])
    n_cols = n_features if n_features is not None else (int(cols.max()) + 1 if cols.size else 0)
    X = sp.csr_matrix((np.array(values, dtype=np.float64), cols, np.array(indptr)), shape=(len(labels), n_cols))
    return X, np.array(labels, dtype=np.float64)


def assert_same(a, b):
    """Bitwise-equal CSR matrices and labels (so -0.0 and 0.0 differ)."""
    (Xa, ya), (Xb, yb) = a, b
    assert Xa.shape == Xb.shape
    np.testing.assert_array_equal(Xa.indptr, Xb.indptr)
    np.testing.assert_array_equal(Xa.indices, Xb.indices)
    assert Xa.data.tobytes() == Xb.data.astype(np.float64).tobytes()
    assert ya.tobytes() == yb.tobytes()


def line_of(exc):
    m = re.search(r" line (\d+): ", str(exc))
    assert m, f"no line number in {exc}"
    return int(m.group(1))


def check_against_reference(data, **kw):
    if data.startswith((b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00")):  # compressed: only "no crash"
        try:
            read_libsvm(data, **kw)
        except ValueError:
            pass
        return
    try:
        expected = reference_parse(data, **kw)
    except RefError as err:
        with pytest.raises(ValueError) as info:
            read_libsvm(data, **kw)
        assert str(info.value).startswith("<bytes> line "), info.value
        assert line_of(info.value) == err.line, (data, info.value)
        return
    assert_same(read_libsvm(data, **kw), expected)


# --------------------------------------------------------------------------- real data
def test_a9a_matches_sklearn(data_home):
    from sklearn.datasets import load_svmlight_file

    for fname, shape in (("a9a.gz", (32561, 123)), ("a9a.t.gz", (16281, 123))):
        path = dataset_file(data_home, "a9a", fname)  # stored .gz or downloaded plain form
        X, y = read_libsvm(path, n_features=123)
        Xs, ys = load_svmlight_file(str(path), n_features=123)
        assert X.shape == Xs.shape == shape
        assert_same((X, y), (Xs, ys))
        ds = load_libsvm(path, n_features=123)
        assert ds.task == "binary" and ds.name == path.name and ds.shape == shape
        np.testing.assert_array_equal(np.unique(ds.y), [-1.0, 1.0])


def test_compression_detected_by_content(tmp_path, data_home):
    text = dataset_bytes(data_home, "a9a", "a9a.t.gz")
    expected = read_libsvm(text)
    files = {"plain.txt": text, "x.gz": gzip.compress(text), "x.bz2": bz2.compress(text),
             "x.xz": lzma.compress(text), "gz_without_extension": gzip.compress(text)}
    for name, payload in files.items():
        (tmp_path / name).write_bytes(payload)
        assert_same(read_libsvm(tmp_path / name), expected)
    with open(tmp_path / "x.bz2", "rb") as fh:
        assert_same(read_libsvm(fh), expected)
    with pytest.raises(ValueError, match="corrupt gzip"):
        read_libsvm(gzip.compress(text)[:1000])


# --------------------------------------------------------------------------- layout variants
CANONICAL = b"+1 1:0.5 3:2\n-1\n1 2:-1.25e-3 7:4\n"


@pytest.mark.parametrize("variant", [
    b"# header comment\n+1 1:0.5 3:2\n\n-1\n   \n1 2:-1.25e-3 7:4\n",     # comments, blank lines
    b"+1 1:0.5 3:2\r\n-1\r\n1 2:-1.25e-3 7:4\r\n",                        # CRLF
    b"+1\t1:0.5\t3:2\n-1\n1\t2:-1.25e-3 \t7:4\n",                          # tabs
    b"+1 1:0.5 3:2   \n-1 \t\n1 2:-1.25e-3 7:4  \n",                        # trailing whitespace
    b"+1 1:0.5 3:2\n-1\n1 2:-1.25e-3 7:4",                                  # no final newline
    b"+1 1:0.5 3:2 # trailing comment\n-1#c\n1 qid:7 2:-1.25e-3 7:4#x\n",  # comments, qid ignored
    b"1.0 1:.5 3:2.\n-1e0\n+1.000 2:-0.00125 7:4E0\n",                       # other spellings
])
def test_layout_variants(variant):
    assert_same(read_libsvm(variant), read_libsvm(CANONICAL))
    X, y = read_libsvm(CANONICAL)
    assert X.shape == (3, 7)
    np.testing.assert_array_equal(y, [1, -1, 1])
    np.testing.assert_array_equal(X.toarray()[2, [1, 6]], [-1.25e-3, 4.0])


def test_zero_based_and_n_features():
    X, _ = read_libsvm(b"1 0:1 4:2\n")  # auto: 0 seen -> zero-based
    assert X.shape == (1, 5) and X.indices.tolist() == [0, 4]
    X, _ = read_libsvm(b"1 1:1 4:2\n")  # auto: one-based
    assert X.shape == (1, 4) and X.indices.tolist() == [0, 3]
    X, _ = read_libsvm(b"1 1:1 4:2\n", zero_based=True, n_features=10)
    assert X.shape == (1, 10) and X.indices.tolist() == [1, 4]
    X, y = read_libsvm(b"")
    assert X.shape == (0, 0) and y.shape == (0,)
    with pytest.raises(ValueError, match="zero_based"):
        read_libsvm(b"1 1:1\n", zero_based=1)
    with pytest.raises(ValueError, match="n_features"):
        read_libsvm(b"1 1:1\n", n_features=-1)


def test_labels_to_dataset():
    ds = load_libsvm(b"3 1:1\n1 2:1\n2\n3 1:2\n", name="m")
    assert ds.task == "multiclass" and ds.y.tolist() == [2, 0, 1, 2]
    np.testing.assert_array_equal(ds.label_values[ds.y], [3, 1, 2, 3])
    assert load_libsvm(b"0 1:1\n2\n1\n").y.tolist() == [0, 2, 1]  # already 0..C-1: kept
    assert load_libsvm(b"1 1:1\n1\n").task == "binary"
    bits = load_libsvm(b"0 1:1\n1\n0\n")  # 0/1: binary, as Dataset reads it
    assert bits.task == "binary" and bits.y.tolist() == [-1.0, 1.0, -1.0]
    assert bits.label_values.tolist() == [0.0, 1.0]
    test = load_libsvm(b"9\n5\n", classes=[5, 7, 9])  # train/test share the mapping
    assert test.y.tolist() == [2, 0]
    with pytest.raises(ValueError, match="not among classes"):
        load_libsvm(b"4\n", classes=[5, 7, 9])
    with pytest.raises(ValueError, match="not integers"):
        load_libsvm(b"0.5 1:1\n")
    with pytest.raises(ValueError, match="float64"):
        load_libsvm(b"1\n", dtype=np.float32)


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize("body, line, fragment", [
    (b"1 1:1\n1 abc:2\n", 2, "invalid feature index"),
    (b"1 1:1\n\n1 3:x\n", 3, "invalid feature value"),
    (b"1 1:1\n1 3:1.5.2\n", 2, "invalid feature value"),
    (b"x 1:1\n", 1, "invalid label"),
    (b"# c\n1 1:1\n1:2 3:1\n", 3, "missing label"),
    (b"1 1:1\n\n\n1 5:1 3:1\n", 4, "feature index 3 is not greater than the previous index 5"),
    (b"1 2:1 2:1\n", 1, "feature index 2 is not greater than the previous index 2"),
    (b"1 1:1\n1 -3:1\n", 2, "negative"),
    (b"1 99999999999999999999:1\n", 1, "too large"),
    (b"1 1:1\n1 2 3:1\n", 2, "missing ':'"),
    (b"1 1:1\r\n1 2:nan\r\n", 2, "not finite"),
    (b"1 1:1\n1 2:-inf\n", 2, "not finite"),
    (b"1 1:1\n1 2:1e999\n", 2, "not finite"),
    (b"1 1:1\ninf 2:1\n", 2, "label 'inf' is not finite"),
    (b"1 1:1\n1 qid:x 2:1\n", 2, "invalid qid"),
    (b"1 1:1\n1 2:1 qid:3\n", 2, "invalid feature index"),
    (b"1 1:1\n1 2:0x10\n", 2, "invalid feature value"),
    (b"1 1:1\n1 2:\n", 2, "invalid feature value"),
])
def test_malformed_input_names_file_and_line(tmp_path, body, line, fragment):
    with pytest.raises(ValueError) as info:
        read_libsvm(body)
    assert str(info.value).startswith(f"<bytes> line {line}: ") and fragment in str(info.value), info.value
    path = tmp_path / "bad.svm.gz"
    path.write_bytes(gzip.compress(body))
    with pytest.raises(ValueError, match=re.escape(f"{path} line {line}: ")):
        load_libsvm(path)


@pytest.mark.parametrize("body, kw, line", [
    (b"1 1:1\n1 0:1\n", {"zero_based": False}, 2),
    (b"1 1:1\n1 11:1\n", {"n_features": 10}, 2),            # auto (one-based): 11 > 10
    (b"1 0:1\n1 10:1\n", {"n_features": 10}, 2),            # auto (zero-based): 10 >= 10
    (b"1 1:1\n1 10:1\n", {"n_features": 10, "zero_based": True}, 2),
])
def test_index_range_errors(body, kw, line):
    with pytest.raises(ValueError, match=f"<bytes> line {line}: feature index"):
        read_libsvm(body, **kw)


# --------------------------------------------------------------------------- exact numbers
@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False),
       st.sampled_from(["%r", "%.17g", "%.15g", "%.6e", "%g", "%.3f", "%.20e"]))
def test_numbers_parse_like_float(x, fmt):
    text = (repr(x) if fmt == "%r" else fmt % x).encode()
    if math.isinf(float(text)):  # rounding to fewer digits can overflow (%.15g of max float)
        with pytest.raises(ValueError, match="not finite"):
            read_libsvm(b"1 1:%s\n" % text)
        return
    X, y = read_libsvm(b"%s 1:%s\n" % (text, text))
    assert y[0] == float(text) and math.copysign(1, y[0]) == math.copysign(1, float(text))
    assert X.data.tobytes() == np.float64(float(text)).tobytes()


@settings(max_examples=300, deadline=None)
@given(st.from_regex(rb"\A[+-]?(\d{1,25}\.?\d{0,25}|\.\d{1,25})([eE][+-]?\d{1,4})?\Z"))
def test_decimal_strings_parse_like_float(text):
    check_against_reference(b"1 1:%s\n" % text)


# --------------------------------------------------------------------------- round trips
finite = st.floats(allow_nan=False, allow_infinity=False)
values = st.one_of(finite, st.integers(-2**60, 2**60).map(float),
                   st.sampled_from([5e-324, 1e-308, 1.7976931348623157e308, -0.0, 0.1, 1.0, 2.0**53]))


@st.composite
def sparse_problems(draw):
    n, d = draw(st.integers(0, 8)), draw(st.integers(1, 12))
    mask = np.array(draw(st.lists(st.booleans(), min_size=n * d, max_size=n * d)), dtype=bool).reshape(n, d)
    vals = draw(st.lists(values, min_size=int(mask.sum()), max_size=int(mask.sum())))
    rows, cols = np.nonzero(mask)
    X = sp.csr_matrix((np.array(vals, dtype=np.float64), (rows, cols)), shape=(n, d))
    y = np.array(draw(st.lists(values, min_size=n, max_size=n)), dtype=np.float64)
    return X, y


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sparse_problems(), st.booleans(), st.sampled_from(["f.svm", "f.svm.gz"]))
def test_dump_read_round_trip(tmp_path, problem, zero_based, fname):
    X, y = problem
    path = tmp_path / fname
    dump_libsvm(X, path, y, zero_based=zero_based, comment="round trip\nsecond line")
    assert_same(read_libsvm(path, n_features=X.shape[1], zero_based=zero_based), (X, y))


def test_dump_dataset_and_formatting(tmp_path):
    X = sp.csr_matrix(np.array([[1.0, 0, 0.1], [0, 0, 0], [-3.0, 2.5e-300, 0]]))
    ds = Dataset(X, [1.0, -1.0, 1.0], name="toy")
    dump_libsvm(ds, tmp_path / "toy.svm")
    assert (tmp_path / "toy.svm").read_text() == "1 1:1 3:0.1\n-1\n1 1:-3 2:2.5e-300\n"
    assert_same(read_libsvm(tmp_path / "toy.svm", n_features=3), (ds.X, ds.y))
    with pytest.raises(TypeError, match="path comes before"):
        dump_libsvm(X, np.ones(3), tmp_path / "x")
    with pytest.raises(ValueError, match="non-finite"):
        dump_libsvm(X, tmp_path / "x", [np.nan, 1, 1])


# --------------------------------------------------------------------------- fuzzing
@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=200))
def test_fuzz_random_bytes(data):
    check_against_reference(data)


VALID = (b"# c\n+1 qid:3 1:0.5 3:2 # x\r\n-1\n\n1 2:-1.25e-3 7:4\n"
         b"0 1:1e5 10:.5 11:3. 12:0.0000001234567890123456789\n2 5:-0 6:1E-2")
INTERESTING = st.sampled_from(list(b" \t\r\n:#-+.eE0123456789q\x00\xff"))


@settings(max_examples=600, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["flip", "insert", "delete"]), st.floats(0, 1),
                          st.one_of(INTERESTING, st.integers(0, 255))), min_size=1, max_size=6),
       st.sampled_from([True, False, "auto"]), st.sampled_from([None, 5, 12]))
def test_fuzz_mutated_valid_file(mutations, zero_based, n_features):
    data = bytearray(VALID)
    for op, where, byte in mutations:
        i = min(int(where * len(data)), max(len(data) - 1, 0))
        if op == "insert":
            data.insert(i, byte)
        elif data and op == "flip":
            data[i] = byte
        elif data:
            del data[i]
    check_against_reference(bytes(data), zero_based=zero_based, n_features=n_features)
