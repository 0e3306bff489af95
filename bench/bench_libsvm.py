"""LIBSVM parsing: fastcon vs scikit-learn on a9a, and a 1M-row synthetic scaling run.

References: ``sklearn.datasets.load_svmlight_file``/``dump_svmlight_file`` (what a user of LIBSVM
files calls) and, for the fused hinge pass on the parsed file, ``bench/_references.hinge_value_grad``
(``X @ w``, ``X.T @ c`` through ``scipy.sparse``). Parsing is compute-bound (MB/s, ns per nonzero,
no roofline); the hinge pass has its read roofline (bench/_roofline.py) beside ``x_read_once``.

Groups: ``parse_a9a`` (uncompressed, target 5x sklearn), ``parse_a9a_gz`` (as stored, decompression
included, no target), ``dump_a9a`` (writing, no target) and ``parse_synthetic_1M`` (fastcon alone:
MB/s and ns per nonzero).
"""
import gzip
import os
import time

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file, load_svmlight_file

from _references import hinge_value_grad
from _roofline import csr_pass_bytes, record_roofline
from conftest import dataset_bytes, dataset_file
from fastcon.datasets._libsvm_io import dump_libsvm, read_libsvm

# Synthetic file: 1,000,000 rows x 50 nonzeros, sorted distinct indices in 1..10000, values drawn
# from short decimals so the text stays ~410 MB (longer decimals would push it past 500 MB).
# FASTCON_BENCH_SMALL=1 (CI's smoke run) shrinks the scaling file 50x; the real figure needs 1M rows.
N_ROWS = 20_000 if os.environ.get("FASTCON_BENCH_SMALL") else 1_000_000
NNZ_PER_ROW, N_COLS = 50, 10_000
VALUES = ["1", "2", "0.5", "0.25", "1.5", "3", "0.75", "4"]


@pytest.fixture(scope="session")
def a9a_plain(data_home, tmp_path_factory):
    path = tmp_path_factory.mktemp("libsvm") / "a9a"
    path.write_bytes(dataset_bytes(data_home, "a9a", "a9a.gz"))
    return path


@pytest.fixture(scope="session")
def a9a_stored(data_home, tmp_path_factory):
    """a9a's training file gzip-compressed, as the project's data folder stores it (a downloaded
    copy is plain: compress it the same way, so the group always times decompression + parsing)."""
    path = dataset_file(data_home, "a9a", "a9a.gz")
    if path.read_bytes()[:2] == b"\x1f\x8b":
        return path
    packed = tmp_path_factory.mktemp("libsvm_gz") / "a9a.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    return packed


def write_synthetic(path, seed=0, chunk=50_000):
    """Write the synthetic file with numpy only: every token is a row of a lookup table.

    Table rows are ``"<idx>:<val> "`` (and a ``\\n``-terminated twin for the last token of a line)
    padded to a fixed width; gathering rows by token id and dropping the padding with a length mask
    yields the line bytes with no Python loop over nonzeros.
    """
    rng = np.random.default_rng(seed)
    tokens = [f"{i}:{v}" for i in range(1, N_COLS + 1) for v in VALUES]
    table = tokens + [t + "\n" for t in tokens]
    table = [t + " " if not t.endswith("\n") else t for t in table] + ["+1 ", "-1 "]
    lengths = np.array([len(t) for t in table])
    width = lengths.max()
    table = np.array(table, dtype=f"S{width}").view(np.uint8).reshape(len(table), width)
    n_tok, label_id = len(tokens), 2 * len(tokens)
    with open(path, "wb") as fh:
        for start in range(0, N_ROWS, chunk):
            rows = min(chunk, N_ROWS - start)
            # Sorted draws with replacement plus 0..k-1 are a sorted sample without replacement.
            idx = np.sort(rng.integers(0, N_COLS - NNZ_PER_ROW + 1, (rows, NNZ_PER_ROW)), axis=1)
            idx += np.arange(NNZ_PER_ROW)
            ids = np.empty((rows, NNZ_PER_ROW + 1), dtype=np.int64)
            ids[:, 0] = label_id + rng.integers(0, 2, rows)
            ids[:, 1:] = idx * len(VALUES) + rng.integers(0, len(VALUES), (rows, NNZ_PER_ROW))
            ids[:, -1] += n_tok
            ids = ids.ravel()
            keep = np.arange(width) < lengths[ids][:, None]
            fh.write(table[ids][keep].tobytes())


@pytest.fixture(scope="session")
def synthetic_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("libsvm") / "synthetic_1M.svm"
    t0 = time.perf_counter()
    write_synthetic(path)
    print(f"\nwrote {path} ({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f} s")
    return path


def _rates(benchmark, path, nnz):
    if benchmark.stats is None:  # --benchmark-disable: the function ran once, untimed
        return
    size = path.stat().st_size
    benchmark.extra_info["MB_per_s"] = size / 1e6 / benchmark.stats.stats.min
    benchmark.extra_info["ns_per_nnz"] = benchmark.stats.stats.min / nnz * 1e9


@pytest.mark.benchmark(group="parse_a9a")
def test_parse_a9a_fastcon(benchmark, a9a_plain):
    benchmark.extra_info.update(role="fastcon", target=5)
    X, y = benchmark.pedantic(read_libsvm, args=(a9a_plain,), rounds=30, warmup_rounds=2)
    assert X.shape == (32561, 123)
    _rates(benchmark, a9a_plain, X.nnz)


