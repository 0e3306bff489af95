"""The ``.fcsr`` file (issue 35, part 2): round trips, the header, damaged files, ``fastcon convert``, and fits on
the memory-mapped data that equal the in-memory fits without copying X."""
import gzip
import os
import struct
import tracemalloc
import warnings
import zlib

import numpy as np
import pytest
import scipy.sparse as sp

from fastcon.cli import main
from fastcon.datasets import Dataset, convert_libsvm, dump_libsvm, load, load_libsvm, read_fcsr, write_fcsr
from fastcon.datasets._fcsr import (
    ALIGNMENT, HEADER_SIZE, MAGIC, SECTIONS, index_dtype, read_fcsr_header,
)


def _memmap_of(a):
    """The outermost `numpy.memmap` of ``a``'s ``.base`` chain (the mapping of the whole file), else None."""
    root = None
    while a is not None:
        if isinstance(a, np.memmap):
            root = a
        a = a.base if isinstance(a, np.ndarray) else None
    return root


def _random_csr(n_rows, n_cols, per_row, seed=0):
    rng = np.random.default_rng(seed)
    cols = rng.integers(0, n_cols, n_rows * per_row)
    rows = np.repeat(np.arange(n_rows), per_row)
    values = np.round(rng.normal(size=cols.size), 3)
    X = sp.csr_matrix((values, (rows, cols)), shape=(n_rows, n_cols))
    X.sum_duplicates()
    return X


