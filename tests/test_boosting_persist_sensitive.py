"""Issue 33 ("Hardening II") on the boosted estimators: each test fails on the behaviour the issue reports.

Loading (as tests/test_persist_hardening.py for the linear estimators): `fastcon.load_model`
reads ``header.json`` first, then only the entries it refers to, and checks every declared size
before decompressing anything. The hostile archives are written byte by byte, and memory is
measured, by the helpers of tests/_zip_bombs.py. Malformed headers that are valid JSON (nested
thousands deep, counts of 1e400, wrong types: also a fuzz test of random edits) are a ValueError
"path: ..." as well, never another exception.

Sensitive features (as tests/test_estimator_hardening.py): a plain list of string labels is one
label per row unless X is a DataFrame holding them all as columns, and ``drop_sensitive=True`` with
a column position drops that column again from the X given to predict.
"""
import hashlib
import io
import json
import warnings
import zipfile

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("sklearn")
pytest.importorskip("lightgbm")

from fastcon import load_model  # noqa: E402
from fastcon.boosting import FairGBMClassifier, NeymanPearsonGBMClassifier  # noqa: E402
from fastcon.boosting._persist import MAX_OUTPUTS  # noqa: E402
from fastcon.estimators._model_file import MAX_HEADER_DEPTH, MAX_RATIO, _write  # noqa: E402
from _zip_bombs import bomb, fuzz_header_loads, load_traced, npy_bomb, npy_bytes, write_zip  # noqa: E402

PARAMS = {"num_leaves": 4}


def _entries(path):
    """The entries of a saved model (name -> bytes) and its decoded header."""
    with zipfile.ZipFile(path) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    return entries, json.loads(entries["header.json"])


def _with_header(entries, header):
    return {**entries, "header.json": json.dumps(header).encode()}


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = (X[:, 0] + 0.7 * rng.normal(size=n) > 0).astype(np.int64)
    return X, y


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A saved NeymanPearsonGBMClassifier (LightGBM), its data, and the two bomb streams."""
    folder = tmp_path_factory.mktemp("gbm")
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = NeymanPearsonGBMClassifier("lightgbm", bound=0.2, rounds=2, max_iter=3, max_calibration=1,
                                         params=PARAMS).fit(X, np.where(y == 1, "yes", "no"))
    clf.save(folder / "model.zip")
    return {"path": folder / "model.zip", "clf": clf, "X": X, "npy_bomb": npy_bomb(),
            "text_bomb": bomb(b"tree\nversion=v4\n")}


def _booster(header):
    return header["ensemble"]["files"][0]


def _classes_entry(saved):
    """The saved model's entries (name -> bytes) and the name of its ``classes_`` array entry."""
    entries, header = _entries(saved["path"])
    return entries, f"arrays/{header['attributes']['classes_']['__array__']}.npy"


def _assert_rejected(path, entries, match):
    """Write ``entries`` (name -> bytes) to the archive ``path``: loading it raises a ValueError matching ``match``."""
    write_zip(path, list(entries.items()))
    with pytest.raises(ValueError, match=match):
        load_model(path)


# ----------------------------------------------------------------------------- hostile model files
def test_the_bombs_are_small_on_disk_and_large_inside(saved, tmp_path):
    entries, _ = _entries(saved["path"])
    write_zip(tmp_path / "bomb.zip", [*entries.items(), ("arrays/junk.npy", saved["npy_bomb"]),
                                      ("boosters/9999.txt", saved["text_bomb"])])
    assert (tmp_path / "bomb.zip").stat().st_size < 8 << 20
    with zipfile.ZipFile(tmp_path / "bomb.zip") as archive:
        assert archive.getinfo("arrays/junk.npy").file_size > 3 * 10 ** 9
        assert archive.getinfo("boosters/9999.txt").file_size > 3 * 10 ** 9


def test_unreferenced_entries_are_never_read(saved, tmp_path):
    entries, _ = _entries(saved["path"])
    write_zip(tmp_path / "m.zip", [*entries.items(), ("arrays/junk.npy", saved["npy_bomb"]),
                                   ("boosters/9999.txt", saved["text_bomb"])])
    back, error = load_traced(load_model, tmp_path / "m.zip")
    assert error is None, error
    np.testing.assert_array_equal(back.decision_function(saved["X"]), saved["clf"].decision_function(saved["X"]))


