"""The dataset registry: every named dataset loads with the shapes and groups of MANIFEST.md, and
missing files are downloaded (from a local server here, never the network) or reported clearly.

The session runs with FASTCON_OFFLINE=1 (tests/conftest.py), so every download here is asked for
explicitly with ``download=True``."""
import dataclasses
import functools
import http.server
import pickle
import socket
import threading
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import dataset_bytes

from fastcon.datasets import _registry
from fastcon.datasets._registry import (SPECS, ChecksumError, DatasetFileError, data_home as resolve_home,
                                        dataset_info, list_datasets, load)

NAMES = ["a9a", "adult", "compas", "german", "bank", "law_school", "pendigits", "segment", "usps", "drybean"]

# (name, subset) -> (shape, labels {value: count}, groups {name: count} or None)
EXPECTED = {
    ("a9a", "train"): ((32561, 123), {-1: 24720, 1: 7841}, {"male": 21790, "female": 10771}),
    ("a9a", "test"): ((16281, 123), {-1: 12435, 1: 3846}, {"male": 10860, "female": 5421}),
    ("adult", "train"): ((32561, 108), {-1: 24720, 1: 7841}, {"male": 21790, "female": 10771}),
    ("adult", "test"): ((16281, 108), {-1: 12435, 1: 3846}, {"male": 10860, "female": 5421}),
    ("compas", "all"): ((6172, 16), {-1: 3363, 1: 2809}, {"Caucasian": 2103, "non-Caucasian": 4069}),
    ("german", "all"): ((1000, 61), {-1: 300, 1: 700}, {"male": 690, "female": 310}),
    ("bank", "all"): ((41188, 63), {-1: 36548, 1: 4640}, {"age 25-60": 39210, "age <25 or >60": 1978}),
    ("law_school", "all"): ((20798, 12), {-1: 2293, 1: 18505}, {"White": 17491, "Non-White": 3307}),
    ("pendigits", "train"): ((7494, 16), {0: 780, 1: 779, 2: 780, 3: 719, 4: 780, 5: 720, 6: 720, 7: 778,
                                          8: 719, 9: 719}, None),
    ("pendigits", "test"): ((3498, 16), None, None),
    ("segment", "all"): ((2310, 19), {k: 330 for k in range(7)}, None),
    ("usps", "train"): ((7291, 256), {0: 1194, 1: 1005, 2: 731, 3: 658, 4: 652, 5: 556, 6: 664, 7: 645,
                                      8: 542, 9: 644}, None),
    ("usps", "test"): ((2007, 256), {0: 359, 1: 264, 2: 198, 3: 166, 4: 200, 5: 160, 6: 170, 7: 147,
                                     8: 166, 9: 177}, None),
    ("drybean", "all"): ((13611, 16), {0: 1322, 1: 522, 2: 1630, 3: 3546, 4: 1928, 5: 2027, 6: 2636}, None),
}


@functools.lru_cache(maxsize=None)
def _load_shared(name, subset, home):
    return load(name, data_home=home, subset=subset, download=False)


@pytest.fixture
def shared(data_home):
    return lambda name, subset="all": _load_shared(name, subset, str(data_home))


def test_list_datasets():
    assert list_datasets() == NAMES
    assert all(SPECS[n].shapes for n in NAMES)


def test_data_home_resolution(monkeypatch, tmp_path):
    monkeypatch.setenv("FASTCON_DATA", str(tmp_path / "env"))
    assert resolve_home(tmp_path / "arg") == tmp_path / "arg"
    assert resolve_home() == tmp_path / "env"
    monkeypatch.delenv("FASTCON_DATA")
    assert resolve_home() == resolve_home("~/.cache/fastcon").expanduser()
    assert str(resolve_home()).endswith(".cache/fastcon")


@pytest.mark.parametrize("name, subset", sorted(EXPECTED))
def test_shapes_labels_groups(shared, name, subset):
    ds = shared(name, subset)
    shape, labels, groups = EXPECTED[name, subset]
    assert ds.shape == shape
    assert ds.shape == SPECS[name].shapes[subset]
    assert len(ds.feature_names) == shape[1]
    if labels is not None:
        values, counts = np.unique(ds.y, return_counts=True)
        assert dict(zip(values.tolist(), counts.tolist())) == labels
    if groups is None:
        assert ds.groups is None
    else:
        assert dict(zip(ds.group_names, np.bincount(ds.groups).tolist())) == groups
    if name == "a9a":
        assert sp.isspmatrix_csr(ds.X) and ds.is_binary_features
    else:
        assert isinstance(ds.X, np.ndarray) and ds.X.flags.c_contiguous
    assert ds.task == ("binary" if SPECS[name].task == "binary" else "multiclass")