def _same_dataset(a, b):
    assert a.shape == b.shape and a.is_sparse == b.is_sparse and a.task == b.task
    if a.is_sparse:
        for name in ("indptr", "indices", "data"):
            x, y = getattr(a.X, name), getattr(b.X, name)
            assert x.dtype == y.dtype and np.array_equal(x, y), name
    else:
        assert np.array_equal(a.X, b.X)
    assert a.y.dtype == b.y.dtype and np.array_equal(a.y, b.y)
    for name in ("groups", "sample_weight", "label_values"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            assert x.dtype == y.dtype and np.array_equal(x, y), name
    assert (a.name, a.group_names, a.feature_names) == (b.name, b.group_names, b.feature_names)


# ------------------------------------------------------------------------------- round trips
@pytest.mark.parametrize("mmap", [True, False])
def test_round_trip_sparse_binary_with_groups_and_weights(tmp_path, mmap):
    X = _random_csr(300, 50, 6, seed=1)
    rng = np.random.default_rng(1)
    ds = Dataset(X, rng.integers(0, 2, 300).astype(bool), groups=rng.integers(0, 3, 300),
                 group_names=["a", "b", "c"], sample_weight=rng.random(300), name="toy",
                 feature_names=[f"f{j}" for j in range(50)])
    write_fcsr(ds, tmp_path / "toy.fcsr")
    back = read_fcsr(tmp_path / "toy.fcsr", mmap=mmap, verify=True)
    _same_dataset(ds, back)
    assert back.label_values.tolist() == [False, True]
    arrays = [back.X.data, back.X.indices, back.X.indptr, back.y, back.groups, back.sample_weight]
    if mmap:   # views of one read-only mapping of the file: no copy
        root = _memmap_of(back.X.data)
        assert root is not None and os.path.samefile(root.filename, tmp_path / "toy.fcsr")
        assert all(np.shares_memory(a, root) and not a.flags.writeable for a in arrays)
        with pytest.raises(ValueError, match="read-only"):
            back.X.data[0] = 2.0
    else:
        assert all(_memmap_of(a) is None and a.flags.writeable for a in arrays)


def test_round_trip_dense_multiclass(tmp_path):
    rng = np.random.default_rng(2)
    ds = Dataset(rng.normal(size=(40, 7)), rng.integers(0, 4, 40), name="dense")
    write_fcsr(ds, tmp_path / "d.fcsr")
    back = read_fcsr(tmp_path / "d.fcsr", verify=True)
    _same_dataset(ds, back)
    assert back.X.flags.c_contiguous and np.shares_memory(back.X, _memmap_of(back.X))
    assert read_fcsr_header(tmp_path / "d.fcsr").layout == "dense"


def test_round_trip_matrix_and_labels_given_apart(tmp_path):
    X = _random_csr(50, 9, 3, seed=3)
    y = np.arange(50) % 3 + 5                                 # multi-class labels 5, 6, 7 as ids 5, 6, 7
    write_fcsr(X, tmp_path / "m.fcsr", y, task="multiclass", name="m")
    back = read_fcsr(tmp_path / "m.fcsr")
    assert back.task == "multiclass" and back.y.dtype == np.int64 and np.array_equal(back.y, y)
    assert (back.X != X).nnz == 0 and back.name == "m"
    with pytest.raises(ValueError, match="^y: labels are required"):
        write_fcsr(X, tmp_path / "m.fcsr")
    with pytest.raises(ValueError, match="^y: must be None when a Dataset"):
        write_fcsr(back, tmp_path / "m2.fcsr", y)
    with pytest.raises(TypeError, match="path comes before"):
        write_fcsr(X, y, tmp_path / "m3.fcsr")


@pytest.mark.parametrize("shape, rows_with_entries", [((0, 0), 0), ((0, 5), 0), ((6, 0), 0), ((6, 4), 0), ((6, 4), 2)])
def test_empty_rows_and_empty_matrices(tmp_path, shape, rows_with_entries):
    X = sp.lil_matrix(shape)
    for i in range(rows_with_entries):
        X[2 * i + 1, i] = 1.5                                # rows 0, 2, 4.. stay empty
    ds = Dataset(X.tocsr(), np.ones(shape[0]))
    write_fcsr(ds, tmp_path / "e.fcsr")
    back = read_fcsr(tmp_path / "e.fcsr", verify=True)
    _same_dataset(ds, back)
    assert read_fcsr_header(tmp_path / "e.fcsr").binary_values == (rows_with_entries == 0)


def test_dtypes_and_flags(tmp_path):
    ones = _random_csr(100, 30, 4)
    ones.data[:] = 1.0
    binary = Dataset(ones, np.ones(100))
    write_fcsr(binary, tmp_path / "b.fcsr")
    head = read_fcsr_header(tmp_path / "b.fcsr")
    assert head.binary_values and head.index_dtype == "<i4"
    assert {k: v[0] for k, v in head.sections.items()} == {
        "indptr": "<i4", "indices": "<i4", "data": "<f8", "y": "<f8", "meta": "|u1"}
    back = read_fcsr(tmp_path / "b.fcsr")
    assert back.is_binary_features and back.X.indices.dtype == np.int32 and back.X.data.dtype == np.float64
    # int64 indices (as scipy.sparse stores them) are written int32 when the sizes allow
    X = binary.X.copy()
    X.indices, X.indptr = X.indices.astype(np.int64), X.indptr.astype(np.int64)
    write_fcsr(X, tmp_path / "c.fcsr", np.ones(100))
    assert read_fcsr(tmp_path / "c.fcsr").X.indices.dtype == np.int32
    # scipy's own rule: int32 while every size is below 2**31
    assert index_dtype(2**31 - 1, 2**31 - 1, 2**31 - 1) == np.int32
    assert all(index_dtype(*s) == np.int64 for s in [(2**31, 1, 1), (1, 2**31, 1), (1, 1, 2**31)])


def test_header_layout(tmp_path):
    ds = Dataset(_random_csr(70, 20, 3), np.arange(70) % 2, groups=np.arange(70) % 2)
    size = write_fcsr(ds, tmp_path / "h.fcsr")
    raw = (tmp_path / "h.fcsr").read_bytes()
    assert len(raw) == size and raw[:8] == MAGIC
    version, header_size = struct.unpack_from("<II", raw, 8)
    assert (version, header_size) == (1, HEADER_SIZE)
    assert struct.unpack_from("<QQQ", raw, 16) == (70, 20, ds.X.nnz)
    assert struct.unpack_from("<I", raw, HEADER_SIZE - 4)[0] == zlib.crc32(raw[:HEADER_SIZE - 4])
    head = read_fcsr_header(tmp_path / "h.fcsr")
    assert set(head.sections) == {"indptr", "indices", "data", "y", "groups", "meta"}
    for name, (_, offset, count, _) in head.sections.items():
        assert offset % ALIGNMENT == 0 and offset >= HEADER_SIZE
    _, offset, count, _ = head.sections["indices"]
    assert np.array_equal(np.frombuffer(raw, "<i4", count, offset), ds.X.indices)


def test_the_binary_flag_of_a_header_is_not_trusted(tmp_path):
    # a consistent header (CRC fixed) claiming every value is 1 over values that are not: the
    # products must still read the values
    X = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]))
    write_fcsr(X, tmp_path / "v.fcsr", np.array([1.0, -1.0]))
    _rewrite_header(tmp_path / "v.fcsr", flags=1)
    back = read_fcsr(tmp_path / "v.fcsr", verify=True)
    assert not back.is_binary_features
    from fastcon.problems._design import DesignMatrix
    out = np.empty(2)
    np.testing.assert_array_equal(DesignMatrix(back).matvec(np.ones(3), out), [3.0, 3.0])