def test_a_referenced_array_bomb_is_rejected_before_decompressing(saved, tmp_path):
    entries, header = _entries(saved["path"])
    header["attributes"]["classes_"] = {"__array__": "junk"}
    write_zip(tmp_path / "m.zip", [*_with_header(entries, header).items(), ("arrays/junk.npy", saved["npy_bomb"])])
    back, error = load_traced(load_model, tmp_path / "m.zip")
    assert back is None
    message = str(error)
    assert message.startswith(f"path: {str(tmp_path / 'm.zip')!r}") and "arrays/junk.npy" in message
    assert "bytes" in message and "file" in message and "classes_" in message


def test_a_booster_text_declared_huge_is_rejected_before_decompressing(saved, tmp_path):
    entries, header = _entries(saved["path"])
    member = _booster(header)
    del entries[member]   # the sha256 in header.json is kept: only the size check stands before reading
    write_zip(tmp_path / "m.zip", [*entries.items(), (member, saved["text_bomb"])])
    back, error = load_traced(load_model, tmp_path / "m.zip")
    assert back is None
    message = str(error)
    assert message.startswith(f"path: {str(tmp_path / 'm.zip')!r}") and member in message
    assert f"{MAX_RATIO} times" in message and "whole file" in message


def test_a_header_bomb_is_rejected_before_decompressing(saved, tmp_path):
    entries, _ = _entries(saved["path"])
    del entries["header.json"]
    write_zip(tmp_path / "m.zip", [*entries.items(), ("header.json", bomb(b'{"format": "'))])
    back, error = load_traced(load_model, tmp_path / "m.zip")
    assert back is None and str(error).startswith("path: ") and "header.json" in str(error)


def test_a_booster_text_compressed_too_well_is_rejected_within_the_file_budget(saved, tmp_path):
    """50 MiB of zeros from 50 kB: within 100 times the file's size, but not of the entry's own compressed bytes."""
    entries, header = _entries(saved["path"])
    member = _booster(header)
    del entries[member]
    squeezed = bomb(b"tree\n", zeros=50 << 20)
    write_zip(tmp_path / "m.zip", [*entries.items(), (member, squeezed), ("padding", bytes(1 << 20))])
    assert squeezed[2] < MAX_RATIO * (tmp_path / "m.zip").stat().st_size
    with pytest.raises(ValueError, match=rf"^path: .*{member}.* a ratio above {MAX_RATIO}"):
        load_model(tmp_path / "m.zip")


def test_a_referenced_array_whose_declared_size_disagrees(saved, tmp_path):
    entries, name = _classes_entry(saved)
    # the .npy header declares two strings, but the entry holds 8 bytes more
    longer = {**entries, name: entries[name] + bytes(8)}
    _assert_rejected(tmp_path / "longer.zip", longer, rf"^path: .*{name}.*declares")
    # ... or declares a million entries while holding two
    classes = np.load(io.BytesIO(entries[name]), allow_pickle=False)
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(head, {"descr": classes.dtype.str, "fortran_order": False,
                                                "shape": (10 ** 6,)})
    shorter = {**entries, name: head.getvalue() + classes.tobytes()}
    _assert_rejected(tmp_path / "shorter.zip", shorter, rf"^path: .*{name}.*declares")


def test_an_object_array_is_refused_by_name(saved, tmp_path):
    entries, name = _classes_entry(saved)
    hostile = {**entries, name: npy_bytes(np.array(["no", "yes"], dtype=object), allow_pickle=True)}
    _assert_rejected(tmp_path / "m.zip", hostile, rf"^path: .*{name}.*Python objects")


def test_a_missing_referenced_array_is_named(saved, tmp_path):
    entries, name = _classes_entry(saved)
    del entries[name]
    _assert_rejected(tmp_path / "m.zip", entries, rf"^path: .*classes_ refers to entry '{name}'")


def test_untampered_files_rewritten_by_hand_still_load(saved, tmp_path):
    entries, header = _entries(saved["path"])
    # stored (not deflated), and the sha256 still matches
    assert hashlib.sha256(entries[_booster(header)]).hexdigest() == header["ensemble"]["sha256"][0]
    write_zip(tmp_path / "m.zip", list(entries.items()))
    back = load_model(tmp_path / "m.zip")
    np.testing.assert_array_equal(back.predict(saved["X"]), saved["clf"].predict(saved["X"]))


def test_save_stores_what_deflate_would_shrink_past_the_ratio(tmp_path):
    text = b"Tree=0\nnum_leaves=1\nleaf_value=0\n\n" * 100_000   # a constant model of many trees
    varied = np.random.default_rng(0).normal(size=10_000).tobytes()
    with zipfile.ZipFile(tmp_path / "m.zip", "w", compression=zipfile.ZIP_DEFLATED) as archive:
        _write(archive, "boosters/0000.txt", text)
        _write(archive, "arrays/a0.npy", varied)
    with zipfile.ZipFile(tmp_path / "m.zip") as archive:
        constant, other = archive.getinfo("boosters/0000.txt"), archive.getinfo("arrays/a0.npy")
        assert constant.compress_type == zipfile.ZIP_STORED and constant.file_size == len(text)
        assert other.compress_type == zipfile.ZIP_DEFLATED
        assert archive.read("boosters/0000.txt") == text and archive.read("arrays/a0.npy") == varied