@pytest.mark.parametrize("name", ["a9a", "adult", "pendigits", "usps"])
def test_all_stacks_train_then_test(shared, name):
    train, test, both = shared(name, "train"), shared(name, "test"), shared(name, "all")
    assert both.n_samples == train.n_samples + test.n_samples
    np.testing.assert_array_equal(both.y, np.concatenate([train.y, test.y]))
    assert train.feature_names == test.feature_names == both.feature_names


@pytest.mark.parametrize("name", ["compas", "german", "bank", "law_school", "segment", "drybean"])
def test_no_test_split(shared, data_home, name):
    assert shared(name, "train").shape == shared(name, "all").shape
    with pytest.raises(ValueError, match="no test split.*split"):
        load(name, data_home=data_home, subset="test", download=False)
    assert dataset_info(name, data_home)["subsets"] == ["train", "all"]


def test_a9a_rows_follow_adult(shared):
    # a9a is adult.data binarized in the same row order (MANIFEST.md): labels and sex agree.
    a9a, adult = shared("a9a", "train"), shared("adult", "train")
    np.testing.assert_array_equal(a9a.y, adult.y)
    np.testing.assert_array_equal(a9a.groups, adult.groups)


def test_encodings(shared):
    adult_train, adult_test = shared("adult", "train"), shared("adult", "test")
    assert adult_train.X.min() == 0 and adult_train.X.max() == 1
    assert "workclass=?" in adult_train.feature_names and "sex=Female" in adult_train.feature_names
    # One-hot blocks: each categorical contributes exactly one 1 per row (no unseen test categories).
    onehot = [j for j, f in enumerate(adult_test.feature_names) if "=" in f]
    assert np.all(adult_test.X[:, onehot].sum(axis=1) == 8)
    compas = shared("compas")
    assert compas.feature_names[:3] == ["sex=Female", "age", "age_cat=25 - 45"]
    assert compas.X[:, [j for j, f in enumerate(compas.feature_names) if f.startswith("race=")]].sum() == 6172
    german = shared("german")
    assert german.X[german.groups == 1][:, german.feature_names.index("personal_status_sex=A92")].all()
    segment = shared("segment")
    assert segment.X.min() == -1 and segment.X.max() == 1
    np.testing.assert_array_equal(segment.X[:, 2], 0.0)  # the constant region-pixel-count column
    drybean = shared("drybean")
    np.testing.assert_allclose(drybean.X.mean(axis=0), 0, atol=1e-9)
    np.testing.assert_allclose(drybean.X.std(axis=0), 1, atol=1e-9)
    pen = shared("pendigits", "train")
    assert pen.X.min() == 0 and pen.X.max() == 1


@pytest.mark.datasets("bank", "drybean")
def test_dataset_info(data_home, tmp_path):
    info = dataset_info("bank_marketing", data_home)
    assert info["name"] == "bank" and info["available"] and info["n_features"] == 63
    assert info["files"][0]["present"] and info["files"][0]["path"].endswith("bank-additional-full.csv.gz")
    assert info["groups"] and info["encoding"] and info["source"].startswith("https://")
    missing = dataset_info("usps", tmp_path)
    assert not missing["available"]
    assert missing["files"][0]["path"] == str(tmp_path / "usps" / "zip.train.gz")
    assert missing["files"][0]["urls"][0].startswith("https://")
    assert dataset_info("drybean", data_home)["class_names"][0] == "BARBUNYA"
    with pytest.raises(ValueError, match="unknown dataset 'nope'.*a9a"):
        dataset_info("nope")


def test_env_data_home(data_home, monkeypatch):
    monkeypatch.setenv("FASTCON_DATA", str(data_home))
    assert load("german", download=False).shape == (1000, 61)


# ------------------------------------------------------------------------------------ download
class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def server(tmp_path):
    """(folder, base_url): an HTTP server on 127.0.0.1 serving ``folder``."""
    root = tmp_path / "served"
    root.mkdir()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}/data"
    httpd.shutdown()
    httpd.server_close()