@pytest.mark.benchmark(group="parse_a9a")
def test_parse_a9a_sklearn(benchmark, a9a_plain):
    benchmark.extra_info["role"] = "reference"
    X, y = benchmark.pedantic(load_svmlight_file, args=(str(a9a_plain),), rounds=8, warmup_rounds=1)
    assert X.shape == (32561, 123)
    if benchmark.stats is not None:
        benchmark.extra_info["sklearn_MB_per_s"] = a9a_plain.stat().st_size / 1e6 / benchmark.stats.stats.min


@pytest.mark.benchmark(group="parse_a9a_gz")
def test_parse_a9a_gz_fastcon(benchmark, a9a_stored):
    benchmark.extra_info["role"] = "fastcon"
    X, y = benchmark.pedantic(read_libsvm, args=(a9a_stored,), rounds=20, warmup_rounds=1)
    assert X.shape == (32561, 123)


@pytest.mark.benchmark(group="parse_a9a_gz")
def test_parse_a9a_gz_sklearn(benchmark, a9a_stored):
    benchmark.extra_info["role"] = "reference"
    X, y = benchmark.pedantic(load_svmlight_file, args=(str(a9a_stored),), rounds=5)
    assert X.shape == (32561, 123)


@pytest.mark.benchmark(group="dump_a9a")
def test_dump_a9a_fastcon(benchmark, a9a_plain, tmp_path):
    benchmark.extra_info["role"] = "fastcon"
    X, y = read_libsvm(a9a_plain)
    benchmark.pedantic(dump_libsvm, args=(X, tmp_path / "out.svm", y), rounds=5)


@pytest.mark.benchmark(group="dump_a9a")
def test_dump_a9a_sklearn(benchmark, a9a_plain, tmp_path):
    benchmark.extra_info["role"] = "reference"
    X, y = read_libsvm(a9a_plain)
    benchmark.pedantic(dump_svmlight_file, args=(X, y, str(tmp_path / "out.svm")), kwargs={"zero_based": False},
                       rounds=5)


@pytest.mark.benchmark(group="parse_synthetic_1M")
def test_parse_synthetic_scaling(benchmark, synthetic_file):
    benchmark.extra_info["role"] = "fastcon"
    X, y = benchmark.pedantic(read_libsvm, args=(synthetic_file,), rounds=3, iterations=1)
    assert X.shape == (N_ROWS, N_COLS) and X.nnz == N_ROWS * NNZ_PER_ROW
    benchmark.extra_info["file_MB"] = synthetic_file.stat().st_size / 1e6
    _rates(benchmark, synthetic_file, X.nnz)
    if benchmark.stats is not None:
        benchmark.extra_info["x_read_once"] = benchmark.stats.stats.min / _read_once_seconds(X)


def _read_once_seconds(X, repeats=20):
    """Measured time to stream the CSR arrays through the CPU once (sum of every byte's word):
    the physical floor of any full pass over this matrix on this machine, taken in the same run."""
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        X.data.sum(), X.indices.view(np.uint32).sum(dtype=np.uint64), X.indptr.sum()
        best = min(best, time.perf_counter() - t0)
    return best


@pytest.fixture(scope="session")
def synthetic_csr(synthetic_file):
    from fastcon.datasets import Dataset

    X, y = read_libsvm(synthetic_file)
    return Dataset(X, y, name="synthetic_1M")


@pytest.mark.benchmark(group="fused_hinge_synthetic_1M")
def test_fused_hinge_synthetic_scaling(benchmark, synthetic_csr):
    """The fused hinge value+subgradient on the 1M x 50-nnz file just parsed: ns per nonzero,
    GB/s over the CSR bytes, and the ratio to reading those bytes once (measured, same run)."""
    from fastcon.problems import hinge_risk

    benchmark.extra_info["role"] = "fastcon"
    term = hinge_risk(synthetic_csr)
    w = np.random.default_rng(1).standard_normal(synthetic_csr.n_features) * 0.1
    grad = np.empty_like(w)
    value = term.value_and_subgradient(w, grad)
    ref_value, ref_grad = hinge_value_grad(synthetic_csr.X, synthetic_csr.y, w)
    np.testing.assert_allclose(value, ref_value, rtol=1e-12)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-9, atol=1e-13)
    benchmark.pedantic(term.value_and_subgradient, args=(w, grad), rounds=10, warmup_rounds=1)
    n = synthetic_csr.X.shape[0]
    import numba

    # 1M rows x 50 nnz runs in parallel chunks; the small CI file (1M nnz) stays serial
    record_roofline(benchmark, csr_pass_bytes(synthetic_csr.X, synthetic_csr.is_binary_features) + 8 * n,
                    threads=1 if os.environ.get("FASTCON_BENCH_SMALL") else numba.get_num_threads())
    if benchmark.stats is None:
        return
    X, t = synthetic_csr.X, benchmark.stats.stats.min
    nbytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    benchmark.extra_info.update(ns_per_nnz=t / X.nnz * 1e9, GBps_csr_bytes=nbytes / t / 1e9,
                                x_read_once=t / _read_once_seconds(X))


@pytest.mark.benchmark(group="fused_hinge_synthetic_1M")
def test_fused_hinge_synthetic_scipy(benchmark, synthetic_csr):
    benchmark.extra_info["role"] = "reference"
    X, y = synthetic_csr.X, synthetic_csr.y
    w = np.random.default_rng(1).standard_normal(synthetic_csr.n_features) * 0.1

    # the same honest reference as the a9a kernels (checked against fastcon in the fastcon benchmark)
    benchmark.pedantic(hinge_value_grad, args=(X, y, w), rounds=5, warmup_rounds=1)