# ----------------------------------------------------------------------------- malformed headers (valid JSON)
def _with_text(saved, path, edit, literal):
    """The saved model with its header edited by ``edit`` and every ``"@"`` replaced by the JSON ``literal``."""
    entries, header = _entries(saved["path"])
    edit(header)
    write_zip(path, [*entries.items(), ("header.json", json.dumps(header).replace('"@"', literal).encode())])
    return path


def _version1(header):
    """``header`` as format version 1 wrote it: coefficients, one whole booster each, instead of terms."""
    header.update(format="fastcon.boosting.estimator", format_version=1)
    header["ensemble"]["coefficients"] = [w for *_, w in header["ensemble"].pop("terms")]


@pytest.mark.parametrize("depth", [600, 5000])
def test_a_deeply_nested_header_is_rejected(saved, tmp_path, depth):
    path = _with_text(saved, tmp_path / "deep.zip", lambda h: h["params"].update(verbose="@"),
                      "[" * depth + "]" * depth)
    with pytest.raises(ValueError, match=rf"^path: {str(path)!r} is inconsistent: .*more than "
                                         rf"MAX_HEADER_DEPTH = {MAX_HEADER_DEPTH} levels"):
        load_model(path)


@pytest.mark.parametrize("edit, literal, field", [
    (lambda h: h["ensemble"].update(n_outputs="@"), "1e400", "n_outputs"),     # int(inf): OverflowError
    (lambda h: h["ensemble"].update(n_outputs="@"), "1" + "0" * 400, "n_outputs"),
    (lambda h: h["ensemble"].update(n_outputs="@"), "-1", "n_outputs"),
    (lambda h: h["ensemble"].update(n_outputs="@"), "1.0", "n_outputs"),
    (lambda h: h["ensemble"].update(n_outputs="@"), str(MAX_OUTPUTS + 1), "n_outputs"),
    (lambda h: h["ensemble"].update(n_outputs="@"), "3", "n_outputs"),          # classes_ has two classes
    (lambda h: (_version1(h), h["ensemble"].update(n_outputs="@")), "1e400", "n_outputs"),
    (lambda h: h["ensemble"]["terms"][0].__setitem__(3, "@"), "1" + "0" * 400, r"terms\[0\] weight"),
    (lambda h: h["ensemble"]["terms"][0].__setitem__(3, "@"), "NaN", r"terms\[0\] weight"),
    (lambda h: h["ensemble"]["terms"][0].__setitem__(2, "@"), "1e400", r"terms\[0\] stop"),
    (lambda h: h["ensemble"]["terms"][0].__setitem__(0, "@"), "-1", r"terms\[0\] booster"),
    (lambda h: h["ensemble"].update(terms="@"), "[[0, 0]]", r"terms\[0\]"),
    (lambda h: (_version1(h), h["ensemble"]["coefficients"].__setitem__(0, "@")), "1" + "0" * 400,
     r"coefficients\[0\]"),
    (lambda h: h["ensemble"].update(n_threads="@"), "1e400", "n_threads"),
    (lambda h: h.update({"class": "@"}), '["FairGBMClassifier"]', "class"),     # unhashable: TypeError
    (lambda h: h["ensemble"].update(n_outputs="@"), "9" * 5000, "unreadable header"),   # > 4300 digits
    (lambda h: h["ensemble"].pop("n_outputs"), "", "'n_outputs' is missing"),
])
def test_counts_and_numbers_out_of_range_are_named(saved, tmp_path, edit, literal, field):
    path = _with_text(saved, tmp_path / "bad.zip", edit, literal)
    with pytest.raises(ValueError, match=rf"^path: {str(path)!r} .*{field}"):
        load_model(path)


def test_format_version_1_still_loads(saved, tmp_path):
    path = _with_text(saved, tmp_path / "v1.zip", _version1, "")
    np.testing.assert_array_equal(load_model(path).decision_function(saved["X"]), saved["clf"].decision_function(saved["X"]))


@pytest.fixture(scope="module")
def saved_fair(tmp_path_factory):
    """A saved FairGBMClassifier (LightGBM): its header holds a group encoding and a solve result."""
    X, y, g = _groups_data()
    path = tmp_path_factory.mktemp("fair") / "fair.zip"
    _fit(_fair(), X, y, sensitive_features=np.where(g == 1, "f", "m")).save(path)
    return path