def _serve_from(monkeypatch, name, base_url):
    monkeypatch.setitem(SPECS, name, SPECS[name].with_base_url(base_url))


def test_download_verifies_and_writes(server, data_home, tmp_path, monkeypatch):
    root, url = server
    (root / "data").mkdir()
    (root / "data" / "german.data").write_bytes(dataset_bytes(data_home, "german", "german.data"))
    _serve_from(monkeypatch, "german", url)
    home = tmp_path / "home"
    ds = load("german", data_home=home, download=True)
    assert ds.shape == (1000, 61)
    assert sorted(p.name for p in (home / "german").iterdir()) == ["german.data"]
    assert (home / "german" / "german.data").read_bytes() == dataset_bytes(data_home, "german", "german.data")
    # Second load uses the local file: the server may be gone.
    (root / "data" / "german.data").unlink()
    assert load("german", data_home=home, download=True).shape == (1000, 61)


def test_download_mismatch_writes_nothing(server, data_home, tmp_path, monkeypatch):
    root, url = server
    (root / "data").mkdir()
    body = bytearray(dataset_bytes(data_home, "german", "german.data"))
    body[10] ^= 1
    (root / "data" / "german.data").write_bytes(bytes(body))
    _serve_from(monkeypatch, "german", url)
    home = tmp_path / "home"
    with pytest.raises(ChecksumError, match="nothing was written") as err:
        load("german", data_home=home, download=True)
    assert str(home / "german" / "german.data") in str(err.value)
    assert not (home / "german").exists() or list((home / "german").iterdir()) == []


def test_download_plain_form_of_gz_file(server, data_home, tmp_path, monkeypatch):
    # The official source serves law_school_clean.csv plain; it is kept plain (checked against
    # the uncompressed hash), not recompressed.
    root, url = server
    (root / "data").mkdir()
    (root / "data" / "law_school_clean.csv").write_bytes(
        dataset_bytes(data_home, "law_school", "law_school_clean.csv.gz"))
    _serve_from(monkeypatch, "law_school", url)
    home = tmp_path / "home"
    ds = load("law_school", data_home=home, download=True)
    assert ds.shape == (20798, 12) and np.bincount(ds.groups).tolist() == [17491, 3307]
    assert sorted(p.name for p in (home / "law_school").iterdir()) == ["law_school_clean.csv"]
    assert dataset_info("law_school", home)["files"][0]["present"]