# ------------------------------------------------------------------------------- damaged files
def _rewrite_header(path, **fields):
    """Change header fields at their offsets and fix the header checksum (a consistent but wrong header)."""
    raw = bytearray(path.read_bytes())
    spots = {"version": (8, "<I"), "n_rows": (16, "<Q"), "flags": (42, "<H"), "indices_offset": (48 + 56 + 8, "<Q"),
             "data_count": (48 + 2 * 56 + 16, "<Q")}
    for name, value in fields.items():
        at, fmt = spots[name]
        struct.pack_into(fmt, raw, at, value)
    struct.pack_into("<I", raw, HEADER_SIZE - 4, zlib.crc32(bytes(raw[:HEADER_SIZE - 4])))
    path.write_bytes(bytes(raw))


@pytest.fixture
def good_file(tmp_path):
    ds = Dataset(_random_csr(200, 40, 5, seed=4), np.arange(200) % 3, groups=np.arange(200) % 2,
                 group_names=["g0", "g1"], name="good")
    write_fcsr(ds, tmp_path / "good.fcsr")
    return tmp_path / "good.fcsr"


@pytest.mark.parametrize("change, message", [
    (lambda raw: b"", "empty file"),
    (lambda raw: b"label 1:2\n" + raw[10:], "not a .fcsr file"),
    (lambda raw: raw[:5], "truncated: the file has 5 bytes"),
    (lambda raw: raw[:300], "truncated: the file has 300 bytes"),
    (lambda raw: raw[:-1], "meta: its .* end at byte .* beyond the end of the file"),
    (lambda raw: raw[:HEADER_SIZE + 100], "beyond the end of the file"),
    (lambda raw: raw[:20] + bytes([raw[20] ^ 1]) + raw[21:], "header checksum mismatch"),
])
def test_damaged_files_name_what_is_wrong(good_file, change, message):
    good_file.write_bytes(change(good_file.read_bytes()))
    with pytest.raises(ValueError, match=message):
        read_fcsr(good_file)


@pytest.mark.parametrize("fields, message", [
    ({"version": 2}, "format version 2 is not supported"),
    ({"flags": 6}, "flags: unknown bits"),
    ({"n_rows": 199}, "y: has 200 items, expected 199"),
    ({"indices_offset": 10**9}, "indices: its .* beyond the end of the file"),
    ({"indices_offset": 520}, "indices: offset 520 is not a multiple of 64"),
    ({"data_count": 7}, "data: has 7 items, expected"),
])
def test_inconsistent_headers_name_the_field(good_file, fields, message):
    _rewrite_header(good_file, **fields)
    with pytest.raises(ValueError, match=message):
        read_fcsr(good_file)


def _section_bytes(path, name):
    _, offset, count, _ = read_fcsr_header(path).sections[name]
    return offset, count


def test_damaged_payload(good_file):
    raw = bytearray(good_file.read_bytes())
    offset, count = _section_bytes(good_file, "indices")
    struct.pack_into("<i", raw, offset + 4 * 3, 10**6)      # a column index out of range
    good_file.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="indices: checksum mismatch"):
        read_fcsr(good_file, verify=True)
    with pytest.raises(ValueError, match=r"good.fcsr: X.indices: column index 1000000 at row 0 is out of range"):
        read_fcsr(good_file)                                  # without verify: caught before anything reads it
    struct.pack_into("<i", raw, offset + 4 * 3, 0)           # in range but rows no longer sorted
    good_file.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="not sorted and distinct"):
        read_fcsr(good_file)
    with pytest.raises(ValueError, match="indices: checksum mismatch"):
        load(good_file)                                       # load verifies by default