@pytest.mark.parametrize("model", ["fair", "np"])
def test_fuzzed_headers_load_or_raise_value_error(saved, saved_fair, tmp_path, model):
    """200 random edits of a real header: each file loads or is a ValueError "path: ...", never another exception."""
    entries, header = _entries(saved_fair if model == "fair" else saved["path"])
    escaped, outcomes = fuzz_header_loads(load_model, entries, header, tmp_path / "fuzz.zip", _with_header, seed=len(model))
    assert not escaped, escaped
    assert outcomes["loaded"] and outcomes["rejected"], outcomes


# ----------------------------------------------------------------------------- sensitive features
def _groups_data(n=240, seed=5):
    rng = np.random.default_rng(seed)
    g = (rng.random(n) < 0.4).astype(np.int64)
    X = np.column_stack([rng.normal(size=n) + 0.8 * g, rng.normal(size=n), g.astype(np.float64)])
    y = (1.5 * X[:, 0] - X[:, 1] + rng.normal(size=n) * np.where(g == 1, 2.0, 0.5) > 0).astype(np.int64)
    return X, y, g


def _fair(**kw):
    return FairGBMClassifier("mean_loss_gap", backend="lightgbm", bound=0.05, rounds=2, max_iter=2, inner_iter=2, params=PARAMS, **kw)


def _fit(est, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(*args, **kw)


@pytest.mark.parametrize("drop", [False, True])
def test_a_plain_list_of_string_labels_is_read_as_labels(drop):
    X, y, g = _groups_data()
    labels = ["female" if k else "male" for k in g]
    reference = _fit(_fair(), X, y, sensitive_features=np.array(labels, dtype=object))
    est = _fit(_fair(drop_sensitive=drop), X, y, sensitive_features=labels)
    assert est.groups_ == ["female", "male"] and est.n_features_in_ == 3
    assert est.sensitive_columns_ == []   # labels, not columns: nothing to drop in predict
    np.testing.assert_array_equal(est.decision_function(X), reference.decision_function(X))
    assert est.constraint_report(X, y, labels).per_group.keys() == {"female", "male"}
    # a DataFrame X: the labels are not its columns, and there is one per row; predict on fewer rows
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    framed = _fit(_fair(drop_sensitive=drop), frame, y, sensitive_features=labels)
    assert framed.sensitive_columns_ == []
    np.testing.assert_array_equal(framed.decision_function(frame.iloc[:50]), reference.decision_function(X[:50]))
    # a list of the frame's column names still names columns
    by_name = _fit(_fair(drop_sensitive=True), frame, y, sensitive_features=["c"])
    assert by_name.feature_names_in_.tolist() == ["a", "b"] and by_name.sensitive_columns_ == ["c"]
    np.testing.assert_array_equal(by_name.predict(frame.iloc[:50]), by_name.predict(frame)[:50])
    with pytest.raises(ValueError, match=r"^sensitive_features: column\(s\) \['nope'\] not in X's columns"):
        _fit(_fair(), frame, y, sensitive_features=["c", "nope"])


@pytest.mark.parametrize("position", [2, -1])
def test_drop_sensitive_with_a_column_position_predicts_on_the_same_X(position, tmp_path):
    X, y, g = _groups_data()
    est = _fit(_fair(drop_sensitive=True), X, y, sensitive_features=position)
    assert est.n_features_in_ == 2 and est.sensitive_columns_ == [2]
    reference = _fit(_fair(), X[:, :2], y, sensitive_features=g)
    np.testing.assert_array_equal(est.predict(X), reference.predict(X[:, :2]))
    np.testing.assert_array_equal(est.decision_function(X), reference.decision_function(X[:, :2]))
    np.testing.assert_array_equal(est.predict_proba(X), reference.predict_proba(X[:, :2]))
    report = est.constraint_report(X, y, position)
    assert report.value == pytest.approx(reference.constraint_report(X[:, :2], y, g).value)
    # a DataFrame by position, and a saved model, drop the same column
    frame = pd.DataFrame(X, columns=["a", "b", "group"])
    framed = _fit(_fair(drop_sensitive=True), frame, y, sensitive_features=position)
    np.testing.assert_array_equal(framed.predict(frame), reference.predict(X[:, :2]))
    est.save(tmp_path / "m.zip")
    np.testing.assert_array_equal(load_model(tmp_path / "m.zip").predict(X), reference.predict(X[:, :2]))
    with pytest.raises(ValueError, match=r"^X: the sensitive column"):
        est.predict(X[:, :2])   # the X of predict has fit's layout, sensitive column included