def test_download_zip_member(server, data_home, tmp_path, monkeypatch):
    root, url = server
    (root / "data").mkdir()
    raw = dataset_bytes(data_home, "bank", "bank-additional-full.csv.gz")
    with zipfile.ZipFile(root / "data" / "bank-additional.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        # The UCI archive carries macOS resource forks next to the real member.
        zf.writestr("__MACOSX/bank-additional/._bank-additional-full.csv", b"junk")
        zf.writestr("bank-additional/bank-additional-full.csv", raw)
    _serve_from(monkeypatch, "bank", url)
    home = tmp_path / "home"
    ds = load("bank", data_home=home, download=True)
    assert ds.shape == (41188, 63)
    assert (home / "bank_marketing" / "bank-additional-full.csv").read_bytes() == raw


def test_mirror_fallback(server, data_home, tmp_path, monkeypatch):
    root, url = server
    (root / "data").mkdir()
    (root / "data" / "segment.dat").write_bytes(dataset_bytes(data_home, "segment", "segment.dat"))
    spec = SPECS["segment"]
    f = dataclasses.replace(spec.files[0], urls=(f"{url}/missing/segment.dat", f"{url}/segment.dat"))
    monkeypatch.setitem(SPECS, "segment", dataclasses.replace(spec, files=(f,)))
    assert load("segment", data_home=tmp_path / "home", download=True).shape == (2310, 19)


def test_missing_without_download(tmp_path):
    with pytest.raises(DatasetFileError) as err:
        load("usps", data_home=tmp_path, subset="test", download=False)
    msg = str(err.value)
    assert isinstance(err.value, FileNotFoundError)
    assert str(tmp_path / "usps" / "zip.test.gz") in msg
    assert "https://hastie.su.domains/ElemStatLearn/datasets/zip.test.gz" in msg
    assert "download=False" in msg
    assert not (tmp_path / "usps").exists()


def test_missing_error_names_file_and_how_to_get_it(tmp_path, monkeypatch):
    # The session is offline (FASTCON_OFFLINE=1): the default `download` does not download.
    with pytest.raises(DatasetFileError) as err:
        load("bank", data_home=tmp_path)
    exc = err.value
    assert exc.dataset == "bank" and exc.path == tmp_path / "bank_marketing" / "bank-additional-full.csv.gz"
    msg = str(exc)
    head = f"dataset 'bank': file bank-additional-full.csv.gz not found in {tmp_path / 'bank_marketing'}"
    assert msg.startswith(head)
    assert "(FASTCON_OFFLINE=1)" in msg and "member bank-additional-full.csv of the zip archive" in msg
    assert f"`fastcon datasets bank --download --data-home {tmp_path}`" in msg and "FASTCON_DATA" in msg
    # The resolved default folder needs no --data-home in the command.
    monkeypatch.setenv("FASTCON_DATA", str(tmp_path))
    with pytest.raises(DatasetFileError, match=r"`fastcon datasets german --download`, or set FASTCON_DATA"):
        load("german")
    # Raised across a process pool, it keeps its message and fields.
    again = pickle.loads(pickle.dumps(exc))
    assert (type(again), str(again), again.dataset, again.path) == (DatasetFileError, msg, exc.dataset, exc.path)
    assert not (tmp_path / "bank_marketing").exists()


def test_offline_only_changes_the_default(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(_registry, "_http_get", lambda url, timeout: calls.append(url) or b"")
    spec_file = SPECS["german"].files[0]
    for value in ("0", ""):
        monkeypatch.setenv("FASTCON_OFFLINE", value)
        with pytest.raises(ChecksumError):  # the default downloads (here: empty bytes, wrong sha256)
            _registry.fetch_file(spec_file, tmp_path, dataset="german")
    monkeypatch.setenv("FASTCON_OFFLINE", "1")
    with pytest.raises(DatasetFileError, match="FASTCON_OFFLINE=1"):
        _registry.fetch_file(spec_file, tmp_path, dataset="german")
    with pytest.raises(ChecksumError):  # an explicit download=True still downloads
        _registry.fetch_file(spec_file, tmp_path, download=True, dataset="german")
    assert len(calls) == 3 and not list(tmp_path.iterdir())


def test_unreachable_server(tmp_path, monkeypatch):
    # A just-closed local port: connection refused, no network involved.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    _serve_from(monkeypatch, "german", f"http://127.0.0.1:{port}/x")
    with pytest.raises(DatasetFileError, match="download failed") as err:
        _registry.fetch_file(SPECS["german"].files[0], tmp_path / "german", download=True, dataset="german",
                             timeout=5)
    assert str(tmp_path / "german" / "german.data") in str(err.value)
    assert f"http://127.0.0.1:{port}/x/german.data" in str(err.value)
    assert not (tmp_path / "german").exists()


def test_local_checksum_mismatch(data_home, tmp_path):
    (tmp_path / "german").mkdir()
    body = dataset_bytes(data_home, "german", "german.data").replace(b"A11", b"A12", 1)
    (tmp_path / "german" / "german.data").write_bytes(body)
    with pytest.raises(ChecksumError, match="verify=False"):
        load("german", data_home=tmp_path, download=False)
    assert load("german", data_home=tmp_path, download=False, verify=False).n_samples == 1000


def test_bad_arguments(data_home):
    with pytest.raises(ValueError, match="subset"):
        load("german", data_home=data_home, subset="validation")
    with pytest.raises(ValueError, match="unknown dataset"):
        load("mnist", data_home=data_home)


def test_cli_download_fetches_missing_files(server, data_home, tmp_path, monkeypatch, capsys):
    from fastcon.cli import main

    root, url = server
    (root / "data").mkdir()
    (root / "data" / "german.data").write_bytes(dataset_bytes(data_home, "german", "german.data"))
    _serve_from(monkeypatch, "german", url)
    home = tmp_path / "home"
    assert main(["datasets", "german", "--download", "--json", "--data-home", str(home)]) == 0
    import json

    (row,) = json.loads(capsys.readouterr().out)
    assert row["found"] and row["subsets"]["train"]["shape"] == [1000, 61]