def test_fuzz_truncations_and_byte_flips(good_file):
    """Every truncation and random byte flips: a ValueError (or, for a flipped value, a Dataset), never a crash."""
    raw = good_file.read_bytes()
    rng = np.random.default_rng(5)
    cuts = sorted(set(rng.integers(0, len(raw), 60).tolist()) | {0, 7, 8, 16, HEADER_SIZE - 1, HEADER_SIZE})
    for cut in cuts:
        good_file.write_bytes(raw[:cut])
        with pytest.raises(ValueError):
            read_fcsr(good_file)
    outcomes = {"error": 0, "read": 0}
    for at in rng.integers(0, len(raw), 150).tolist():
        flipped = bytearray(raw)
        flipped[at] ^= 1 << int(rng.integers(0, 8))
        good_file.write_bytes(bytes(flipped))
        with pytest.raises(ValueError):
            read_fcsr(good_file, verify=True)                # every byte is under a checksum
        try:
            read_fcsr(good_file)
            outcomes["read"] += 1
        except ValueError:
            outcomes["error"] += 1
    assert outcomes["error"] > 0 and outcomes["read"] > 0


def test_load_reads_fcsr_paths(good_file):
    ds = load(good_file)
    assert ds.name == "good" and _memmap_of(ds.X.data) is not None
    with pytest.raises(ValueError, match="^subset: a .fcsr file holds one dataset"):
        load(good_file, subset="test")
    with pytest.raises(FileNotFoundError):
        load(good_file.with_name("missing.fcsr"))


# ------------------------------------------------------------------------------- fastcon convert
def _libsvm_text(tmp_path, n_rows=400, n_cols=60, zero_based=False, labels=(-1, 1), seed=6):
    rng = np.random.default_rng(seed)
    X = _random_csr(n_rows, n_cols, 7, seed=seed)
    X.data[::11] = 0.0                                        # explicit zeros are kept as written
    y = rng.choice(labels, n_rows)
    path = tmp_path / "data.svm"
    dump_libsvm(X, path, y, zero_based=zero_based, comment="a comment line")
    text = path.read_bytes().replace(b"\n", b"\n\n# between rows 1:2\n", 3)   # blank and comment lines
    path.write_bytes(text)
    return path


@pytest.mark.parametrize("zero_based, labels, compress", [
    (False, (-1, 1), False), (True, (0, 1), True), (False, (3, 7, 8), False)])
def test_cli_convert_equals_load_libsvm(tmp_path, capsys, zero_based, labels, compress):
    source = _libsvm_text(tmp_path, zero_based=zero_based, labels=labels)
    if compress:
        gz = source.with_suffix(".svm.gz")
        gz.write_bytes(gzip.compress(source.read_bytes()))
        source = gz
    assert main(["convert", str(source), str(tmp_path / "out.fcsr"), "--n-features", "61"]) == 0
    assert "out.fcsr: 400 x 61" in capsys.readouterr().out
    _same_dataset(read_fcsr(tmp_path / "out.fcsr", verify=True), load_libsvm(source, n_features=61))
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".")]   # no spool or partial file left


def test_chunked_convert_equals_one_chunk(tmp_path):
    source = _libsvm_text(tmp_path, n_rows=3000, labels=(1, 2, 3))
    one = convert_libsvm(source, tmp_path / "one.fcsr", group_feature=4)
    many = convert_libsvm(source, tmp_path / "many.fcsr", group_feature=4, chunk_mb=2000 / 2**20)   # 2 kB chunks
    assert one["chunks"] == 1 and many["chunks"] > 30
    assert (tmp_path / "one.fcsr").read_bytes() == (tmp_path / "many.fcsr").read_bytes()
    _same_dataset(read_fcsr(tmp_path / "many.fcsr"), load_libsvm(source, group_feature=4))


def test_convert_memory_is_bounded_by_the_chunk(tmp_path):
    """The parse holds one chunk's text and arrays (about 4x the chunk), not the file's."""
    X = _random_csr(20_000, 500, 10, seed=10)
    dump_libsvm(X, tmp_path / "big.svm", np.where(np.arange(20_000) % 3, 1, -1))
    text_bytes = os.path.getsize(tmp_path / "big.svm")
    chunk_mb = 1 / 16
    tracemalloc.start()
    try:
        summary = convert_libsvm(tmp_path / "big.svm", tmp_path / "big.fcsr", chunk_mb=chunk_mb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert summary["chunks"] > 20 and summary["bytes"] > text_bytes > 1.5 * 2**20
    assert peak < 6 * chunk_mb * 2**20, f"peak {peak / 2**20:.2f} MB with {chunk_mb} MB chunks"


def test_convert_errors_cite_the_line_in_the_whole_file(tmp_path, capsys):
    source = _libsvm_text(tmp_path, n_rows=2000)
    lines = source.read_bytes().split(b"\n")
    lines[1500] = b"1 3:0.5 2:1"
    source.write_bytes(b"\n".join(lines))
    with pytest.raises(ValueError) as expected:
        load_libsvm(source)
    with pytest.raises(ValueError) as got:
        convert_libsvm(source, tmp_path / "x.fcsr", chunk_mb=0.002)
    assert str(got.value) == str(expected.value) and "line 1501" in str(got.value)
    assert main(["convert", str(source), str(tmp_path / "x.fcsr"), "--chunk-mb", "0.002"]) == 1
    assert capsys.readouterr().err.strip() == f"fastcon convert: error: {expected.value}"
    assert not (tmp_path / "x.fcsr").exists()


@pytest.mark.parametrize("body, n_features", [
    # one-based until the end: index 5 > n_features=4 is out of range either way
    (b"1 1:1\n" * 300 + b"1 5:1\n" + b"1 2:1\n" * 300, 4),
    # index 4 = n_features is fine one-based, out of range once a 0 shows the file zero-based (later chunk)
    (b"1 1:1\n" * 300 + b"1 4:1\n" + b"1 2:1\n" * 300 + b"1 0:1\n", 4),
    # ... or at the end of a file whose first chunks looked one-based
    (b"1 4:1\n" + b"1 1:1\n" * 600 + b"1 0:1\n" + b"1 4:1\n", 4),
])
def test_auto_base_range_errors_match_read_libsvm(tmp_path, body, n_features):
    (tmp_path / "a.svm").write_bytes(body)
    with pytest.raises(ValueError) as expected:
        load_libsvm(tmp_path / "a.svm", n_features=n_features)
    with pytest.raises(ValueError) as got:
        convert_libsvm(tmp_path / "a.svm", tmp_path / "a.fcsr", n_features=n_features, chunk_mb=0.0005)
    assert str(got.value) == str(expected.value)


def test_convert_labels_and_arguments(tmp_path, capsys):
    (tmp_path / "r.svm").write_bytes(b"0.5 1:1\n1 2:1\n")
    with pytest.raises(ValueError, match="labels are not integers"):
        convert_libsvm(tmp_path / "r.svm", tmp_path / "r.fcsr")
    source = _libsvm_text(tmp_path)
    for kwargs, message in [({"chunk_mb": 0}, "^chunk_mb"), ({"zero_based": "yes"}, "^zero_based"),
                            ({"n_features": -1}, "^n_features"), ({"group_feature": 99}, "^group_feature: column 99")]:
        with pytest.raises(ValueError, match=message):
            convert_libsvm(source, tmp_path / "r.fcsr", **kwargs)
    (tmp_path / "e.svm").write_bytes(b"")
    convert_libsvm(tmp_path / "e.svm", tmp_path / "e.fcsr", progress=True)   # a bar only with tqdm installed
    _same_dataset(read_fcsr(tmp_path / "e.fcsr"), load_libsvm(tmp_path / "e.svm"))
    assert main(["convert", str(source), str(source.with_suffix(".txt"))]) == 2   # the target must be a .fcsr
    assert "must end in .fcsr" in capsys.readouterr().err


# ------------------------------------------------------------------------------- fitting memory-mapped data
@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    """A CSR with 40 entries per row (a copy of X: 484 bytes per row) written to a .fcsr file, and a small one."""
    folder = tmp_path_factory.mktemp("wide")
    rng = np.random.default_rng(7)
    X = _random_csr(20_000, 2_000, 40, seed=7)
    groups = rng.integers(0, 2, X.shape[0])
    margin = np.asarray(X @ rng.normal(size=X.shape[1])).ravel() + 0.3 * groups
    y = (margin > np.median(margin)).astype(np.int64)
    write_fcsr(X, folder / "wide.fcsr", y, groups=groups)
    write_fcsr(X[:1500], folder / "small.fcsr", y[:1500], groups=groups[:1500])
    return X, y, groups, folder


def _fair():
    from fastcon.estimators import FairClassifier

    return FairClassifier("demographic_parity", bound=0.05, max_iter=4)


def _neyman_pearson():
    from fastcon.estimators import NeymanPearsonClassifier

    return NeymanPearsonClassifier(bound=0.1, max_iter=4, random_state=0)


@pytest.mark.parametrize("make", [_fair, _neyman_pearson], ids=["fair", "neyman-pearson"])
def test_fit_on_memory_mapped_data_equals_in_memory_without_copying(wide, make, monkeypatch):
    """Same coef_ bit for bit; every pass reads the mapped arrays; the fit's own allocations stay far
    below X's size (tracemalloc sees NumPy's and SciPy's allocations, not the mapped pages)."""
    pytest.importorskip("sklearn")
    from fastcon.problems import _design

    X, y, groups, folder = wide
    fair = make is _fair
    seen = []
    original = _design.DesignMatrix.__init__

    def record(self, dataset):   # the arrays every pass of the fit reads
        original(self, dataset)
        seen.append(dataset.X)

    monkeypatch.setattr(_design.DesignMatrix, "__init__", record)

    def fit(ds):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ds_y = (ds.y > 0).astype(np.int64)
            return make().fit(ds.X, ds_y, **({"sensitive_features": ds.groups} if fair else {}))

    fit(read_fcsr(folder / "small.fcsr"))      # numba loads its read-only-array kernels before the measure
    ds = read_fcsr(folder / "wide.fcsr")
    root = _memmap_of(ds.X.data)
    seen.clear()
    tracemalloc.start()
    try:
        mapped = fit(ds)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    designs = list(seen)                           # before the in-memory fit adds its own
    in_memory = make().fit(X, y, **({"sensitive_features": groups} if fair else {}))
    assert np.array_equal(mapped.coef_, in_memory.coef_) and np.array_equal(mapped.intercept_, in_memory.intercept_)
    assert designs and all(np.shares_memory(m.data, root) and np.shares_memory(m.indices, root) for m in designs)
    x_bytes = ds.X.data.nbytes + ds.X.indices.nbytes + ds.X.indptr.nbytes
    assert peak < 0.5 * x_bytes, f"peak {peak / 2**20:.1f} MB beside a mapped X of {x_bytes / 2**20:.1f} MB"


def test_int64_indices_are_read_in_place():
    """Beyond 2**31 entries SciPy (and a .fcsr file) store int64 indices: the kernels read them as uint64 views
    (no 4-bytes-per-entry uint32 copy) and give what the 32-bit indices give."""
    from fastcon.problems import hinge_risk
    from fastcon.problems._design import DesignMatrix

    X = _random_csr(500, 60, 8, seed=8)
    narrow = Dataset(X, np.arange(500) % 2 * 2 - 1)
    wide = Dataset(X, np.arange(500) % 2 * 2 - 1)
    wide.X.indices, wide.X.indptr = wide.X.indices.astype(np.int64), wide.X.indptr.astype(np.int64)
    indptr, indices, _ = wide.csr_arrays
    assert indices.dtype == np.uint64 and np.shares_memory(indices, wide.X.indices)
    assert np.shares_memory(indptr, wide.X.indptr)
    w, c = np.random.default_rng(8).normal(size=60), np.random.default_rng(9).normal(size=500)
    rows = np.arange(0, 500, 3)
    for a, b in [(DesignMatrix(narrow), DesignMatrix(wide))]:
        assert np.array_equal(a.matvec(w, np.empty(500)), b.matvec(w, np.empty(500)))
        assert np.array_equal(a.matvec(w, np.empty(rows.size), rows), b.matvec(w, np.empty(rows.size), rows))
        assert np.array_equal(a.rmatvec(c, np.zeros(60)), b.rmatvec(c, np.zeros(60)))
    g_narrow, g_wide = np.empty(60), np.empty(60)
    assert hinge_risk(narrow).value_and_subgradient(w, g_narrow) == hinge_risk(wide).value_and_subgradient(w, g_wide)
    assert np.array_equal(g_narrow, g_wide)


def test_guide_example_runs(monkeypatch, tmp_path, capsys):
    """docs/guide/large_data.md's example, as a user would paste it (a9a from the data folder)."""
    import re
    from pathlib import Path

    pytest.importorskip("sklearn")
    text = (Path(__file__).resolve().parents[1] / "docs" / "guide" / "large_data.md").read_text()
    code = re.search(r"```python\n(.*?)```", text.split("## Read and fit", 1)[1], re.S).group(1)
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(code, "large_data.md", "exec"), namespace)
    assert capsys.readouterr().out.split() == ["True", "(1,", "123)"]
    ds = namespace["ds"]
    assert ds.shape == (32561, 123) and ds.group_names == ["0", "1"] and _memmap_of(ds.X.indices) is not None
